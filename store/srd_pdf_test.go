package store

import (
	"context"
	"testing"

	"github.com/caprag/caprag/embed"
	"github.com/caprag/caprag/evalset"
	"github.com/caprag/caprag/ingest"
	"github.com/caprag/caprag/internal/testenv"
)

// The SRD read from its 403-page PDF (one book: gold matched by section heading path alone) puts
// the gold sections of the single-hop dev questions in the top 5 within 5 points of the
// Markdown SRD, both with the default settings (the books issue's figure).
func TestSRDPDFSingleHopRecall(t *testing.T) {
	b, err := ingest.LoadFile(context.Background(), testenv.SRDPDF(t), ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pdf := NewMemory(Options{Embedder: embed.NewLocal(embed.LocalDims)})
	fill(t, pdf, []ingest.Book{*b})
	md := NewMemory(Options{Embedder: embed.NewLocal(embed.LocalDims)})
	fill(t, md, srd(t))
	pr, pmissed := singleHopRecallBy(t, pdf, evalset.MatchSection)
	mr, mmissed := singleHopRecall(t, md)
	t.Logf("top-5 single-hop recall: PDF %.0f%% (missed %v), Markdown %.0f%% (missed %v)", 100*pr, pmissed, 100*mr, mmissed)
	if pr < mr-0.05 {
		t.Errorf("PDF top-5 single-hop recall %.0f%% is more than 5 points below the Markdown's %.0f%%", 100*pr, 100*mr)
	}
}
