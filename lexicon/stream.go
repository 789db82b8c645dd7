package lexicon

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/caprag/caprag/internal/leslice"
	"github.com/caprag/caprag/passage"
	"github.com/caprag/caprag/words"
)

// stream is a part's words, compact: each distinct word and stem once, and each passage's
// content words as indices into them. A library holds its passages' words this way (16 bytes a
// word, in the store's file when the part was read from one) instead of as Go strings, and
// reads a passage's Tokens from it when a question needs them.
type stream struct {
	blob     []byte   // the distinct words, then the distinct stems, concatenated
	wordOff  []uint32 // word i is blob[wordOff[i]:wordOff[i+1]]; word 0 is "" (no word before)
	wordStem []uint32 // the stem of word i, or noStem for a word only ever seen before a token
	stemOff  []uint32 // stem i is blob[stemOff[i]:stemOff[i+1]]; stems are sorted
	stemDF   []uint32 // how many of the part's passages use stem i
	at       []uint32 // passage i's tokens are [at[i], at[i+1])
	toks     []uint32 // 4 a token: word, word before it, sentence, paragraph
	// defLen is, for each term of the part, how many stems its defining sentence holds (see
	// definition); defIdx lists (stem, term) pairs, sorted, for finding terms by the words of
	// their definitions (Bridge).
	defLen []uint32
	defIdx []uint32
}

const noStem = ^uint32(0)

func (s *stream) word(i uint32) string {
	return leslice.String(s.blob[s.wordOff[i]:s.wordOff[i+1]])
}

func (s *stream) stem(i uint32) string {
	return leslice.String(s.blob[s.stemOff[i]:s.stemOff[i+1]])
}

// stemIndex finds a stem, or returns noStem.
func (s *stream) stemIndex(stem string) uint32 {
	n := len(s.stemDF)
	lo, hi := 0, n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s.stem(uint32(m)) < stem {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < n && s.stem(uint32(lo)) == stem {
		return uint32(lo)
	}
	return noStem
}

// tokens appends passage i's tokens to buf; their strings point into the stream.
func (s *stream) tokens(i int, buf []Token) []Token {
	for k := s.at[i]; k < s.at[i+1]; k++ {
		t := s.toks[4*k : 4*k+4]
		buf = append(buf, Token{Stem: s.stem(s.wordStem[t[0]]), Raw: s.word(t[0]), Prev: s.word(t[1]), Sentence: int(t[2]), Para: int(t[3])})
	}
	return buf
}

// uses reports whether passage i uses stem si.
func (s *stream) uses(i int, si uint32) bool {
	for k := s.at[i]; k < s.at[i+1]; k++ {
		if s.wordStem[s.toks[4*k]] == si {
			return true
		}
	}
	return false
}

// holds reports whether passage i uses a stem marked in hit.
func (s *stream) holds(i int, hit []bool) bool {
	for k := s.at[i]; k < s.at[i+1]; k++ {
		if hit[s.wordStem[s.toks[4*k]]] {
			return true
		}
	}
	return false
}

// defined returns the terms whose defining sentences hold stem si.
func (s *stream) defined(si uint32) []uint32 {
	pairs := len(s.defIdx) / 2
	lo, hi := 0, pairs
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s.defIdx[2*m] < si {
			lo = m + 1
		} else {
			hi = m
		}
	}
	var out []uint32
	for ; lo < pairs && s.defIdx[2*lo] == si; lo++ {
		out = append(out, s.defIdx[2*lo+1])
	}
	return out
}

// builder gathers a part's words as Read tokenizes its passages.
type builder struct {
	words map[string]uint32
	list  []string
	stems map[string]bool
	at    []uint32
	toks  []uint32
}

func newBuilder() *builder {
	return &builder{words: map[string]uint32{"": 0}, list: []string{""}, stems: map[string]bool{}, at: []uint32{0}}
}

func (b *builder) word(w string) uint32 {
	i, ok := b.words[w]
	if !ok {
		i = uint32(len(b.list))
		b.words[w] = i
		b.list = append(b.list, w)
	}
	return i
}

// add appends a passage's tokens.
func (b *builder) add(toks []Token) {
	for _, t := range toks {
		b.stems[t.Stem] = true
		b.toks = append(b.toks, b.word(t.Raw), b.word(t.Prev), uint32(t.Sentence), uint32(t.Para))
	}
	b.at = append(b.at, uint32(len(b.toks)/4))
}

