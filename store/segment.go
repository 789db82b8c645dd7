package store

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"slices"
	"strconv"
	"sync"
	"unsafe"

	"github.com/caprag/caprag/ingest"
	"github.com/caprag/caprag/internal/leslice"
	"github.com/caprag/caprag/lexicon"
	"github.com/caprag/caprag/passage"
	"github.com/caprag/caprag/words"
)

// A segment is one book as the store searches it: its passages and the BM25 postings of its
// child chunks. It is built once, when the book is stored, encoded into one byte slice
// (persisted as one file by the embedded store) and read back without recomputing anything:
// strings point into the slice, the dictionary and postings are arrays used where they lie. A
// library is a list of segments; what depends on several books (the lexicon: terms and the
// reference graph) is linked from them (view.go).
type segment struct {
	id   string // content hash: same book, same id
	book string
	data []byte // the encoded payload; strings below point into it

	ps       []ingest.Passage // children in reading order (Refs unset)
	parentOf []int32          // child → parent index
	parents  []parentRec      // in reading order
	lens     []uint32         // child → tokens counted by BM25
	totalLen uint64

	// The dictionary and postings are fixed-width arrays used where they lie in the payload:
	// term i has hash hashes[i] (sorted: terms are found by hash, then compared), text
	// termText[termOff[i]:termOff[i+1]], and postings postDoc/postTF[postAt[i]:postAt[i+1]].
	hashes   []uint64
	termOff  []uint32
	termText []byte
	postAt   []uint32
	postDoc  []uint32
	postTF   []uint16

	lazy struct {
		once     sync.Once
		headings map[string][]int32 // heading key → parents (first parent of each section first)
		pages    map[int][]int32    // page → parents
	}
	vecs vectorsSlot

	format int
	// part is what the book says about its own words (package lexicon), stored with the
	// segment since format 5; nil in a segment without it (read from the text when linked).
	part *lexicon.Part
}

// parentRec is one parent passage: what the answer writer reads.
type parentRec struct {
	id, section, source, text string
	first                     int32 // its first child
}

// Segment files begin with a magic string, the CRC-32C (Castagnoli) of the payload and the
// payload's length. The checksum catches a damaged or cut file before a byte of it is used (it
// is not a defence against deliberate tampering; nothing on disk is); it costs about a
// millisecond per 10 MB with the CPU's CRC instruction, so every load verifies every byte.
var (
	segMagic = []byte("CPRGSEG\x01")
	vecMagic = []byte("CPRGVEC\x01")
	crcTable = crc32.MakeTable(crc32.Castagnoli)
)

// segFormat 5 adds the book's lexicon part (its passages' words, terms and references, as
// lexicon.Read finds them), so that linking a library reads no text; format 4 segments, without
// it, are still read.
const (
	segFormat       = 5
	segFormatNoPart = 4
)

// frameHeader is magic, CRC-32C, 4 bytes of zeros (so that the payload starts 8-aligned) and
// payload length.
const frameHeader = 8 + 4 + 4 + 8

// frame wraps a payload in the checked header.
func frame(magic, payload []byte) []byte {
	out := make([]byte, 0, frameHeader+len(payload))
	out = append(out, magic...)
	out = binary.LittleEndian.AppendUint32(out, crc32.Checksum(payload, crcTable))
	out = binary.LittleEndian.AppendUint32(out, 0)
	out = binary.LittleEndian.AppendUint64(out, uint64(len(payload)))
	return append(out, payload...)
}

// errDamaged is wrapped by the error for a file whose check fails.
var errDamaged = errors.New("damaged")

