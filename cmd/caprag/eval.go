package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/caprag/caprag/evalset"
	"github.com/caprag/caprag/rag"
)

// evalRow is one strategy's figures for one kind of question.
type evalRow struct {
	Strategy   string  `json:"strategy"`
	Kind       string  `json:"kind"`
	Questions  int     `json:"questions"`
	FullRecall float64 `json:"full_recall"`
	MeanRecall float64 `json:"mean_recall"`
	// CitedRecall is the mean share of a question's gold sections that the answer text cites
	// with [n]: what the player is shown, where MeanRecall is what the writer was handed.
	CitedRecall float64 `json:"cited_recall"`
	MeanHops    float64 `json:"mean_hops"`
	OneHopShare float64 `json:"one_hop_share"`
	MeanCalls   float64 `json:"mean_model_calls"`
	MeanContext float64 `json:"mean_context_chars"`
	P50MS       float64 `json:"p50_ms"`
	P95MS       float64 `json:"p95_ms"`
}

// runEval runs a question set and reports retrieval recall per strategy.
func runEval(ctx context.Context, a *app, args []string) error {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	set := fs.String("set", "", "question set (JSON Lines)")
	strategy := fs.String("strategy", "all", "multi-hop, multi-question or all")
	asJSON := fs.Bool("json", false, "print JSON")
	match := fs.String("match", string(evalset.MatchBookSection), "book-section (the set's rule) or section (section heading path only, for one book holding the whole corpus)")
	if _, err := a.parseFlags(fs, args); err != nil {
		return err
	}
	if *set == "" {
		return usagef("--set FILE.jsonl is required")
	}
	m := evalset.Match(*match)
	if m != evalset.MatchBookSection && m != evalset.MatchSection {
		return usagef("--match %q: accepted values are book-section, section", *match)
	}
	var strategies []string
	switch *strategy {
	case "all":
		strategies = []string{rag.StrategyMultiHop, rag.StrategyMultiQuestion}
	case rag.StrategyMultiHop, rag.StrategyMultiQuestion:
		strategies = []string{*strategy}
	default:
		return usagef("--strategy %q: accepted values are multi-hop, multi-question, all", *strategy)
	}
	qs, err := evalset.Load(*set)
	if err != nil {
		return err
	}
	a.cfg.CacheTTL = 0 // every question runs
	p, closeStore, err := a.openPipeline(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	rows, err := evaluate(ctx, p, qs, strategies, m, a.stderr)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(a.stdout, rows)
	}
	printEval(a.stdout, rows, len(qs))
	return nil
}

