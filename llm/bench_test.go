package llm_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/caprag/caprag/llm"
	"github.com/caprag/caprag/rag"
)

// BenchmarkAnalyzeRoundTrip measures what the llm layer adds to one analyzer call: prompt
// building for 15 passages, the langchaingo request to a local scripted server and the tolerant
// parse of a reply with prose around the JSON. A real model's latency comes on top.
func BenchmarkAnalyzeRoundTrip(b *testing.B) {
	srv := newScripted(b, always(reply{Content: "Verdict:\n```json\n{\"sufficient\": false, \"new_queries\": [\"Grappled\", \"Prone\"]}\n```"}))
	m, _ := models(b, srv.openaiConfig(5*time.Second))
	var many []rag.Document
	for i := range 15 {
		many = append(many, rag.Document{Book: "SRD", Section: fmt.Sprintf("Section %d", i), Text: strings.Repeat("A creature that is grappled can't move. ", 50)})
	}
	in := rag.AnalyzeInput{Question: question, Documents: llm.Facts(many, hints), Max: 3}
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if a, err := m.Analyzer.Analyze(ctx, in); err != nil || a.Sufficient {
			b.Fatalf("Analyze = %+v, %v", a, err)
		}
	}
}
