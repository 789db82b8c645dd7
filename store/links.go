package store

import (
	"maps"
	"slices"

	"github.com/caprag/caprag/ingest"
	"github.com/caprag/caprag/passage"
	"github.com/caprag/caprag/words"
)

// What ingest derives comes in two kinds, kept apart so that adding a book costs that book, not
// the library:
//
//   - per book, a pure function of its passages: the segment (segment.go: BM25 postings,
//     explicit references, run-in headings) and the book's facts below (bookLinksOf: the names
//     its sections go by, its run-in definitions, and how many of its parents mention each name
//     of the library);
//   - across books, resolved from the per-book facts without reading any text again
//     (resolveLinks: which titles are rare enough to be links, which run-in terms exactly one
//     passage of the library defines, the lookups of both), built when first needed by a view.
//
// The one cross-book step that reads text is counting the mentions of names new to the library
// in the books already there; it reads only the parents whose BM25 postings hold every content
// word of a new name (countNew). Mention counts add up over books, so a view over several
// libraries (a server's and the shared one) sums theirs.

// bookLinks are one book's facts that the library's links are resolved from.
type bookLinks struct {
	Book    string
	Parents int
	// Titles are the names the book's sections go by (ingest.TitleNamesOf), Key set, in order;
	// names never indexed are left out.
	Titles []ingest.Name
	// OtherTitleKeys are the keys of its section titles that are never indexed (generic or
	// short: "Actions", "Speed"); they still keep a run-in rule of that name from being a
	// defined term.
	OtherTitleKeys []string
	// RunIns are the rules the book defines under run-in headings: first definition of each key.
	RunIns []runIn
	// Counts: for each name key of the library, the book's parents that mention it (zeros left
	// out). Counted by the library says which keys these cover.
	Counts map[string]int
}

// runIn is a rule defined under a run-in heading: its key, its name as first written, the
// parent that first defines it and how many parents of the book define it.
type runIn struct {
	Key, Name, Parent string
	Count             int
}

// links are a library's cross-book facts, persisted beside its segments.
type links struct {
	// Counted are the name keys every book's Counts covers, sorted.
	Counted []string
	// Books in book order.
	Books []bookLinks
}

// bookLinksOf derives a book's own facts from its segment (Counts are filled by updateLinks).
func bookLinksOf(s *segment) bookLinks {
	b := bookLinks{Book: s.book, Parents: len(s.parents)}
	other := map[string]bool{}
	for i := range s.parents {
		p := &s.parents[i]
		heading := passage.LastHeading(p.section)
		for _, t := range passage.TitleNames(heading) {
			if k := ingest.NameKey(t); k != "" {
				b.Titles = append(b.Titles, ingest.Name{Text: t, Target: heading, Book: s.book, Part: passage.TopHeading(p.section), Key: k})
			} else if k := words.Normalize(t); !other[k] {
				other[k] = true
				b.OtherTitleKeys = append(b.OtherTitleKeys, k)
			}
		}
	}
	at := map[string]int{}
	for i := range s.parents {
		for _, t := range s.parents[i].runIns {
			key := words.Normalize(t)
			if key == "" {
				continue
			}
			if j, ok := at[key]; ok {
				b.RunIns[j].Count++
				continue
			}
			at[key] = len(b.RunIns)
			b.RunIns = append(b.RunIns, runIn{Key: key, Name: t, Parent: s.parents[i].id, Count: 1})
		}
	}
	return b
}

// definedTerm is where a defined term is defined.
type definedTerm struct{ Book, Parent string }

// definedTerms returns the library's defined terms (as ingest.DefinedTerms finds them over all
// its parents): term name → the book and parent that define it. titleKeys are the keys of every
// section title of the library.
func definedTerms(books []bookLinks, titleKeys map[string]bool) map[string]definedTerm {
	type acc struct {
		first runIn
		book  string
		n     int
	}
	all := map[string]*acc{}
	var order []string
	for _, b := range books {
		for _, r := range b.RunIns {
			if titleKeys[r.Key] {
				continue
			}
			a, ok := all[r.Key]
			if !ok {
				a = &acc{first: r, book: b.Book}
				all[r.Key] = a
				order = append(order, r.Key)
			}
			a.n += r.Count
		}
	}
	out := map[string]definedTerm{}
	for _, k := range order {
		if a := all[k]; a.n == 1 {
			out[a.first.Name] = definedTerm{Book: a.book, Parent: a.first.Parent}
		}
	}
	return out
}