// evaluate runs every question with every strategy and summarises per strategy and kind.
func evaluate(ctx context.Context, p *rag.Pipeline, qs []evalset.Question, strategies []string, m evalset.Match, log io.Writer) ([]evalRow, error) {
	var rows []evalRow
	for _, st := range strategies {
		type acc struct {
			n, full, oneHop                  int
			recall, cited, hops, calls, size float64
			lat                              []time.Duration
		}
		by := map[string]*acc{}
		for _, q := range qs {
			res, err := p.Run(ctx, rag.Request{Question: q.Question, Strategy: st})
			if err != nil {
				return nil, fmt.Errorf("%s (%s): %w", q.ID, st, err)
			}
			// Retrieval recall reads the context the writer was handed; cited recall the
			// sources the answer text cites with [n].
			var ps []evalset.Passage
			size := 0
			for _, s := range res.Context { // every passage retrieved, cited or not
				ps = append(ps, evalset.Passage{Book: s.Book, Section: s.Section})
				size += len([]rune(s.Text))
			}
			matched, full := q.RecallBy(m, ps)
			cited, _ := q.RecallBy(m, citedPassages(res.Answer))
			for _, kind := range []string{q.Kind, "all"} {
				c := by[kind]
				if c == nil {
					c = &acc{}
					by[kind] = c
				}
				c.n++
				if full {
					c.full++
				}
				if len(res.Hops) == 1 {
					c.oneHop++
				}
				c.recall += float64(matched) / float64(max(1, len(q.Gold)))
				c.cited += float64(cited) / float64(max(1, len(q.Gold)))
				c.hops += float64(len(res.Hops))
				c.calls += float64(res.LLMCalls)
				c.size += float64(size)
				c.lat = append(c.lat, res.Elapsed)
			}
			if log != nil && !full {
				fmt.Fprintf(log, "%s %s: %d of %d gold sections (missing: %s)\n", st, q.ID, matched, len(q.Gold), strings.Join(missing(q.Gold, ps, m), "; "))
			}
			if log != nil && cited < matched {
				fmt.Fprintf(log, "%s %s: cites %d of %d gold sections (not cited: %s)\n", st, q.ID, cited, len(q.Gold), strings.Join(missing(q.Gold, citedPassages(res.Answer), m), "; "))
			}
			if log != nil && q.Kind == evalset.SingleHop && len(res.Hops) > 1 {
				fmt.Fprintf(log, "%s %s: single-hop question took %d hops (hop 2: %s)\n", st, q.ID, len(res.Hops), strings.Join(res.Hops[1].Queries, "; "))
			}
		}
		for _, kind := range []string{evalset.SingleHop, evalset.MultiHop, "all"} {
			c := by[kind]
			if c == nil {
				continue
			}
			n := float64(c.n)
			slices.Sort(c.lat)
			rows = append(rows, evalRow{
				Strategy: st, Kind: kind, Questions: c.n,
				FullRecall: float64(c.full) / n, MeanRecall: c.recall / n, CitedRecall: c.cited / n, MeanHops: c.hops / n,
				OneHopShare: float64(c.oneHop) / n, MeanCalls: c.calls / n, MeanContext: c.size / n,
				P50MS: ms(c.lat[len(c.lat)/2]), P95MS: ms(c.lat[min(len(c.lat)-1, len(c.lat)*95/100)]),
			})
		}
	}
	return rows, nil
}

// citation is a citation mark of an answer text: "[3]".
var citation = regexp.MustCompile(`\[(\d{1,3})\]`)

// citedPassages are the sources an answer's text cites with [n] (n as numbered in Sources).
func citedPassages(a rag.Answer) []evalset.Passage {
	var out []evalset.Passage
	for _, m := range citation.FindAllStringSubmatch(a.Text, -1) {
		n, _ := strconv.Atoi(m[1])
		for _, s := range a.Sources {
			if s.N == n {
				out = append(out, evalset.Passage{Book: s.Book, Section: s.Section})
			}
		}
	}
	return out
}

// missing names the gold sections that no passage matches, as book — section.
func missing(gold []evalset.Gold, ps []evalset.Passage, m evalset.Match) []string {
	var out []string
	for _, g := range gold {
		if !slices.ContainsFunc(ps, func(p evalset.Passage) bool { return g.MatchesBy(m, p.Book, p.Section) }) {
			out = append(out, g.Book+" — "+g.Section)
		}
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func printEval(w io.Writer, rows []evalRow, n int) {
	fmt.Fprintf(w, "%d questions\n\n", n)
	fmt.Fprintln(w, "| strategy | kind | questions | full recall | mean recall | cited recall | mean hops | one hop | model calls | context chars | p50 ms | p95 ms |")
	fmt.Fprintln(w, "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %s | %d | %.0f%% | %.0f%% | %.0f%% | %.2f | %.0f%% | %.2f | %.0f | %.1f | %.1f |\n",
			r.Strategy, r.Kind, r.Questions, 100*r.FullRecall, 100*r.MeanRecall, 100*r.CitedRecall, r.MeanHops, 100*r.OneHopShare, r.MeanCalls, r.MeanContext, r.P50MS, r.P95MS)
	}
}
