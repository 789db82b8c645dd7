package lexicon

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"

	"github.com/caprag/caprag/passage"
	"github.com/caprag/caprag/words"
)

// Lexicon is a library's words and links, resolved across its books.
//
// Linking reads what every question needs at once — the library's passages, its terms and how
// many passages mention each (their specificity) — and the rest on demand: a passage's links
// (Edges) when a question reaches it, a stem's passage count (DF) when a question uses it, the
// terms whose definitions hold a word (Bridge). A passage's words stay in its part, compact
// (Part.Tokens), so a library costs what its questions touch, not what it holds.
type Lexicon struct {
	// Parts are the books' own parts, in the order given to Link.
	Parts []Part
	// Docs lists every passage of the library; a passage's index in it is its number in
	// Edges, Terms and Walk.
	Docs []DocRef
	// N is the number of passages.
	N int
	// Terms are the defined terms by key.
	Terms map[string]*Entry
	// ByID finds a passage's number by its ID.
	ByID map[string]int

	first map[string][]*Entry // the terms by their first stem (for matching)
	// full and fullFirst are the terms before the weak ones are dropped, with their mentions:
	// what Relink starts from.
	full      map[string]*Entry
	fullFirst map[string][]*Entry
	base      []int            // the number of each part's first passage
	bookFirst map[string][]int // namedBook: the parts whose book's name starts with a word
	bookNames [][]string
	edges     edgeCache
	df        sync.Map // stem → passages using it (int), for the stems asked about
	dfCached  atomic.Int64
}

// DocRef locates a passage of the library.
type DocRef struct {
	Part int // index in Parts
	Doc  int // index in the part's Docs
	Book string
	ID   string
}

// Entry is a term of the library: where it is defined and how specific it is.
type Entry struct {
	Key   string
	Name  string // as the defining passage writes it
	Kind  TermKind
	Exact []string
	// Defs are the passages that define it (library numbers): one, or a few sections of
	// different books that share a heading.
	Defs []int
	// Mentions is how many passages mention it; Spec is how specific a mention of it is:
	// ln((N+1)/(Mentions+1)) / ln(N+1), 1 for a term nobody else uses, near 0 for one in every
	// passage.
	Mentions int
	Spec     float64

	stems []string // Key's words
}

// Edge is a link from one passage to another.
type Edge struct {
	To   int             // the passage linked to (library number)
	Kind passage.RefKind // RefSee, RefPage or RefMention
	Key  string          // the term mentioned or resolved ("" for a page found by number)
	Text string          // the reference or mention as written
	// Weight is how much the link says about where to read: 1 for an explicit reference, the
	// term's Spec for a mention.
	Weight float64
	// Sentence is the index, in Sentences of the linking passage, of the first sentence that
	// links with this weight; Also lists the later ones.
	Sentence int
	Also     []int
}

// maxDefiners bounds how many sections may define a term for it to name a place to look: a
// heading every monster has ("Actions") names none of them.
const maxDefiners = 3

// Doc returns a passage of the library by number.
func (lx *Lexicon) Doc(n int) Doc { r := lx.Docs[n]; return lx.Parts[r.Part].Docs[r.Doc] }

// Tokens returns the content words of a passage of the library, in order.
func (lx *Lexicon) Tokens(n int) []Token {
	r := lx.Docs[n]
	return lx.Parts[r.Part].words().tokens(r.Doc, nil)
}

// Edges returns a passage's outgoing links: its explicit references, resolved, and its
// mentions of terms defined elsewhere. They are found on first use and kept for the passages
// used last (the slice is shared: read it, do not change it).
func (lx *Lexicon) Edges(n int) []Edge {
	if es, ok := lx.edges.get(n); ok {
		return es
	}
	toks := lx.Tokens(n)
	es := lx.link(n, toks, lx.find(toks))
	lx.edges.put(n, es)
	return es
}

