package uselite

import (
	"strings"
	"unicode/utf16"

	unorm "golang.org/x/text/unicode/norm"
)

// tokenizer is the SentencePiece unigram tokenizer of @energetic-ai/embeddings, ported exactly
// (NFKC, "▁" word starts, Viterbi over a trie of pieces, consecutive unknowns merged).
type tokenizer struct {
	root    *trieNode
	pieces  []string
	lengths []int // UTF-16 length of each piece, as the JavaScript backtracking counts
}

type trieNode struct {
	children map[rune]*trieNode
	end      bool
	score    float64
	index    int
	length   int // in runes
}

const reservedSymbols = 6

func newTokenizer(vocab [][2]any) *tokenizer {
	t := &tokenizer{root: &trieNode{children: map[rune]*trieNode{}}}
	for i, v := range vocab {
		piece, _ := v[0].(string)
		score, _ := v[1].(float64)
		t.pieces = append(t.pieces, piece)
		t.lengths = append(t.lengths, len(utf16.Encode([]rune(piece))))
		if i < reservedSymbols {
			continue
		}
		node := t.root
		rs := []rune(piece)
		for j, r := range rs {
			c := node.children[r]
			if c == nil {
				c = &trieNode{children: map[rune]*trieNode{}}
				node.children[r] = c
			}
			node = c
			if j == len(rs)-1 {
				node.end, node.score, node.index, node.length = true, score, i, len(rs)
			}
		}
	}
	return t
}

type match struct {
	length int
	score  float64
	index  int
}

func (t *tokenizer) prefixes(ss []rune) []match {
	var out []match
	node := t.root.children[ss[0]]
	for i := 0; i < len(ss) && node != nil; i++ {
		if node.end {
			out = append(out, match{node.length, node.score, node.index})
		}
		if i+1 < len(ss) {
			node = node.children[ss[i+1]]
		} else {
			node = nil
		}
	}
	if len(out) == 0 {
		out = append(out, match{1, 0, 0})
	}
	return out
}

// encode returns the token ids of a text.
func (t *tokenizer) encode(input string) []int {
	input = unorm.NFKC.String(input)
	if input != "" {
		input = "▁" + strings.ReplaceAll(input, " ", "▁")
	}
	symbols := []rune(input)
	n := len(symbols)
	// nodes[end] lists, by start position ascending, the pieces ending at end.
	type cand struct {
		start int
		m     match
	}
	nodes := make([][]cand, n+1)
	for i := 0; i < n; i++ {
		for _, m := range t.prefixes(symbols[i:]) {
			nodes[i+m.length] = append(nodes[i+m.length], cand{i, m})
		}
	}
	best := make([]float64, n+1)
	words := make([]int, n+1)
	for end := 0; end <= n; end++ {
		cs := nodes[end]
		// JavaScript iterates object keys (start positions) in ascending order, then the pieces of
		// each start in insertion order: the order they were appended in.
		for _, c := range cs {
			score := c.m.score + best[end-c.m.length]
			if best[end] == 0 || score >= best[end] {
				best[end] = score
				words[end] = c.m.index
			}
		}
	}
	var results []int
	for iter := n; iter > 0; {
		results = append(results, words[iter])
		iter -= t.lengths[words[iter]]
	}
	merged := make([]int, 0, len(results))
	prevUnk := false
	for _, id := range results {
		if !(prevUnk && id == 0) {
			merged = append(merged, id)
		}
		prevUnk = id == 0
	}
	for i, j := 0, len(merged)-1; i < j; i, j = i+1, j-1 {
		merged[i], merged[j] = merged[j], merged[i]
	}
	return merged
}