// unframe checks a framed file and returns its payload.
func unframe(magic, b []byte) ([]byte, error) {
	if len(b) < frameHeader || string(b[:8]) != string(magic) {
		return nil, fmt.Errorf("%w: not a caprag file of this kind, or cut short inside its header", errDamaged)
	}
	sum := binary.LittleEndian.Uint32(b[8:])
	if binary.LittleEndian.Uint32(b[12:]) != 0 {
		return nil, fmt.Errorf("%w: its header is not one caprag writes", errDamaged)
	}
	n := binary.LittleEndian.Uint64(b[16:])
	payload := b[frameHeader:]
	switch {
	case uint64(len(payload)) < n:
		return nil, fmt.Errorf("%w: cut short (%d of %d bytes)", errDamaged, len(payload), n)
	case uint64(len(payload)) > n:
		return nil, fmt.Errorf("%w: %d bytes more than its header says", errDamaged, uint64(len(payload))-n)
	case crc32.Checksum(payload, crcTable) != sum:
		return nil, fmt.Errorf("%w: its checksum does not match its content", errDamaged)
	}
	return payload, nil
}

// lexTokens are the words BM25 counts for a child: the section's last heading counts twice (rule
// names live in headings), then the section path and the text.
func lexTokens(p *ingest.Passage) []string {
	h := passage.LastHeading(p.Section)
	return words.Tokens(h + " " + h + " " + p.Section + " " + p.Text)
}

// encodeSegment derives a book's own index from its passages (in reading order, Book set) and
// encodes it, with its lexicon part when withPart (a segment kept in a file; a segment read from
// a server is read again at every start, and its part found when first linked). The id is a
// hash of the passages' IDs and the format: the same book gives the same segment.
func encodeSegment(book string, ps []ingest.Passage, withPart bool) (id string, payload []byte) {
	h := sha256.New()
	h.Write([]byte{segFormat})
	h.Write([]byte(book))
	var e enc
	e.Uvarint(segFormat)
	e.Str(book)
	// Parents in order of their first child.
	parentIdx := map[string]int{}
	var parents []int // index of each parent's first child
	for i := range ps {
		h.Write([]byte{0})
		h.Write([]byte(ps[i].ID))
		if _, ok := parentIdx[ps[i].ParentID]; !ok {
			parentIdx[ps[i].ParentID] = len(parents)
			parents = append(parents, i)
		}
	}
	e.Uvarint(uint64(len(parents)))
	for _, i := range parents {
		p := &ps[i]
		e.Str(p.ParentID)
		e.Str(p.Section)
		e.Str(p.Source)
		e.Str(p.Parent)
		e.Uvarint(uint64(i))
	}
	postings := map[string][]uint32{} // term → doc, tf pairs
	e.Uvarint(uint64(len(ps)))
	for i := range ps {
		p := &ps[i]
		toks := lexTokens(p)
		tf := map[string]uint32{}
		for _, t := range toks {
			tf[t]++
		}
		for t, n := range tf {
			postings[t] = append(postings[t], uint32(i), n)
		}
		e.Str(p.ID)
		e.Uvarint(uint64(parentIdx[p.ParentID]))
		e.Uvarint(uint64(p.Position))
		e.Uvarint(uint64(p.Page))
		e.Uvarint(uint64(len(toks)))
		e.Str(p.Text)
	}
	terms := slices.Collect(maps.Keys(postings))
	slices.SortFunc(terms, func(a, b string) int { return cmp.Or(cmp.Compare(termHash(a), termHash(b)), cmp.Compare(a, b)) })
	nPost, blob := 0, 0
	for _, t := range terms {
		nPost += len(postings[t]) / 2
		blob += len(t)
	}
	e.Uvarint(uint64(len(terms)))
	e.Uvarint(uint64(nPost))
	e.Uvarint(uint64(blob))
	e.Align(8)
	for _, t := range terms {
		e.B = binary.LittleEndian.AppendUint64(e.B, termHash(t))
	}
	at := uint32(0)
	e.B = binary.LittleEndian.AppendUint32(e.B, 0)
	for _, t := range terms {
		at += uint32(len(postings[t]) / 2)
		e.B = binary.LittleEndian.AppendUint32(e.B, at)
	}
	at = 0
	e.B = binary.LittleEndian.AppendUint32(e.B, 0)
	for _, t := range terms {
		at += uint32(len(t))
		e.B = binary.LittleEndian.AppendUint32(e.B, at)
	}
	for _, t := range terms {
		e.B = append(e.B, t...)
	}
	e.Align(8)
	for _, t := range terms {
		pl := postings[t]
		slices.SortFunc(pairs(pl), func(a, b [2]uint32) int { return cmp.Compare(a[0], b[0]) })
		for j := 0; j < len(pl); j += 2 {
			e.B = binary.LittleEndian.AppendUint32(e.B, pl[j])
		}
	}
	for _, t := range terms {
		pl := postings[t]
		for j := 1; j < len(pl); j += 2 {
			e.B = binary.LittleEndian.AppendUint16(e.B, uint16(min(pl[j], 0xffff)))
		}
	}
	var part []byte
	if withPart {
		part = lexicon.Read(book, lexiconDocs(ps, parents)).Encode()
	}
	e.Uvarint(uint64(len(part)))
	e.Align(8)
	e.B = append(e.B, part...)
	return hex.EncodeToString(h.Sum(nil)[:12]), e.B
}