// Uses reports whether passage n uses the stem.
func (lx *Lexicon) Uses(n int, stem string) bool {
	r := lx.Docs[n]
	s := lx.Parts[r.Part].words()
	si := s.stemIndex(stem)
	return si != noStem && s.uses(r.Doc, si)
}

// dfCached bounds the stems a lexicon remembers the passage counts of.
const dfCached = 100000

// DF is how many passages use a stem.
func (lx *Lexicon) DF(stem string) int {
	if lx == nil {
		return 0
	}
	if n, ok := lx.df.Load(stem); ok {
		return n.(int)
	}
	n := 0
	for _, p := range lx.Parts {
		s := p.words()
		if si := s.stemIndex(stem); si != noStem {
			n += int(s.stemDF[si])
		}
	}
	if lx.dfCached.Add(1) <= dfCached {
		lx.df.Store(stem, n)
	}
	return n
}

// Title is the last heading of a passage's section.
func (lx *Lexicon) Title(n int) string { return passage.LastHeading(lx.Doc(n).Section) }

// IDF is how specific a stem is, on the scale of Spec: ln((N+1)/(DF+1)) / ln(N+1), 1 for a
// stem no passage uses.
func (lx *Lexicon) IDF(stem string) float64 {
	if lx == nil || lx.N == 0 {
		return 1
	}
	return math.Log(float64(lx.N+1)/float64(lx.DF(stem)+1)) / math.Log(float64(lx.N)+1)
}

// edgesCached bounds the passages whose links a lexicon keeps (a variable for tests).
var edgesCached = 8192

// edgeCache keeps the links of the passages used last, at most edgesCached (the oldest found
// is dropped first).
type edgeCache struct {
	mu    sync.Mutex
	m     map[int][]Edge
	order []int
	next  int
}

func (c *edgeCache) get(n int) ([]Edge, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	es, ok := c.m[n]
	return es, ok
}

func (c *edgeCache) put(n int, es []Edge) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[int][]Edge{}
	}
	if _, ok := c.m[n]; ok {
		return
	}
	if len(c.order) < edgesCached {
		c.order = append(c.order, n)
	} else {
		delete(c.m, c.order[c.next])
		c.order[c.next] = n
		c.next = (c.next + 1) % edgesCached
	}
	c.m[n] = es
}

type def struct {
	t    Term
	doc  int    // library number
	sect string // book + section, the unit a term names
}

// defineTerms gathers the terms of every part: for each key, the definitions of its strongest
// kind, one per section, a section's ancestors winning over its subsections; keys defined in
// more than maxDefiners sections, or that name a book of the library, name nothing.
func (lx *Lexicon) defineTerms() {
	byKey := map[string][]def{}
	base := 0
	books := map[string]bool{}
	for _, p := range lx.Parts {
		if t, ok := newTerm(p.Book, Heading); ok {
			books[t.Key] = true
		}
	}
	for _, p := range lx.Parts {
		for _, t := range p.Terms {
			d := def{t: t, doc: base + t.Doc, sect: p.Book + "\x00" + p.Docs[t.Doc].Section}
			byKey[t.Key] = append(byKey[t.Key], d)
		}
		base += len(p.Docs)
	}
	for _, key := range slices.Sorted(mapKeys(byKey)) {
		ds := byKey[key]
		if books[key] {
			continue
		}
		// each book's strongest definitions: a heading over a heading's part, a run-in heading
		// or a verb ("The Bronze Rule" of one book and "THE BRONZE RULE, AKA THE FATE FRACTAL"
		// of another both define "Bronze Rule")
		strongest := map[string]TermKind{}
		for _, d := range ds {
			b := lx.Docs[d.doc].Book
			if k, ok := strongest[b]; !ok || d.t.Kind < k {
				strongest[b] = d.t.Kind
			}
		}
		var kept []def
		sects := map[string]bool{}
		for _, d := range ds {
			if d.t.Kind != strongest[lx.Docs[d.doc].Book] || sects[d.sect] {
				continue
			}
			sects[d.sect] = true
			kept = append(kept, d)
		}
		// "Milestones" in "Defining Milestones" and in its subsection "Minor Milestones": the
		// general section is the one a mention names (one of its ancestors is kept too).
		kept = slices.DeleteFunc(kept, func(d def) bool {
			for i := 0; i < len(d.sect); {
				j := strings.Index(d.sect[i:], " > ")
				if j < 0 {
					return false
				}
				if sects[d.sect[:i+j]] {
					return true
				}
				i += j + 3
			}
			return false
		})
		if len(kept) == 0 || len(kept) > maxDefiners {
			continue
		}
		e := &Entry{Key: key, Name: kept[0].t.Name, Kind: kept[0].t.Kind, Exact: kept[0].t.Exact, stems: strings.Split(key, " ")}
		for _, d := range kept {
			e.Kind = min(e.Kind, d.t.Kind)
		}
		for _, d := range kept {
			e.Defs = append(e.Defs, d.doc)
		}
		lx.Terms[key] = e
		lx.index(key)
	}
}

