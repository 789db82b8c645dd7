package embed

import (
	"context"

	"github.com/caprag/caprag/uselite"
)

// USELite is the offline neural embedder: Universal Sentence Encoder Lite in pure Go.
type USELite struct{ m *uselite.Model }

// NewUSELite loads the USE-Lite model files from dir (caprag model fetch puts them there).
func NewUSELite(dir string) (Embedder, error) {
	m, err := uselite.Load(dir)
	if err != nil {
		return nil, err
	}
	return &USELite{m}, nil
}

// ID names the model.
func (u *USELite) ID() string { return "use-lite/energetic-ai-0.2.0/512" }

// EmbedDocuments embeds texts on all cores.
func (u *USELite) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	return u.m.Embed(ctx, texts)
}

// EmbedQuery embeds one query.
func (u *USELite) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	vs, err := u.m.Embed(ctx, []string{text})
	if err != nil {
		return nil, err
	}
	return vs[0], nil
}
