package store

import (
	"cmp"
	"math"
	"slices"
)

// bm25 is an Okapi BM25 index over tokenised documents (k1 = 1.2, b = 0.75).
type bm25 struct {
	postings map[string][]posting
	lengths  []float64
	avg      float64
}

type posting struct {
	doc int
	tf  float64
}

func newBM25(docs [][]string) *bm25 {
	ix := &bm25{postings: map[string][]posting{}, lengths: make([]float64, len(docs))}
	var total float64
	for d, toks := range docs {
		tf := map[string]float64{}
		for _, t := range toks {
			tf[t]++
		}
		for t, n := range tf {
			ix.postings[t] = append(ix.postings[t], posting{d, n})
		}
		ix.lengths[d] = float64(len(toks))
		total += float64(len(toks))
	}
	if len(docs) > 0 {
		ix.avg = total / float64(len(docs))
	}
	return ix
}

// search returns the indexes of the n best documents for the query tokens among those ok accepts.
func (ix *bm25) search(query []string, n int, ok func(int) bool) []int {
	const k1, b = 1.2, 0.75
	N := float64(len(ix.lengths))
	scores := map[int]float64{}
	seen := map[string]bool{}
	for _, t := range query {
		if seen[t] {
			continue
		}
		seen[t] = true
		ps := ix.postings[t]
		if len(ps) == 0 {
			continue
		}
		idf := math.Log(1 + (N-float64(len(ps))+0.5)/(float64(len(ps))+0.5))
		for _, p := range ps {
			norm := p.tf * (k1 + 1) / (p.tf + k1*(1-b+b*ix.lengths[p.doc]/ix.avg))
			scores[p.doc] += idf * norm
		}
	}
	docs := make([]int, 0, len(scores))
	for d := range scores {
		if ok(d) {
			docs = append(docs, d)
		}
	}
	slices.SortFunc(docs, func(a, b int) int { return cmp.Or(cmp.Compare(scores[b], scores[a]), cmp.Compare(a, b)) })
	if len(docs) > n {
		docs = docs[:n]
	}
	return docs
}