// index files a term under the stem of its first word (a participle kept as written is filed
// under its stem, which is what a text's token carries).
func (lx *Lexicon) index(key string) {
	e := lx.Terms[key]
	lx.first[e.indexStem()] = append(lx.first[e.indexStem()], e)
}

// indexStem is the stem a term is filed under.
func (e *Entry) indexStem() string {
	if len(e.Exact) > 0 && e.Exact[0] != "" {
		return words.Stem(e.Exact[0])
	}
	return e.stems[0]
}

// mention is a term found in a token stream: its key and where it starts and ends.
type mention struct {
	key      string
	at, end  int
	sentence int
}

// distance is how many tokens lie between a mention and a reference of its sentence.
func (m mention) distance(ref RawRef) int {
	if m.end <= ref.At {
		return ref.At - m.end
	}
	return m.at - ref.At
}

// find returns the terms mentioned in a token stream, leftmost-longest, without overlaps.
func (lx *Lexicon) find(toks []Token) []mention { return findIn(lx.first, toks) }

// findIn is find with a term index.
func findIn(first map[string][]*Entry, toks []Token) []mention {
	var out []mention
	for i := 0; i < len(toks); {
		best := ""
		bestLen, bestExact := 0, 0
		for _, e := range first[toks[i].Stem] {
			stems := e.stems
			if len(stems) < bestLen || i+len(stems) > len(toks) {
				continue
			}
			ok, exacts := true, 0
			for j, s := range stems {
				t := toks[i+j]
				exact := j < len(e.Exact) && e.Exact[j] != ""
				if !exact && t.Stem != s || exact && t.Raw != e.Exact[j] || t.Sentence != toks[i].Sentence {
					ok = false
					break
				}
				if exact {
					exacts++
				}
			}
			// the longest term, and of two as long the one matched as written ("grappled"
			// names Grappled, not Grappling)
			if ok && (len(stems) > bestLen || exacts > bestExact) {
				best, bestLen, bestExact = e.Key, len(stems), exacts
			}
		}
		if bestLen == 0 {
			i++
			continue
		}
		out = append(out, mention{key: best, at: i, end: i + bestLen, sentence: toks[i].Sentence})
		i += bestLen
	}
	return out
}

// Mention is a term a text names.
type Mention struct {
	Key  string
	Text string // the term's name
	Spec float64
	Defs []int
}

// Mentions returns the terms a text (a question) names, in order, each once.
func (lx *Lexicon) Mentions(text string) []Mention {
	if lx == nil {
		return nil
	}
	var out []Mention
	seen := map[string]bool{}
	for _, m := range lx.find(tokenize(text)) {
		if seen[m.key] {
			continue
		}
		seen[m.key] = true
		e := lx.Terms[m.key]
		out = append(out, Mention{Key: m.key, Text: e.Name, Spec: e.Spec, Defs: e.Defs})
	}
	return out
}

