package lexicon

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/caprag/caprag/passage"
)

// Read and Link take any book text: every reference and mention they find points at a passage
// of the library, never at the passage itself, with a weight in (0, 1]; every sentence index is
// one of the passage's sentences; the parts survive Encode and Decode, and the lexicon read
// lazily from them says what a full link says.
func FuzzReadAndLink(f *testing.F) {
	f.Add("Combat > Grappling", "You grapple the target (see appendix A). See p. 12.", "Appendix A > Grappled", "A grappled creature can't move.")
	f.Add("Intro > The Bronze Rule", "Use the Bronze Rule (Fate Core, page 270)? Check out page 256 of Fate Core.", "Extras > THE BRONZE RULE, AKA THE FATE FRACTAL", "Anything is a character.")
	f.Add("Poisons", "Malice (Inhaled). A creature must save or become poisoned.\n\nThick Skin: You may use Orc.", "Conditions > Poisoned", "A poisoned creature…")
	f.Add("A", "(see )(see \"\" section) pp. 1-", "", "page XX of")
	f.Fuzz(func(t *testing.T, s1, t1, s2, t2 string) {
		if !utf8.ValidString(s1 + t1 + s2 + t2) {
			return
		}
		ps := []Part{
			Read("Fate Core", []Doc{{ID: "a", Section: s1, Text: t1}, {ID: "b", Section: s2, Text: t2, Page: 12}}),
			Read("toolkit", []Doc{{ID: "c", Section: s2, Text: t1 + "\n\n" + t2}}),
		}
		lx := Link(roundTrip(t, ps))
		sameAsEager(t, lx)
		for n := range lx.N {
			es := lx.Edges(n)
			nsent := len(Sentences(lx.Doc(n).Text))
			for _, e := range es {
				if e.To == n || e.To < 0 || e.To >= lx.N || e.Weight <= 0 || e.Weight > 1 || e.Sentence < 0 || e.Sentence >= max(1, nsent) {
					t.Fatalf("passage %d: edge %+v (%d sentences)", n, e, nsent)
				}
			}
			for _, r := range lx.Refs(n) {
				if r.ID == "" || strings.TrimSpace(r.Target) == "" && r.Kind != "page" {
					t.Fatalf("passage %d: reference %+v", n, r)
				}
			}
		}
		lx.Named(t1)
		lx.Bridge(t2, 3)
	})
}

var pageTarget = regexp.MustCompile(`^[A-Z]?\d{1,4}$`)

// FuzzExplicitRefs: the reference parser finds page references and "see X" phrases in any text;
// each reference quotes text that is in the passage and has a target of the right shape (a page
// number, or none for a placeholder such as "page XX"), and stands at a token of the passage.
func FuzzExplicitRefs(f *testing.F) {
	f.Add("If you succeed, you subject the target to the grappled condition (see Conditions). See page 12, pp. 12-13.")
	f.Add("described in the “Unseen Attackers and Targets” section")
	f.Add("(see appendix PH-A) See also Cover below. p. A12")
	f.Add("the usual teamwork rules (page XX), and the Bronze Rule (Fate Core, page 270)")
	f.Fuzz(func(t *testing.T, text string) {
		n := len(tokenize(text))
		for _, r := range explicitRefs(text) {
			if !strings.Contains(text, strings.TrimSpace(r.Text)) || r.At < 0 || r.At > n {
				t.Fatalf("reference %+v: text not in the passage or position outside it (%d tokens)", r, n)
			}
			switch r.Kind {
			case passage.RefPage:
				if r.Target != "" && !pageTarget.MatchString(r.Target) {
					t.Fatalf("page reference %+v: target is not a page", r)
				}
			default:
				if strings.TrimSpace(r.Target) == "" {
					t.Fatalf("reference %+v: empty target", r)
				}
			}
		}
	})
}
