package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/caprag/caprag/rag"
)

// The four roles. Each has Calls, the number of model requests made by all roles built by the
// same New (retries included): the pipeline can tell model-backed roles from offline ones by it.
var (
	_ rag.Expander = (*Expander)(nil)
	_ rag.Analyzer = (*Analyzer)(nil)
	_ rag.Writer   = (*Writer)(nil)
	_ rag.Rewriter = (*Rewriter)(nil)
)

// defaultMax is the number of new queries asked for when the caller gives no bound.
const defaultMax = 3

// Expander rewrites a question into search queries with the model.
type Expander struct{ c *client }

// Calls returns the model requests made so far by the roles sharing this model.
func (e *Expander) Calls() int64 { return e.c.Calls() }

// Expand returns at most max search queries other than question, one model call (a retry on a
// malformed reply). When the model fails or keeps replying malformed JSON, it logs and returns
// no query (the pipeline searches the original question alone); it returns an error only when
// ctx itself is done. max < 1 returns nil without a call.
func (e *Expander) Expand(ctx context.Context, question string, max int) ([]string, error) {
	if max < 1 {
		return nil, nil
	}
	reply, err := structured(ctx, e.c, "expand", expandPrompt(question, max), `{"queries": ["query"]}`,
		func(r expansion) bool { return r.ok })
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("llm: expand: %w", context.Cause(ctx))
		}
		e.c.log.Warn("query expansion failed: searching the question alone", "error", err.Error())
		return nil, nil
	}
	return cleanQueries(reply.queries, []string{question}, max), nil
}

// expansion is the expander's reply: {"queries": [...]}, a bare array, or an object whose only
// list of strings is the queries.
type expansion struct {
	queries []string
	ok      bool
}

func (x *expansion) UnmarshalJSON(b []byte) error {
	var list stringList
	if bytes.HasPrefix(bytes.TrimSpace(b), []byte("[")) {
		if err := list.UnmarshalJSON(b); err != nil {
			return err
		}
		*x = expansion{queries: list, ok: true}
		return nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return err
	}
	if raw, found := obj["queries"]; found {
		if list.UnmarshalJSON(raw) == nil {
			*x = expansion{queries: list, ok: true}
		}
		return nil
	}
	lists := 0
	for _, raw := range obj {
		var l stringList
		if bytes.HasPrefix(bytes.TrimSpace(raw), []byte("[")) && l.UnmarshalJSON(raw) == nil {
			lists++
			list = l
		}
	}
	if lists == 1 {
		*x = expansion{queries: list, ok: true}
	}
	return nil
}

// Analyzer judges with the model whether the passages answer the question.
type Analyzer struct{ c *client }

// Calls returns the model requests made so far by the roles sharing this model.
func (a *Analyzer) Calls() int64 { return a.c.Calls() }

// Analyze returns the model's verdict, one model call (a retry on a malformed reply). New queries
// never repeat in.Asked or the question, and are at most in.Max (3 when unset). Following names
// the hint targets the queries follow, else the queries. When the model fails or keeps replying
// malformed JSON, it logs and returns sufficient (the pipeline answers from what it has); it
// returns an error only when ctx itself is done. Insufficient with no new query can happen (the
// model wants something it cannot name, or only repeats searched queries).
func (a *Analyzer) Analyze(ctx context.Context, in rag.AnalyzeInput) (rag.Analysis, error) {
	max := in.Max
	if max < 1 {
		max = defaultMax
	}
	reply, err := structured(ctx, a.c, "analyze", analyzePrompt(in, max), `{"sufficient": true, "new_queries": []}`,
		func(r verdict) bool { return r.Sufficient.set })
	if err != nil {
		if ctx.Err() != nil {
			return rag.Analysis{}, fmt.Errorf("llm: analyze: %w", context.Cause(ctx))
		}
		a.c.log.Warn("sufficiency analysis failed: answering from the passages found", "error", err.Error())
		return rag.Analysis{Sufficient: true}, nil
	}
	if reply.Sufficient.v {
		return rag.Analysis{Sufficient: true}, nil
	}
	queries := reply.NewQueries
	if len(queries) == 0 {
		queries = reply.Queries
	}
	queries = cleanQueries(queries, append([]string{in.Question}, in.Asked...), max)
	return rag.Analysis{NewQueries: queries, Following: following(queries, in.Hints())}, nil
}

// verdict is the analyzer's reply.
type verdict struct {
	Sufficient flexBool   `json:"sufficient"`
	NewQueries stringList `json:"new_queries"`
	Queries    stringList `json:"queries"`
}

