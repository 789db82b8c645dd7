package ingest

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/go-pdf/fpdf"
)

// textLine is one line drawn on a generated page: where, in what font, and its words. Words
// drawn apart (spaced) are placed one by one with no space character between them, so that
// only their positions separate them.
type textLine struct {
	x, y   float64 // mm from the top left
	font   string  // "" regular, "B" bold
	size   float64
	text   string
	spaced bool
}

// twoColumnPDF draws pages of lines, each page's lines in order of their y across both
// columns (so the content stream interleaves the columns), with a running header and a footer
// printing page numbers from 12, and no outline.
func twoColumnPDF(t *testing.T, pages [][]textLine) []byte {
	t.Helper()
	p := fpdf.New("P", "mm", "A4", "")
	p.SetAutoPageBreak(false, 0)
	for n, lines := range pages {
		p.AddPage()
		p.SetFont("Helvetica", "", 8)
		p.Text(15, 10, "Dungeon Rules — Player's Guide")
		p.Text(100, 290, fmt.Sprintf("Page %d", 12+n))
		sorted := slices.Clone(lines)
		slices.SortStableFunc(sorted, func(a, b textLine) int { return cmp.Compare(a.y, b.y) })
		for _, l := range sorted {
			p.SetFont("Helvetica", l.font, l.size)
			if !l.spaced {
				p.Text(l.x, l.y, l.text)
				continue
			}
			x := l.x
			for _, w := range strings.Fields(l.text) {
				p.Text(x, l.y, w)
				x += p.GetStringWidth(w + " ")
			}
		}
	}
	var buf bytes.Buffer
	if err := p.Output(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// column lays out a column's blocks from the top: headings in a larger bold font, paragraphs
// of body lines (4.5 mm apart) with a first-line indent, a gap before each heading.
func column(x float64, blocks ...any) []textLine {
	var out []textLine
	y := 25.0
	for _, b := range blocks {
		switch b := b.(type) {
		case heading1:
			y += 4
			out = append(out, textLine{x: x, y: y, font: "B", size: 16, text: string(b)})
			y += 8
		case heading2:
			y += 3
			out = append(out, textLine{x: x, y: y, font: "B", size: 13, text: string(b)})
			y += 6.5
		case para:
			for i, l := range b {
				indent := 0.0
				if i == 0 {
					indent = 4
				}
				out = append(out, textLine{x: x + indent, y: y, size: 10, text: l, spaced: i%2 == 1})
				y += 4.5
			}
		case row:
			for i, cell := range b {
				out = append(out, textLine{x: x + float64(i)*28, y: y, size: 10, text: cell})
			}
			y += 4.5
		}
	}
	return out
}

type (
	heading1 string
	heading2 string
	para     []string
	row      []string
)

// A two-column PDF with headings in a larger font and no outline comes out with its sections,
// in reading order (the left column before the right, though the page draws them interleaved),
// with whole words (also where only the glyph positions separate them), hyphenated words joined
// where the book knows the joined word, table rows kept as rows, and the running header and
// footer out of the text with the printed page kept.
func TestTwoColumnPDFWithoutOutline(t *testing.T) {
	page1 := append(column(15,
		heading1("Combat"),
		para{"A round represents about six seconds in the", "game world. Every combatant acts in turn."},
		heading2("Grappling"),
		para{"When you want to grab a creature, a combat-", "ant uses the Attack action to make a special", "melee attack. A two-", "weapon fighter can grapple too."},
		para{"Using at least one free hand, you try to seize", "the target with a grapple check."},
	), column(110,
		heading2("Shoving a Creature"),
		para{"Using the Attack action, you can make a", "special melee attack to shove a creature. Two-weapon", "fighting does not help here."},
		heading2("Weapons"),
		row{"Club", "1 sp", "1d4 bludgeoning"},
		row{"Dagger", "2 gp", "1d4 piercing"},
		para{"Weapons are listed by cost."},
	)...)
	page2 := append(column(15,
		heading1("Magic"),
		heading2("Casting a Spell"),
		para{"A spellcaster must expend a slot of the", "spell's level or higher, effectively filling", "a slot with the spell."},
	), column(110,
		heading2("Rituals"),
		para{"Certain spells have a special tag: ritual.", "Such a spell can be cast following the normal", "rules for spellcasting."},
	)...)
	data := twoColumnPDF(t, [][]textLine{page1, page2})
	b, err := LoadBytes(context.Background(), "rules.pdf", data, Options{Book: "Dungeon Rules"})
	if err != nil {
		t.Fatal(err)
	}
	bySection := map[string]Passage{}
	var order []string
	for _, p := range b.Passages {
		if _, ok := bySection[p.Section]; !ok {
			order = append(order, p.Section)
		}
		bySection[p.Section] = p
		for _, bad := range []string{"Dungeon Rules", "Page 1", "Player's Guide"} {
			if strings.Contains(p.Text, bad) {
				t.Errorf("running header or footer in the text of %q: %q", p.Section, p.Text)
			}
		}
	}
	wantOrder := []string{"Combat", "Combat > Grappling", "Combat > Shoving a Creature", "Combat > Weapons", "Magic > Casting a Spell", "Magic > Rituals"}
	if !slices.Equal(order, wantOrder) {
		t.Errorf("sections in reading order %q, want %q", order, wantOrder)
	}
	want := map[string]struct {
		text string
		page int
	}{
		"Combat": {"A round represents about six seconds in the game world. Every combatant acts in turn.", 12},
		"Combat > Grappling": {"When you want to grab a creature, a combatant uses the Attack action to make a special melee attack. A two-weapon fighter can grapple too.\n\n" +
			"Using at least one free hand, you try to seize the target with a grapple check.", 12},
		"Combat > Shoving a Creature": {"Using the Attack action, you can make a special melee attack to shove a creature. Two-weapon fighting does not help here.", 12},
		"Combat > Weapons":            {"Club | 1 sp | 1d4 bludgeoning\nDagger | 2 gp | 1d4 piercing\n\nWeapons are listed by cost.", 12},
		"Magic > Casting a Spell":     {"A spellcaster must expend a slot of the spell's level or higher, effectively filling a slot with the spell.", 13},
		"Magic > Rituals":             {"Certain spells have a special tag: ritual. Such a spell can be cast following the normal rules for spellcasting.", 13},
	}
	for sec, w := range want {
		p, ok := bySection[sec]
		if !ok {
			t.Errorf("no section %q (have %q)", sec, order)
			continue
		}
		if p.Parent != w.text {
			t.Errorf("%s reads\n%q\nwant\n%q", sec, p.Parent, w.text)
		}
		if p.Page != w.page {
			t.Errorf("%s cited on page %d, want the printed %d", sec, p.Page, w.page)
		}
	}
}

// With an outline, its titles name the sections and give their paths, even where the heading
// is set like the body text; an outline entry with no line of its own ("Table: Weapons") is
// skipped without losing the entries after it; a heading the outline leaves out is placed by
// its typography under the outline's heading.
func TestPDFOutlineFirst(t *testing.T) {
	p := fpdf.New("P", "mm", "A4", "")
	p.SetAutoPageBreak(false, 0)
	y := 20.0
	line := func(style string, size float64, text string) {
		p.SetFont("Helvetica", style, size)
		p.Text(15, y, text)
		y += size * 0.5
	}
	p.AddPage()
	p.Bookmark("Combat Rules", 0, 0)
	line("B", 16, "Combat Rules")
	line("", 10, "Fights happen in rounds of six seconds each.")
	p.Bookmark("Table: Weapons", 1, 0)
	p.Bookmark("Cover", 1, 0)
	line("", 10, "Cover")
	line("", 10, "Walls give half cover or three-quarters cover.")
	line("B", 12, "Total Cover")
	line("", 10, "A target with total cover cannot be targeted.")
	p.AddPage()
	y = 20
	p.Bookmark("Spells", 0, 0)
	line("B", 16, "Spells")
	line("", 10, "Each spell has a level from 0 to 9.")
	var buf bytes.Buffer
	if err := p.Output(&buf); err != nil {
		t.Fatal(err)
	}
	b, err := LoadBytes(context.Background(), "r.pdf", buf.Bytes(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range b.Passages {
		got[p.Section] = p.Text
	}
	for sec, text := range map[string]string{
		"Combat Rules":                       "Fights happen in rounds of six seconds each.",
		"Combat Rules > Cover":               "Walls give half cover or three-quarters cover.",
		"Combat Rules > Cover > Total Cover": "A target with total cover cannot be targeted.",
		"Spells":                             "Each spell has a level from 0 to 9.",
	} {
		if got[sec] != text {
			t.Errorf("section %q reads %q, want %q (have %q)", sec, got[sec], text, got)
		}
	}
}

func TestNormGlyph(t *testing.T) {
	for in, want := range map[string]string{
		"\t\r \u00a0": " ",   // Word's space glyph
		"-\u00ad‐‑":   "-",   // Word's hyphen glyph
		"\ufb01":      "fi",  // ligatures read as their letters
		"\ufb03":      "ffi", //
		"’":           "'",
		"“":           `"`,
		"\ufffd":      "", // unmapped
		"\ue000":      "", // private use
		"—":           "—",
		"a\u00adb":    "ab",
		"\u2212":      "-",
		"Ä":           "Ä",
	} {
		if got := normGlyph(in); got != want {
			t.Errorf("normGlyph(%q) = %q, want %q", in, got, want)
		}
	}
}
