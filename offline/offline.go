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
// quotes the book), deterministic, and the default when no model is configured. books, when not
// nil, is what they read about the books loaded (the stores implement both): how common their
// words are (Vocabulary, for the writer) and, when it gives it, the books' lexicon (Library: the
// terms and reference graph the expander and the analyzer read; without it the analyzer follows
// explicit references only).
func Models(books Vocabulary) rag.Models {
	lib, _ := books.(Library)
	return rag.Models{Expander: Expander{Books: lib}, Analyzer: Analyzer{Books: lib}, Writer: Writer{Vocabulary: books}, Rewriter: Rewriter{}}
}

// termSet is the stems of a text's content words (no stop words, no words of asking).
func termSet(s string) map[string]bool { return words.ContentSet(s) }

// subset reports whether every word of a (at least one) is in b.
func subset(a, b map[string]bool) bool {
	for t := range a {
		if !b[t] {
			return false
		}
	}
	return len(a) > 0
}
