package llm

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/caprag/caprag/rag"
)

// The four roles. Each has Calls, the number of model requests made by all roles built by the
// same New (retries included).
var (
	_ rag.Expander = (*Expander)(nil)
	_ rag.Analyzer = (*Analyzer)(nil)
	_ rag.Writer   = (*Writer)(nil)
	_ rag.Rewriter = (*Rewriter)(nil)
)

// defaultMax is the number of new queries asked for when the caller gives no bound.
const defaultMax = 3

// errRefused is a structured role's model declining to answer.
var errRefused = errors.New("the model refused")

// Expander rewrites a question into search queries with the model.
type Expander struct{ c *client }

// Calls returns the model requests made so far by the roles sharing this model.
func (e *Expander) Calls() int64 { return e.c.Calls() }

// Expand returns at most max search queries other than question: one model call, a second on
// a malformed or cut reply. When the model fails or keeps replying malformed JSON, it logs and
// returns no query (the pipeline searches the original question alone); it returns an error
// only when ctx itself is done. max < 1 returns nil without a call.
func (e *Expander) Expand(ctx context.Context, question string, max int) ([]string, error) {
	return e.ExpandWithContents(ctx, question, max, nil, nil)
}

// ExpandWithContents implements rag.ContentsExpander: Expand, with the books' table of contents
// in the request (as much as fits a quarter of the model's window; marked for caching when
// whole; cut, the chapters of near first), so that the queries can be the books' own section
// titles.
func (e *Expander) ExpandWithContents(ctx context.Context, question string, max int, toc []rag.Heading, near []rag.Document) ([]string, error) {
	if max < 1 {
		return nil, nil
	}
	msgs, _ := expandContentsPrompt(question, max, toc, near, e.c.contextTokens(ctx)-e.c.jsonTokens-tokenMargin, e.c.contentsTokens)
	reply, err := structured(ctx, e.c, "expand", msgs, expandSchema, `{"queries": ["…"]}`,
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

// Analyzer judges with the model whether the passages answer the question.
type Analyzer struct{ c *client }

// Sections implements rag.SectionReader: the analyzer is shown up to this many titles of
// sections it may name (prompt "Sections you can fetch by title"), the part of the books' table
// of contents around the question and the passages' cross-references.
func (a *Analyzer) Sections() int { return maxSections }

// Calls returns the model requests made so far by the roles sharing this model.
func (a *Analyzer) Calls() int64 { return a.c.Calls() }

// Analyze returns the model's verdict: one model call, a second on a malformed or cut reply.
// New queries never repeat in.Asked or the question, are never template placeholders, and are
// at most in.Max (3 when unset); when the model names missing rules but no query, the missing
// rules are the queries. Following names the hint targets the queries follow, else the queries.
// When the model fails or keeps replying malformed JSON, it logs and returns sufficient (the
// pipeline answers from what it has); it returns an error only when ctx itself is done.
func (a *Analyzer) Analyze(ctx context.Context, in rag.AnalyzeInput) (rag.Analysis, error) {
	max := in.Max
	if max < 1 {
		max = defaultMax
	}
	budget := a.c.contextTokens(ctx) - a.c.jsonTokens - tokenMargin
	msgs, _ := analyzeRequest(in, max, budget, a.c.contentsTokens)
	reply, err := structured(ctx, a.c, "analyze", msgs, analyzeSchema,
		`{"missing": ["…"], "new_queries": ["…"], "sufficient": false}`, func(r verdict) bool { return r.ok })
	if err != nil {
		if ctx.Err() != nil {
			return rag.Analysis{}, fmt.Errorf("llm: analyze: %w", context.Cause(ctx))
		}
		a.c.log.Warn("sufficiency analysis failed: answering from the passages found", "error", err.Error())
		return rag.Analysis{Sufficient: true}, nil
	}
	skip := append([]string{in.Question}, in.Asked...)
	queries := cleanQueries(reply.Queries, skip, max)
	if len(queries) == 0 {
		queries = cleanQueries(reply.Missing, skip, max)
	}
	if reply.Sufficient.set && reply.Sufficient.v {
		return rag.Analysis{Sufficient: true}, nil
	}
	if !reply.Sufficient.set && len(queries) == 0 {
		return rag.Analysis{Sufficient: true}, nil
	}
	_, hs := analysisView(in)
	return rag.Analysis{NewQueries: queries, Following: following(queries, hs)}, nil
}

// following names what each query follows: the target of the hint it mentions, else the query.
func following(queries []string, hints []hintView) []string {
	var out []string
	seen := map[string]bool{}
	for _, q := range queries {
		name := q
		nq := normalize(q)
		for _, h := range hints {
			if t := normalize(h.ref.Target); h.ref.Kind != rag.RefPage && t != "" && strings.Contains(nq, t) {
				name = h.ref.Target
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

// cutNote ends an answer the model's output limit cut.
const cutNote = "\n\n(This answer was cut short: the model reached its output limit, LLM_ANSWER_MAX_TOKENS.)"

// Write answers question from docs only, citing them [1], [2]… in the order given: one model
// call, a second when the answer cites no passage, or the model called a tool or spent its
// output limit reasoning instead of answering. Citations are normalised (rag.NormalizeCitations); reasoning is removed however it
// is marked; a cut answer ends saying it was cut; a refusal is said in plain words. An error
// wraps ErrNoModel and reads "the language model did not answer: …".
func (w *Writer) Write(ctx context.Context, question string, docs []rag.Document, history []rag.Turn) (string, error) {
	budget := w.c.contextTokens(ctx) - w.c.answerTokens - tokenMargin
	msgs := writePrompt(question, docs, history, budget)
	var last string
	for attempt := 0; attempt < 2; attempt++ {
		resp, err := w.c.call(ctx, request{role: "write", msgs: msgs, maxTokens: w.c.answerTokens, temperature: 0.2})
		if err != nil {
			return "", fmt.Errorf("%w: %w", ErrNoModel, err)
		}
		if s := refusal(resp); s != "" {
			return s, nil
		}
		text, unclosed := stripReasoning(resp.text)
		cut := resp.finish == finishLength || unclosed
		if text == "" {
			if attempt == 0 && (resp.toolCall || cut) {
				// A tool call instead of an answer, or a reasoning the output limit cut: ask
				// once more, for the answer itself.
				msgs = append(msgs[:len(msgs):len(msgs)], user("Answer now in plain text, citing the passages, without calling any tool and without thinking aloud."))
				continue
			}
			if cut {
				return "", fmt.Errorf("%w: the reply was cut at the output limit before any answer (LLM_ANSWER_MAX_TOKENS=%d)", ErrNoModel, w.c.answerTokens)
			}
			return "", fmt.Errorf("%w: the reply was empty", ErrNoModel)
		}
		text, cited := rag.NormalizeCitations(text, len(docs))
		if cut {
			return text + cutNote, nil
		}
		if len(cited) > 0 || len(docs) == 0 {
			return text, nil
		}
		last = text
		w.c.log.Info("the answer cites no passage, asking again", "reply", truncate(text, 200))
		msgs = append(msgs[:len(msgs):len(msgs)], assistant(resp.text), user(citeAgainPrompt))
	}
	return last, nil
}

// refusal returns what the player reads when the model declined: its own words when it gave
// some, said as a refusal.
func refusal(r response) string {
	if r.finish != finishRefusal && r.finish != finishFilter && r.refusal == "" {
		return ""
	}
	why := strings.TrimSpace(r.refusal)
	if why == "" {
		why, _ = stripReasoning(r.text)
	}
	if r.finish == finishFilter && why == "" {
		return "The language model's provider blocked this answer with its content filter."
	}
	if why == "" {
		return "The language model declined to answer this question."
	}
	return "The language model declined to answer this question: " + truncate(why, 300)
}

// Rewriter turns a follow-up into a standalone question with the model.
type Rewriter struct{ c *client }

// Calls returns the model requests made so far by the roles sharing this model.
func (r *Rewriter) Calls() int64 { return r.c.Calls() }

// Rewrite returns the follow-up as a standalone question; one model call, none when history is
// empty (the follow-up is returned as is). When the model fails, refuses or is cut, it logs and
// returns the follow-up unchanged; it returns an error only when ctx itself is done.
func (r *Rewriter) Rewrite(ctx context.Context, followUp string, history []rag.Turn) (string, error) {
	if len(history) == 0 {
		return followUp, nil
	}
	resp, err := r.c.call(ctx, request{role: "rewrite", msgs: rewritePrompt(followUp, history), maxTokens: r.c.jsonTokens})
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("llm: rewrite: %w", context.Cause(ctx))
		}
		r.c.log.Warn("follow-up rewriting failed: using the follow-up as asked", "error", err.Error())
		return followUp, nil
	}
	text, unclosed := stripReasoning(resp.text)
	if refusal(resp) != "" || unclosed || resp.finish == finishLength {
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

// structured asks for a JSON reply following s and decodes it into a T accepted by ok. A
// malformed reply, or one cut at the output limit, is asked again once (shape is the example
// the retry shows); a refusal is not.
func structured[T any](ctx context.Context, c *client, role string, msgs []message, s *schema, shape string, ok func(T) bool) (T, error) {
	var zero T
	for attempt := 0; ; attempt++ {
		resp, err := c.call(ctx, request{role: role, msgs: msgs, schema: s, maxTokens: c.jsonTokens})
		if err != nil {
			return zero, err
		}
		if why := refusal(resp); why != "" {
			return zero, fmt.Errorf("%w: %s", errRefused, why)
		}
		text, unclosed := stripReasoning(resp.text)
		if text == "" && resp.toolArgs != "" {
			text = resp.toolArgs // a server that parsed the reply as a tool call
		}
		cut := resp.finish == finishLength || unclosed
		if !cut {
			if v, err := decodeJSON(text, ok); err == nil {
				return v, nil
			}
		}
		if attempt == 1 {
			if cut {
				return zero, fmt.Errorf("the reply was cut at the output limit twice (LLM_JSON_MAX_TOKENS=%d)", c.jsonTokens)
			}
			return zero, fmt.Errorf("malformed reply twice (%q): %w", truncate(text, 200), errNoJSON)
		}
		c.log.Info("malformed or cut model reply, asking again", "role", role, "finish", resp.finish, "reply", truncate(text, 200))
		retry := append(msgs[:len(msgs):len(msgs)], user(fmt.Sprintf(retryPrompt, shape)))
		if text != "" && !cut {
			retry = append(msgs[:len(msgs):len(msgs)], assistant(text), user(fmt.Sprintf(retryPrompt, shape)))
		}
		msgs = retry
	}
}
