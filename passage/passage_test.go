package passage

import (
	"slices"
	"strings"
	"testing"
)

func TestRunInHeadings(t *testing.T) {
	text := "Each poison differs.\n\nMalice (Inhaled). A creature…\n\nRecharge X–Y. The notation…\n\nAssassin’s Blood (Ingested). A creature…\n\nEssence of Ether (Inhaled). It…\n\nThis is a sentence. Another one.\n\nThe creature can't move. It…"
	got := RunInHeadings(text)
	want := []string{"Malice", "Recharge X–Y", "Assassin’s Blood", "Essence of Ether"}
	if !slices.Equal(got, want) {
		t.Errorf("RunInHeadings = %q, want %q", got, want)
	}
}

func TestNames(t *testing.T) {
	if got := LastHeading("Combat > Grappling"); got != "Grappling" {
		t.Errorf("LastHeading = %q", got)
	}
	if got := LastHeading("Grappling"); got != "Grappling" {
		t.Errorf("LastHeading of one heading = %q", got)
	}
	if got, want := TitleNames("Stone of Good Luck (Luckstone)"), []string{"Stone of Good Luck (Luckstone)", "Stone of Good Luck", "Luckstone"}; !slices.Equal(got, want) {
		t.Errorf("TitleNames = %q, want %q", got, want)
	}
	if got := TitleNames("Grappled"); !slices.Equal(got, []string{"Grappled"}) {
		t.Errorf("TitleNames = %q", got)
	}
}

// Run-in headings of outside text are names the text holds, each opening a line.
func FuzzRunInHeadings(f *testing.F) {
	f.Add("Malice (Inhaled). A creature…\n\nRecharge X–Y. The notation…")
	f.Add("Assassin’s Blood (Ingested). A creature…")
	f.Add("A. B. C")
	f.Fuzz(func(t *testing.T, text string) {
		for _, h := range RunInHeadings(text) {
			if h == "" || !strings.Contains(text, h) || h[0] < 'A' || h[0] > 'Z' {
				t.Fatalf("RunInHeadings(%q) yields %q", text, h)
			}
		}
	})
}
