package rag

import "context"

// State is what a retrieval run reads and fills: the user's question in, the searched
// questions with their context documents and the hops taken out.
type State struct {
	// Question is the user's question (for a follow-up: the standalone rewrite).
	Question string
	// Books restricts retrieval to these books; empty means all.
	Books []string
	// Questions are the queries searched, each with the documents it found, in search order.
	// The original question is always among them.
	Questions []Question
	// Hops records each retrieval round.
	Hops []Hop
	// Progress, when set, receives the run's hop events (never serialised).
	Progress ProgressFunc `json:"-"`
}

// report sends a progress event to s.Progress, when set.
func (s State) report(ctx context.Context, p Progress) {
	if s.Progress != nil {
		s.Progress(ctx, p)
	}
}

// Question is one searched query with the documents it brought.
type Question struct {
	Text string
	// Hop is the 1-based hop in which the query was searched.
	Hop int
	// Documents are the documents the query found, best first.
	Documents []Document
}

// Hop records one retrieval round.
type Hop struct {
	N       int      `json:"n"`
	Queries []string `json:"queries"`
	// Following names the reference targets this hop follows (empty for the first hop).
	Following []string `json:"following,omitempty"`
	// Found is how many documents the hop's queries returned; New how many were not in the
	// context before.
	Found int `json:"found"`
	New   int `json:"new"`
	// Sufficient is the analyzer's decision after the hop (always true for strategies
	// without an analyzer; false after multi-hop's last allowed hop, which is not analysed).
	Sufficient bool `json:"sufficient"`
}

// Context returns the documents handed to the answer writer: every question's documents, in
// search order, each distinct content of a book once.
// Each document's Rank is its best position in the questions that found it.
func (s State) Context() []Document {
	at := make(map[string]int)
	var docs []Document
	for _, q := range s.Questions {
		for i, d := range q.Documents {
			k := d.Key()
			j, ok := at[k]
			if !ok {
				at[k] = len(docs)
				d.Rank = i
				docs = append(docs, d)
			} else if i < docs[j].Rank {
				docs[j].Rank = i
			}
		}
	}
	return docs
}

// Strategy is a retrieval strategy. Execute receives the state holding the user's question and
// returns it with Questions filled, each carrying its context documents. When the corpus holds
// anything relevant, the returned state holds at least one question with non-empty documents.
type Strategy interface {
	Execute(ctx context.Context, state State) (State, error)
}

// ProgressStage says where in a hop a Progress event was sent.
type ProgressStage string

const (
	// HopStarted is sent before a hop's queries run.
	HopStarted ProgressStage = "hop-started"
	// HopFinished is sent after a hop's results are in and (multi-hop) analysed.
	HopFinished ProgressStage = "hop-finished"
)

// Progress is a retrieval event that callers can show (CLI on stderr, the bot by editing its
// reply). For HopStarted, Hop.Found, Hop.New and Hop.Sufficient are not yet known.
type Progress struct {
	Stage ProgressStage
	Hop   Hop
}

// ProgressFunc receives progress events. It is called from the goroutine running Execute, in
// order; it must not block for long. A strategy reports to the State's Progress.
type ProgressFunc func(ctx context.Context, p Progress)
