package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/caprag/caprag/evalset"
	"github.com/caprag/caprag/llm"
	"github.com/caprag/caprag/offline"
	"github.com/caprag/caprag/rag"
	"github.com/caprag/caprag/store"
)

// oracleAnalyzer names, after each hop, the missing gold sections of its question — but only
// by a title it is shown (the first maxHints hint targets, as the model's prompt numbers them,
// and, when it reads sections, AnalyzeInput.Sections) that fetches the section. It is a model
// that always knows which rule is missing and can only name what it sees: what multi-hop
// reaches with it measures what the prompt offers, not any model.
type oracleAnalyzer struct {
	s        *store.Local
	gold     []evalset.Gold
	sections int
	hints    int
	// budget, when above 0, is the model's context window: the titles shown are those the
	// analyzer's request shows in it (llm.TitlesShown: sections and table of contents).
	budget int
}

func (a *oracleAnalyzer) Sections() int { return a.sections }

func (a *oracleAnalyzer) Analyze(ctx context.Context, in rag.AnalyzeInput) (rag.Analysis, error) {
	type shown struct {
		from rag.Document
		ref  rag.Reference
	}
	var titles []shown
	for _, d := range in.Documents { // hints in context order, as many as the prompt numbers
		for _, h := range d.Hints {
			if len(titles) < a.hints {
				titles = append(titles, shown{d.Document, h})
			}
		}
	}
	names := in.Sections
	if a.budget > 0 {
		names = llm.TitlesShown(in, in.Max, a.budget)
	}
	for _, t := range names {
		titles = append(titles, shown{ref: rag.Reference{Kind: rag.RefSee, Text: t, Target: t}})
	}
	var asked []string
	for _, g := range a.gold {
		if slices.ContainsFunc(in.Documents, func(d rag.DocFacts) bool { return g.Matches(d.Book, d.Section) }) {
			continue
		}
		for _, t := range titles {
			ok, err := fetches(ctx, a.s, t.from, t.ref, g)
			if err != nil {
				return rag.Analysis{}, err
			}
			if ok {
				asked = append(asked, t.ref.Target)
				break
			}
		}
	}
	return rag.Analysis{Sufficient: len(asked) == 0, NewQueries: asked}, nil
}

// TestSectionsAModelMayName measures what showing the analyzer section titles (rag.SectionReader)
// offers a model: on the multi-hop questions of each corpus, multi-hop's full recall when the
// analyzer always knows which rule is missing but can name it only by a title it is shown — the
// ten numbered hints alone (the prompt before), or with the section titles too (50 is about
// what fits a 4k-token window, 100 the most shown). A measurement, run with
//
//	CAPRAG_MEASURE_SECTIONS=1 go test -run SectionsAModelMayName -v ./cmd/caprag/
//
// (CAPRAG_SECTIONS_SETS=corpus=set.jsonl,... measures other question sets of the two corpora).
func TestSectionsAModelMayName(t *testing.T) {
	ctx := context.Background()
	for _, m := range measuredSets(t) {
		name, s, qs := m.name, m.store, m.questions
		models := offline.Models(s)
		var line []string
		for _, c := range []struct{ sections, budget int }{{0, 0}, {50, 0}, {100, 0}, {100, 4096}, {100, 16384}, {100, 100000}} {
			full, total := multiHopFullRecall(t, qs, func(q evalset.Question) (rag.State, error) {
				a := &oracleAnalyzer{s: s, gold: q.Gold, sections: c.sections, hints: 10, budget: c.budget}
				return rag.MultiHop{Retriever: s, Resolver: s, Expander: models.Expander, Analyzer: a, TopK: 5, MaxHops: 3, MaxQueries: 4}.Execute(ctx, rag.State{Question: q.Question})
			})
			what := fmt.Sprintf("%d sections", c.sections)
			if c.budget > 0 {
				what = fmt.Sprintf("the request of a %d-token window", c.budget)
			}
			line = append(line, fmt.Sprintf("%s: %d/%d (%.0f%%)", what, full, total, 100*float64(full)/float64(max(1, total))))
		}
		t.Logf("%s (%s), multi-hop full recall of an analyzer naming what it is shown: %s", name, m.set, strings.Join(line, "; "))
	}
}

// oracleExpander names, for the first hop, the gold sections of its question — but only by a
// title its request shows (llm.ExpandTitlesShown in a window of budget tokens), with the
// question's own first results as near (nil when unordered), and searches them as the first
// hop does.
type oracleExpander struct {
	s         *store.Local
	gold      []evalset.Gold
	budget    int
	unordered bool
}

func (e *oracleExpander) Expand(context.Context, string, int) ([]string, error) { return nil, nil }

