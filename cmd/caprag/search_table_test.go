package main

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/caprag/caprag/evalset"
	"github.com/caprag/caprag/offline"
	"github.com/caprag/caprag/rag"
)

// TestFirstSearchTable measures the first search on both corpora with their dev sets: the mean
// share of gold sections found, for the questions in players' words and in the books' terms, by
// the question alone (top 5), by the first hop of multi-hop without the expander (the question
// and the rules it names), and by the first hop with the offline expander (the books' names for
// the players' words, each clause, the quoted and capitalised names). A measurement, run on
// request (README, "Answers"):
//
//	CAPRAG_SEARCH_TABLE=1 go test -run FirstSearchTable -v ./cmd/caprag/
func TestFirstSearchTable(t *testing.T) {
	if os.Getenv("CAPRAG_SEARCH_TABLE") == "" {
		t.Skip("a measurement: set CAPRAG_SEARCH_TABLE=1 (see the comment)")
	}
	ctx := context.Background()
	fmt.Println("| corpus | style | questions | question alone, top 5 | first hop, no expander | first hop, offline expander |")
	fmt.Println("| --- | --- | ---: | ---: | ---: | ---: |")
	for _, name := range []string{"srd51", "fate"} {
		paths := corpora(t)[name]
		s := loadCorpus(t, paths[0])
		qs, err := evalset.Load(paths[1])
		if err != nil {
			t.Fatal(err)
		}
		m := offline.Models(s)
		hop1 := func(e rag.Expander) rag.MultiHop {
			return rag.MultiHop{Retriever: s, Resolver: s, Expander: e, Analyzer: m.Analyzer, TopK: 5, MaxHops: 1, MaxQueries: 4}
		}
		recall := func(q evalset.Question, docs []rag.Document) float64 {
			var ps []evalset.Passage
			for _, d := range docs {
				ps = append(ps, evalset.Passage{Book: d.Book, Section: d.Section})
			}
			n, _ := q.Recall(ps)
			return float64(n) / float64(len(q.Gold))
		}
		type acc struct{ n, alone, bare, expanded float64 }
		by := map[string]*acc{}
		for _, q := range qs {
			docs, err := s.Retrieve(ctx, q.Question, rag.SearchOptions{K: 5})
			if err != nil {
				t.Fatal(err)
			}
			bare, err := hop1(nil).Execute(ctx, rag.State{Question: q.Question})
			if err != nil {
				t.Fatal(err)
			}
			expanded, err := hop1(m.Expander).Execute(ctx, rag.State{Question: q.Question})
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{q.Style, "all"} {
				if by[k] == nil {
					by[k] = &acc{}
				}
				a := by[k]
				a.n++
				a.alone += recall(q, docs)
				a.bare += recall(q, bare.Context())
				a.expanded += recall(q, expanded.Context())
			}
		}
		for _, k := range []string{evalset.PlayerWords, evalset.BookTerms, "all"} {
			a := by[k]
			fmt.Printf("| %s | %s | %.0f | %.0f%% | %.0f%% | %.0f%% |\n", name, k, a.n, 100*a.alone/a.n, 100*a.bare/a.n, 100*a.expanded/a.n)
		}
	}
}
