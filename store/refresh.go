package store

import (
	"context"

	chroma "github.com/amikos-tech/chroma-go/pkg/api/v2"
)

// Books changed by another process (`caprag ingest` beside a running bot) reach this one with
// Refresh: the embedded store reads its manifest again (embedded.go); the Chroma store compares
// the version its writers publish in the collection's metadata.

// versionKey is the collection metadata where writers publish the books' version.
const versionKey = "caprag_version"

// publish records the books' version in the collection's metadata after a change (the writer
// lock held), so that other processes see that they must read the collection again. A failure
// only delays them until the next change: it is not the change's failure.
func (c *Chroma) publish(ctx context.Context) {
	v := c.cur.Load().version
	c.pmu.Lock()
	defer c.pmu.Unlock()
	if v == c.published {
		return
	}
	meta := chroma.NewMetadata(chroma.NewStringAttribute(embedderKey, c.embedder), chroma.NewStringAttribute(versionKey, v))
	if err := c.col.ModifyMetadata(context.WithoutCancel(ctx), meta); err == nil {
		c.published = v
	}
}

// Refresh reads the collection again when another process published a change since this one
// last read or wrote it, and reports whether it did. It waits for a change of this process under
// way.
func (c *Chroma) Refresh(ctx context.Context) (bool, error) {
	col, err := c.client.GetCollection(ctx, c.name, chroma.WithEmbeddingFunctionGet(efAdapter{c.emb}))
	if err != nil {
		return false, c.wrap("reading the collection", err)
	}
	v, _ := col.Metadata().GetString(versionKey)
	c.pmu.Lock()
	same := v == c.published
	c.pmu.Unlock()
	if same {
		return false, nil
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.locked(ctx, Shared, func() error { return c.load(ctx) }); err != nil {
		return false, err
	}
	c.pmu.Lock()
	c.published = v
	c.pmu.Unlock()
	return true, nil
}
