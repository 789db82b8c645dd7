package store

import (
	"context"
	"errors"
)

// ChromaOptions locate a Chroma collection.
type ChromaOptions struct {
	URL, Collection, Tenant, Database string
}

// OpenChroma opens the store on a Chroma server.
func OpenChroma(ctx context.Context, co ChromaOptions, opts Options) (Store, error) {
	return nil, errors.New("VECTOR_STORE=chroma: not built yet")
}
