package lexicon

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/caprag/caprag/passage"
)

// sec is a passage of a test book: its section path and text (and printed page).
type sec struct {
	path, text string
	page       int
}

// library links test books (name → passages in reading order).
func library(books ...any) *Lexicon {
	var parts []Part
	for i := 0; i+1 < len(books); i += 2 {
		name := books[i].(string)
		var docs []Doc
		for j, s := range books[i+1].([]sec) {
			docs = append(docs, Doc{ID: fmt.Sprintf("%s/%d", name, j), Section: s.path, Page: s.page, Text: s.text})
		}
		parts = append(parts, Read(name, docs))
	}
	return Link(parts)
}

// filler is n passages about nothing in particular (a library has more than the rules a test
// looks at; specificity is measured against all of it).
func filler(n int, text string) []sec {
	out := make([]sec, n)
	for i := range out {
		out[i] = sec{fmt.Sprintf("Filler > Part %d", i), fmt.Sprintf("%s Passage %d says little.", text, i), 0}
	}
	return out
}

// edge returns the link from the passage with ID from to the passage whose section ends in to.
func edge(lx *Lexicon, from, to string) (Edge, bool) {
	n, ok := lx.ByID[from]
	if !ok {
		panic("no passage " + from)
	}
	for _, e := range lx.Edges(n) {
		if strings.HasSuffix(lx.Doc(e.To).Section, to) {
			return e, true
		}
	}
	return Edge{}, false
}

func TestHeadingNames(t *testing.T) {
	for _, c := range []struct {
		heading string
		want    []string
	}{
		{"Material (M)", []string{"Material (M)", "Material"}}, // "M" is too short to name anything
		{"Stone of Good Luck (Luckstone)", []string{"Stone of Good Luck (Luckstone)", "Stone of Good Luck", "Luckstone"}},
		{"THE BRONZE RULE, AKA THE FATE FRACTAL", []string{"THE BRONZE RULE, AKA THE FATE FRACTAL", "BRONZE RULE", "FATE FRACTAL"}},
		{"Skill: Conjuration", []string{"Skill: Conjuration", "Skill", "Conjuration"}},
		{"Food, Drink, and Lodging", []string{"Food, Drink, and Lodging", "Food", "Drink", "Lodging"}},
		{"Conceding the Conflict", []string{"Conceding the Conflict", "conceding", "Conflict"}},
		{"Grappled", []string{"Grappled"}},
		{"3rd Level", []string{"3rd Level"}},
		{"12", nil},
	} {
		var got []string
		for _, tm := range headingTerms(c.heading) {
			got = append(got, tm.Name)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("headingTerms(%q) = %q, want %q", c.heading, got, c.want)
		}
	}
}

// A heading that names a state by a participle ("Poisoned") is mentioned by "poisoned", not by
// "poison damage"; a heading with a parenthesis is mentioned by either name.
func TestMentionForms(t *testing.T) {
	lx := library("conditions", []sec{
		{"Conditions > Poisoned", "A poisoned creature has disadvantage.", 0},
		{"Conditions > Grappled", "A grappled creature's speed is 0.", 0},
	}, "rules", []sec{
		{"Combat > Grappling", "You grab a creature. On a success it is grappled.", 0},
		{"Combat > Shoving", "Grappling a creature first makes a shove easier.", 0},
	}, "magic", []sec{
		{"Items > Stone of Good Luck (Luckstone)", "A polished agate.", 0},
		{"Items > Bracers", "While wearing these bracers you gain a bonus.", 0},
	}, "monsters", []sec{
		{"Monsters > Quasit", "Claws: the target must succeed on a save or become poisoned.", 0},
		{"Monsters > Snake", "Bite: 7 (2d6) poison damage.", 0},
		{"Monsters > Gnome", "The gnome wears a luckstone.", 0},
	})
	if _, ok := edge(lx, "monsters/0", "Poisoned"); !ok {
		t.Error("\"become poisoned\" does not mention Poisoned")
	}
	if _, ok := edge(lx, "monsters/1", "Poisoned"); ok {
		t.Error("\"poison damage\" mentions Poisoned")
	}
	if _, ok := edge(lx, "monsters/2", "Stone of Good Luck (Luckstone)"); !ok {
		t.Error("\"luckstone\" does not mention Stone of Good Luck (Luckstone)")
	}
	if _, ok := edge(lx, "conditions/0", "Poisoned"); ok {
		t.Error("a passage links to its own section")
	}
	// the state and the act are two rules: "grappled" names Grappled, "grappling" Grappling
	if _, ok := edge(lx, "rules/0", "Grappled"); !ok {
		t.Error("\"it is grappled\" does not mention Grappled")
	}
	if _, ok := edge(lx, "rules/1", "Grappling"); !ok {
		t.Error("\"Grappling a creature\" does not mention Grappling")
	}
	if _, ok := edge(lx, "rules/1", "Grappled"); ok {
		t.Error("\"Grappling a creature\" mentions Grappled")
	}
}

