package store

import (
	"context"
	"strings"

	"github.com/caprag/caprag/ingest"
)

// Passages returns the passages of one book in reading order (the book's name matched as
// stored, else case-insensitively); ErrNoBook when the store has no such book. It lets an admin
// look at what was read from a file (`caprag books show`). Only that book is read.
func (x *index) Passages(_ context.Context, book string) ([]ingest.Passage, error) {
	v := x.cur.Load()
	at := -1
	for i, sh := range v.shelves {
		if sh.name == book {
			at = i
			break
		}
		if at < 0 && strings.EqualFold(sh.name, book) {
			at = i
		}
	}
	if at < 0 {
		return nil, ErrNoBook
	}
	seg, err := v.shelves[at].segment()
	if err != nil {
		return nil, err
	}
	return append([]ingest.Passage(nil), seg.ps...), nil
}