// lexiconDocs are the segment's parents as package lexicon reads them.
func (s *segment) lexiconDocs() []lexicon.Doc {
	first := make([]int, len(s.parents))
	for i, p := range s.parents {
		first[i] = int(p.first)
	}
	return lexiconDocs(s.ps, first)
}

// lexiconDocs are a book's parents as package lexicon reads them, given each one's first child.
func lexiconDocs(ps []ingest.Passage, first []int) []lexicon.Doc {
	docs := make([]lexicon.Doc, len(first))
	for i, c := range first {
		p := &ps[c]
		docs[i] = lexicon.Doc{ID: p.ParentID, Section: p.Section, Page: p.Page, Text: p.Parent}
	}
	return docs
}

// pairs views a slice of (doc, tf) uint32 pairs as [2]uint32 elements for sorting.
func pairs(s []uint32) [][2]uint32 {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*[2]uint32)(unsafe.Pointer(&s[0])), len(s)/2)
}

// decodeSegment reads an encoded segment. The strings of the result point into payload, which
// must not change afterwards.
func decodeSegment(id string, payload []byte) (s *segment, err error) {
	d := dec{B: payload}
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("%w: its content cannot be decoded (%v)", errDamaged, r)
		}
	}()
	f := d.Uvarint()
	if f != segFormat && f != segFormatNoPart {
		return nil, fmt.Errorf("segment format %d, this caprag reads %d: run `caprag ingest --reindex` or ingest the books again", f, segFormat)
	}
	s = &segment{id: id, data: payload, book: d.Str(), format: int(f)}
	s.parents = make([]parentRec, d.Count(5))
	for i := range s.parents {
		p := &s.parents[i]
		p.id, p.section, p.source, p.text = d.Str(), d.Str(), d.Str(), d.Str()
		p.first = int32(d.Uvarint())
	}
	n := d.Count(6)
	s.ps = make([]ingest.Passage, n)
	s.parentOf = make([]int32, n)
	s.lens = make([]uint32, n)
	for i := range s.ps {
		id := d.Str()
		pi := d.Uvarint()
		pos, page, length := d.Uvarint(), d.Uvarint(), d.Uvarint()
		text := d.Str()
		par := &s.parents[pi]
		s.ps[i] = ingest.Passage{
			ID: id, ParentID: par.id, Book: s.book, Section: par.section, Page: int(page),
			Source: par.source, Position: int(pos), Text: text, Parent: par.text,
		}
		s.parentOf[i] = int32(pi)
		s.lens[i] = uint32(length)
		s.totalLen += length
	}
	nt, nPost, blob := d.Count(16), d.Count(6), d.Count(1)
	d.Align(8)
	s.hashes = leslice.Uint64s(d.Bytes(8 * nt))
	s.postAt = leslice.Uint32s(d.Bytes(4 * (nt + 1)))
	s.termOff = leslice.Uint32s(d.Bytes(4 * (nt + 1)))
	s.termText = d.Bytes(blob)
	d.Align(8)
	s.postDoc = leslice.Uint32s(d.Bytes(4 * nPost))
	s.postTF = leslice.Uint16s(d.Bytes(2 * nPost))
	var part []byte
	if f >= 5 {
		n := d.Count(1)
		d.Align(8)
		part = d.Bytes(n)
	}
	if d.Off != len(payload) {
		return nil, fmt.Errorf("%w: %d bytes left over", errDamaged, len(payload)-d.Off)
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	if len(part) > 0 {
		p, err := lexicon.Decode(s.book, s.lexiconDocs(), part)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errDamaged, err)
		}
		s.part = &p
	}
	return s, nil
}

