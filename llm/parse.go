package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"unicode"
)

// Reasoning markers. Models mark their reasoning in several ways, and all of them are removed
// before a reply is read: a closed block (<think>…</think>, <thinking>, <reasoning>), a lone
// closing tag (Qwen3 and DeepSeek-R1 chat templates open the block in the prompt, so the reply
// holds only "…reasoning…</think>answer"), and an unclosed block (a long reasoning cut by the
// output limit). Reasoning a provider returns in a separate field never enters the text.
var (
	closedReasoning = regexp.MustCompile(`(?is)<(think|thinking|reasoning)>.*?</(think|thinking|reasoning)>`)
	closeTag        = regexp.MustCompile(`(?i)</(think|thinking|reasoning)>`)
	openTag         = regexp.MustCompile(`(?i)<(think|thinking|reasoning)>`)
)

// stripReasoning removes reasoning however it is marked, and reports whether the reply was cut
// inside its reasoning (an unclosed block: nothing after it is an answer).
func stripReasoning(s string) (text string, unclosed bool) {
	s = closedReasoning.ReplaceAllString(s, "")
	if locs := closeTag.FindAllStringIndex(s, -1); len(locs) > 0 {
		s = s[locs[len(locs)-1][1]:]
	}
	if loc := openTag.FindStringIndex(s); loc != nil {
		s, unclosed = s[:loc[0]], true
	}
	return strings.TrimSpace(s), unclosed
}

// errNoJSON is returned by decodeJSON when the text holds no JSON value of the wanted shape.
var errNoJSON = errors.New("no JSON object of the expected shape in the reply")

// maxStarts bounds how many candidate starts decodeJSON tries in a long reply.
const maxStarts = 64

// decodeJSON finds the last JSON value in text that decodes into a T and passes ok: a model may
// wrap it in a code fence, put prose before or after it, or show an example before its real
// answer. A value found is skipped whole (its inner objects are not candidates).
func decodeJSON[T any](text string, ok func(T) bool) (T, error) {
	var (
		last  T
		found bool
		tries int
	)
	for i := 0; i < len(text) && tries < maxStarts; i++ {
		if text[i] != '{' && text[i] != '[' {
			continue
		}
		tries++
		var v T
		dec := json.NewDecoder(strings.NewReader(text[i:]))
		if err := dec.Decode(&v); err == nil && ok(v) {
			last, found = v, true
			i += int(dec.InputOffset()) - 1
		}
	}
	if !found {
		return last, errNoJSON
	}
	return last, nil
}

// stringList decodes a JSON array of strings, tolerating null (empty), non-string items
// (skipped) and a single string in place of an array.
type stringList []string

func (l *stringList) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*l = nil
		return nil
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*l = stringList{s}
		return nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(b, &items); err != nil {
		return err
	}
	*l = (*l)[:0]
	for _, it := range items {
		var s string
		if json.Unmarshal(it, &s) == nil {
			*l = append(*l, s)
			continue
		}
		// {"query": "…"} items: take their only string.
		var obj map[string]json.RawMessage
		if json.Unmarshal(it, &obj) == nil {
			for _, v := range obj {
				if json.Unmarshal(v, &s) == nil {
					*l = append(*l, s)
					break
				}
			}
		}
	}
	return nil
}

// flexBool decodes true/false, and the strings "true"/"false"/"yes"/"no" some small models write.
type flexBool struct {
	set, v bool
}

func (f *flexBool) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch x := v.(type) {
	case bool:
		*f = flexBool{true, x}
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "true", "yes":
			*f = flexBool{true, true}
		case "false", "no":
			*f = flexBool{true, false}
		}
	}
	return nil
}

// expansion is the expander's reply: {"queries": [...]}, a bare array, or an object whose only
// list of strings is the queries (a renamed key).
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

// verdict is the analyzer's reply, read whatever the model named its keys: the verdict is the
// key that speaks of sufficiency ("sufficient", "is_sufficient", "enough", "complete"), the
// queries the list whose key speaks of queries or searches ("new_queries", "queries",
// "search_queries", "follow_up_searches"), the missing rules the list whose key speaks of what
// is missing. A reply with no verdict but named missing rules or queries is insufficient.
type verdict struct {
	Sufficient flexBool
	Missing    []string
	Queries    []string
	ok         bool
}

func (v *verdict) UnmarshalJSON(b []byte) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return err
	}
	*v = verdict{}
	for k, raw := range obj {
		key := strings.ToLower(k)
		var l stringList
		switch {
		case strings.Contains(key, "sufficien") || strings.Contains(key, "enough") || key == "complete" || key == "answerable":
			_ = v.Sufficient.UnmarshalJSON(raw)
		case strings.Contains(key, "missing") || strings.Contains(key, "gaps"):
			if l.UnmarshalJSON(raw) == nil {
				v.Missing = l
			}
		case strings.Contains(key, "quer") || strings.Contains(key, "search"):
			if l.UnmarshalJSON(raw) == nil && len(l) > 0 {
				v.Queries = append(v.Queries, l...)
			}
		}
	}
	v.ok = v.Sufficient.set || len(v.Missing) > 0 || len(v.Queries) > 0
	return nil
}

// cleanQueries trims, drops empty queries, template placeholders and those equal
// (case-insensitively) to one in skip or to an earlier one, and keeps at most max.
func cleanQueries(queries []string, skip []string, max int) []string {
	seen := make(map[string]bool, len(skip)+len(queries))
	for _, s := range skip {
		seen[normalize(s)] = true
	}
	var out []string
	for _, q := range queries {
		q = strings.TrimSpace(q)
		k := normalize(q)
		if k == "" || seen[k] || placeholder(q) {
			continue
		}
		seen[k] = true
		out = append(out, q)
		if len(out) == max {
			break
		}
	}
	return out
}

// placeholderWords are the words of a reply template rather than of a query: a small model
// that echoes the example of the prompt ("query", "first query", "<search query>", "...")
// writes only these.
var placeholderWords = map[string]bool{
	"query": true, "queries": true, "search": true, "first": true, "second": true, "third": true,
	"another": true, "new": true, "example": true, "string": true, "text": true, "here": true,
	"your": true, "a": true, "the": true, "missing": true, "n": true, "x": true,
	"etc": true, "todo": true, "tbd": true, "none": true, "null": true, "n/a": true,
}

// placeholder reports a template placeholder echoed as a query: wrapped in <…>, {…} or […],
// made of no letter, or made only of template words and numbers.
func placeholder(q string) bool {
	q = strings.TrimSpace(q)
	if len(q) >= 2 && strings.ContainsRune("<{[", rune(q[0])) && strings.ContainsRune(">}]", rune(q[len(q)-1])) {
		return true
	}
	letters := false
	for _, r := range q {
		if unicode.IsLetter(r) {
			letters = true
			break
		}
	}
	if !letters {
		return true
	}
	for _, w := range strings.FieldsFunc(strings.ToLower(q), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '/' }) {
		if !placeholderWords[w] && strings.Trim(w, "0123456789") != "" {
			return false
		}
	}
	return true
}

// normalize folds case, punctuation at the ends and inner spacing for comparing queries.
func normalize(s string) string {
	s = strings.ToLower(strings.Join(strings.Fields(s), " "))
	return strings.Trim(s, " ?!.,;:\"'")
}
