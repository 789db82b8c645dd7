package store

import (
	"context"
	"fmt"

	chroma "github.com/amikos-tech/chroma-go/pkg/api/v2"
)

// Books changed by another process (`caprag ingest` beside a running bot) reach this one with
// Refresh: the embedded store compares its file's checksum with the one it last read or wrote;
// the Chroma store compares the version its writers publish in the collection's metadata.

// Refresh reads the books again when another process changed them since this one last read or
// wrote them, and reports whether it did. A change this process makes meanwhile wins: what
// Refresh read is then dropped.
func (s *Local) Refresh(ctx context.Context) (bool, error) {
	if s.path == "" {
		return false, nil
	}
	s.mu.RLock()
	known := s.sum
	s.mu.RUnlock()
	if CheckedSum(s.path) == known {
		return false, nil
	}
	entries, emb, sum, err := readStore(s.path)
	if err != nil {
		return false, err
	}
	if emb != s.emb.ID() && len(entries) > 0 {
		return false, fmt.Errorf("the books in %s were indexed with %s, the settings ask for %s", s.path, emb, s.emb.ID())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sum != known { // this process wrote meanwhile: its books are newer than what was read
		return false, nil
	}
	s.entries = make(map[string]*entry, len(entries))
	for i := range entries {
		s.entries[entries[i].P.ID] = &entries[i]
	}
	s.rebuild()
	s.sum = sum
	return true, nil
}

// versionKey is the collection metadata where writers publish the books' version.
const versionKey = "caprag_version"

// publish records the books' version in the collection's metadata after a change (x.mu held),
// so that other processes see that they must read the collection again.
func (c *Chroma) publish(ctx context.Context) error {
	meta := chroma.NewMetadata(chroma.NewStringAttribute(embedderKey, c.emb.ID()), chroma.NewStringAttribute(versionKey, c.version))
	if err := c.col.ModifyMetadata(ctx, meta); err != nil {
		return c.wrap("publishing the books' version", err)
	}
	c.published = c.version
	return nil
}

// Refresh reads the collection again when another process published a change since this one
// last read or wrote it, and reports whether it did.
func (c *Chroma) Refresh(ctx context.Context) (bool, error) {
	col, err := c.client.GetCollection(ctx, c.col.Name(), chroma.WithEmbeddingFunctionGet(efAdapter{c.emb}))
	if err != nil {
		return false, c.wrap("reading the collection", err)
	}
	v, _ := col.Metadata().GetString(versionKey)
	c.mu.RLock()
	known := c.published
	c.mu.RUnlock()
	if v == known {
		return false, nil
	}
	for range 2 {
		if err := c.locked(ctx, Shared, func() error { return c.load(ctx) }); err != nil {
			return false, err
		}
		c.mu.Lock()
		wrote := c.published != known // this process wrote while the collection was read
		if !wrote {
			c.published = v
		}
		known = c.published
		c.mu.Unlock()
		if !wrote {
			break
		}
	}
	return true, nil
}