// following names what each query follows: the target of the hint it mentions, else the query.
func following(queries []string, hints []rag.Reference) []string {
	var out []string
	seen := map[string]bool{}
	for _, q := range queries {
		name := q
		nq := normalize(q)
		for _, h := range hints {
			if t := normalize(h.Target); h.Kind != rag.RefPage && t != "" && strings.Contains(nq, t) {
				name = h.Target
				break
			}
		}
		if !seen[normalize(name)] {
			seen[normalize(name)] = true
			out = append(out, name)
		}
	}
	return out
}

// Writer writes the cited answer with the model.
type Writer struct{ c *client }

// Calls returns the model requests made so far by the roles sharing this model.
func (w *Writer) Calls() int64 { return w.c.Calls() }

// Write answers question from docs only, citing them [1], [2]… in the order given; one model
// call. Citations of passages that do not exist are removed and "[1, 2]" becomes "[1][2]". An
// error wraps ErrNoModel and reads "the language model did not answer: …".
func (w *Writer) Write(ctx context.Context, question string, docs []rag.Document, history []rag.Turn) (string, error) {
	text, err := w.c.generate(ctx, "write", writePrompt(question, docs, history), false, 0.2)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNoModel, err)
	}
	return fixCitations(text, len(docs)), nil
}

// citation matches "[1]", "[1, 2]" and "[1][2]" style citations.
var citation = regexp.MustCompile(`\[(\d+(?:\s*[,;]\s*\d+)*)\]`)

// fixCitations keeps the citations of passages 1..n, one bracket per number.
func fixCitations(text string, n int) string {
	return citation.ReplaceAllStringFunc(text, func(m string) string {
		var b strings.Builder
		for _, f := range strings.FieldsFunc(m[1:len(m)-1], func(r rune) bool { return r == ',' || r == ';' || r == ' ' }) {
			if k, err := strconv.Atoi(f); err == nil && k >= 1 && k <= n {
				b.WriteString("[" + f + "]")
			}
		}
		return b.String()
	})
}

// Rewriter turns a follow-up into a standalone question with the model.
type Rewriter struct{ c *client }

// Calls returns the model requests made so far by the roles sharing this model.
func (r *Rewriter) Calls() int64 { return r.c.Calls() }

// Rewrite returns the follow-up as a standalone question; one model call, none when history is
// empty (the follow-up is returned as is). When the model fails it logs and returns the follow-up
// unchanged; it returns an error only when ctx itself is done.
func (r *Rewriter) Rewrite(ctx context.Context, followUp string, history []rag.Turn) (string, error) {
	if len(history) == 0 {
		return followUp, nil
	}
	text, err := r.c.generate(ctx, "rewrite", rewritePrompt(followUp, history), false, 0)
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("llm: rewrite: %w", context.Cause(ctx))
		}
		r.c.log.Warn("follow-up rewriting failed: using the follow-up as asked", "error", err.Error())
		return followUp, nil
	}
	if q := standalone(text); q != "" {
		return q, nil
	}
	return followUp, nil
}

// standalone extracts the question from a rewriter reply: its first non-empty line, without a
// label such as "Standalone question:" or surrounding quotes.
func standalone(text string) string {
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if i := strings.Index(line, ":"); i > 0 && i < 30 && strings.Contains(strings.ToLower(line[:i]), "question") {
			line = strings.TrimSpace(line[i+1:])
		}
		return strings.Trim(line, "\"'“”*` ")
	}
	return ""
}

// structured asks for a JSON reply of shape (an example, for the retry) and decodes it into a T
// accepted by ok. A malformed reply is answered once with a request to fix it.
func structured[T any](ctx context.Context, c *client, role string, msgs []message, shape string, ok func(T) bool) (T, error) {
	var zero T
	text, err := c.generate(ctx, role, msgs, true, 0)
	if err != nil {
		return zero, err
	}
	v, err := decodeJSON(text, ok)
	if err == nil {
		return v, nil
	}
	c.log.Info("malformed model reply, asking again", "role", role, "reply", truncate(text, 200))
	retry := append(msgs[:len(msgs):len(msgs)], assistant(text), user(fmt.Sprintf(retryPrompt, shape)))
	text, err = c.generate(ctx, role, retry, true, 0)
	if err != nil {
		return zero, err
	}
	v, err = decodeJSON(text, ok)
	if err != nil {
		return zero, fmt.Errorf("malformed reply twice (%q): %w", truncate(text, 200), err)
	}
	return v, nil
}
