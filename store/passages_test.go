package store

import (
	"context"
	"errors"
	"testing"

	"github.com/caprag/caprag/embed"
	"github.com/caprag/caprag/ingest"
)

func TestPassagesOfABookInReadingOrder(t *testing.T) {
	ctx := context.Background()
	s := NewMemory(Options{Embedder: embed.NewLocal(embed.LocalDims)})
	b, err := ingest.LoadBytes(ctx, "Basic Set.md", []byte("# Combat\n\nRoll a d20.\n\n## Grappling\n\nGrab a creature.\n\n# Magic\n\nCast a spell.\n"), ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	other, _ := ingest.LoadBytes(ctx, "Other.md", []byte("# Other\n\nSomething else.\n"), ingest.Options{})
	fill(t, s, []ingest.Book{*other, *b})
	ps, err := s.Passages(ctx, "basic set")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range ps {
		got = append(got, p.Section+": "+p.Text)
		if p.Book != "Basic Set" {
			t.Errorf("passage of book %q", p.Book)
		}
	}
	want := []string{"Combat: Roll a d20.", "Combat > Grappling: Grab a creature.", "Magic: Cast a spell."}
	if len(got) != len(want) {
		t.Fatalf("passages %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("passage %d is %q, want %q", i, got[i], want[i])
		}
	}
	if _, err := s.Passages(ctx, "Missing"); !errors.Is(err, ErrNoBook) {
		t.Errorf("missing book: %v, want ErrNoBook", err)
	}
}
