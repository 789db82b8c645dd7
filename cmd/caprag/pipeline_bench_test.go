package main

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/caprag/caprag/evalset"
	"github.com/caprag/caprag/rag"
)

// BenchmarkOfflinePipeline times the whole offline pipeline (multi-hop search, analysis and the
// extractive answer; no model, no cache) on every dev question of each corpus, and reports the
// median and 95th percentile of the time per question (the general-retrieval issue's target on
// the SRD: p95 under 20 ms). Run:
//
//	go test -run '^$' -bench OfflinePipeline -benchtime 5x ./cmd/caprag/
func BenchmarkOfflinePipeline(b *testing.B) {
	for _, name := range []string{"srd51", "fate"} {
		b.Run(name, func(b *testing.B) {
			paths := corpora(b)[name]
			s := loadCorpus(b, paths[0])
			p := offlinePipeline(b, s)
			qs, err := evalset.Load(paths[1])
			if err != nil {
				b.Fatal(err)
			}
			var lat []time.Duration
			b.ResetTimer()
			for range b.N {
				for _, q := range qs {
					start := time.Now()
					if _, err := p.Run(context.Background(), rag.Request{Question: q.Question, Strategy: rag.StrategyMultiHop}); err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(start))
				}
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms/question")
			b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds())/1000, "p95-ms/question")
		})
	}
}