// onPath reports whether passage to is in from's own section or one of its ancestors (or is
// from itself): a passage does not link to the sections it stands in.
func (lx *Lexicon) onPath(from, to int) bool {
	if from == to {
		return true
	}
	a, b := lx.Docs[from], lx.Docs[to]
	if a.Book != b.Book {
		return false
	}
	fs, ts := lx.Doc(from).Section, lx.Doc(to).Section
	return fs == ts || strings.HasPrefix(fs, ts+" > ")
}

// link computes a passage's outgoing edges: its explicit references, resolved, and its
// mentions of terms defined elsewhere.
func (lx *Lexicon) link(n int, toks []Token, ms []mention) []Edge {
	var out []Edge
	at := map[int]int{} // target → index in out
	add := func(e Edge) {
		if lx.onPath(n, e.To) || e.Weight <= 0 { // a term every passage uses links nowhere
			return
		}
		if i, ok := at[e.To]; ok {
			switch {
			case e.Weight > out[i].Weight:
				out[i] = e
			case e.Weight == out[i].Weight && e.Sentence != out[i].Sentence && !slices.Contains(out[i].Also, e.Sentence):
				out[i].Also = append(out[i].Also, e.Sentence)
			}
			return
		}
		at[e.To] = len(out)
		out = append(out, e)
	}
	r := lx.Docs[n]
	part := lx.Parts[r.Part]
	for _, ref := range part.Refs[r.Doc] {
		for _, e := range lx.resolve(n, ref, ms) {
			add(e)
		}
	}
	var sentBook []int // the other book each sentence names, -1 for none
	if len(lx.Parts) > 1 {
		for _, s := range Sentences(lx.Doc(n).Text) {
			b := lx.namedBook(s)
			if b == r.Part {
				b = -1
			}
			sentBook = append(sentBook, b)
		}
	}
	for _, m := range ms {
		e := lx.Terms[m.key]
		w := e.Spec
		// "…or become frightened": a state the rule puts a creature in, named by a
		// participle after a verb of being, is a reference to what that state does.
		if len(e.Exact) > 0 && e.Exact[0] != "" && words.IsStateVerb(toks[m.at].Prev) {
			w = 1
		}
		book := -1
		if m.sentence < len(sentBook) {
			book = sentBook[m.sentence]
		}
		for _, d := range e.Defs {
			dw := w
			// "Most of these actions are free actions in Fate Core": a sentence that names
			// another book refers to that book's rules it names.
			if book >= 0 && lx.Docs[d].Part == book {
				dw = 1
			}
			add(Edge{To: d, Kind: passage.RefMention, Key: m.key, Text: e.Name, Weight: dw, Sentence: m.sentence})
		}
	}
	return out
}

// namedBook returns the part whose book a reference's words name, or -1. A book is named by
// its name's words, capitalised as a title ("Fate Core" for fate-core); of several, the longest
// name, and of names as long, the later part.
func (lx *Lexicon) namedBook(s string) int {
	fields := strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	best, bestLen := -1, 0
	for i, f := range fields {
		if !capitalised(f) {
			continue
		}
		for _, pi := range lx.bookFirst[strings.ToLower(f)] {
			name := lx.bookNames[pi]
			if len(name) < bestLen || i+len(name) > len(fields) || len(name) == bestLen && pi < best {
				continue
			}
			if titledAt(fields, i, name) {
				best, bestLen = pi, len(name)
			}
		}
	}
	return best
}

// indexBookNames splits the books' names once for the library, by their first word.
func (lx *Lexicon) indexBookNames() {
	lx.bookFirst = map[string][]int{}
	lx.bookNames = make([][]string, len(lx.Parts))
	for pi, p := range lx.Parts {
		name := words.Split(p.Book)
		lx.bookNames[pi] = name
		if len(name) > 0 {
			lx.bookFirst[name[0]] = append(lx.bookFirst[name[0]], pi)
		}
	}
}

