// Package ingest turns rulebook files into passages that know where they came from: loaders for
// PDF, Markdown and plain text, parent/child chunking that never crosses a section boundary,
// stable chunk IDs and the outgoing reference links of each passage.
package ingest

import "github.com/caprag/caprag/passage"

// Book is one loaded file, chunked.
type Book struct {
	// Name is the book's name: --book, else a PDF's title metadata, else the file name without
	// its extension.
	Name string
	// Source is the file the book was loaded from.
	Source string
	// Pages is the number of pages of a PDF (0 for Markdown and text).
	Pages int
	// Passages are the child chunks, in reading order.
	Passages []Passage
	// Warnings are non-fatal problems (a PDF page without extractable text, …).
	Warnings []string
}

// Passage is a child chunk — what the search matches — with its parent — what the answer
// writer reads.
type Passage struct {
	// ID is stable: derived from the book, the position and the content.
	ID string
	// ParentID is the parent's ID; children of one parent share it.
	ParentID string
	Book     string
	// Section is the heading path through all ancestor headings, joined with " > ".
	Section string
	// Page is the printed page number of a PDF page (else its 1-based index); 0 for books
	// without pages.
	Page   int
	Source string
	// Position is the child's 0-based index in the book's reading order.
	Position int
	// Text is the child chunk.
	Text string
	// Parent is the parent text: the surrounding section, bounded in size.
	Parent string
	// Refs are the outgoing references of the child's text, set by AddRefs (page references,
	// "see X" phrases, mentions of the book's own titles). Loading leaves them empty: the store
	// derives its references per parent and across the whole library itself.
	Refs []passage.Reference
}
