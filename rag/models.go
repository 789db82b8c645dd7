package rag

import (
	"context"
	"slices"
	"sync/atomic"
)

// The three model roles of the pipeline (SPEC.md, "Retrieval strategies"), plus the follow-up
// rewriter. Each has an offline, rule-based implementation in rag/ and a model-backed one in llm/.

// Expander turns a question into search queries (multi-question strategy). The original question
// is searched anyway; implementations return only the extra queries.
type Expander interface {
	Expand(ctx context.Context, question string, max int) ([]string, error)
}

// ContentsExpander is an Expander that reads the books' table of contents (a model, which can
// then write its queries as the books' own section titles); the strategies give it the
// retriever's when the retriever lists one (ContentsReader), with near, the question's own
// first results (a table cut to fit shows their chapters first). The table is shared: read
// it, do not change it.
type ContentsExpander interface {
	ExpandWithContents(ctx context.Context, question string, max int, toc []Heading, near []Document) ([]string, error)
}

// Analysis is the analyzer's verdict on the passages gathered so far.
type Analysis struct {
	Sufficient bool     `json:"sufficient"`
	NewQueries []string `json:"new_queries"`
	// Following names the cross-references the new queries follow, for progress ("Rapid Strike").
	Following []string `json:"-"`
}

// AnalyzeInput is what the analyzer sees: the question, and the passages gathered so far with
// what the run knows about each.
type AnalyzeInput struct {
	Question string
	// Documents is the context so far, in search order, each passage once.
	Documents []DocFacts
	Asked     []string // queries already searched, never asked again
	Max       int      // most new queries wanted
	// Sections are titles of the books' sections that are not in the context, for an analyzer
	// that names what is missing by title (a new query that is a section's exact title fetches
	// that section): the targets of the context's unresolved references, in context order,
	// then the sections a wider search of the question finds, best first. Only
	// filled for an analyzer that implements SectionReader, at most as many as it wants.
	Sections []string
	// Contents is the books' table of contents (each book's sections in reading order, when
	// the retriever lists them: ContentsReader), for the same analyzers: a section it names
	// by title, or by title with the headings above it ("Ghast > Actions"), is fetched. It is
	// the library's, shared: read it, do not change it.
	Contents []Heading
}

// SectionReader is implemented by analyzers that read AnalyzeInput.Sections and Contents (a
// model, shown the titles it may name); Sections is how many titles near the question they
// want.
type SectionReader interface {
	Sections() int
}

// DocFacts is a passage of the context with what the run knows about it.
type DocFacts struct {
	Document
	// Rank is its best rank in the searches and links that found it (0 = first). A section
	// fetched because the question names it counts three places lower: the question chose it,
	// not the search.
	Rank int
	// Hop is the hop that first found it (1 = the first search).
	Hop int
	// Named are the names by which the question names it, when it was fetched in the first hop
	// for that reason ("a puff of malice" → Malice); empty otherwise.
	Named []string
	// Hints are its references whose targets are not yet in the context, each target once
	// across the whole context (see Unresolved).
	Hints []Reference
}

// Hints returns the unresolved references of all the documents, in context order.
func (in AnalyzeInput) Hints() []Reference {
	var out []Reference
	for _, d := range in.Documents {
		out = append(out, d.Hints...)
	}
	return out
}

// Names returns the names by which the question names passages of the context.
func (in AnalyzeInput) Names() []string {
	var out []string
	for _, d := range in.Documents {
		for _, n := range d.Named {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}

// Analyzer judges whether the passages answer the question and otherwise asks for what is missing.
type Analyzer interface {
	Analyze(ctx context.Context, in AnalyzeInput) (Analysis, error)
}

// Writer writes the answer from the passages only, citing them as [1], [2]… in the order given.
type Writer interface {
	Write(ctx context.Context, question string, docs []Document, history []Turn) (string, error)
}

// Rewriter turns a follow-up into a standalone question using the earlier turns of the thread.
type Rewriter interface {
	Rewrite(ctx context.Context, followUp string, history []Turn) (string, error)
}

// Models bundles the roles a pipeline uses.
type Models struct {
	Expander Expander
	Analyzer Analyzer
	Writer   Writer
	Rewriter Rewriter
}

type modelCallsKey struct{}

// CountModelCalls is how a model-backed role reports the requests it sent for the question
// under way, retries included (they appear in Answer.LLMCalls). Roles without a model never
// call it. Safe for concurrent use.
func CountModelCalls(ctx context.Context, n int) {
	if c, ok := ctx.Value(modelCallsKey{}).(*atomic.Int64); ok {
		c.Add(int64(n))
	}
}

// withModelCalls returns a context whose model requests are counted in the returned counter.
func withModelCalls(ctx context.Context) (context.Context, *atomic.Int64) {
	c := &atomic.Int64{}
	return context.WithValue(ctx, modelCallsKey{}, c), c
}
