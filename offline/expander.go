package offline

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/caprag/caprag/words"
)

// Expander rewrites a question into keyword and phrasing variants.
type Expander struct{}

// players' words → the rulebooks' words
var rulesWords = [][2]string{
	{"grab", "grapple"}, {"grabbed", "grappled"}, {"hold on to", "grapple"}, {"wrestle", "grapple"},
	{"lying on the ground", "prone"}, {"knocked down", "prone"}, {"knock down", "prone"}, {"on the ground", "prone"},
	{"push", "shove"}, {"shoving", "shove"}, {"hit", "attack"}, {"hurt", "damage"}, {"hp", "hit points"},
	{"sneak", "stealth"}, {"hide", "hiding stealth"}, {"scared", "frightened"}, {"afraid", "frightened"},
	{"can't see", "blinded"}, {"blind", "blinded"}, {"asleep", "unconscious"}, {"knocked out", "unconscious"},
	{"dying", "death saving throws"}, {"heal", "healing hit points"}, {"rest", "resting"},
	{"sell", "selling treasure"}, {"buy", "equipment cost"}, {"jump", "jumping"}, {"fall", "falling"},
	{"drown", "suffocating"}, {"hold breath", "suffocating"}, {"armor on", "don armor"}, {"armor off", "doff armor"},
	{"help", "help action working together"}, {"crit", "critical hit"}, {"cast", "casting a spell"},
	{"two weapons", "two-weapon fighting"}, {"dual wield", "two-weapon fighting"}, {"run away", "disengage"},
	{"flee", "disengage opportunity attack"}, {"free attack", "opportunity attack"}, {"concentrating", "concentration"},
	{"invisible", "invisible condition"}, {"poison", "poisoned"}, {"stun", "stunned"}, {"frozen", "paralyzed"},
	{"venom", "poison poisoned"}, {"terrifying", "frightful frightened"}, {"terrified", "frightened"},
	{"fog", "fog heavily obscured"}, {"helmet", "helm"}, {"float", "levitate"}, {"hover", "levitate"},
	{"free swing", "opportunity attack"}, {"in place", "paralyzed restrained"}, {"stuck", "adhesive grappled restrained"},
	{"tired", "exhaustion"}, {"slept", "exhaustion long rest"},
}

// Expand returns up to max variants: the content words alone, the question in the rulebooks'
// words, and each quoted or capitalised name on its own.
func (Expander) Expand(_ context.Context, question string, max int) ([]string, error) {
	var out []string
	kw := strings.Join(contentWords(question), " ")
	if kw != "" && !strings.EqualFold(kw, question) {
		out = append(out, kw)
	}
	low := strings.ToLower(question)
	var mapped []string
	for _, p := range rulesWords {
		if containsWord(low, p[0]) {
			mapped = append(mapped, p[1])
		}
	}
	if len(mapped) > 0 {
		out = append(out, strings.Join(append(mapped, contentWords(question)...), " "))
	}
	out = append(out, names(question)...)
	if len(out) > max {
		out = out[:max]
	}
	return out, nil
}

func containsWord(s, phrase string) bool {
	i := strings.Index(s, phrase)
	for i >= 0 {
		before := i == 0 || !unicode.IsLetter(rune(s[i-1]))
		end := i + len(phrase)
		after := end >= len(s) || !unicode.IsLetter(rune(s[end]))
		if before && after {
			return true
		}
		j := strings.Index(s[i+1:], phrase)
		if j < 0 {
			break
		}
		i += j + 1
	}
	return false
}

func contentWords(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' && r != '-' }) {
		// "can't" and "he's" are stop words too: every word of theirs is one
		if !slices.ContainsFunc(words.Split(w), func(w string) bool { return !words.IsStop(w) && !words.IsAsking(w) }) {
			continue
		}
		out = append(out, w)
	}
	return out
}

var (
	quoted      = regexp.MustCompile(`["“”']([^"“”']{3,40})["“”']`)
	capitalised = regexp.MustCompile(`\b[A-Z][a-z]+(?:\s+(?:of\s+|the\s+)?[A-Z][a-z]+)+\b`)
)

// names are quoted phrases and runs of capitalised words ("Rapid Strike"), not at the start.
func names(q string) []string {
	var out []string
	for _, m := range quoted.FindAllStringSubmatch(q, -1) {
		out = append(out, m[1])
	}
	for _, m := range capitalised.FindAllStringIndex(q, -1) {
		if m[0] > 0 {
			out = append(out, q[m[0]:m[1]])
		}
	}
	return out
}

// players' words found in it, or "" when none is found.
func rulesPhrasing(question string) string {
	low := strings.ToLower(question)
	var mapped []string
	for _, p := range rulesWords {
		if containsWord(low, p[0]) {
			mapped = append(mapped, p[1])
		}
	}
	if len(mapped) == 0 {
		return ""
	}
	return strings.Join(append(mapped, contentWords(question)...), " ")
}
