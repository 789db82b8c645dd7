package lexicon

import (
	"bytes"
	"fmt"
	"testing"
)

// parts reads test books (name → passages in reading order) into parts.
func parts(books ...any) []Part {
	var out []Part
	for i := 0; i+1 < len(books); i += 2 {
		name := books[i].(string)
		var docs []Doc
		for j, s := range books[i+1].([]sec) {
			docs = append(docs, Doc{ID: fmt.Sprintf("%s/%d", name, j), Section: s.path, Page: s.page, Text: s.text})
		}
		out = append(out, Read(name, docs))
	}
	return out
}

// shelfBooks is a small library with every kind of link: headings and their parts, run-in rules,
// gerund headings whose verb is rare or common, states, a heading many sections share, explicit
// references ("see X", quoted sections, pages of a paged book, pages of another book without
// pages), rules named with their book, and prose that defines terms (for Bridge). It is written
// for these tests (no dev question's text).
func shelfBooks() []any {
	var monsters []sec
	for _, m := range []string{"Goblin", "Orc", "Wolf", "Bear"} {
		monsters = append(monsters, sec{"Monsters > " + m, "A creature with darkvision. It can become frightened or grappled.", 0},
			sec{"Monsters > " + m + " > Actions", "Bite. The target is grappled (see Grappled).", 0})
	}
	var crafting []sec
	for i := range 30 {
		crafting = append(crafting, sec{fmt.Sprintf("Crafting > Recipe %d", i), "You create an item from materials; the crafter may concede nothing.", 0})
	}
	return []any{
		"conditions", []sec{
			{"Appendix A: Conditions > Grappled", "A grappled creature's speed becomes 0, and it can't benefit from any bonus to its speed.", 0},
			{"Appendix A: Conditions > Frightened", "A frightened creature has disadvantage on ability checks while the source of its fear is within line of sight.", 0},
			{"Appendix A: Conditions > Poisoned", "A poisoned creature has disadvantage on attack rolls and ability checks.", 0},
		},
		"rules", []sec{
			{"Combat > Grappling", "When you want to grab a creature or wrestle with it, you can use the Attack action to make a special melee attack (see appendix A). See Shoving a Creature.", 0},
			{"Combat > Shoving a Creature", "Using the Attack action, you can push a creature away; the target is knocked prone (see the condition).", 0},
			{"Combat > Hide", "You gain certain benefits, as described in the “Unseen Attackers and Targets” section.", 0},
			{"Combat > Unseen Attackers and Targets", "When you attack a target that you can't see, you have disadvantage on the attack roll.", 0},
			{"Senses > Darkvision", "A creature with darkvision can see in dim light within a specified radius as if it were bright light.", 0},
			{"Conflicts > Conceding the Conflict", "You can give in before the roll and get a fate point.", 0},
			{"Magic > Creating Spell Slots", "Spend points to make a slot of a level you choose.", 0},
			{"Poisons > Sample Poisons", "Each poison differs.\n\nMalice (Inhaled). A creature that inhales it must succeed on a save or become poisoned for 1 hour.\n\nThick Skin: You may use Orc instead of Physique when you resist.", 0},
			{"Stone of Good Luck (Luckstone)", "While this polished agate is on your person, you gain a bonus.", 0},
		},
		"monsters", monsters,
		"crafting", crafting,
		"fate-core", []sec{
			{"Extras > The Bronze Rule, aka the Fate Fractal", "In Fate, you can treat anything in the game world like it's a character.", 0},
			{"Campaigns > Defining Milestones", "Milestones are moments in a campaign where characters change.", 0},
			{"Actions > Free Actions", "Small things you do in passing cost nothing at all in a conflict.", 0},
			{"Conflicts > Teamwork", "Characters can combine their skills when they work together.", 0},
		},
		"fate-system-toolkit", []sec{
			{"Intro > The Bronze Rule", "Can I represent this with the Bronze Rule (Fate Core, page 270)?", 0},
			{"Genres > Quest Aspects", "Resolving a quest is a milestone. Check out page 256 of Fate Core for more info on milestones.", 0},
			{"Tools > Supplemental Actions", "Drawing a weapon is a supplemental action. Most of these actions are free actions in Fate Core, but here they cost a -1.", 0},
			{"Invention > Teamwork", "Inventing together uses the usual teamwork rules (page XX), with one variation.", 0},
		},
		"basic-set", []sec{
			{"Combat > Rapid Strike", "Attack twice in one turn with a melee weapon.", 370},
			{"Combat > Rapid Strike", "Each attack is at -6 to skill.", 371},
			{"Skills > Karate", "Karate users may make a rapid strike (see p. 370) with kicks.", 180},
			{"Skills > Wrestling", "Wrestlers grab and pin; see p. 371 for the penalty, and p. 999 for nothing.", 181},
		},
	}
}

// roundTrip encodes parts and decodes them again, as the store does.
func roundTrip(t testing.TB, ps []Part) []Part {
	t.Helper()
	out := make([]Part, len(ps))
	for i, p := range ps {
		d, err := Decode(p.Book, p.Docs, p.Encode())
		if err != nil {
			t.Fatalf("%s: %v", p.Book, err)
		}
		out[i] = d
	}
	return out
}

