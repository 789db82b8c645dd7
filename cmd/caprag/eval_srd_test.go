package main

import (
	"context"
	"testing"

	"github.com/caprag/caprag/evalset"
	"github.com/caprag/caprag/internal/testenv"
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
