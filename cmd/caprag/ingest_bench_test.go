package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/caprag/caprag/internal/testenv"
)

// BenchmarkIngestSRDPDF times the whole `caprag ingest` of the 403-page SRD PDF (read, lay out,
// structure, chunk, link, embed with the default local embedder, save) and poppler's
// `pdftotext` on the same file, alternating the two in one run, and reports the median of each
// and their ratio (the books issue's target: at most 1.5). Skips when pdftotext is missing
// (apt install poppler-utils). Run:
//
//	go test -run '^$' -bench IngestSRDPDF -benchtime 7x ./cmd/caprag/
func BenchmarkIngestSRDPDF(b *testing.B) {
	path := testenv.SRDPDF(b)
	if _, err := os.Stat(path); err != nil {
		testenv.Missing(b, "the SRD PDF at %s", path)
	}
	if _, err := exec.LookPath("pdftotext"); err != nil {
		b.Skip("pdftotext not installed (apt install poppler-utils)")
	}
	for _, k := range []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "LLM_PROVIDER", "VECTOR_STORE", "EMBEDDINGS_PROVIDER", "SEARCH_MODE"} {
		b.Setenv(k, "")
		os.Unsetenv(k)
	}
	var ours, theirs []time.Duration
	for i := 0; i < b.N; i++ {
		b.Setenv("DATA_DIR", filepath.Join(b.TempDir(), "data"))
		start := time.Now()
		if code := run(context.Background(), []string{"ingest", path}, strings.NewReader(""), io.Discard, io.Discard); code != 0 {
			b.Fatalf("caprag ingest exit %d", code)
		}
		ours = append(ours, time.Since(start))
		start = time.Now()
		if err := exec.Command("pdftotext", path, os.DevNull).Run(); err != nil {
			b.Fatal(err)
		}
		theirs = append(theirs, time.Since(start))
	}
	median := func(d []time.Duration) float64 {
		s := slices.Clone(d)
		slices.Sort(s)
		return float64(s[len(s)/2].Milliseconds())
	}
	b.ReportMetric(median(ours), "caprag-ms")
	b.ReportMetric(median(theirs), "pdftotext-ms")
	b.ReportMetric(median(ours)/median(theirs), "ratio")
}