// A term is weighted by how specific it is, not cut when many passages use it: "Darkvision" in
// every stat block still leads to its rule, but counts for less than a rule one passage names.
func TestSpecificityWeighsInsteadOfCutting(t *testing.T) {
	var monsters []sec
	for i := range 30 {
		monsters = append(monsters, sec{fmt.Sprintf("Monsters > Beast %d", i), "Senses darkvision 60 ft. It bites.", 0})
	}
	monsters = append(monsters, sec{"Monsters > Mimic", "Senses darkvision 60 ft. The mimic adheres to anything: it is grappled (see Grappled).", 0})
	lx := library("rules", []sec{
		{"Senses > Darkvision", "A creature with darkvision can see in the dark.", 0},
		{"Conditions > Grappled", "A grappled creature's speed becomes 0.", 0},
		{"Conditions > Adhesive Goo", "Goo sticks.", 0},
	}, "monsters", monsters, "other", filler(40, "Nothing to see."))
	dark, ok := edge(lx, "monsters/30", "Darkvision")
	if !ok {
		t.Fatal("a term 31 of 73 passages use is dropped")
	}
	if e := lx.Terms["darkvision"]; e.Mentions < 31 || dark.Weight != e.Spec || dark.Weight > 0.25 {
		t.Errorf("darkvision: %d mentions, weight %.2f (spec %.2f), want at least 31 and a low weight", e.Mentions, dark.Weight, e.Spec)
	}
	if g, _ := edge(lx, "monsters/30", "Grappled"); g.Weight != 1 || g.Kind != passage.RefSee {
		t.Errorf("an explicit reference weighs %.2f (%s), want 1 (see)", g.Weight, g.Kind)
	}
}

// "Conceding the Conflict" is what a passage means by "concede", when few passages say it; "the
// verb of a heading used everywhere ("Creating Spell Slots", "create") names nothing.
func TestGerundHeadingsAreNamedByTheirVerbWhenItIsRare(t *testing.T) {
	var rest []sec
	for i := range 40 {
		rest = append(rest, sec{fmt.Sprintf("Crafting > Recipe %d", i), "You create an item from materials.", 0})
	}
	lx := library("core", []sec{
		{"Conflicts > Conceding the Conflict", "You can give in before the roll.", 0},
		{"Magic > Creating Spell Slots", "Spend points for a slot.", 0},
		{"Horror > Impossible Circumstances", "In fights against impossibly tough foes, the players will be inclined to concede.", 0},
		{"Horror > Crafting Dread", "They create dread and concede nothing, then create more.", 0},
	}, "crafting", rest)
	if e, ok := edge(lx, "core/2", "Conceding the Conflict"); !ok || e.Key != "conced" {
		t.Errorf("\"concede\" does not lead to Conceding the Conflict: %+v", e)
	}
	if _, ok := lx.Terms["creat"]; ok {
		t.Error("\"create\", used by most passages, names Creating Spell Slots")
	}
	if _, ok := edge(lx, "core/3", "Creating Spell Slots"); ok {
		t.Error("\"create\" leads to Creating Spell Slots")
	}
}

// A heading that every monster has ("Actions") names none of them; a heading two books share
// names both; a term a section and its own subsection define names the section.
func TestTermsDefinedInManySections(t *testing.T) {
	var ms []sec
	for _, m := range []string{"Goblin", "Orc", "Wolf", "Bear"} {
		ms = append(ms, sec{"Monsters > " + m, "A creature.", 0}, sec{"Monsters > " + m + " > Actions", "Bite.", 0})
	}
	lx := library("monsters", ms, "core", []sec{
		{"Conflicts > Teamwork", "Characters can combine their skills.", 0},
		{"Advancement > Milestones", "At the end of a session you get a milestone.", 0},
		{"Advancement > Milestones > Major Milestones", "A major milestone.", 0},
		{"Play > Combat", "Use the teamwork rules and the actions of monsters; earn milestones.", 0},
	}, "robo", []sec{
		{"Invention > Teamwork", "Inventing together uses the usual teamwork rules, with one variation.", 0},
	})
	if _, ok := lx.Terms["action"]; ok {
		t.Error("\"Actions\", a heading of four sections, names one")
	}
	if e := lx.Terms["teamwork"]; e == nil || len(e.Defs) != 2 {
		t.Errorf("teamwork: %+v, want the two books' sections", e)
	}
	if _, ok := edge(lx, "robo/0", "Conflicts > Teamwork"); !ok {
		t.Error("Invention > Teamwork does not lead to the other book's Teamwork")
	}
	if e := lx.Terms["mileston"]; e == nil || len(e.Defs) != 1 || lx.Title(e.Defs[0]) != "Milestones" {
		t.Errorf("milestones: %+v, want the section above Major Milestones", e)
	}
}

