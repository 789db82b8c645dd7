package ingest

import "testing"

// A mention names the part (top-level heading) that holds its title, so that a book holding a
// whole corpus links between its parts; a title found in two parts names none.
func TestMentionNamesThePart(t *testing.T) {
	ps := []Passage{
		{Book: "Rules", Section: "Conditions > Paralyzed", Text: "A paralyzed creature can't move."},
		{Book: "Rules", Section: "Monsters > Ghast > Actions", Text: "Claws. The target is paralyzed for 1 minute."},
		{Book: "Rules", Section: "Spells > Light", Text: "The object sheds bright light."},
		{Book: "Rules", Section: "Magic Items > Light", Text: "A lantern of light."},
		{Book: "Rules", Section: "Monsters > Will-o'-Wisp", Text: "It sheds light and can be paralyzed."},
	}
	idx := NewTitleIndex(ps)
	got := map[string]string{}
	for _, r := range idx.Mentions(ps[4]) {
		got[r.Target] = r.Part
	}
	if part, ok := got["Paralyzed"]; !ok || part != "Conditions" {
		t.Errorf("mention of Paralyzed names part %q (mentions %v), want Conditions", part, got)
	}
	for target, part := range got {
		if target == "Light" && part != "" {
			t.Errorf("a title in two parts names part %q", part)
		}
	}
}
