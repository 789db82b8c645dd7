package store

import "context"

// Frequency returns how many passages (child chunks) of the books hold the stem, a word as
// words.Stem leaves it, and how many passages there are: the lexical index's document frequency,
// summed over the books. The offline answer writer weighs a question's words by it
// (offline.Vocabulary). A library that cannot be read counts as empty.
func (x *index) Frequency(stem string) (passages, total int) {
	v, err := x.view(context.Background())
	if err != nil || v.n == 0 {
		return 0, 0
	}
	_, df := v.term(stem)
	return df, v.n
}
