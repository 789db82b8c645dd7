package main

import (
	"context"
	"strings"
	"testing"

	"github.com/caprag/caprag/evalset"
	"github.com/caprag/caprag/internal/testenv"
	"github.com/caprag/caprag/offline"
	"github.com/caprag/caprag/rag"
	"github.com/caprag/caprag/store"
)

// srdPipeline loads books (files or folders) into an embedded store with the default settings
// and returns an offline pipeline over it (the writer weighing words by the books).
func srdPipeline(t *testing.T, paths ...string) *rag.Pipeline {
	t.Helper()
	return offlinePipeline(t, loadCorpus(t, paths...))
}

// offlinePipeline is the offline pipeline over a store (the analyzer and expander reading its
// books' lexicon, the writer weighing words by the books), without a cache.
func offlinePipeline(tb testing.TB, s *store.Local) *rag.Pipeline {
	tb.Helper()
	p, err := rag.NewPipeline(rag.PipelineOptions{Retriever: s, Resolver: s, Library: s, Versioner: s, Models: offline.Models(s)})
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// TestSRDPDFAgainstMarkdown guards the books issue's figures for the SRD read from its PDF (one
// book, so gold is matched by section heading path alone) against the SRD's Markdown, both with
// the default settings and the offline models: multi-hop full recall of the multi-hop dev
// questions within 10 points, and the Grappling and Paralyzed rules cited on their printed pages
// with their sections. (The single-hop top-5 figure: TestSRDPDFSingleHopRecall in store/.)
func TestSRDPDFAgainstMarkdown(t *testing.T) {
	qs, err := evalset.Load(testenv.EvalSet(t))
	if err != nil {
		t.Fatal(err)
	}
	mdPipe := srdPipeline(t, testenv.SRDDir(t))
	pdfPipe := srdPipeline(t, testenv.SRDPDF(t))
	full := func(p *rag.Pipeline, m evalset.Match) float64 {
		rows, err := evaluate(context.Background(), p, qs, []string{rag.StrategyMultiHop}, m, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if r.Kind == evalset.MultiHop {
				return r.FullRecall
			}
		}
		t.Fatal("no multi-hop row")
		return 0
	}
	mdFull, pdfFull := full(mdPipe, evalset.MatchBookSection), full(pdfPipe, evalset.MatchSection)
	t.Logf("multi-hop full recall: PDF %.0f%%, Markdown %.0f%%", 100*pdfFull, 100*mdFull)
	if pdfFull < mdFull-0.10 {
		t.Errorf("PDF multi-hop full recall %.0f%% is more than 10 points below the Markdown's %.0f%%", 100*pdfFull, 100*mdFull)
	}
	for _, c := range []struct {
		question, section string
		page              int
	}{
		{"How does grappling work? Can I grab a creature with a free hand?", "Grappling", 95},
		{"What does the paralyzed condition do to a creature?", "Paralyzed", 358},
	} {
		res, err := pdfPipe.Run(context.Background(), rag.Request{Question: c.question, Strategy: rag.StrategyMultiHop})
		if err != nil {
			t.Fatal(err)
		}
		cited := false
		for _, s := range res.Sources {
			if strings.HasSuffix(s.Section, " > "+c.section) && s.Page == c.page {
				cited = true
			}
		}
		if !cited {
			var got []string
			for _, s := range res.Sources {
				got = append(got, s.Section)
			}
			t.Errorf("%q: no source in section %s on page %d (sources %q)", c.question, c.section, c.page, got)
		}
	}
}
