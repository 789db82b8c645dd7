package rag

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/caprag/caprag/passage"
	"github.com/caprag/caprag/words"
)

// searchAll runs the queries of one hop in parallel and returns one Question per query, in the
// order of the queries; a query searched already with the same options (searched) is not
// searched again.
func searchAll(ctx context.Context, r Retriever, queries []string, hop int, opts SearchOptions, searched map[string][]Document) ([]Question, error) {
	out := make([]Question, len(queries))
	g, gctx := errgroup.WithContext(ctx)
	for i, q := range queries {
		if docs, ok := searched[q]; ok {
			out[i] = Question{Text: q, Hop: hop, Documents: docs}
			continue
		}
		g.Go(func() error {
			docs, err := r.Retrieve(gctx, q, opts)
			if err != nil {
				return fmt.Errorf("searching %q: %w", q, err)
			}
			out[i] = Question{Text: q, Hop: hop, Documents: docs}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

// uniqueQueries drops empty queries and repeats (case-insensitive), keeping order.
func uniqueQueries(seen map[string]bool, qs []string) []string {
	var out []string
	for _, q := range qs {
		q = strings.TrimSpace(q)
		k := strings.ToLower(q)
		if q == "" || seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, q)
	}
	return out
}

// firstQueries are the queries of a first hop: the question and, when there is an expander and
// room, its queries; each once (recorded in seen), at most maxQueries. An expander that reads
// the books' table of contents (ContentsExpander) is given the retriever's (ContentsReader) and
// the question's own results, searched with opts: those are returned by query (searched), for
// the hop not to search the question again.
func firstQueries(ctx context.Context, e Expander, r Retriever, opts SearchOptions, question string, maxQueries int, seen map[string]bool) ([]string, map[string][]Document, error) {
	var searched map[string][]Document
	qs := []string{question}
	if e != nil && maxQueries > 1 {
		var (
			extra []string
			err   error
		)
		ce, reads := e.(ContentsExpander)
		cr, lists := r.(ContentsReader)
		if reads && lists {
			var (
				toc  []Heading
				near []Document
			)
			if toc, err = cr.Contents(ctx, opts); err != nil {
				return nil, nil, fmt.Errorf("listing the books' sections: %w", err)
			}
			if near, err = r.Retrieve(ctx, question, opts); err != nil {
				return nil, nil, fmt.Errorf("searching %q: %w", question, err)
			}
			searched = map[string][]Document{question: near}
			extra, err = ce.ExpandWithContents(ctx, question, maxQueries-1, toc, near)
		} else {
			extra, err = e.Expand(ctx, question, maxQueries-1)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("expanding the question: %w", err)
		}
		qs = append(qs, extra...)
	}
	qs = uniqueQueries(seen, qs)
	if len(qs) > max(1, maxQueries) {
		qs = qs[:max(1, maxQueries)]
	}
	return qs, searched, nil
}

// countNew returns how many documents of qs are not yet in before (by content and book).
func countNew(before map[string]bool, qs []Question) (found, fresh int) {
	for _, q := range qs {
		for _, d := range q.Documents {
			found++
			if k := d.Key(); !before[k] {
				before[k] = true
				fresh++
			}
		}
	}
	return found, fresh
}

func keys(s State) map[string]bool {
	m := map[string]bool{}
	for _, d := range s.Context() {
		m[d.Key()] = true
	}
	return m
}

// MultiQuestion is the prototype's strategy: expand the question into variants, search them all
// in parallel (the original question always among them), in one hop.
type MultiQuestion struct {
	Retriever  Retriever
	Expander   Expander
	TopK       int
	MaxQueries int // the original question included
}

// Execute implements Strategy.
func (m MultiQuestion) Execute(ctx context.Context, s State) (State, error) {
	opts := SearchOptions{K: m.TopK, Books: s.Books}
	queries, searched, err := firstQueries(ctx, m.Expander, m.Retriever, opts, s.Question, m.MaxQueries, map[string]bool{})
	if err != nil {
		return s, err
	}
	hop := Hop{N: 1, Queries: queries}
	s.report(ctx, Progress{Stage: HopStarted, Hop: hop})
	qs, err := searchAll(ctx, m.Retriever, queries, 1, opts, searched)
	if err != nil {
		return s, err
	}
	hop.Found, hop.New = countNew(keys(s), qs)
	hop.Sufficient = true
	s.Questions = append(s.Questions, qs...)
	s.Hops = append(s.Hops, hop)
	s.report(ctx, Progress{Stage: HopFinished, Hop: hop})
	return s, nil
}

// MultiHop searches, lets the analyzer judge whether the passages suffice or name what is
// missing, follows that (reference links resolve to the sections they name), and repeats, for at
// most MaxHops hops.
type MultiHop struct {
	Retriever  Retriever
	Resolver   ReferenceResolver // optional: follows reference links exactly
	Expander   Expander          // optional: the first hop searches its queries beside the question
	Analyzer   Analyzer
	TopK       int
	MaxHops    int
	MaxQueries int // new queries per hop
}

// Execute implements Strategy.
func (m MultiHop) Execute(ctx context.Context, s State) (State, error) {
	maxHops := max(1, m.MaxHops)
	asked := map[string]bool{}
	// The first hop starts, as multi-question does, from the queries generated from the
	// question, the question among them.
	opts := SearchOptions{K: m.TopK, Books: s.Books}
	queries, searched, err := firstQueries(ctx, m.Expander, m.Retriever, opts, s.Question, m.MaxQueries, asked)
	if err != nil {
		return s, err
	}
	askedList := append([]string(nil), queries...)
	var named []string // the sections and rules fetched because the question names them
	var following []string
	for n := 1; n <= maxHops; n++ {
		hop := Hop{N: n, Queries: queries, Following: following}
		s.report(ctx, Progress{Stage: HopStarted, Hop: hop})
		before := keys(s)
		var (
			qs  []Question
			err error
		)
		if n == 1 {
			qs, err = searchAll(ctx, m.Retriever, queries, n, opts, searched)
			if err == nil {
				var fetched []Question
				fetched, err = m.named(ctx, s.Question, opts)
				qs = append(qs, fetched...)
				for _, q := range fetched {
					named = append(named, q.Text)
				}
			}
		} else {
			qs, err = m.follow(ctx, s, queries, n, opts)
		}
		if err != nil {
			return s, err
		}
		hop.Found, hop.New = countNew(before, qs)
		s.Questions = append(s.Questions, qs...)
		switch {
		case m.Analyzer == nil:
			hop.Sufficient = true
		case n == maxHops:
			// The last allowed hop: no verdict could lead anywhere, so the analyzer (a model
			// call with a model) is not asked. Sufficient stays false: nothing judged it.
		default:
			in := AnalyzeInput{Question: s.Question, Documents: docFacts(s, named), Asked: askedList, Max: max(1, m.MaxQueries)}
			if sr, ok := m.Analyzer.(SectionReader); ok && sr.Sections() > 0 {
				if in.Sections, err = m.sections(ctx, s, in.Hints(), sr.Sections(), opts); err != nil {
					return s, err
				}
				if cr, ok := m.Retriever.(ContentsReader); ok {
					if in.Contents, err = cr.Contents(ctx, opts); err != nil {
						return s, fmt.Errorf("listing the books' sections: %w", err)
					}
				}
			}
			a, err := m.Analyzer.Analyze(ctx, in)
			if err != nil {
				return s, fmt.Errorf("analysing the passages: %w", err)
			}
			next := uniqueQueries(asked, a.NewQueries)
			askedList = append(askedList, next...)
			if len(next) > max(1, m.MaxQueries) {
				next = next[:max(1, m.MaxQueries)]
			}
			// An analyzer that wants more but names nothing new ends the search too.
			hop.Sufficient = a.Sufficient
			queries, following = next, a.Following
			if len(following) == 0 {
				following = next
			}
			if !a.Sufficient && len(next) == 0 {
				queries = nil
			}
		}
		s.Hops = append(s.Hops, hop)
		s.report(ctx, Progress{Stage: HopFinished, Hop: hop})
		if hop.Sufficient || len(queries) == 0 {
			break
		}
	}
	return s, nil
}

// docFacts is the context of s with what the run knows about each document: its best rank in
// the searches that found it, the hop that first found it, the names by which the question named
// it, and its unresolved references. A section fetched because the question names it ranks after
// a search's top results: the question chose it, not the search, so its own links are weak hints.
func docFacts(s State, named []string) []DocFacts {
	docs := s.Context()
	out := make([]DocFacts, len(docs))
	at := make(map[string]int, len(docs))
	for i, d := range docs {
		out[i] = DocFacts{Document: d, Rank: -1}
		at[d.Key()] = i
	}
	for _, q := range s.Questions {
		isNamed := q.Hop == 1 && slices.Contains(named, q.Text)
		for r, d := range q.Documents {
			f := &out[at[d.Key()]]
			if isNamed {
				r += 3
				if !slices.Contains(f.Named, q.Text) {
					f.Named = append(f.Named, q.Text)
				}
			}
			if f.Rank < 0 || r < f.Rank {
				f.Rank = r
			}
			if f.Hop == 0 || q.Hop < f.Hop {
				f.Hop = q.Hop
			}
		}
	}
	for _, h := range Unresolved(docs) {
		out[h.Rank].Hints = append(out[h.Rank].Hints, h.Ref)
	}
	return out
}

// sections lists, for an analyzer that names missing rules by title, at most n titles of
// sections not in the context: first the targets of the context's unresolved references, hints
// (the cross-references and defined terms its passages mention, in context order), then the
// sections a search of the question ranks first (sectionsNearQuestion results).
// A model shown these can name the rule that is missing by the title that fetches it, where a
// query of its own words would be searched and may miss. Titles are compared folded; page
// references are left out (they have no title to name). Searching the queries too, or reading
// further than the question's first ten results, found no gold rule more on the dev and
// held-out sets of either corpus and cost a search each.
func (m MultiHop) sections(ctx context.Context, s State, hints []Reference, n int, opts SearchOptions) ([]string, error) {
	docs := s.Context()
	seen := map[string]bool{}
	inContext := map[string]bool{}
	for _, d := range docs {
		inContext[d.Key()] = true
		seen[words.Fold(passage.LastHeading(d.Section))] = true
	}
	var out []string
	add := func(t string) {
		k := words.Fold(t)
		if k != "" && !seen[k] && len(out) < n {
			seen[k] = true
			out = append(out, t)
		}
	}
	for _, h := range hints {
		if h.Kind != RefPage {
			add(h.Target)
		}
	}
	if len(out) >= n {
		return out, nil
	}
	found, err := m.Retriever.Retrieve(ctx, s.Question, SearchOptions{K: min(n-len(out), sectionsNearQuestion), Books: opts.Books, NoRefs: true})
	if err != nil {
		return nil, fmt.Errorf("listing the sections near the question: %w", err)
	}
	for _, d := range found {
		if !inContext[d.Key()] {
			add(passage.LastHeading(d.Section))
		}
	}
	return out, nil
}

// sectionsNearQuestion is how many results of the question's own search the section titles an
// analyzer is shown read beyond the references.
const sectionsNearQuestion = 10

// named fetches the sections whose titles the question itself names ("concentrating on haste"
// → Haste), as part of the first hop, when the resolver can find titles.
func (m MultiHop) named(ctx context.Context, question string, opts SearchOptions) ([]Question, error) {
	tf, ok := m.Resolver.(TitleFinder)
	if !ok {
		return nil, nil
	}
	refs, err := tf.Mentions(ctx, question)
	if err != nil || len(refs) == 0 {
		return nil, err
	}
	if len(refs) > max(1, m.MaxQueries) {
		refs = refs[:max(1, m.MaxQueries)]
	}
	var out []Question
	for _, r := range refs {
		docs, err := m.Resolver.Resolve(ctx, Document{}, r, SearchOptions{K: 1, Books: opts.Books})
		if err != nil {
			return nil, fmt.Errorf("fetching %q: %w", r.Target, err)
		}
		if len(docs) > 0 {
			out = append(out, Question{Text: r.Target, Hop: 1, Documents: docs})
		}
	}
	return out, nil
}

// follow searches the queries of a later hop. A query that names an unresolved reference of the
// passages so far is resolved through the reference link first (the section it names); other
// queries, and links that resolve to nothing, are searched.
func (m MultiHop) follow(ctx context.Context, s State, queries []string, hop int, opts SearchOptions) ([]Question, error) {
	hints := Unresolved(s.Context())
	out := make([]Question, len(queries)) // each goroutine writes its own element
	g, gctx := errgroup.WithContext(ctx)
	for i, q := range queries {
		g.Go(func() error {
			var docs []Document
			if m.Resolver != nil {
				// Every unresolved link of that name (two books may both define it), else the
				// section of that name.
				var links []Hint
				for _, h := range hints {
					if strings.EqualFold(h.Ref.Target, q) {
						links = append(links, h)
					}
				}
				if len(links) == 0 {
					links = []Hint{{Ref: Reference{Kind: RefSee, Text: q, Target: q}}}
				}
				seen := map[string]bool{}
				for _, h := range links {
					got, err := m.Resolver.Resolve(gctx, h.From, h.Ref, SearchOptions{K: 2, Books: opts.Books})
					if err != nil {
						return fmt.Errorf("following %q: %w", q, err)
					}
					for _, d := range got {
						if !seen[d.ID] {
							seen[d.ID] = true
							docs = append(docs, d)
						}
					}
				}
			}
			if len(docs) == 0 {
				got, err := m.Retriever.Retrieve(gctx, q, opts)
				if err != nil {
					return fmt.Errorf("searching %q: %w", q, err)
				}
				docs = got
			}
			out[i] = Question{Text: q, Hop: hop, Documents: docs}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}
