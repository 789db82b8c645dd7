package main

import (
	"context"
	"strings"
	"testing"

	"github.com/caprag/caprag/evalset"
	"github.com/caprag/caprag/internal/testenv"
	"github.com/caprag/caprag/offline"
	"github.com/caprag/caprag/rag"
)

// TestEvalOnTheSRD runs both strategies offline over the SRD with the dev set and guards the
// figures of the answers issue: on single-hop questions multi-hop stops after one hop at least
// 80% of the time, and on multi-hop questions it reaches full recall at least 85% of the time and
// beats multi-question by at least 25 points. The store has the default settings
// (SEARCH_MODE=auto: BM25 with the local embedder).
func TestEvalOnTheSRD(t *testing.T) {
	ctx := context.Background()
	p := srdPipeline(t, testenv.SRDDir(t))
	qs, err := evalset.Load(testenv.EvalSet(t))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := evaluate(ctx, p, qs, []string{rag.StrategyMultiHop, rag.StrategyMultiQuestion}, evalset.MatchBookSection, nil)
	if err != nil {
		t.Fatal(err)
	}
	get := func(strategy, kind string) evalRow {
		for _, r := range rows {
			if r.Strategy == strategy && r.Kind == kind {
				return r
			}
		}
		t.Fatalf("no row %s/%s", strategy, kind)
		return evalRow{}
	}
	mhSingle, mhMulti, mqMulti := get("multi-hop", "single-hop"), get("multi-hop", "multi-hop"), get("multi-question", "multi-hop")
	t.Logf("multi-hop: single-hop one-hop %.0f%%, multi-hop full recall %.0f%%; multi-question multi-hop full recall %.0f%%",
		100*mhSingle.OneHopShare, 100*mhMulti.FullRecall, 100*mqMulti.FullRecall)
	if mhSingle.OneHopShare < 0.8 {
		t.Errorf("multi-hop stops after one hop on %.0f%% of single-hop questions, want ≥ 80%%", 100*mhSingle.OneHopShare)
	}
	if mhMulti.FullRecall-mqMulti.FullRecall < 0.25 {
		t.Errorf("multi-hop beats multi-question by %.0f points on multi-hop questions, want ≥ 25", 100*(mhMulti.FullRecall-mqMulti.FullRecall))
	}
	if mhMulti.FullRecall < 0.85 {
		t.Errorf("multi-hop full recall %.0f%% on multi-hop questions, want ≥ 85%%", 100*mhMulti.FullRecall)
	}
}

// BenchmarkOfflineWriterSRD times the offline answer writer alone on the passages the default
// strategy (multi-hop) hands it for each SRD dev question, in turn.
func BenchmarkOfflineWriterSRD(b *testing.B) {
	ctx := context.Background()
	s := loadCorpus(b, testenv.SRDDir(b))
	p, err := rag.NewPipeline(rag.PipelineOptions{Retriever: s, Resolver: s, Library: s, Versioner: s, Models: offline.Models(s)})
	if err != nil {
		b.Fatal(err)
	}
	qs, err := evalset.Load(testenv.EvalSet(b))
	if err != nil {
		b.Fatal(err)
	}
	type input struct {
		question string
		docs     []rag.Document
	}
	var in []input
	for _, q := range qs {
		res, err := p.Run(ctx, rag.Request{Question: q.Question, Strategy: rag.StrategyMultiHop})
		if err != nil {
			b.Fatal(err)
		}
		in = append(in, input{q.Question, res.State.Context()})
	}
	w := offline.Writer{Vocabulary: s}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		x := in[i%len(in)]
		if _, err := w.Write(ctx, x.question, x.docs, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// TestOfflineAnswersOnBothCorpora guards what the offline answer shows the player, on the SRD
// and on the Fate books. With the default strategy (multi-hop), the share of gold sections the
// answer cites with [n] is at least 85% of the share the writer was handed, and at least 80% on
// the SRD (the answers issue's target; on the Fate books retrieval brings 66%). A question about
// something the books do not have (written for this test, not from the dev sets; Atomic Robo
// has rifles and battles, so the laser-rifle question is the SRD's only) reads as a miss, not as
// an answer.
func TestOfflineAnswersOnBothCorpora(t *testing.T) {
	motorcycle := "What is the fuel consumption of a motorcycle on the highway?"
	for _, c := range []struct {
		name     string
		min      float64
		offTopic []string
	}{
		{"srd51", 0.8, []string{motorcycle, "How do I reload a laser rifle during a starship battle?"}},
		{"fate", 0, []string{motorcycle, "How do I calculate THAC0 for my fighter?"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			paths := corpora(t)[c.name]
			qs, err := evalset.Load(paths[1])
			if err != nil {
				t.Fatal(err)
			}
			p := srdPipeline(t, paths[0])
			rows, err := evaluate(ctx, p, qs, []string{rag.StrategyMultiHop}, evalset.MatchBookSection, nil)
			if err != nil {
				t.Fatal(err)
			}
			all := rows[len(rows)-1]
			t.Logf("%s multi-hop: retrieval mean recall %.0f%%, cited recall %.0f%%", c.name, 100*all.MeanRecall, 100*all.CitedRecall)
			if all.Kind != "all" || all.CitedRecall < 0.85*all.MeanRecall || all.CitedRecall < c.min {
				t.Errorf("cited recall %.0f%% of the gold sections, retrieval %.0f%%: want at least 85%% of it and %.0f%%", 100*all.CitedRecall, 100*all.MeanRecall, 100*c.min)
			}
			for _, q := range c.offTopic {
				a, err := p.Answer(ctx, rag.Request{Question: q})
				if err != nil {
					t.Fatal(err)
				}
				if !strings.HasPrefix(a.Text, "Your books don't seem to cover ") {
					t.Errorf("%q reads like a hit:\n%s", q, a.Text)
				}
			}
		})
	}
}
