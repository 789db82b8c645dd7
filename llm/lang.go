package llm

import (
	"strings"
	"unicode"
)

// Language detection, so that the writer is told the question's language by name ("Answer in
// French") — small local models ignore "the language of the question" and answer in English.
//
// A small script and stop-word detector rather than a statistical library: questions are one
// short sentence, where n-gram detectors are least reliable, and the maintained one for Go
// (lingua-go) embeds hundreds of megabytes of models. The script decides most languages
// outright (Cyrillic, Greek, Arabic, Hebrew, Devanagari, Thai, Hangul, Japanese kana, Chinese
// ideographs); for Latin script the most frequent grammatical words of ten languages (articles,
// pronouns, prepositions, auxiliaries — the words every sentence has, whatever its subject)
// decide, and a tie or no evidence gives "" (the prompt then says "the question's language").

// scriptLanguages maps a Unicode script to the language named when it dominates.
var scriptLanguages = []struct {
	table *unicode.RangeTable
	name  string
}{
	{unicode.Hiragana, "Japanese"}, {unicode.Katakana, "Japanese"}, {unicode.Hangul, "Korean"},
	{unicode.Han, "Chinese"}, {unicode.Cyrillic, "Russian"}, {unicode.Greek, "Greek"},
	{unicode.Arabic, "Arabic"}, {unicode.Hebrew, "Hebrew"}, {unicode.Devanagari, "Hindi"},
	{unicode.Thai, "Thai"},
}

// functionWords are each Latin-script language's commonest grammatical words.
var functionWords = map[string][]string{
	"English":    strings.Fields("the a an and or of to in on is are can does do i my you what how when if with it this that be while"),
	"French":     strings.Fields("le la les un une des et ou de du est sont je mon ma mes tu que qui quoi comment quand si avec ce cette peut peux dans sur pour pendant"),
	"German":     strings.Fields("der die das ein eine und oder ist sind ich mein meine du was wie wann wenn mit kann kannst nicht auf für im zu den dem während"),
	"Spanish":    strings.Fields("el la los las un una y o de del es son yo mi tu qué que cómo cuando si con puedo puede en para por mientras"),
	"Italian":    strings.Fields("il lo la gli le un una e o di del è sono io mio mia che come quando se con posso può nel per mentre"),
	"Portuguese": strings.Fields("o a os as um uma e ou de do da é são eu meu minha que como quando se com posso pode em no na para enquanto"),
	"Dutch":      strings.Fields("de het een en of is zijn ik mijn wat hoe wanneer als met kan niet op voor in tijdens"),
	"Polish":     strings.Fields("i lub w z na jest są ja mój moja co jak kiedy jeśli czy mogę może nie do się"),
	"Swedish":    strings.Fields("en ett och eller är jag min mitt vad hur när om med kan inte på för i under"),
	"Czech":      strings.Fields("a nebo v ve z na je jsou já můj moje co jak kdy když jestli mohu může ne do se"),
}

// wordLanguages maps each function word to the languages it belongs to.
var wordLanguages = func() map[string][]string {
	m := map[string][]string{}
	for lang, fw := range functionWords {
		for _, w := range fw {
			m[w] = append(m[w], lang)
		}
	}
	return m
}()

// sampleBytes bounds how much of a text is read: a language shows in its first sentences.
const sampleBytes = 4000

// languageOf names the language of text, or "" when unsure.
func languageOf(text string) string {
	if len(text) > sampleBytes {
		text = strings.ToValidUTF8(text[:sampleBytes], "")
	}
	scripts := map[string]int{}
	latin := 0
	for _, r := range text {
		if !unicode.IsLetter(r) {
			continue
		}
		if unicode.Is(unicode.Latin, r) {
			latin++
			continue
		}
		for _, s := range scriptLanguages {
			if unicode.Is(s.table, r) {
				scripts[s.name]++
				break
			}
		}
	}
	best, bestN := "", 0
	for name, n := range scripts {
		if n > bestN || (n == bestN && name < best) {
			best, bestN = name, n
		}
	}
	if scripts["Japanese"] > 0 && best == "Chinese" {
		best, bestN = "Japanese", bestN+scripts["Japanese"] // kanji with kana is Japanese
	}
	if bestN > latin {
		return best
	}
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) })
	scores := map[string]int{}
	for _, w := range words {
		for _, lang := range wordLanguages[w] {
			scores[lang]++
		}
	}
	best, bestN, tie := "", 0, false
	for lang, n := range scores {
		switch {
		case n > bestN:
			best, bestN, tie = lang, n, false
		case n == bestN && n > 0:
			tie = true
		}
	}
	if tie || bestN == 0 {
		return ""
	}
	return best
}
