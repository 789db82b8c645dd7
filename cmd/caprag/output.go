package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// cite is "Book, p. 12" or "Book".
func cite(book string, page int) string {
	if page > 0 {
		return fmt.Sprintf("%s, p. %d", book, page)
	}
	return book
}

func shortText(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// writeJSON prints v as one line of JSON, leaving ">", "<" and "&" as they are: section paths
// such as "Combat > Grappling" stay readable.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
