package rag

import (
	"context"
	"errors"

	"github.com/caprag/caprag/passage"
)

// Reference is an outgoing cross-reference of a passage (see package passage).
type Reference = passage.Reference

// RefKind says how a passage refers to another rule (see package passage).
type RefKind = passage.RefKind

// The kinds of reference.
const (
	RefPage    = passage.RefPage
	RefSee     = passage.RefSee
	RefMention = passage.RefMention
)

// Document is a passage as the answer writer reads it: the parent text of the child chunk that
// matched, with where it comes from.
type Document struct {
	// ID is the passage's stable ID (the parent's, so that children of one parent collapse).
	ID string `json:"id"`
	// Book is the book's name: a PDF's title metadata, else the file name without extension,
	// unless overridden at ingest.
	Book string `json:"book"`
	// Section is the heading path through all ancestor headings, joined with " > ".
	Section string `json:"section"`
	// Page is the printed page number (PDFs), else the PDF page index; 0 when the book has no
	// pages (Markdown, text).
	Page int `json:"page,omitempty"`
	// Source is the file the book was loaded from.
	Source string `json:"source,omitempty"`
	// Text is the parent passage: the surrounding section, bounded in size.
	Text string `json:"text"`
	// Match is the child chunk inside Text that the search matched (empty when resolved
	// through a reference rather than a search).
	Match string `json:"match,omitempty"`
	// Score is the fused retrieval score; higher is better. Only comparable within one result
	// list.
	Score float64 `json:"score"`
	// Refs are the passage's outgoing references.
	Refs []Reference `json:"refs,omitempty"`
	// Rank is the best position the document had in the searches and links that found it
	// (0 = first), set by State.Context: what a prompt over budget drops by.
	Rank int `json:"-"`
}

// Key identifies a document's content for deduplication: the same content from the same book is
// the same document, however many queries or hops found it.
func (d Document) Key() string { return d.Book + "\x00" + d.Text }

// SearchOptions narrow a retrieval.
type SearchOptions struct {
	// K is the number of documents wanted; values below 1 mean the retriever's default.
	K int
	// Books restricts the search to these books (case-insensitive names); empty means all.
	Books []string
	// NoRefs asks for documents without their references (Refs left empty): a caller that only
	// lists passages spares the retriever linking the library's references.
	NoRefs bool
}

// Retriever finds the passages that best match a query.
//
// Retrieve returns at most opts.K documents, best first, each document once (children of one
// parent collapse into the parent). An empty corpus or no match returns an empty slice and a
// nil error. A retriever whose index was built with a different embedder than the one it
// queries with returns an error wrapping ErrEmbedderMismatch.
type Retriever interface {
	Retrieve(ctx context.Context, query string, opts SearchOptions) ([]Document, error)
}

// ReferenceResolver is implemented by retrievers that can follow a passage's references to the
// passages they point to (found by type assertion on the Retriever).
//
// Resolve returns the passages the reference points to, best first, at most opts.K (the
// retriever's default when below 1), honouring opts.Books. A page reference without a book
// resolves in from's book. A reference that points nowhere returns an empty slice and nil.
type ReferenceResolver interface {
	Resolve(ctx context.Context, from Document, ref Reference, opts SearchOptions) ([]Document, error)
}

// Heading is a section of a book as a table of contents lists it.
type Heading struct {
	Book    string
	Section string // the heading path through all ancestor headings, joined with " > "
}

// ContentsReader lists the books' sections in reading order, each once, of the books
// opts.Books names (all when none): a table of contents. A resolver that reads it resolves a
// title given with the headings above it ("Ghast > Actions") to that section.
type ContentsReader interface {
	Contents(ctx context.Context, opts SearchOptions) ([]Heading, error)
}

// ErrEmbedderMismatch is wrapped by retrieval errors when a search reads vectors that another
// embedder than the configured one made: the books must be embedded again
// (`caprag ingest --reindex`).
var ErrEmbedderMismatch = errors.New("the books were embedded with a different embedder; embed them again")

// TitleFinder finds the section titles a text names (a question that names a rule). Resolvers may
// implement it; the multi-hop strategy then fetches the rules a question names in its first hop.
type TitleFinder interface {
	Mentions(ctx context.Context, text string) ([]Reference, error)
}
