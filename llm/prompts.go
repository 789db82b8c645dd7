package llm

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/caprag/caprag/rag"
)

// Bounds that keep a prompt inside small models' context windows.
const (
	// maxPassageRunes bounds each passage's text in a prompt, and maxPassagesRunes all of them
	// together (about 10k tokens): with many passages each gets an equal share, at least
	// minPassageRunes.
	maxPassageRunes  = 4000
	maxPassagesRunes = 40000
	minPassageRunes  = 600
	// maxHints bounds the reference hints shown to the analyzer.
	maxHints = 40
	// maxTurns bounds the thread history shown; maxTurnRunes each earlier answer.
	maxTurns     = 6
	maxTurnRunes = 1500
)

const expandSystem = `You help players search their tabletop role-playing game rulebooks.
Rewrite the player's rules question into at most %d alternative search queries that together find every rule needed to answer it:
- use the game's own terms and likely section titles;
- split a question that asks several things into one query per thing;
- name the rules, conditions, spells or actions the answer depends on.
Do not repeat the question itself. Keep each query under 12 words, in the question's language.
Reply with JSON only, in this form: {"queries": ["first query", "second query"]}`

const analyzeSystem = `You judge whether passages from tabletop role-playing game rulebooks are enough to answer a player's rules question.
Read the question and the numbered passages found so far.
- If the passages contain every rule the answer needs, reply {"sufficient": true, "new_queries": []}.
- Otherwise reply {"sufficient": false, "new_queries": [...]} with at most %d short search queries that would find the missing rules, most important first. Missing rules are typically the targets of references in the passages ("see Rapid Strike", "p. B370", a condition, spell or action named but not explained), listed below as hints; follow only those the question needs.
Never repeat a query already searched. Keep each query under 12 words.
Reply with JSON only, in this form: {"sufficient": false, "new_queries": ["query"]}`

const writeSystem = `You answer rules questions for players at a tabletop role-playing game table, using only the numbered passages from their own rulebooks.
- Use only what the passages say; no outside knowledge of the game, even if you know it.
- Cite the passage behind every statement with its number in square brackets, like [1] or [2][3], matching the numbers given.
- If the passages do not answer the question, say plainly that the books do not cover it, then give what related rules they do contain, cited.
- Answer in the language of the question.
- Lead with the direct answer, then the details a player needs at the table. At most about 250 words; plain text, short paragraphs or a short list, no headings.`

const rewriteSystem = `You rewrite a follow-up question from a conversation about tabletop role-playing game rules into one standalone question that can be understood without the conversation.
Name explicitly what the follow-up refers to (rules, spells, abilities, characters). Keep the follow-up's language. Do not answer it.
Reply with the standalone question only.`

const retryPrompt = `That reply was not valid. Reply again with the JSON object only, in exactly this form: %s`

// expandPrompt is the expansion request for question.
func expandPrompt(question string, max int) []message {
	return []message{
		system(fmt.Sprintf(expandSystem, max)),
		user("Question: " + question),
	}
}

// analyzePrompt is the sufficiency request: the question, the numbered passages, the unresolved
// references of those passages and the queries already searched.
func analyzePrompt(in rag.AnalyzeInput, max int) []message {
	var b strings.Builder
	b.WriteString("Question: " + in.Question + "\n\n")
	docs := make([]rag.Document, len(in.Documents))
	for i, d := range in.Documents {
		docs[i] = d.Document
	}
	writePassages(&b, docs)
	if hints := in.Hints(); len(hints) > 0 {
		b.WriteString("\nUnresolved references in these passages (hints):\n")
		for i, h := range hints {
			if i == maxHints {
				fmt.Fprintf(&b, "- … and %d more\n", len(hints)-maxHints)
				break
			}
			b.WriteString("- " + hint(h) + "\n")
		}
	}
	if len(in.Asked) > 0 {
		b.WriteString("\nQueries already searched:\n")
		for _, q := range in.Asked {
			b.WriteString("- " + q + "\n")
		}
	}
	return []message{system(fmt.Sprintf(analyzeSystem, max)), user(strings.TrimRight(b.String(), "\n"))}
}

// hint renders a reference for the analyzer: `"see Rapid Strike" → Rapid Strike (Basic Set)`.
func hint(r rag.Reference) string {
	target := r.Target
	if r.Kind == rag.RefPage {
		target = "page " + target
	}
	s := strconv.Quote(r.Text) + " → " + target
	if r.Book != "" {
		s += " (" + r.Book + ")"
	}
	return s
}

// writePrompt is the answer request: the earlier turns of the thread, the numbered passages and
// the question.
func writePrompt(question string, docs []rag.Document, history []rag.Turn) []message {
	var b strings.Builder
	if len(history) > 0 {
		b.WriteString("Earlier in this conversation:\n")
		writeHistory(&b, history)
		b.WriteString("\n")
	}
	if len(docs) == 0 {
		b.WriteString("Passages: none were found.\n")
	} else {
		writePassages(&b, docs)
	}
	b.WriteString("\nQuestion: " + question)
	return []message{system(writeSystem), user(b.String())}
}

// rewritePrompt is the follow-up rewriting request.
func rewritePrompt(followUp string, history []rag.Turn) []message {
	var b strings.Builder
	b.WriteString("Conversation:\n")
	writeHistory(&b, history)
	b.WriteString("\nFollow-up question: " + followUp)
	return []message{system(rewriteSystem), user(b.String())}
}

// writePassages numbers the documents from 1, each with its book, section and page.
func writePassages(b *strings.Builder, docs []rag.Document) {
	b.WriteString("Passages:\n")
	limit := min(maxPassageRunes, max(minPassageRunes, maxPassagesRunes/max(1, len(docs))))
	for i, d := range docs {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(b, "[%d] %s", i+1, d.Book)
		if d.Section != "" {
			b.WriteString(" — " + d.Section)
		}
		if d.Page > 0 {
			fmt.Fprintf(b, ", p. %d", d.Page)
		}
		b.WriteString("\n" + truncate(strings.TrimSpace(d.Text), limit) + "\n")
	}
}

// writeHistory writes the last maxTurns turns, oldest first.
func writeHistory(b *strings.Builder, history []rag.Turn) {
	if len(history) > maxTurns {
		history = history[len(history)-maxTurns:]
	}
	for _, t := range history {
		b.WriteString("Q: " + strings.TrimSpace(t.Question) + "\n")
		b.WriteString("A: " + truncate(strings.TrimSpace(t.Answer), maxTurnRunes) + "\n")
	}
}

// truncate cuts s to at most n runes, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + " …"
}