// check verifies what searches read without further checks: parents' first children and every
// posting list (in range, in order), so that a segment that decodes can be searched.
func (s *segment) check() error {
	for i := range s.parents {
		if f := s.parents[i].first; f < 0 || int(f) >= len(s.ps) {
			return fmt.Errorf("%w: a parent's first child is out of range", errDamaged)
		}
	}
	nt := len(s.hashes)
	if s.postAt[0] != 0 || int(s.postAt[nt]) != len(s.postDoc) || s.termOff[0] != 0 || int(s.termOff[nt]) != len(s.termText) {
		return fmt.Errorf("%w: the dictionary does not add up", errDamaged)
	}
	for i := 0; i < nt; i++ {
		if s.postAt[i+1] < s.postAt[i] || s.termOff[i+1] < s.termOff[i] || i > 0 && s.hashes[i] < s.hashes[i-1] {
			return fmt.Errorf("%w: the dictionary is out of order", errDamaged)
		}
	}
	n := uint32(len(s.ps))
	for i, d := range s.postDoc {
		if d >= n || s.postTF[i] == 0 {
			return fmt.Errorf("%w: a posting past the last child", errDamaged)
		}
	}
	return nil
}

// termAt is the text of term i.
func (s *segment) termAt(i int) string {
	b := s.termText[s.termOff[i]:s.termOff[i+1]]
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// termDF is the number of children holding term i.
func (s *segment) termDF(i int) int { return int(s.postAt[i+1] - s.postAt[i]) }

// term returns the index of t in the segment's dictionary, or -1.
func (s *segment) term(t string) int {
	return s.termHashed(t, termHash(t))
}

// termHashed is term with t's hash computed once for every book.
func (s *segment) termHashed(t string, h uint64) int {
	i, _ := slices.BinarySearch(s.hashes, h)
	for ; i < len(s.hashes) && s.hashes[i] == h; i++ {
		if s.termAt(i) == t {
			return i
		}
	}
	return -1
}

// termHash is the 64-bit FNV-1a hash of a term: the dictionary is sorted by it, so that finding
// a term in each of many books compares integers, not strings.
func termHash(t string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(t); i++ {
		h ^= uint64(t[i])
		h *= 1099511628211
	}
	return h
}

// postings returns the children and term frequencies of term i.
func (s *segment) postings(i int) ([]uint32, []uint16) {
	lo, hi := s.postAt[i], s.postAt[i+1]
	return s.postDoc[lo:hi], s.postTF[lo:hi]
}

// lookups builds the heading and page lookups on first use.
func (s *segment) lookups() {
	s.lazy.once.Do(func() {
		s.lazy.headings = map[string][]int32{}
		s.lazy.pages = map[int][]int32{}
		for i := range s.parents {
			for _, k := range headingKeys(s.parents[i].section) {
				s.lazy.headings[k] = append(s.lazy.headings[k], int32(i))
			}
			if pg := s.ps[s.parents[i].first].Page; pg > 0 {
				s.lazy.pages[pg] = append(s.lazy.pages[pg], int32(i))
			}
		}
	})
}

// headings returns the parents whose section's last heading has key k.
func (s *segment) headings(k string) []int32 { s.lookups(); return s.lazy.headings[k] }

// page returns the parents on a printed page.
func (s *segment) page(p string) []int32 {
	n, err := strconv.Atoi(p)
	if err != nil || strconv.Itoa(n) != p {
		return nil
	}
	s.lookups()
	return s.lazy.pages[n]
}

// headingKeySet lists the segment's heading keys (for prefix lookups).
func (s *segment) headingKeySet() map[string][]int32 { s.lookups(); return s.lazy.headings }

// enc and dec are the segment's codec (shared with the lexicon's parts).
type (
	enc = leslice.Encoder
	dec = leslice.Decoder
)