// build makes the stream; defs are each term's definition stems.
func (b *builder) build(defs [][]string) *stream {
	for _, d := range defs {
		for _, st := range d {
			b.stems[st] = true // a definition's words are the passage's: this is for safety only
		}
	}
	stems := slices.Sorted(mapKeys(b.stems))
	stemAt := make(map[string]uint32, len(stems))
	s := &stream{at: b.at, toks: b.toks}
	var blob strings.Builder
	s.wordOff = append(s.wordOff, 0)
	for _, w := range b.list {
		blob.WriteString(w)
		s.wordOff = append(s.wordOff, uint32(blob.Len()))
	}
	s.stemOff = append(s.stemOff, uint32(blob.Len()))
	for i, st := range stems {
		stemAt[st] = uint32(i)
		blob.WriteString(st)
		s.stemOff = append(s.stemOff, uint32(blob.Len()))
	}
	s.blob = []byte(blob.String())
	s.wordStem = make([]uint32, len(b.list))
	for i := range s.wordStem {
		s.wordStem[i] = noStem
	}
	s.stemDF = make([]uint32, len(stems))
	for d := 0; d+1 < len(b.at); d++ {
		seen := map[uint32]bool{}
		for k := b.at[d]; k < b.at[d+1]; k++ {
			w := b.toks[4*k]
			st := stemAt[words.Stem(b.list[w])]
			s.wordStem[w] = st
			if !seen[st] {
				seen[st] = true
				s.stemDF[st]++
			}
		}
	}
	s.defLen = make([]uint32, len(defs))
	var pairs [][2]uint32
	for ti, d := range defs {
		s.defLen[ti] = uint32(len(d))
		for _, st := range d {
			pairs = append(pairs, [2]uint32{stemAt[st], uint32(ti)})
		}
	}
	slices.SortFunc(pairs, func(a, b [2]uint32) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	for _, pr := range pairs {
		s.defIdx = append(s.defIdx, pr[0], pr[1])
	}
	return s
}

// partFormat is the version of Encode's layout.
const partFormat = 1

// Encode writes the part (its docs excepted: the store keeps them) as bytes that Decode reads
// back in place. The arrays start 4-aligned from the start of the result.
func (p Part) Encode() []byte {
	s := p.words()
	var e encoder
	e.Uvarint(partFormat)
	e.Uvarint(uint64(len(p.Docs)))
	e.Bool(p.Paged)
	e.Uvarint(uint64(len(p.Terms)))
	for _, t := range p.Terms {
		e.Str(t.Key)
		e.Str(t.Name)
		e.Uvarint(uint64(t.Kind))
		e.Uvarint(uint64(t.Doc))
		e.Uvarint(uint64(len(t.Exact)))
		for _, x := range t.Exact {
			e.Str(x)
		}
	}
	nrefs := 0
	for _, rs := range p.Refs {
		nrefs += len(rs)
	}
	e.Uvarint(uint64(nrefs))
	for d, rs := range p.Refs {
		for _, r := range rs {
			e.Uvarint(uint64(d))
			e.Str(string(r.Kind))
			e.Str(r.Text)
			e.Str(r.Target)
			e.Str(r.BookWords)
			e.Uvarint(uint64(r.At))
			e.Uvarint(uint64(r.Sentence))
		}
	}
	e.Uvarint(uint64(len(s.wordStem)))
	e.Uvarint(uint64(len(s.stemDF)))
	e.Uvarint(uint64(len(s.toks) / 4))
	e.Uvarint(uint64(len(s.defIdx) / 2))
	e.Uvarint(uint64(len(s.blob)))
	e.Align(4)
	for _, a := range [][]uint32{s.wordOff, s.wordStem, s.stemOff, s.stemDF, s.at, s.toks, s.defLen, s.defIdx} {
		for _, v := range a {
			e.B = binary.LittleEndian.AppendUint32(e.B, v)
		}
	}
	return append(e.B, s.blob...)
}

// ErrDamaged is wrapped by Decode's errors: the bytes are not a part Encode wrote for these
// passages.
var ErrDamaged = errors.New("lexicon part damaged")

// Decode reads a part that Encode wrote for the book's docs. The part's strings and arrays point
// into b, which must not change afterwards. Every index is checked, so that a part that decodes
// can be linked and read without further checks.
func Decode(book string, docs []Doc, b []byte) (p Part, err error) {
	defer func() {
		if r := recover(); r != nil {
			p, err = Part{}, fmt.Errorf("%w: %v", ErrDamaged, r)
		}
	}()
	d := decoder{B: b}
	if f := d.Uvarint(); f != partFormat {
		return Part{}, fmt.Errorf("%w: format %d, this caprag reads %d", ErrDamaged, f, partFormat)
	}
	if n := d.Uvarint(); n != uint64(len(docs)) {
		return Part{}, fmt.Errorf("%w: written for %d passages, the book has %d", ErrDamaged, n, len(docs))
	}
	p = Part{Book: book, Docs: docs, Paged: d.Uvarint() == 1, Refs: make([][]RawRef, len(docs))}
	p.Terms = make([]Term, d.Count(5))
	for i := range p.Terms {
		t := &p.Terms[i]
		t.Key, t.Name, t.Kind, t.Doc = d.Str(), d.Str(), TermKind(d.Uvarint()), d.Index(len(docs))
		t.Exact = make([]string, d.Count(1))
		for j := range t.Exact {
			t.Exact[j] = d.Str()
		}
		if t.Kind > Inflection {
			panic("a term of an unknown kind")
		}
	}
	for range d.Count(7) {
		doc := d.Index(len(docs))
		r := RawRef{Kind: passage.RefKind(d.Str()), Text: d.Str(), Target: d.Str(), BookWords: d.Str(), At: int(d.Uvarint()), Sentence: int(d.Uvarint())}
		if r.Kind != passage.RefSee && r.Kind != passage.RefPage || r.Sentence > len(docs[doc].Text) {
			panic("a reference of an unknown kind or sentence")
		}
		p.Refs[doc] = append(p.Refs[doc], r)
	}
	nw, ns, nt, np, nb := d.Count(8), d.Count(8), d.Count(16), d.Count(8), d.Count(0)
	for d.Off%4 != 0 {
		d.Bytes(1)
	}
	arr := func(n int) []uint32 { return leslice.Uint32s(d.Bytes(4 * n)) }
	s := &stream{wordOff: arr(nw + 1), wordStem: arr(nw), stemOff: arr(ns + 1), stemDF: arr(ns), at: arr(len(docs) + 1), toks: arr(4 * nt), defLen: arr(len(p.Terms)), defIdx: arr(2 * np)}
	s.blob = d.Bytes(nb)
	if d.Off != len(b) {
		panic(fmt.Sprintf("%d bytes left over", len(b)-d.Off))
	}
	s.check(docs, p)
	p.s = s
	return p, nil
}

// check panics when an index of the stream points outside it (Decode recovers).
func (s *stream) check(docs []Doc, p Part) {
	offs := func(o []uint32, from uint32) {
		if o[0] != from || o[len(o)-1] > uint32(len(s.blob)) {
			panic("word offsets out of range")
		}
		for i := 1; i < len(o); i++ {
			if o[i] < o[i-1] {
				panic("word offsets out of order")
			}
		}
	}
	offs(s.wordOff, 0)
	offs(s.stemOff, s.wordOff[len(s.wordOff)-1])
	if len(s.wordOff) < 2 || s.wordOff[1] != 0 {
		panic("word 0 is not empty")
	}
	for i := 1; i < len(s.stemDF); i++ {
		if s.stem(uint32(i)) <= s.stem(uint32(i-1)) {
			panic("stems out of order")
		}
	}
	for _, st := range s.wordStem {
		if st != noStem && int(st) >= len(s.stemDF) {
			panic("a word's stem out of range")
		}
	}
	if s.at[0] != 0 || int(s.at[len(docs)]) != len(s.toks)/4 {
		panic("passages' words do not add up")
	}
	for i := range docs {
		if s.at[i+1] < s.at[i] {
			panic("passages' words out of order")
		}
		n := uint32(len(docs[i].Text))
		for k := s.at[i]; k < s.at[i+1]; k++ {
			t := s.toks[4*k : 4*k+4]
			if int(t[0]) >= len(s.wordStem) || s.wordStem[t[0]] == noStem || int(t[1]) >= len(s.wordStem) || t[2] > n || t[3] > n {
				panic("a word out of range")
			}
			if k > s.at[i] && (t[2] < s.toks[4*k-2] || t[3] < s.toks[4*k-1]) {
				panic("sentences out of order")
			}
		}
		for _, r := range p.Refs[i] {
			if r.At > int(s.at[i+1]-s.at[i]) {
				panic("a reference out of its passage")
			}
		}
	}
	for i := 0; i < len(s.defIdx); i += 2 {
		if int(s.defIdx[i]) >= len(s.stemDF) || int(s.defIdx[i+1]) >= len(p.Terms) || i > 0 && s.defIdx[i] < s.defIdx[i-2] {
			panic("a definition out of range")
		}
	}
}

// encoder and decoder are the part's codec (shared with the store's segments).
type (
	encoder = leslice.Encoder
	decoder = leslice.Decoder
)
