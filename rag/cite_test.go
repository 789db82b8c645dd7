package rag

import (
	"slices"
	"testing"
)

func TestNormalizeCitations(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		cited    []int
	}{
		{"a [1] b [2]", "a [1] b [2]", []int{1, 2}},
		{"a [1, 2; 3]", "a [1][2][3]", []int{1, 2, 3}},
		{"a [1-3] and [2–3]", "a [1][2][3] and [2][3]", []int{1, 2, 3}},
		{"see [Passage 3] and [passages 1 and 2]", "see [3] and [1][2]", []int{3, 1, 2}},
		{"as (3) says, and (Passage 2)", "as [3] says, and [2]", []int{3, 2}},
		{"unknown [0] [4] [9] kept [3]", "unknown  kept [3]", []int{3}},
		{"roll [2d6] or (1d4), level (12)", "roll [2d6] or (1d4), level (12)", nil},
		{"the PHB says so [PHB] [2]", "the PHB says so [2]", []int{2}},
		{"a huge range [1-40]", "a huge range ", nil},
		{"[1][2] and [3]", "[1][2] and [3]", []int{1, 2, 3}},
	} {
		got, cited := NormalizeCitations(tc.in, 3)
		if got != tc.want || !slices.Equal(cited, tc.cited) {
			t.Errorf("NormalizeCitations(%q) = %q, %v; want %q, %v", tc.in, got, cited, tc.want, tc.cited)
		}
	}
}

// TestCitedSourcesFirst: the sources are the cited passages in citation order, renumbered in
// the text; the context keeps every passage, cited first.
func TestCitedSourcesFirst(t *testing.T) {
	docs := []Document{{Book: "A", Text: "a"}, {Book: "B", Text: "b"}, {Book: "C", Text: "c"}, {Book: "D", Text: "d"}}
	text, sources, context := cite("Grappled creatures stop [3]. Prone creatures crawl (Passage 1)[3].", docs)
	if want := "Grappled creatures stop [1]. Prone creatures crawl [2][1]."; text != want {
		t.Errorf("text = %q, want %q", text, want)
	}
	var got []string
	for _, s := range sources {
		got = append(got, s.Book)
	}
	if !slices.Equal(got, []string{"C", "A"}) || sources[0].N != 1 || sources[1].N != 2 {
		t.Errorf("sources = %+v, want C as [1], A as [2]", sources)
	}
	got = nil
	for i, s := range context {
		got = append(got, s.Book)
		if s.N != i+1 {
			t.Errorf("context[%d].N = %d", i, s.N)
		}
	}
	if !slices.Equal(got, []string{"C", "A", "B", "D"}) {
		t.Errorf("context = %q, want the cited first, then the rest in order", got)
	}
}
