package ingest

import "testing"

func TestStemJoinsInflections(t *testing.T) {
	for _, group := range [][]string{
		{"creature", "creatures", "creature's"},
		{"fumble", "fumbles"},
		{"grapple", "grapples", "grappled", "grappling"},
		{"ability", "abilities"},
		{"spell", "spells"},
		{"attack", "attacks", "attacked", "attacking"},
	} {
		want := Stem(group[0])
		for _, w := range group[1:] {
			if got := Stem(w); got != want {
				t.Errorf("Stem(%q) = %q, Stem(%q) = %q: they should meet", w, got, group[0], want)
			}
		}
	}
}
