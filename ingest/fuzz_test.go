package ingest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// checkPassages asserts what every book's passages promise, whatever the input: sizes, no empty
// text, unique IDs, positions in reading order, a child inside its parent.
func checkPassages(t *testing.T, ps []Passage) {
	t.Helper()
	ids := map[string]bool{}
	for i, p := range ps {
		if p.Position != i || ids[p.ID] || p.ID == "" {
			t.Fatalf("passage %d: position %d, id %q (duplicate %v)", i, p.Position, p.ID, ids[p.ID])
		}
		ids[p.ID] = true
		if strings.TrimSpace(p.Text) == "" || utf8.RuneCountInString(p.Text) > ChildSize || utf8.RuneCountInString(p.Parent) > ParentSize {
			t.Fatalf("passage %d: %d runes, parent %d runes", i, utf8.RuneCountInString(p.Text), utf8.RuneCountInString(p.Parent))
		}
	}
}

// FuzzMarkdown: the Markdown loader and the chunker take any bytes without panicking, keep the
// passages' promises and look at each rune of the text a bounded number of times (chunking time
// is linear in the text).
func FuzzMarkdown(f *testing.F) {
	f.Add("# Combat\n\n## Grappling\n\nWhen you want to grab a creature (see Conditions), make a grapple. See page 12.\n")
	f.Add("```\n# not a heading\n```\n# Real\n\ntext " + strings.Repeat("word ", 200))
	f.Add("- item\n  - sub item\n    - sub sub item\n" + strings.Repeat("x", 1300))
	f.Add("# R\xe8gles\n\nUne \xe9p\xe9e.")
	f.Fuzz(func(t *testing.T, src string) {
		secs := markdownSections(src)
		c := &chunker{}
		ps := c.chunk("B", "b.md", secs)
		checkPassages(t, ps)
		if c.steps > 6*len(src)+64 {
			t.Fatalf("%d steps for %d bytes: chunking is not linear", c.steps, len(src))
		}
		b, err := LoadBytes(context.Background(), "b.md", []byte(src), Options{})
		switch {
		case err == nil:
			checkPassages(t, b.Passages)
		case errors.Is(err, ErrEmpty), errors.Is(err, ErrBinary), errors.Is(err, ErrEncoding):
		default:
			t.Fatalf("unexpected error %v", err)
		}
	})
}

// FuzzText: the plain-text loader, with its decoding of legacy encodings and refusal of binary
// data, takes any bytes; what it returns is valid UTF-8.
func FuzzText(f *testing.F) {
	f.Add([]byte("One rule.\n\nAnother rule."))
	f.Add([]byte{0xFF, 0xFE, 'A', 0, 0x0A, 0})
	f.Add([]byte{0xEF, 0xBB, 0xBF, 'o', 'k'})
	f.Add([]byte("co\xfbte 50 \x80"))
	f.Add([]byte("\x7fELF\x02\x01\x01\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		text, _, err := decodeText(data)
		if err == nil && !utf8.ValidString(text) {
			t.Fatalf("decoded text is not UTF-8: %q", text)
		}
		b, err := LoadBytes(context.Background(), "t.txt", data, Options{})
		switch {
		case err == nil:
			checkPassages(t, b.Passages)
			for _, p := range b.Passages {
				if !utf8.ValidString(p.Text) {
					t.Fatalf("passage not UTF-8: %q", p.Text)
				}
			}
		case errors.Is(err, ErrEmpty), errors.Is(err, ErrBinary), errors.Is(err, ErrEncoding):
		default:
			t.Fatalf("unexpected error %v", err)
		}
	})
}