// A state a rule puts a creature in ("…or become frightened") and a rule named in a sentence that
// names its book ("free actions in Fate Core") are explicit links; the same term named in
// passing is a mention weighted by its specificity.
func TestStatesAndBookNamedRulesAreExplicit(t *testing.T) {
	lx := library("conditions", []sec{
		{"Conditions > Frightened", "A frightened creature has disadvantage.", 0},
	}, "monsters", []sec{
		{"Monsters > Dragon", "Frightful Presence. Each creature must succeed on a saving throw or become frightened for 1 minute.", 0},
		{"Monsters > Knight", "Brave. The knight has advantage against frightened foes.", 0},
	}, "fate-core", []sec{
		{"Actions > Free Actions", "Small things you do in passing.", 0},
	}, "fate-system-toolkit", []sec{
		{"Tools > Supplemental Actions", "Drawing a weapon is a supplemental action. Most of these actions are free actions in Fate Core, but here they cost a -1.", 0},
		{"Tools > Other", "Free actions cost nothing.", 0},
	}, "filler", filler(20, "Frightened villagers flee; free actions abound."))
	if e, _ := edge(lx, "monsters/0", "Frightened"); e.Weight != 1 {
		t.Errorf("\"become frightened\" weighs %.2f, want 1", e.Weight)
	}
	if e, ok := edge(lx, "monsters/1", "Frightened"); !ok || e.Weight >= 1 {
		t.Errorf("\"against frightened foes\" weighs %.2f, want a mention's weight", e.Weight)
	}
	if e, _ := edge(lx, "fate-system-toolkit/0", "Free Actions"); e.Weight != 1 {
		t.Errorf("\"free actions in Fate Core\" weighs %.2f, want 1", e.Weight)
	}
	if e, ok := edge(lx, "fate-system-toolkit/1", "Free Actions"); !ok || e.Weight >= 1 {
		t.Errorf("\"free actions\" without the book's name weighs %.2f, want a mention's weight", e.Weight)
	}
}

func TestExplicitReferences(t *testing.T) {
	lx := library("rules", []sec{
		{"Combat > Grappling", "You subject the target to the grappled condition (see appendix A). See Shoving a Creature.", 0},
		{"Combat > Shoving a Creature", "The target is knocked prone (see the condition).", 0},
		{"Combat > Hide", "You gain certain benefits, as described in the “Unseen Attackers and Targets” section.", 0},
		{"Combat > Unseen Attackers and Targets", "Attack rolls have advantage.", 0},
		{"Combat > Wild Magic", "Roll on the table (see page 3).", 0},
		{"Appendix A: Conditions", "Conditions alter a creature's capabilities.", 0},
		{"Appendix A: Conditions > Grappled", "Speed 0.", 0},
		{"Appendix A: Conditions > Prone", "Crawl.", 0},
		{"Appendix A: Conditions > Blinded", "Can't see.", 0},
	})
	for _, c := range [][2]string{
		{"rules/0", "Grappled"}, {"rules/0", "Shoving a Creature"}, {"rules/1", "Prone"}, {"rules/2", "Unseen Attackers and Targets"},
	} {
		if e, ok := edge(lx, c[0], c[1]); !ok || e.Kind != passage.RefSee || e.Weight != 1 {
			t.Errorf("%s → %s: %+v, want an explicit reference", c[0], c[1], e)
		}
	}
	// A reference to a chapter is a reference to the rule of it that its sentence names: the
	// grappled condition, not the appendix's opening.
	if e, ok := edge(lx, "rules/0", "Appendix A: Conditions"); ok && e.Kind == passage.RefSee {
		t.Errorf("rules/0 links to the appendix itself, want only the condition its sentence names")
	}
	// "see page 3" of a book without pages names nothing the sentence names.
	if es := lx.Edges(lx.ByID["rules/4"]); len(es) != 0 {
		t.Errorf("a page of a book without pages led to %+v", es)
	}
}

