package store

import (
	"context"
	"strings"

	"github.com/caprag/caprag/rag"
	"github.com/caprag/caprag/words"
)

// Contents lists the books' sections in reading order, each once, of the books opts.Books
// names (all when none): the table of contents a model-backed analyzer names missing rules
// from (rag.ContentsReader). The list is read once per version of the library.
func (x *index) Contents(ctx context.Context, opts rag.SearchOptions) ([]rag.Heading, error) {
	v, err := x.view(ctx)
	if err != nil {
		return nil, err
	}
	all := v.contents()
	ok := v.filter(opts.Books)
	if ok == nil {
		return all, nil
	}
	keep := map[string]bool{}
	for i, sh := range v.shelves {
		keep[sh.name] = ok[i]
	}
	var out []rag.Heading
	for _, h := range all {
		if keep[h.Book] {
			out = append(out, h)
		}
	}
	return out, nil
}

// contents is every book's sections in reading order, each once (a section split into several
// parents, or taken up again after a subsection, is listed where it starts).
func (v *view) contents() []rag.Heading {
	v.toc.once.Do(func() {
		for _, sh := range v.shelves {
			seen := map[string]bool{}
			for _, p := range sh.seg.parents {
				if p.section == "" || seen[p.section] {
					continue
				}
				seen[p.section] = true
				v.toc.list = append(v.toc.list, rag.Heading{Book: sh.name, Section: p.section})
			}
		}
	})
	return v.toc.list
}

// pathParents resolves a title given with the headings above it ("Ghast > Actions", as a table
// of contents writes a title several sections share): the sections whose heading path ends with
// those headings.
func (v *view) pathParents(target, book string) []pref {
	heads := strings.Split(target, " > ")
	want := foldPath(heads)
	var out []pref
	for _, key := range nameKeys(heads[len(heads)-1]) {
		for _, p := range v.titled(key) {
			sh := v.shelves[p.shelf]
			if book != "" && sh.name != book {
				continue
			}
			if got := foldPath(strings.Split(sh.seg.parents[p.parent].section, " > ")); got == want || strings.HasSuffix(got, " > "+want) {
				out = append(out, p)
			}
		}
		if len(out) > 0 {
			break
		}
	}
	return v.firstOfSections(out)
}

// foldPath folds each heading of a path for comparison.
func foldPath(heads []string) string {
	out := make([]string, len(heads))
	for i, h := range heads {
		out[i] = words.Fold(strings.TrimSpace(h))
	}
	return strings.Join(out, " > ")
}
