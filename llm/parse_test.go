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
		{"missing verdict", `{"new_queries": ["a"]}`, false, nil, false},
		{"truncated", `{"sufficient": false, "new_queries": ["a"`, false, nil, false},
		{"no JSON", "I am not sure.", false, nil, false},
		{"empty", "", false, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := decodeJSON(stripReasoning(tc.text), func(v verdict) bool { return v.Sufficient.set })
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v, want ok=%v", err, tc.ok)
			}
			if tc.ok && (v.Sufficient.v != tc.want || !slices.Equal([]string(v.NewQueries), tc.wantQ)) {
				t.Errorf("got %+v, want sufficient=%v queries=%q", v, tc.want, tc.wantQ)
			}
		})
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

func TestFixCitations(t *testing.T) {
	for in, want := range map[string]string{
		"a [1] b [2]":         "a [1] b [2]",
		"a [1, 2; 3]":         "a [1][2][3]",
		"a [0] [4] [3]":       "a   [3]",
		"roll [2d6] or [1,9]": "roll [2d6] or [1]",
	} {
		if got := fixCitations(in, 3); got != want {
			t.Errorf("fixCitations(%q) = %q, want %q", in, got, want)
		}
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
