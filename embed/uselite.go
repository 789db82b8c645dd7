package embed

import "fmt"

// NewUSELite loads the USE-Lite sentence encoder from dir.
func NewUSELite(dir string) (Embedder, error) {
	return nil, fmt.Errorf("EMBEDDINGS_PROVIDER=use-lite is not available in this build (model folder %s)", dir)
}
