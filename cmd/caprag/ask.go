package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/caprag/caprag/rag"
)

// answerJSON is the --json shape of an answer.
type answerJSON struct {
	Question  string       `json:"question"`
	Strategy  string       `json:"strategy"`
	Answer    string       `json:"answer"`
	Sources   []rag.Source `json:"sources"`
	Context   []rag.Source `json:"context"`
	Hops      []hopJSON    `json:"hops"`
	Cached    bool         `json:"cached"`
	LLMCalls  int          `json:"llm_calls"`
	ElapsedMS float64      `json:"elapsed_ms"`
}

type hopJSON struct {
	N          int      `json:"n"`
	Queries    []string `json:"queries"`
	Found      int      `json:"found"`
	New        int      `json:"new"`
	Sufficient bool     `json:"sufficient"`
}

// runAsk answers one question: hop progress on stderr, the answer and its sources on stdout.
func runAsk(ctx context.Context, a *app, args []string) error {
	fs := flag.NewFlagSet("ask", flag.ContinueOnError)
	strategy := fs.String("strategy", "", "multi-hop or multi-question (default: RETRIEVAL_STRATEGY)")
	book := fs.String("book", "", "answer from this book only")
	asJSON := fs.Bool("json", false, "print JSON")
	server := fs.String("server", "", "answer as in this Discord server: from its books and the shared ones")
	rest, err := a.parseFlags(fs, args)
	if err != nil {
		return err
	}
	lib, err := library(*server)
	if err != nil {
		return err
	}
	question := strings.TrimSpace(strings.Join(rest, " "))
	if question == "" {
		return usagef("give a question")
	}
	if *strategy != "" && *strategy != rag.StrategyMultiHop && *strategy != rag.StrategyMultiQuestion {
		return usagef("--strategy %q: accepted values are multi-hop, multi-question", *strategy)
	}
	p, closeStore, err := a.openPipeline(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	req := rag.Request{Question: question, Strategy: *strategy, Library: lib, Progress: progressPrinter(a.stderr)}
	if *book != "" {
		if err := knownBook(ctx, scopeBooks{p, lib}, *book); err != nil {
			return err
		}
		req.Books = []string{*book}
	}
	ans, err := p.Answer(ctx, req)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(a.stdout, toJSON(ans))
	}
	printAnswer(a.stdout, ans)
	return nil
}

func toJSON(ans rag.Answer) answerJSON {
	out := answerJSON{
		Question: ans.Question, Strategy: ans.Strategy, Answer: ans.Text, Sources: ans.Sources, Context: ans.Context,
		Cached: ans.Cached, LLMCalls: ans.LLMCalls, ElapsedMS: float64(ans.Elapsed.Microseconds()) / 1000,
		Hops: []hopJSON{},
	}
	if out.Sources == nil {
		out.Sources = []rag.Source{}
	}
	if out.Context == nil {
		out.Context = []rag.Source{}
	}
	for _, h := range ans.Hops {
		out.Hops = append(out.Hops, hopJSON{N: h.N, Queries: h.Queries, Found: h.Found, New: h.New, Sufficient: h.Sufficient})
	}
	return out
}

// progressPrinter prints hop progress lines.
func progressPrinter(w io.Writer) rag.ProgressFunc {
	return func(_ context.Context, p rag.Progress) {
		switch p.Stage {
		case rag.HopStarted:
			if len(p.Hop.Following) > 0 && p.Hop.N > 1 {
				fmt.Fprintf(w, "hop %d: following %s…\n", p.Hop.N, strings.Join(p.Hop.Following, ", "))
			} else {
				fmt.Fprintf(w, "hop %d: searching %d %s…\n", p.Hop.N, len(p.Hop.Queries), plural(len(p.Hop.Queries), "query", "queries"))
			}
		case rag.HopFinished:
			verdict := "more needed"
			if p.Hop.Sufficient {
				verdict = "enough"
			}
			fmt.Fprintf(w, "hop %d: %d passages, %d new — %s\n", p.Hop.N, p.Hop.Found, p.Hop.New, verdict)
		}
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func printAnswer(w io.Writer, ans rag.Answer) {
	fmt.Fprintln(w, ans.Text)
	if len(ans.Sources) > 0 {
		fmt.Fprintln(w, "\nSources:")
		for _, s := range ans.Sources {
			fmt.Fprintf(w, "[%d] %s — %s\n", s.N, cite(s.Book, s.Page), s.Section)
		}
	}
	cached := ""
	if ans.Cached {
		cached = ", from the cache"
	}
	took := fmt.Sprintf("%.1f s", ans.Elapsed.Seconds())
	if ans.Elapsed < time.Second {
		took = fmt.Sprintf("%.1f ms", float64(ans.Elapsed.Microseconds())/1000)
	}
	fmt.Fprintf(w, "\n(%s, %d %s, %s%s)\n", ans.Strategy, len(ans.Hops), plural(len(ans.Hops), "hop", "hops"), took, cached)
}

// scopeBooks lists the books a library's questions read.
type scopeBooks struct {
	p       *rag.Pipeline
	library string
}

func (b scopeBooks) Books(ctx context.Context) ([]rag.BookInfo, error) {
	return b.p.Books(ctx, b.library)
}