// Linked lazily from parts as the store keeps them, the lexicon says what a full link says: the
// same terms, specificities, links, words, word counts and definitions.
func TestLinkReadsLazilyWhatAFullLinkReads(t *testing.T) {
	ps := parts(shelfBooks()...)
	lx := Link(roundTrip(t, ps))
	if len(lx.Terms) < 20 {
		t.Fatalf("%d terms: the library is not the one this test means", len(lx.Terms))
	}
	sameAsEager(t, lx)
	sameAsEager(t, Link(ps))
}

// Adding, replacing and removing books, or reading them in another order, gives the lexicon a
// full link of the new library gives.
func TestRelinkMatchesLink(t *testing.T) {
	books := shelfBooks()
	all := parts(books...)
	byName := map[string]Part{}
	for _, p := range all {
		byName[p.Book] = p
	}
	pick := func(names ...string) []Part {
		var out []Part
		for _, n := range names {
			out = append(out, byName[n])
		}
		return out
	}
	// A replaced book: the rules define Grappled too (two definers now) and a longer term
	// ("Grappled Creature") that swallows mentions of Grappled; a run-in verb is used less.
	rules2 := parts("rules", []sec{
		{"Combat > Grappling", "When you want to grab a creature, make a special attack.", 0},
		{"Combat > Grappled", "A grappled creature is held; see Grappled Creature.", 0},
		{"Combat > Grappled Creature", "A grappled creature can't move away.", 0},
		{"Poisons > Sample Poisons", "Malice (Inhaled). A creature must save or become poisoned.", 0},
	})[0]
	// A book named like a term of the library ("Teamwork"), and a fourth definer of Actions.
	teamwork := parts("teamwork", []sec{{"Monsters > Lion > Actions", "Claws. The lion works with its pride.", 0}})[0]
	// Two books that define one term written two ways: "Breeds" (any inflection of breed) and
	// "Breed" (read as a participle: matched as written): the first book's writing is the
	// term's, and "breeds" stops mentioning it when the other book comes first.
	horses := parts("horses", []sec{
		{"Stables > Breeds", "Every horse has one of the breeds below.", 0},
		{"Stables > Ponies", "Ponies breed true.", 0},
		{"Stables > Mules", "Mules have no breeds of their own.", 0},
	})[0]
	kennel := parts("kennel", []sec{{"Dogs > Breed", "A dog's breed tells its size. Breeds differ.", 0}})[0]
	for _, c := range []struct {
		name     string
		from, to []Part
	}{
		{"a book added", pick("conditions", "rules", "monsters", "crafting"), pick("conditions", "rules", "monsters", "crafting", "fate-core")},
		{"books added first", pick("fate-core", "basic-set"), pick("conditions", "rules", "fate-core", "fate-system-toolkit", "basic-set")},
		{"a book removed", all, pick("conditions", "rules", "crafting", "fate-core", "fate-system-toolkit", "basic-set")},
		{"a book replaced", all, append(pick("conditions"), append([]Part{rules2}, pick("monsters", "crafting", "fate-core", "fate-system-toolkit", "basic-set")...)...)},
		{"a book named like a term", all, append(all, teamwork)},
		{"another order", all, pick("basic-set", "monsters", "fate-core", "conditions", "rules", "crafting", "fate-system-toolkit")},
		{"a term written another way", append(all, horses), append([]Part{kennel}, append(all, horses)...)},
		{"everything removed", all, nil},
		{"from nothing", nil, all},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := Link(c.from)
			got := Relink(base, c.to)
			sameLexicon(t, got, Link(c.to))
			sameAsEager(t, got)
			// the base is left as it was
			sameLexicon(t, base, Link(c.from))
		})
	}
}

// Decode reads back what Encode wrote and refuses a part written for other passages, from
// another format, or cut short.
func TestDecodeChecksThePart(t *testing.T) {
	p := parts(shelfBooks()...)[1]
	b := p.Encode()
	if _, err := Decode(p.Book, p.Docs[1:], b); err == nil {
		t.Error("a part decoded for fewer passages than it was written for")
	}
	if _, err := Decode(p.Book, p.Docs, b[:len(b)-1]); err == nil {
		t.Error("a part cut short decoded")
	}
	if _, err := Decode(p.Book, p.Docs, append([]byte{9}, b[1:]...)); err == nil {
		t.Error("a part of an unknown format decoded")
	}
	if d, err := Decode(p.Book, p.Docs, b); err != nil || !bytes.Equal(d.Encode(), b) {
		t.Errorf("a part did not decode to itself: %v", err)
	}
}

// FuzzDecode: Decode takes any bytes (a damaged file): it returns an error or a part that links
// and reads without a panic.
func FuzzDecode(f *testing.F) {
	ps := parts(shelfBooks()...)
	for _, p := range ps[:2] {
		f.Add(p.Encode())
	}
	docs := ps[0].Docs
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Decode("conditions", docs, b)
		if err != nil {
			return
		}
		lx := Link([]Part{p, ps[1]})
		for n := range lx.N {
			lx.Edges(n)
			lx.Refs(n)
			for _, tk := range lx.Tokens(n) {
				lx.Uses(n, tk.Stem)
				lx.DF(tk.Stem)
			}
		}
		lx.Bridge("grab a creature with darkvision", 3)
	})
}