func (e *oracleExpander) ExpandWithContents(ctx context.Context, question string, max int, toc []rag.Heading, near []rag.Document) ([]string, error) {
	if e.unordered {
		near = nil
	}
	titles := llm.ExpandTitlesShown(question, max, toc, near, e.budget)
	var out []string
	for _, g := range e.gold {
		for _, t := range titles {
			ok, err := fetches(ctx, e.s, rag.Document{}, rag.Reference{Kind: rag.RefSee, Text: t, Target: t}, g)
			if err != nil {
				return nil, err
			}
			if ok {
				out = append(out, t)
				break
			}
		}
	}
	return out, nil
}

// fetches reports whether following ref (a title named) fetches the gold section g.
func fetches(ctx context.Context, s *store.Local, from rag.Document, ref rag.Reference, g evalset.Gold) (bool, error) {
	got, err := s.Resolve(ctx, from, ref, rag.SearchOptions{K: 2})
	return slices.ContainsFunc(got, func(d rag.Document) bool { return g.Matches(d.Book, d.Section) }), err
}

// multiHopFullRecall runs each multi-hop question of qs and counts those whose context holds
// every gold section.
func multiHopFullRecall(t *testing.T, qs []evalset.Question, run func(evalset.Question) (rag.State, error)) (full, total int) {
	for _, q := range qs {
		if q.Kind != "multi-hop" {
			continue
		}
		total++
		st, err := run(q)
		if err != nil {
			t.Fatal(err)
		}
		docs := st.Context()
		if !slices.ContainsFunc(q.Gold, func(g evalset.Gold) bool {
			return !slices.ContainsFunc(docs, func(d rag.Document) bool { return g.Matches(d.Book, d.Section) })
		}) {
			full++
		}
	}
	return full, total
}

// TestTitlesAnExpanderMayName measures what showing the expander the table of contents offers
// the first hop: on the multi-hop questions of each corpus, the first hop's full recall (the
// question and the expander's queries searched, 5 results each, up to 8 queries) when the
// expander always knows the rules the answer needs but names them only by titles its request
// shows, in windows of 4,096, 16,384 and 100,000 tokens, with the table cut around the
// question's own first results or in reading order. A measurement, run with
//
//	CAPRAG_MEASURE_SECTIONS=1 go test -run TitlesAnExpanderMayName -v ./cmd/caprag/
func TestTitlesAnExpanderMayName(t *testing.T) {
	ctx := context.Background()
	for _, m := range measuredSets(t) {
		name, s, qs := m.name, m.store, m.questions
		models := offline.Models(s)
		var line []string
		for _, c := range []struct {
			budget    int
			unordered bool
		}{{0, false}, {4096, false}, {16384, true}, {16384, false}, {100000, false}} {
			full, total := multiHopFullRecall(t, qs, func(q evalset.Question) (rag.State, error) {
				var e rag.Expander = models.Expander
				if c.budget > 0 {
					e = &oracleExpander{s: s, gold: q.Gold, budget: c.budget, unordered: c.unordered}
				}
				return rag.MultiQuestion{Retriever: s, Expander: e, TopK: 5, MaxQueries: 8}.Execute(ctx, rag.State{Question: q.Question})
			})
			what := "the offline expander"
			if c.budget > 0 {
				what = fmt.Sprintf("%d-token window", c.budget)
				if c.unordered {
					what += ", reading order"
				}
			}
			line = append(line, fmt.Sprintf("%s: %d/%d (%.0f%%)", what, full, total, 100*float64(full)/float64(max(1, total))))
		}
		t.Logf("%s (%s), first-hop full recall of an expander naming what it is shown: %s", name, m.set, strings.Join(line, "; "))
	}
}

// measured is a corpus loaded and the question set measured on it.
type measured struct {
	name, set string
	store     *store.Local
	questions []evalset.Question
}

// measuredSets loads both corpora with their dev sets, or the sets CAPRAG_SECTIONS_SETS names
// (corpus=set.jsonl,...); it skips unless CAPRAG_MEASURE_SECTIONS is set (a measurement).
func measuredSets(t *testing.T) []measured {
	if os.Getenv("CAPRAG_MEASURE_SECTIONS") == "" {
		t.Skip("a measurement: set CAPRAG_MEASURE_SECTIONS=1")
	}
	sets := corpora(t)
	if v := os.Getenv("CAPRAG_SECTIONS_SETS"); v != "" {
		for _, kv := range strings.Split(v, ",") {
			name, set, _ := strings.Cut(kv, "=")
			sets[name] = [2]string{sets[name][0], set}
		}
	}
	var out []measured
	for _, name := range []string{"srd51", "fate"} {
		qs, err := evalset.Load(sets[name][1])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, measured{name: name, set: sets[name][1], store: loadCorpus(t, sets[name][0]), questions: qs})
	}
	return out
}
