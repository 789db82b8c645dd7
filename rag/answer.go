package rag

import (
	"context"
	"errors"
	"time"
)

// Request is a question to answer.
type Request struct {
	// Question is what the user asked (a follow-up as typed; see History).
	Question string
	// Books restricts retrieval to these books; empty means all.
	Books []string
	// Library is the library whose books (with the shared ones) answer the question, with a
	// PipelineOptions.Scoper: a Discord server's ID; "" is the shared library alone.
	Library string
	// Strategy names the retrieval strategy ("multi-hop", "multi-question"); empty means the
	// configured default.
	Strategy string
	// History holds the earlier questions and answers of a follow-up thread, oldest first. When
	// it is not empty, the question is first rewritten into a standalone question.
	History []Turn
	// Progress, when set, receives the strategy's hop events — also when the same question, asked
	// at the same moment by someone else, is already being answered and this request waits for
	// that run.
	Progress ProgressFunc
}

// Turn is one earlier question and its answer in a follow-up thread.
type Turn struct {
	Question string
	Answer   string
}

// Answer is a cited answer.
type Answer struct {
	// Question is the question answered: the standalone rewrite for a follow-up.
	Question string `json:"question"`
	Strategy string `json:"strategy"`
	// Text cites its sources as [1], [2]… numbered as in Sources.
	Text string `json:"answer"`
	// Sources lists the passages the answer cites, numbered [1]..[n] in the order the text
	// first cites them (the writer's citations renumbered to match).
	Sources []Source `json:"sources"`
	// Context lists every passage handed to the answer writer: the cited ones first, with their
	// numbers in Sources, then the others (numbered on from n+1) in retrieval order.
	Context []Source `json:"context"`
	Hops    []Hop    `json:"hops"`
	// Cached is true when the answer came from the cache.
	Cached bool `json:"cached"`
	// LLMCalls is every model request made for this answer, retries included.
	LLMCalls int `json:"llm_calls"`
	// Elapsed is the pipeline time of this request (for a cached answer: the lookup).
	Elapsed time.Duration `json:"-"`
}

// Source is a passage the answer writer read, as the answer cites it.
type Source struct {
	N       int    `json:"n"`
	Book    string `json:"book"`
	Page    int    `json:"page,omitempty"`
	Section string `json:"section"`
	Text    string `json:"text"`
}

// BookInfo describes an ingested book.
type BookInfo struct {
	Name     string `json:"name"`
	Passages int    `json:"passages"`
	// Library is the library that holds the book when a scope lists several: a server's ID, ""
	// for the shared library.
	Library string `json:"library,omitempty"`
}

// Library is implemented by retrievers that can list their books (found by type assertion).
type Library interface {
	Books(ctx context.Context) ([]BookInfo, error)
}

// ErrNoContext is returned when retrieval found no passage at all for a question.
var ErrNoContext = errors.New("no passage of the books matches the question")
