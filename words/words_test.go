package words

import (
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// The words every part of caprag derives from a text, pinned: the lexical index, the title
// index, the embedder and the offline roles all read these.
func TestWords(t *testing.T) {
	for _, c := range []struct {
		in     string
		split  string // Split, joined by spaces
		stems  string // Stems
		tokens string // Tokens (no stop words)
	}{
		// plurals meet their singular
		{"creatures creature", "creatures creature", "creatur creatur", "creatur creatur"},
		{"spells boxes torches wishes fumbles", "spells boxes torches wishes fumbles", "spell box torch wish fumbl", "spell box torch wish fumbl"},
		// -ss, -us, -is are not plurals
		{"class bonus axis", "class bonus axis", "class bonus axis", "class bonus axis"},
		// a final silent e goes, so "grapple" meets "grappled" and "grappling"
		{"grapple grapples grappled grappling", "grapple grapples grappled grappling", "grappl grappl grappl grappl", "grappl grappl grappl grappl"},
		{"use dice rage", "use dice rage", "use dic rag", "use dic rag"},
		// a short word's silent e goes too, so "save" meets "saving"; not after a vowel ("free")
		{"save saves saved saving free", "save saves saved saving free", "sav sav sav sav free", "sav sav sav sav free"},
		// -ies: "abilities" meets "ability"
		{"abilities ability", "abilities ability", "ability ability", "ability ability"},
		// possessives, straight and typographic, go with their apostrophe
		{"the tarrasque's bite", "the tarrasque bite", "the tarrasqu bit", "tarrasqu bit"},
		{"the Tarrasque’s Bite", "the tarrasque bite", "the tarrasqu bit", "tarrasqu bit"},
		{"the wizards’ spells", "the wizards spells", "the wizard spell", "wizard spell"},
		// other apostrophes split a contraction
		{"I can’t, it doesn't", "i can t it doesn t", "i can t it doesn t", "doesn"},
		{"‘Quoted’ words", "quoted words", "quot word", "quot word"},
		// hyphens and dashes separate words
		{"two-weapon fighting—Recharge 5–6", "two weapon fighting recharge 5 6", "two weapon fight recharg 5 6", "two weapon fight recharg 5 6"},
		// participles stem (their exact form is kept only where Participle says so)
		{"Poisoned, stunned; attacked!", "poisoned stunned attacked", "poison stun attack", "poison stun attack"},
		{"getting hitting", "getting hitting", "get hit", "get hit"},
		// digits and dice stay words
		{"1d6 +2 DC 15, 3rd level", "1d6 2 dc 15 3rd level", "1d6 2 dc 15 3rd level", "1d6 2 dc 15 3rd level"},
		// non-ASCII letters are letters; case folds, diacritics stay
		{"Übung Élan naïve Kraftwerke", "übung élan naïve kraftwerke", "übung élan naïv kraftwerk", "übung élan naïv kraftwerk"},
		{"魔法の ROLL", "魔法の roll", "魔法の roll", "魔法の roll"},
		{"", "", "", ""},
		{" — ’ ' ", "", "", ""},
	} {
		if got := strings.Join(Split(c.in), " "); got != c.split {
			t.Errorf("Split(%q) = %q, want %q", c.in, got, c.split)
		}
		if got := Normalize(c.in); got != c.split {
			t.Errorf("Normalize(%q) = %q, want %q", c.in, got, c.split)
		}
		if got := strings.Join(Stems(c.in), " "); got != c.stems {
			t.Errorf("Stems(%q) = %q, want %q", c.in, got, c.stems)
		}
		if got := strings.Join(Tokens(c.in), " "); got != c.tokens {
			t.Errorf("Tokens(%q) = %q, want %q", c.in, got, c.tokens)
		}
	}
}

func TestContentDropsChatter(t *testing.T) {
	got := strings.Join(Content("What really happens when I want to grapple a friend's ogre?"), " ")
	if want := "grappl friend ogr"; got != want {
		t.Errorf("Content = %q, want %q", got, want)
	}
	// the hashed embedder drops all table talk, stemmed or not
	for _, w := range []string{"happens", "happen", "friend", "friends", "really", "want"} {
		if !IsChatter(w) {
			t.Errorf("IsChatter(%q) = false", w)
		}
	}
	if IsChatter("grapple") || IsChatter("the") {
		t.Error("IsChatter holds a content or function word")
	}
	// BM25's tokens keep chatter (its IDF discounts it; "Working Together" is a rule)
	if got := strings.Join(Tokens("working together"), " "); got != "work together" {
		t.Errorf("Tokens kept %q", got)
	}
}

func TestParticiple(t *testing.T) {
	for w, want := range map[string]bool{"poisoned": true, "grappled": true, "red": false, "bed": false, "poison": false} {
		if Participle(w) != want {
			t.Errorf("Participle(%q) = %v", w, !want)
		}
	}
	if !HasParticiple("The Poisoned Condition") || HasParticiple("Poison Damage") {
		t.Error("HasParticiple")
	}
}

// The data file holds only generic English: every word is lower-case letters, no word is in two
// of the stop, asking and talk sections, and no line sits outside a section.
func TestStopwordsFile(t *testing.T) {
	stop, asking, _, state := parseStopwords(stopwordsFile)
	talk := map[string]bool{}
	talkSection := stopwordsFile[strings.Index(stopwordsFile, "[talk]")+6 : strings.Index(stopwordsFile, "[state]")]
	for _, line := range strings.Split(talkSection, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		for _, w := range strings.Fields(line) {
			talk[w] = true
		}
	}
	if len(stop) < 50 || len(asking) < 20 || len(talk) < 50 {
		t.Fatalf("stop %d, asking %d, talk %d words: the file was not read", len(stop), len(asking), len(talk))
	}
	for w := range asking {
		if stop[w] {
			t.Errorf("%q is in two sections", w)
		}
	}
	for w := range talk {
		if stop[w] || asking[w] {
			t.Errorf("%q is in two sections", w)
		}
	}
	// The state verbs are a kind of word, not a use: most are function words too.
	if !state["becomes"] || !IsStateVerb("is") || IsStateVerb("poisoned") {
		t.Errorf("state verbs not read: %v", state)
	}
	for _, m := range []map[string]bool{stop, asking, talk, state} {
		for w := range m {
			if strings.IndexFunc(w, func(r rune) bool { return !unicode.IsLower(r) }) >= 0 {
				t.Errorf("%q is not one lower-case word (Split never yields it)", w)
			}
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("a word outside a section was accepted")
		}
	}()
	parseStopwords("orphan\n[stop]\na\n")
}

// Splitting outside text never fails and yields lower-case words of letters and digits that
// splitting again leaves as they are.
func FuzzSplit(f *testing.F) {
	for _, s := range []string{"The Tarrasque’s bite", "can't", "two-weapon", "Übung 1d6", "'s", "a's'b", "\xff'S"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ws := Split(s)
		for _, w := range ws {
			if w == "" || !utf8.ValidString(w) {
				t.Fatalf("Split(%q) yields %q", s, w)
			}
			if strings.IndexFunc(w, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) >= 0 {
				t.Fatalf("Split(%q) yields %q with a separator", s, w)
			}
			_ = Stem(w)
		}
		if again := Split(strings.Join(ws, " ")); !slices.Equal(again, ws) {
			t.Fatalf("Split(%q) = %q, split again %q", s, ws, again)
		}
	})
}
