package ingest

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"unicode"

	"github.com/caprag/caprag/internal/testenv"
)

var (
	srdPDFOnce sync.Once
	srdPDFBook *Book
	srdPDFErr  error
)

// srdPDF loads the 403-page SRD PDF once per test binary.
func srdPDF(tb testing.TB) *Book {
	tb.Helper()
	path := testenv.SRDPDF(tb)
	srdPDFOnce.Do(func() { srdPDFBook, srdPDFErr = LoadFile(context.Background(), path, Options{}) })
	if srdPDFErr != nil {
		tb.Fatal(srdPDFErr)
	}
	return srdPDFBook
}

// ngramWords folds text for the fidelity comparison: lower case, typographic quotes and dashes
// folded, words of letters and digits (an apostrophe inside a word kept).
func ngramWords(s string) []string {
	s = strings.ToLower(strings.NewReplacer("’", "'", "‘", "'", "“", `"`, "”", `"`, "−", "-", "–", "-", "—", "-", "‐", "-", "‑", "-").Replace(s))
	f := strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' })
	out := f[:0]
	for _, w := range f {
		if w = strings.Trim(w, "'"); w != "" {
			out = append(out, w)
		}
	}
	return out
}

var (
	mdTableLine = regexp.MustCompile(`^\s*\|`)
	mdMarks     = strings.NewReplacer("**", "", "__", "", "*", " ", "_", " ", "`", "")
)

// markdownRulesText returns the running text of a Markdown book, one string per paragraph:
// headings and table rows left out (their layout differs by design), emphasis and list marks
// removed.
func markdownRulesText(src string) []string {
	var paras []string
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			paras = append(paras, strings.Join(cur, " "))
			cur = nil
		}
	}
	for _, line := range strings.Split(src, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case t == "", strings.HasPrefix(t, "#"), mdTableLine.MatchString(t):
			flush()
		default:
			cur = append(cur, mdMarks.Replace(t))
		}
	}
	flush()
	return paras
}

// TestSRDPDFTextFidelity measures how much of the Markdown SRD's running text the PDF's passages
// hold word for word: the share of the 6-word sequences of every Markdown paragraph that occur
// in the PDF's passages (quotes, dashes and case folded). Words run together, split, dropped or
// read out of order all lower it. The books issue asks for at least 97%; the test holds 99%
// (the extractor reads 99.9%; the plain-text extraction it replaced read 97.0%).
func TestSRDPDFTextFidelity(t *testing.T) {
	b := srdPDF(t)
	const n = 6
	have := map[string]bool{}
	var all []string
	for _, p := range b.Passages {
		all = append(all, ngramWords(p.Text)...)
	}
	for i := 0; i+n <= len(all); i++ {
		have[strings.Join(all[i:i+n], " ")] = true
	}
	files, err := filepath.Glob(filepath.Join(testenv.SRDDir(t), "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	type miss struct {
		file string
		n    int
	}
	total, found := 0, 0
	var misses []miss
	for _, f := range files {
		if filepath.Base(f) == "ATTRIBUTION.md" {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m := 0
		for _, para := range markdownRulesText(string(src)) {
			w := ngramWords(para)
			for i := 0; i+n <= len(w); i++ {
				total++
				if have[strings.Join(w[i:i+n], " ")] {
					found++
				} else {
					m++
				}
			}
		}
		misses = append(misses, miss{filepath.Base(f), m})
	}
	sort.Slice(misses, func(i, j int) bool { return misses[i].n > misses[j].n })
	share := float64(found) / float64(total)
	t.Logf("%d of %d Markdown 6-word sequences found in the PDF's passages: %.1f%% (most missed: %v)", found, total, 100*share, misses[:min(4, len(misses))])
	if share < 0.99 {
		t.Errorf("text fidelity %.1f%%, want at least 99%%", 100*share)
	}
}
