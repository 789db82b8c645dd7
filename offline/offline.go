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
// quotes the book), deterministic, and the default when no model is configured. v, when not
// nil, tells the writer how common the books' words are (the stores implement it).
func Models(v Vocabulary) rag.Models {
	return rag.Models{Expander: Expander{}, Analyzer: Analyzer{}, Writer: Writer{Vocabulary: v}, Rewriter: Rewriter{}}
}

// termSet is the stems of a text's content words (no stop words, no words of asking).
func termSet(s string) map[string]bool { return words.ContentSet(s) }