// capitalised reports whether a word starts with a capital or a digit.
func capitalised(f string) bool {
	r := []rune(f)[0]
	return unicode.IsUpper(r) || unicode.IsDigit(r)
}

// titledAt reports whether fields from i on are the words ws, each capitalised.
func titledAt(fields []string, i int, ws []string) bool {
	for j, w := range ws {
		if f := fields[i+j]; strings.ToLower(f) != w || !capitalised(f) {
			return false
		}
	}
	return true
}

// resolve turns an explicit reference into edges.
func (lx *Lexicon) resolve(n int, ref RawRef, ms []mention) []Edge {
	r := lx.Docs[n]
	book := r.Part
	if b := lx.namedBook(ref.BookWords); b >= 0 {
		book = b
	}
	inBook := func(d int) bool { return lx.Docs[d].Part == book }
	switch ref.Kind {
	case passage.RefPage:
		if p := lx.Parts[book]; p.Paged && ref.Target != "" {
			page := strings.TrimLeft(ref.Target, "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
			var out []Edge
			base := lx.base[book]
			for di, d := range p.Docs {
				if strconv.Itoa(d.Page) == page {
					out = append(out, Edge{To: base + di, Kind: passage.RefPage, Text: ref.Text, Weight: 1, Sentence: ref.Sentence})
				}
			}
			return out
		}
		// A page of a book without pages (or a placeholder, "page XX"): the reference names
		// what the words around it name — the nearest term of its sentence that the book
		// defines ("the Bronze Rule (Fate Core, page 270)").
		named := book != r.Part
		best, dist := "", 0
		for _, m := range ms {
			if m.sentence != ref.Sentence {
				continue
			}
			e := lx.Terms[m.key]
			if named && !slices.ContainsFunc(e.Defs, inBook) {
				continue
			}
			if !named && !slices.ContainsFunc(e.Defs, func(d int) bool { return !lx.onPath(n, d) }) {
				continue
			}
			if d := m.distance(ref); best == "" || d < dist {
				best, dist = m.key, d
			}
		}
		if best == "" {
			return nil
		}
		var out []Edge
		for _, d := range lx.Terms[best].Defs {
			if !named || inBook(d) {
				out = append(out, Edge{To: d, Kind: passage.RefPage, Key: best, Text: ref.Text, Weight: 1, Sentence: ref.Sentence})
			}
		}
		return out
	default:
		target := ref.Target
		if book != r.Part {
			target = dropBookName(target, lx.Parts[book].Book)
		}
		keys := lx.lookup(target)
		var out []Edge
		for _, key := range keys {
			for _, d := range lx.Terms[key].Defs {
				if book == r.Part || inBook(d) {
					out = append(out, Edge{To: d, Kind: passage.RefSee, Key: key, Text: ref.Text, Weight: 1, Sentence: ref.Sentence})
				}
			}
			if len(out) > 0 {
				break
			}
		}
		if in := lx.namedWithin(n, ref, ms, out); len(in) > 0 {
			return in
		}
		return out
	}
}

// namedWithin narrows a reference to a chapter ("the grappled condition (see appendix A)",
// "a stunt (see Chapter 4)") to the rule of that chapter its sentence names: the term mentioned
// in the reference's sentence, nearest to it, that is defined in a section under one the
// reference resolved to. Nil when the sentence names none.
func (lx *Lexicon) namedWithin(n int, ref RawRef, ms []mention, to []Edge) []Edge {
	best, dist := "", 0
	var defs []int
	for _, m := range ms {
		if m.sentence != ref.Sentence {
			continue
		}
		var in []int
		for _, d := range lx.Terms[m.key].Defs {
			if lx.onPath(n, d) {
				continue
			}
			for _, e := range to {
				if lx.Docs[d].Book == lx.Docs[e.To].Book && strings.HasPrefix(lx.Doc(d).Section, lx.Doc(e.To).Section+" > ") {
					in = append(in, d)
					break
				}
			}
		}
		if len(in) == 0 {
			continue
		}
		if d := m.distance(ref); best == "" || d < dist {
			best, dist, defs = m.key, d, in
		}
	}
	var out []Edge
	for _, d := range defs {
		out = append(out, Edge{To: d, Kind: passage.RefSee, Key: best, Text: ref.Text, Weight: 1, Sentence: ref.Sentence})
	}
	return out
}

// dropBookName removes a book's name from a "see" phrase ("Fate Core, Outcomes and Actions").
func dropBookName(s, book string) string {
	name := words.Split(book)
	fields := strings.Fields(s)
	for i := 0; i+len(name) <= len(fields); i++ {
		ok := true
		for j, w := range name {
			if words.Normalize(fields[i+j]) != w {
				ok = false
				break
			}
		}
		if ok {
			rest := append(append([]string{}, fields[:i]...), fields[i+len(name):]...)
			return strings.Trim(strings.Join(rest, " "), " ,;:")
		}
	}
	return s
}

// lookup returns the keys of the terms a name resolves to, best first: the term itself, a term
// with the same words in another order ("Outcomes and Actions" → ACTIONS AND OUTCOMES), a
// heading that starts with it ("appendix PH-A" → "Appendix PH-A: Conditions"), the longest
// term it mentions.
func (lx *Lexicon) lookup(name string) []string {
	t, ok := newTerm(name, Heading)
	if !ok {
		return nil
	}
	if _, ok := lx.Terms[t.Key]; ok {
		return []string{t.Key}
	}
	set := strings.Fields(t.Key)
	slices.Sort(set)
	var same, prefix []string
	for _, key := range slices.Sorted(mapKeys(lx.Terms)) {
		ks := strings.Fields(key)
		if len(ks) == len(set) {
			slices.Sort(ks)
			if slices.Equal(ks, set) {
				same = append(same, key)
			}
		}
		if len(t.Key) >= 4 && strings.HasPrefix(key, t.Key+" ") {
			prefix = append(prefix, key)
		}
	}
	if len(same) > 0 {
		return same
	}
	if len(prefix) > 0 {
		return prefix
	}
	ms := lx.find(tokenize(name))
	slices.SortStableFunc(ms, func(a, b mention) int { return cmp.Compare(b.end-b.at, a.end-a.at) })
	var out []string
	for _, m := range ms {
		out = append(out, m.key)
	}
	return out
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// Refs returns a passage's edges as references: Target is the section title of the passage
// linked to (the term's own name for a rule defined under a run-in heading), Book its book, ID
// its passage ID, Weight the edge's weight; strongest first.
func (lx *Lexicon) Refs(n int) []passage.Reference {
	es := slices.Clone(lx.Edges(n))
	slices.SortStableFunc(es, func(a, b Edge) int { return cmp.Compare(b.Weight, a.Weight) })
	out := make([]passage.Reference, 0, len(es))
	for _, e := range es {
		out = append(out, lx.ref(e))
	}
	return out
}

func (lx *Lexicon) ref(e Edge) passage.Reference {
	to := lx.Docs[e.To]
	r := passage.Reference{Kind: e.Kind, Text: e.Text, Target: lx.Title(e.To), Book: to.Book, Part: passage.TopHeading(lx.Doc(e.To).Section), ID: to.ID, Weight: e.Weight}
	if t := lx.Terms[e.Key]; t != nil && t.Kind == RunIn {
		r.Target = t.Name
	}
	if e.Kind == passage.RefPage && e.Key == "" {
		r.Target = strconv.Itoa(lx.Doc(e.To).Page)
	}
	return r
}

// Named returns the terms a text names as references to the passages that define them, the
// most specific first.
func (lx *Lexicon) Named(text string) []passage.Reference {
	var out []passage.Reference
	ms := lx.Mentions(text)
	slices.SortStableFunc(ms, func(a, b Mention) int { return cmp.Compare(b.Spec, a.Spec) })
	for _, m := range ms {
		for _, d := range m.Defs {
			out = append(out, lx.ref(Edge{To: d, Kind: passage.RefMention, Key: m.Key, Text: m.Text, Weight: m.Spec}))
		}
	}
	return out
}

// definition returns the stems of the sentence that defines a term of a passage's text: for a
// heading, the first sentence of its section written as prose (six words or more, two of them
// function words: not a stat line); for a run-in heading, the sentence it opens.
func definition(text string, kind TermKind, name string) []string {
	var cand []string
	if kind == RunIn {
		for _, para := range strings.Split(text, "\n") {
			if strings.HasPrefix(strings.TrimSpace(para), name) {
				cand = Sentences(para)
				if len(cand) > 2 {
					cand = cand[:2]
				}
				break
			}
		}
	} else {
		for _, s := range Sentences(text) {
			ws := words.Split(s)
			stops := 0
			for _, w := range ws {
				if words.IsStop(w) {
					stops++
				}
			}
			if len(ws) >= 6 && stops >= 2 {
				cand = []string{s}
				break
			}
		}
	}
	seen := map[string]bool{}
	var out []string
	for _, s := range cand {
		for _, t := range words.Tokens(s) {
			if !seen[t] {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	return out
}

// defined returns the terms defined once (a heading or a run-in heading) whose defining
// sentence holds a stem, each with how many stems that sentence holds.
func (lx *Lexicon) defined(stem string) map[string]int {
	out := map[string]int{}
	for pi, p := range lx.Parts {
		s := p.words()
		si := s.stemIndex(stem)
		if si == noStem {
			continue
		}
		for _, ti := range s.defined(si) {
			t := p.Terms[ti]
			e := lx.Terms[t.Key]
			// the term's one definition is this one (a term defined in several sections, or
			// more strongly elsewhere, has none)
			if e == nil || e.Kind > RunIn || len(e.Defs) != 1 || e.Defs[0] != lx.base[pi]+t.Doc || e.Kind != t.Kind || e.Name != t.Name {
				continue
			}
			out[t.Key] = int(s.defLen[ti])
		}
	}
	return out
}

// Bridge returns the terms whose defining sentences best share the text's words (IDF-weighted),
// at most n: the books' names for what a player describes in other words ("grab" → Grappling,
// whose rule opens "When you want to grab a creature…").
func (lx *Lexicon) Bridge(text string, n int) []Mention {
	if lx == nil {
		return nil
	}
	// the words of the text that name no term of the books: a term the text names is found by
	// its name already
	named, namedKeys := map[string]bool{}, map[string]bool{}
	for _, m := range lx.find(tokenize(text)) {
		namedKeys[m.key] = true
		for _, st := range strings.Fields(m.key) {
			named[st] = true
		}
	}
	q := map[string]bool{}
	for _, t := range words.Content(text) {
		if !named[t] {
			q[t] = true
		}
	}
	type hit struct {
		key   string
		score float64
	}
	score := map[string]float64{}
	defLen := map[string]int{}
	for t := range q {
		for key, l := range lx.defined(t) {
			if !namedKeys[key] {
				score[key] += lx.IDF(t)
				defLen[key] = l
			}
		}
	}
	var hits []hit
	for key, s := range score {
		hits = append(hits, hit{key, s / math.Sqrt(float64(defLen[key]+1))})
	}
	slices.SortFunc(hits, func(a, b hit) int { return cmp.Or(cmp.Compare(b.score, a.score), cmp.Compare(a.key, b.key)) })
	var out []Mention
	for _, h := range hits[:min(n, len(hits))] {
		e := lx.Terms[h.key]
		out = append(out, Mention{Key: h.key, Text: e.Name, Spec: e.Spec, Defs: e.Defs})
	}
	return out
}
