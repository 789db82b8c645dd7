package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
)

// reasoning matches the thinking blocks some models (DeepSeek-R1, QwQ through Ollama) put
// before their answer.
var reasoning = regexp.MustCompile(`(?is)<think(?:ing)?>.*?</think(?:ing)?>`)

// stripReasoning removes reasoning blocks from a model's text.
func stripReasoning(s string) string { return reasoning.ReplaceAllString(s, "") }

// errNoJSON is returned by decodeJSON when the text holds no JSON value of the wanted shape.
var errNoJSON = errors.New("no JSON object of the expected shape in the reply")

// maxStarts bounds how many candidate starts decodeJSON tries in a long reply.
const maxStarts = 32

// decodeJSON finds the first JSON value in text that decodes into a T and passes ok: the reply
// may wrap it in a code fence or put prose before or after it. Fenced blocks are tried first,
// then every '{' or '[' in order.
func decodeJSON[T any](text string, ok func(T) bool) (T, error) {
	candidates := append(fenced(text), text)
	tries := 0
	for _, c := range candidates {
		for i := 0; i < len(c) && tries < maxStarts; i++ {
			if c[i] != '{' && c[i] != '[' {
				continue
			}
			tries++
			var v T
			if err := json.NewDecoder(strings.NewReader(c[i:])).Decode(&v); err == nil && ok(v) {
				return v, nil
			}
		}
	}
	var zero T
	return zero, errNoJSON
}

// fence matches a Markdown code block, with or without a language tag.
var fence = regexp.MustCompile("(?s)```[a-zA-Z]*\\s*\n?(.*?)```")

// fenced returns the contents of the code blocks in text.
func fenced(text string) []string {
	var out []string
	for _, m := range fence.FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	return out
}

// stringList decodes a JSON array of strings, tolerating non-string items (skipped) and a single
// string in place of an array.
type stringList []string

func (l *stringList) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
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

// cleanQueries trims, drops empty queries and those equal (case-insensitively) to one in skip
// or to an earlier one, and keeps at most max.
func cleanQueries(queries []string, skip []string, max int) []string {
	seen := make(map[string]bool, len(skip)+len(queries))
	for _, s := range skip {
		seen[normalize(s)] = true
	}
	var out []string
	for _, q := range queries {
		q = strings.TrimSpace(q)
		k := normalize(q)
		if k == "" || seen[k] {
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

// normalize folds case, punctuation at the ends and inner spacing for comparing queries.
func normalize(s string) string {
	s = strings.ToLower(strings.Join(strings.Fields(s), " "))
	return strings.Trim(s, " ?!.,;:\"'")
}
