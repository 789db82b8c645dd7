package llm

import (
	"slices"
	"testing"
)

func TestDecodeJSON(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       bool // sufficient
		wantQ      []string
		ok         bool
	}{
		{"plain", `{"sufficient": true, "new_queries": []}`, true, nil, true},
		{"fenced with tag", "```json\n{\"sufficient\": false, \"new_queries\": [\"a\"]}\n```", false, []string{"a"}, true},
		{"fenced without newline", "```{\"sufficient\": false, \"new_queries\": [\"a\"]}```", false, []string{"a"}, true},
		{"prose with braces first", "Verdict {see below}: {\"sufficient\": false, \"new_queries\": [\"a\", 3, \"b\"]} done", false, []string{"a", "b"}, true},
		{"string booleans", `{"sufficient": "yes"}`, true, nil, true},
		{"reasoning first", "<think>{\"sufficient\": true}</think>\n{\"sufficient\": false, \"new_queries\": \"a\"}", false, []string{"a"}, true},
		{"no verdict but queries: insufficient", `{"new_queries": ["a"]}`, false, []string{"a"}, true},
		{"renamed keys", `{"is_sufficient": "no", "search_queries": ["a"]}`, false, []string{"a"}, true},
		{"null queries", `{"missing": ["b"], "new_queries": null, "sufficient": false}`, false, nil, true},
		{"the last object is the answer", "Example: {\"sufficient\": true}\nMy answer: {\"sufficient\": false, \"new_queries\": [\"a\"]}", false, []string{"a"}, true},
		{"lone closing tag", "Maybe {\"sufficient\": true} fits.</think>\n{\"sufficient\": false, \"new_queries\": [\"a\"]}", false, []string{"a"}, true},
		{"unclosed reasoning", "{\"sufficient\": false, \"new_queries\": [\"a\"]}<think>but wait, {\"sufficient\": true}", false, []string{"a"}, true},
		{"only an unclosed reasoning", "<think>Is it {\"sufficient\": true}", false, nil, false},
		{"empty object", `{}`, false, nil, false},
		{"truncated", `{"sufficient": false, "new_queries": ["a"`, false, nil, false},
		{"no JSON", "I am not sure.", false, nil, false},
		{"empty", "", false, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text, _ := stripReasoning(tc.text)
			v, err := decodeJSON(text, func(v verdict) bool { return v.ok })
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v, want ok=%v", err, tc.ok)
			}
			if tc.ok && (v.Sufficient.v != tc.want || !slices.Equal(v.Queries, tc.wantQ)) {
				t.Errorf("got %+v, want sufficient=%v queries=%q", v, tc.want, tc.wantQ)
			}
		})
	}
}

func TestStripReasoning(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		unclosed bool
	}{
		{"<think>a</think>answer", "answer", false},
		{"<THINKING>a\nb</THINKING> answer <reasoning>c</reasoning>", "answer", false},
		{"reasoning with no opening tag</think>\nanswer", "answer", false},
		{"<think>x</think> more thought </think> answer", "answer", false},
		{"answer <think>and a thought cut at the limit", "answer", true},
		{"<think>a thought cut at the limit", "", true},
		{"plain answer", "plain answer", false},
	} {
		got, unclosed := stripReasoning(tc.in)
		if got != tc.want || unclosed != tc.unclosed {
			t.Errorf("stripReasoning(%q) = %q, %v; want %q, %v", tc.in, got, unclosed, tc.want, tc.unclosed)
		}
	}
}

func TestPlaceholdersAreNotQueries(t *testing.T) {
	got := cleanQueries([]string{"query", "first query", "<search query>", "…", "...", "Query 1", "{query}", "", "  ", "Grappled", "new spell slots", "N/A"}, nil, 10)
	if want := []string{"Grappled", "new spell slots"}; !slices.Equal(got, want) {
		t.Errorf("cleanQueries kept %q, want %q", got, want)
	}
}

func TestExpansionShapes(t *testing.T) {
	for text, want := range map[string][]string{
		`{"queries": ["a", "b"]}`:               {"a", "b"},
		`["a", "b"]`:                            {"a", "b"},
		`{"search_queries": ["a"], "n": 1}`:     {"a"},
		`{"queries": []}`:                       {},
		"```\n{\"alternatives\": [\"a\"]}\n```": {"a"},
	} {
		got, err := decodeJSON(text, func(e expansion) bool { return e.ok })
		if err != nil || !slices.Equal(got.queries, want) {
			t.Errorf("%s: got %q, %v; want %q", text, got.queries, err, want)
		}
	}
}

func TestCleanQueries(t *testing.T) {
	got := cleanQueries([]string{" Grappled ", "", "grappled?", "How does it work", "Prone", "Stunned"}, []string{"how does  it work?"}, 2)
	if want := []string{"Grappled", "Prone"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestStandalone(t *testing.T) {
	for in, want := range map[string]string{
		"Can a grappled creature stand up?":                      "Can a grappled creature stand up?",
		"\n\nStandalone question: \"Can it stand up?\"\nNote: x": "Can it stand up?",
		"**Can it stand?**":                                      "Can it stand?",
		"   \n":                                                  "",
	} {
		if got := standalone(in); got != want {
			t.Errorf("standalone(%q) = %q, want %q", in, got, want)
		}
	}
}