// A page reference resolves to the passages printed on that page in a book with pages; in a
// book without pages, to what the words of its sentence name, in the book it names ("the Bronze
// Rule (Fate Core, page 270)", "page 256 of Fate Core for more info on milestones"), or in
// another book when it names none ("the usual teamwork rules (page XX)").
func TestPageReferences(t *testing.T) {
	lx := library("fate-core", []sec{
		{"Extras > The Bronze Rule, aka the Fate Fractal", "Anything can be a character.", 0},
		{"Campaigns > Defining Milestones", "Milestones let characters change.", 0},
		{"Conflicts > Teamwork", "Combine skills.", 0},
	}, "fate-system-toolkit", []sec{
		{"Intro > The Bronze Rule", "Can I represent this with the Bronze Rule (Fate Core, page 270)?", 0},
		{"Genres > Quest Aspects", "Resolving a quest is a milestone. Check out page 256 of Fate Core for more info on milestones.", 0},
	}, "atomic-robo", []sec{
		{"Invention > Teamwork", "Use the usual teamwork rules (page XX), with one variation.", 0},
	}, "basic-set", []sec{
		{"Combat > Rapid Strike", "Attack twice.", 370},
		{"Combat > Rapid Strike", "At -6 each.", 371},
		{"Skills > Karate", "Karate users may make a rapid strike (see p. 370).", 180},
	})
	for _, c := range [][2]string{
		{"fate-system-toolkit/0", "The Bronze Rule, aka the Fate Fractal"},
		{"fate-system-toolkit/1", "Defining Milestones"},
		{"atomic-robo/0", "Conflicts > Teamwork"},
		{"basic-set/2", "Rapid Strike"},
	} {
		if e, ok := edge(lx, c[0], c[1]); !ok || e.Kind != passage.RefPage || e.Weight != 1 {
			t.Errorf("%s → %s: %+v, want a page reference", c[0], c[1], e)
		}
	}
	if e, _ := edge(lx, "basic-set/2", "Rapid Strike"); lx.Doc(e.To).Page != 370 {
		t.Errorf("p. 370 led to page %d", lx.Doc(e.To).Page)
	}
	refs := lx.Refs(lx.ByID["fate-system-toolkit/0"])
	if len(refs) == 0 || refs[0].Book != "fate-core" || refs[0].Target != "The Bronze Rule, aka the Fate Fractal" || refs[0].Part != "Extras" || refs[0].ID != "fate-core/0" {
		t.Errorf("refs %+v, want the Bronze Rule of fate-core, part Extras", refs)
	}
}

// A run-in heading defines a rule by name when the name is specific; a question names it.
func TestRunInRulesAndQuestions(t *testing.T) {
	lx := library("gm", []sec{
		{"Poisons > Sample Poisons", "Each poison differs.\n\nMalice (Inhaled). A creature is blinded.\n\nThick Skin: You may use Orc instead of Physique.", 0},
	}, "core", []sec{
		{"Skills > Physique", "Physique measures strength.", 0},
		{"Combat > Cover", "A wall gives cover.", 0},
	}, "filler", filler(20, "Cover your ears."))
	var got []string
	for _, r := range lx.Named("Does a puff of malice work through thick skin behind cover?") {
		got = append(got, r.Target)
	}
	if want := []string{"Malice", "Thick Skin", "Cover"}; !slices.Equal(got, want) {
		t.Errorf("Named = %q, want %q (most specific first)", got, want)
	}
}

// The vocabulary bridge names the rules whose defining sentence uses the question's words, not
// counting the words of the rules the question names itself.
func TestBridge(t *testing.T) {
	lx := library("rules", []sec{
		{"Combat > Grappling", "When you want to grab a creature or wrestle with it, you can make a special attack.", 0},
		{"Combat > Shoving", "Using the Attack action, you can push a creature away from you.", 0},
		{"Monsters > Cultist", "Medium humanoid, any alignment. Cultists serve a dark power and grab offerings.", 0},
	}, "filler", filler(20, "A creature sits."))
	var got []string
	for _, m := range lx.Bridge("I grab the cultist so he can't run off.", 2) {
		got = append(got, m.Text)
	}
	if len(got) == 0 || got[0] != "Grappling" || slices.Contains(got, "Cultist") {
		t.Errorf("Bridge = %q, want Grappling first and not the Cultist the question names", got)
	}
}

func TestSentences(t *testing.T) {
	got, paras := sentences("Malice (Inhaled). A creature is\npoisoned. The poisoned creature is blinded.\n\n| Item | Cost |\n| Rope | 1 gp |\n- first\n- second")
	want := []string{"Malice (Inhaled)", "A creature is poisoned", "The poisoned creature is blinded.", "| Item | Cost |", "Rope | 1 gp |", "first", "second"}
	if !slices.Equal(got, want) {
		t.Errorf("sentences = %q, want %q", got, want)
	}
	if !slices.Equal(paras, []int{0, 0, 0, 1, 1, 1, 1}) {
		t.Errorf("paragraphs %v", paras)
	}
}
