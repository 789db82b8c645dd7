package store

import (
	"context"
	"strings"

	"github.com/caprag/caprag/ingest"
)

// Passages returns the passages of one book in reading order (the book's name matched as
// stored, else case-insensitively); ErrNoBook when the store has no such book. It lets an admin
// look at what was read from a file (`caprag books show`).
func (x *index) Passages(_ context.Context, book string) ([]ingest.Passage, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	name := book
	if _, ok := x.bookCounts[name]; !ok {
		name = ""
		for b := range x.bookCounts {
			if strings.EqualFold(b, book) {
				name = b
				break
			}
		}
		if name == "" {
			return nil, ErrNoBook
		}
	}
	var out []ingest.Passage
	for _, e := range x.order {
		if e.P.Book == name {
			p := e.P
			p.Refs = nil
			out = append(out, p)
		}
	}
	return out, nil
}
