package embed

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caprag/caprag/config"
)

func norm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

func cos(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func TestLocalIsDeterministicNormalisedAndLexical(t *testing.T) {
	l := NewLocal(LocalDims)
	a, _ := l.EmbedQuery(context.Background(), "A grappled creature's speed becomes 0")
	b, _ := l.EmbedQuery(context.Background(), "A grappled creature's speed becomes 0")
	if len(a) != LocalDims || math.Abs(norm(a)-1) > 1e-5 || cos(a, b) < 0.99999 {
		t.Fatalf("dims %d, norm %f, self-similarity %f", len(a), norm(a), cos(a, b))
	}
	near, _ := l.EmbedQuery(context.Background(), "speed of grappling creatures")
	far, _ := l.EmbedQuery(context.Background(), "the price of a longsword in gold pieces")
	if cos(a, near) <= cos(a, far) {
		t.Fatalf("shared words do not bring vectors closer: %f vs %f", cos(a, near), cos(a, far))
	}
	empty, _ := l.EmbedQuery(context.Background(), "")
	if norm(empty) != 0 {
		t.Fatal("empty text must give a zero vector, not NaN")
	}
	if !strings.Contains(l.ID(), "2048") {
		t.Fatalf("ID %q does not name the dimensions", l.ID())
	}
}

func TestOpenAICompatibleEmbeddings(t *testing.T) {
	var got struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/embeddings") {
			http.NotFound(w, r)
			return
		}
		json.NewDecoder(r.Body).Decode(&got)
		var data []map[string]any
		for i := range got.Input {
			data = append(data, map[string]any{"object": "embedding", "index": i, "embedding": []float32{1, 0, float32(i)}})
		}
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": got.Model})
	}))
	defer srv.Close()
	e, err := New(config.Config{EmbeddingsProvider: "openai", EmbeddingsModel: "nomic-embed", OpenAIBaseURL: srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	vs, err := e.EmbedDocuments(context.Background(), []string{"a", "b"})
	if err != nil || len(vs) != 2 || got.Model != "nomic-embed" || e.ID() != "openai/nomic-embed" {
		t.Fatalf("vectors %v, err %v, model %q, id %q", vs, err, got.Model, e.ID())
	}
}

func TestUnknownProviderNamesTheVariable(t *testing.T) {
	_, err := New(config.Config{EmbeddingsProvider: "word2vec"})
	var ce *config.Error
	if !errors.As(err, &ce) || ce.Var != "EMBEDDINGS_PROVIDER" {
		t.Fatalf("err = %v", err)
	}
}
