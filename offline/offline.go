// Package offline provides the rule-based roles of the answering pipeline, the default when no
// language model is configured: an expander that rewrites a question into keyword and phrasing
// variants, an analyzer that follows the passages' unresolved references, a writer that quotes
// the sentences that answer with their citations, and a follow-up rewriter. They implement the
// role interfaces rag declares (rag.Expander, rag.Analyzer, rag.Writer, rag.Rewriter) beside the
// model-backed roles of package llm, and read words through package words.
package offline

import (
	"github.com/caprag/caprag/rag"
	"github.com/caprag/caprag/words"
)

// Models returns the rule-based roles: a useful product without any model (a rules lookup that
// quotes the book), deterministic, and the default when no model is configured. Without a
// library they know nothing of the books' words: the analyzer follows explicit references only.
func Models() rag.Models { return ModelsFor(nil) }

// ModelsFor returns the rule-based roles reading what the books loaded say about their words
// (books may be nil).
func ModelsFor(books Library) rag.Models {
	return rag.Models{Expander: Expander{Books: books}, Analyzer: Analyzer{Books: books}, Writer: Writer{}, Rewriter: Rewriter{}}
}

// termSet is the stems of a text's content words (no stop words, no words of asking).
func termSet(s string) map[string]bool { return words.ContentSet(s) }
