package llm

import (
	"fmt"
	"strings"
	"testing"

	"github.com/caprag/caprag/rag"
)

// BenchmarkPrompts measures building the analyzer's and the writer's prompts for 15 passages of
// 1,400 characters (90 hints, 100 section titles) fitted to a 3,300-token budget, and the
// analyzer's with a table of contents of 2,000 sections (3 books × 20 chapters × 33) in a
// 16,384-token window (cut to its room) and a 100,000-token one (whole).
func BenchmarkPrompts(b *testing.B) {
	var docs []rag.DocFacts
	var plain []rag.Document
	for i := range 15 {
		d := rag.DocFacts{Document: rag.Document{Book: "srd", Section: fmt.Sprintf("Combat > Rule %d", i), Text: strings.Repeat("A creature that is grappled can't move and takes damage. ", 25)}, Rank: i, Hop: 1}
		for j := range 6 {
			d.Hints = append(d.Hints, rag.Reference{Kind: rag.RefSee, Text: "see X", Target: fmt.Sprintf("Target %d %d", i, j)})
		}
		docs = append(docs, d)
		plain = append(plain, d.Document)
	}
	var secs []string
	for i := range 100 {
		secs = append(secs, fmt.Sprintf("Section Title Number %d", i))
	}
	in := rag.AnalyzeInput{Question: "Can a grappled creature cast a spell?", Documents: docs, Sections: secs, Max: 3}
	b.Run("analyze", func(b *testing.B) {
		for b.Loop() {
			analyzePrompt(in, 3, 3300)
		}
	})
	toc := tocOf([]string{"Core", "Companion", "Almanac"}, 20, 16) // 2,016 sections
	withTOC := in
	withTOC.Contents = toc
	for _, window := range []int{16384, 100000} {
		b.Run(fmt.Sprintf("analyze-contents-%d", window), func(b *testing.B) {
			for b.Loop() {
				analyzePrompt(withTOC, 3, window)
			}
		})
	}
	b.Run("write", func(b *testing.B) {
		for b.Loop() {
			writePrompt(in.Question, plain, nil, 3300)
		}
	})
}
