package offline

import (
	"context"
	"regexp"
	"strings"

	"github.com/caprag/caprag/rag"
)

// Rewriter makes a follow-up standalone by carrying over the earlier question's terms
// when the follow-up leans on it (pronouns, "what about", very short).
type Rewriter struct{}

var leaning = regexp.MustCompile(`(?i)^(and|but|what about|how about|also|then|so)\b|\b(it|its|that|this|they|them|those|he|she|him|her|there)\b`)

// Rewrite implements Rewriter.
func (Rewriter) Rewrite(_ context.Context, followUp string, history []rag.Turn) (string, error) {
	if len(history) == 0 {
		return followUp, nil
	}
	prev := history[len(history)-1].Question
	if len(strings.Fields(followUp)) > 12 && !leaning.MatchString(followUp) {
		return followUp, nil
	}
	return strings.TrimSpace(followUp) + " (about: " + strings.TrimSpace(prev) + ")", nil
}
