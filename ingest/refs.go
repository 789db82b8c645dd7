package ingest

import (
	"github.com/caprag/caprag/lexicon"
)

// AddRefs records the outgoing references each passage makes inside its own book: its
// explicit references ("see X", pages) and its mentions of the terms the book defines, resolved
// by package lexicon. The store recomputes them across every book of a library.
func AddRefs(ps []Passage) {
	if len(ps) == 0 {
		return
	}
	var docs []lexicon.Doc
	at := map[string]int{} // parent ID → index in docs
	for _, p := range ps {
		if _, ok := at[p.ParentID]; !ok {
			at[p.ParentID] = len(docs)
			docs = append(docs, lexicon.Doc{ID: p.ParentID, Section: p.Section, Page: p.Page, Text: p.Parent})
		}
	}
	lx := lexicon.Link([]lexicon.Part{lexicon.Read(ps[0].Book, docs)})
	for i := range ps {
		ps[i].Refs = lx.Refs(at[ps[i].ParentID])
	}
}
