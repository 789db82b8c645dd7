package llm

import "testing"

// TestLanguageOf names the language of questions a player might ask, in each script and in the
// Latin-script languages told apart by their function words; unsure gives "".
func TestLanguageOf(t *testing.T) {
	for text, want := range map[string]string{
		"Can I still cast a spell while I am grappled?":             "English",
		"Est-ce que je peux lancer un sort quand je suis agrippé ?": "French",
		"Kann ich einen Zauber wirken, wenn ich gepackt bin?":       "German",
		"¿Puedo lanzar un conjuro mientras estoy agarrado?":         "Spanish",
		"Posso lanciare un incantesimo mentre sono afferrato?":      "Italian",
		"Posso conjurar uma magia enquanto estou agarrado?":         "Portuguese",
		"Kan ik een spreuk uitspreken als ik vastgegrepen ben?":     "Dutch",
		"Czy mogę rzucić czar, jeśli jestem pochwycony?":            "Polish",
		"Могу ли я читать заклинание, если меня схватили?":          "Russian",
		"掴まれている間に呪文を唱えられますか?":                                       "Japanese",
		"被擒抱时我能施法吗?":                                                "Chinese",
		"붙잡힌 상태에서 주문을 시전할 수 있나요?":                                   "Korean",
		"Μπορώ να κάνω ξόρκι;":                                      "Greek",
		"Grappled?":                                                 "",
		"":                                                          "",
	} {
		if got := languageOf(text); got != want {
			t.Errorf("languageOf(%q) = %q, want %q", text, got, want)
		}
	}
}