// neededKeys are the name keys a library counts: its titles' and its defined terms'.
func neededKeys(books []bookLinks, titleKeys map[string]bool) []string {
	set := map[string]bool{}
	for _, b := range books {
		for _, t := range b.Titles {
			set[t.Key] = true
		}
	}
	for name := range definedTerms(books, titleKeys) {
		if k := ingest.NameKey(name); k != "" {
			set[k] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// parentTexts are the parents' texts of a segment (all, or those listed).
func parentTexts(s *segment, only []int32) []string {
	if only == nil {
		out := make([]string, len(s.parents))
		for i := range s.parents {
			out[i] = s.parents[i].text
		}
		return out
	}
	out := make([]string, len(only))
	for i, p := range only {
		out[i] = s.parents[p].text
	}
	return out
}

// countNew counts the mentions of new name keys in a book already counted for the others. Only
// the parents whose children's BM25 postings hold every content word of a key can mention it;
// a key of stop words alone has every parent as a candidate.
func countNew(s *segment, keys []string) map[string]int {
	cand := map[int32]bool{}
	all := false
	for _, k := range keys {
		var docs map[int32]bool // children holding every content word so far
		for _, w := range words.Split(k) {
			if words.IsStop(w) {
				continue
			}
			ti := s.term(words.Stem(w))
			next := map[int32]bool{}
			if ti >= 0 {
				ds, _ := s.postings(ti)
				for _, doc := range ds {
					if docs == nil || docs[int32(doc)] {
						next[int32(doc)] = true
					}
				}
			}
			docs = next
			if len(docs) == 0 {
				break
			}
		}
		if docs == nil {
			all = true
			break
		}
		for d := range docs {
			cand[s.parentOf[d]] = true
		}
	}
	if all {
		return ingest.MentionCounts(keys, parentTexts(s, nil))
	}
	if len(cand) == 0 {
		return nil
	}
	return ingest.MentionCounts(keys, parentTexts(s, slices.Sorted(maps.Keys(cand))))
}

// updateLinks returns the links of a library whose books are now segs (in book order), given
// its previous links; changed names the books whose segments are new. A book not changed keeps
// its facts and has only the keys new to the library counted; load returns the segment of such
// a book when its text must be read.
func updateLinks(old links, segs []string, changed map[string]*segment, load func(book string) (*segment, error)) (links, error) {
	prev := map[string]bookLinks{}
	for _, b := range old.Books {
		prev[b.Book] = b
	}
	books := make([]bookLinks, len(segs))
	for i, name := range segs {
		if s, ok := changed[name]; ok {
			books[i] = bookLinksOf(s)
		} else {
			books[i] = prev[name]
		}
	}
	titleKeys := allTitleKeys(books)
	need := neededKeys(books, titleKeys)
	counted := map[string]bool{}
	for _, k := range old.Counted {
		counted[k] = true
	}
	var fresh []string
	for _, k := range need {
		if !counted[k] {
			fresh = append(fresh, k)
		}
	}
	keep := map[string]bool{}
	for _, k := range need {
		keep[k] = true
	}
	for i, name := range segs {
		b := &books[i]
		if s, ok := changed[name]; ok {
			b.Counts = ingest.MentionCounts(need, parentTexts(s, nil))
			continue
		}
		counts := map[string]int{}
		for k, n := range b.Counts {
			if keep[k] {
				counts[k] = n
			}
		}
		if len(fresh) > 0 {
			s, err := load(name)
			if err != nil {
				return links{}, err
			}
			for k, n := range countNew(s, fresh) {
				counts[k] = n
			}
		}
		b.Counts = counts
	}
	return links{Counted: need, Books: books}, nil
}

// allTitleKeys are the keys of every section title of the books, indexed or not.
func allTitleKeys(books []bookLinks) map[string]bool {
	titleKeys := map[string]bool{}
	for _, b := range books {
		for _, t := range b.Titles {
			titleKeys[t.Key] = true
		}
		for _, k := range b.OtherTitleKeys {
			titleKeys[k] = true
		}
	}
	return titleKeys
}
