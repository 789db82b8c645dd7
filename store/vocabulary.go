package store

// Frequency returns how many passages (child chunks) of the books hold the stem, a word as
// words.Stem leaves it, and how many passages there are: the lexical index's document frequency.
// The offline answer writer weighs a question's words by it (offline.Vocabulary).
func (x *index) Frequency(stem string) (passages, total int) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.lex == nil {
		return 0, 0
	}
	return len(x.lex.postings[stem]), len(x.lex.lengths)
}
