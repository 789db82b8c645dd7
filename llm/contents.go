package llm

import (
	"strings"
	"sync"

	heading "github.com/caprag/caprag/passage"
	"github.com/caprag/caprag/rag"
	"github.com/caprag/caprag/words"
)

// The table of contents shown to the analyzer (rag.AnalyzeInput.Contents): it takes the room
// the rest of the prompt leaves, at most a contentsShare-th of the window; without a window,
// at most maxContents titles.
const (
	contentsShare = 4
	maxContents   = 2000
)

// contentsHeader introduces the table of contents in the expander's and the analyzer's
// requests. The analyzer's queries that are titles fetch those sections; the expander's are
// searched, which ranks a section's own title among the first five for 99% of the SRD's and
// the Fate books' titles (first for 88–89%).
const contentsHeader = "Table of contents of the books (a query that is a section's title as listed here finds that section; a title several sections share is written with the heading above it, \"Parent > Title\"):\n"

// chapter is a line of the table of contents: a book's top heading and the titles under it.
type chapter struct {
	key     string // book + "\x00" + top heading
	head    string // "- [book] Top heading", neutralised
	title   string
	section bool     // the top heading is a section of its own (a title to name)
	names   []string // the titles under it, as a model names them
	shown   []string // the same, neutralised
	cost    []int    // the tokens each adds to the line ("; " + title)
}

// contents is a table of contents prepared for prompts: it is the same for every question on
// the same books, so it is prepared once (tocCache).
type contents struct {
	chapters []*chapter
	byKey    map[string]*chapter
	titles   int
	tokens   int // all of it, as render counts

	// all is the whole table rendered, once: it is the same for every question.
	all struct {
		once  sync.Once
		block string
		names []string
	}
}

// tocCache keeps the tables of contents prepared last, by the list the store returned (the
// store lists a library's once per version of it).
var tocCache struct {
	sync.Mutex
	keys []tocKey
	vals []*contents
}

type tocKey struct {
	first *rag.Heading
	n     int
}

// tocCached is how many prepared tables of contents are kept (libraries asked about last).
const tocCached = 16

func prepared(toc []rag.Heading) *contents {
	k := tocKey{&toc[0], len(toc)}
	tocCache.Lock()
	defer tocCache.Unlock()
	for i, c := range tocCache.keys {
		if c == k {
			return tocCache.vals[i]
		}
	}
	c := prepare(toc)
	if len(tocCache.keys) == tocCached {
		tocCache.keys, tocCache.vals = tocCache.keys[1:], tocCache.vals[1:]
	}
	tocCache.keys, tocCache.vals = append(tocCache.keys, k), append(tocCache.vals, c)
	return c
}

// prepare groups a table of contents by chapter; a title several sections share is written
// with the heading above it ("Ghast > Actions").
func prepare(toc []rag.Heading) *contents {
	shared := map[string]int{}
	for _, h := range toc {
		shared[words.Fold(heading.LastHeading(h.Section))]++
	}
	c := &contents{byKey: map[string]*chapter{}}
	for _, h := range toc {
		top := heading.TopHeading(h.Section)
		k := h.Book + "\x00" + top
		ch := c.byKey[k]
		if ch == nil {
			ch = &chapter{key: k, head: "- [" + neutralize(oneLine(h.Book)) + "] " + neutralize(oneLine(top)), title: top}
			c.byKey[k] = ch
			c.chapters = append(c.chapters, ch)
		}
		c.titles++
		if h.Section == top {
			ch.section = true
			continue
		}
		name := heading.LastHeading(h.Section)
		if shared[words.Fold(name)] > 1 {
			heads := strings.Split(h.Section, " > ")
			name = strings.Join(heads[len(heads)-2:], " > ")
		}
		n := neutralize(oneLine(name))
		ch.names = append(ch.names, name)
		ch.shown = append(ch.shown, n)
		ch.cost = append(ch.cost, textTokens("; "+n))
	}
	c.tokens = textTokens(contentsHeader)
	for _, ch := range c.chapters {
		c.tokens += lineCost(ch)
		for _, k := range ch.cost {
			c.tokens += k
		}
	}
	return c
}

// lineCost is what a chapter's line costs before its titles.
func lineCost(ch *chapter) int { return textTokens(ch.head+":\n") + 1 }

// contentsBlock renders the books' table of contents in at most room tokens (room < 0: at most
// maxContents titles), and returns the titles it lets a model name and whether it is whole.
// When all of it fits it is written in reading order, the same for every question on the same
// books (a prefix providers can cache); when it does not, the chapters (a book's top heading)
// that hold the passages found come first, then the others in reading order, as many titles
// as fit (a long chapter's last titles are cut first).
func contentsBlock(toc []rag.Heading, docs []rag.DocFacts, room int) (string, []string, bool) {
	if len(toc) == 0 || room == 0 {
		return "", nil, false
	}
	c := prepared(toc)
	render := func(order []*chapter) (string, []string) {
		var b strings.Builder
		var shown []string
		b.WriteString(contentsHeader)
		used := textTokens(contentsHeader)
		for _, ch := range order {
			head := lineCost(ch)
			if room < 0 && len(shown) >= maxContents || room > 0 && used+head > room {
				break
			}
			used += head
			n := 0
			for n < len(ch.names) && (room > 0 && used+ch.cost[n] <= room || room < 0 && len(shown)+n+1 <= maxContents) {
				used += ch.cost[n]
				n++
			}
			b.WriteString(ch.head)
			if n > 0 {
				b.WriteString(": " + strings.Join(ch.shown[:n], "; "))
			}
			b.WriteString("\n")
			if ch.section {
				shown = append(shown, ch.title)
			}
			shown = append(shown, ch.names[:n]...)
		}
		return b.String(), shown
	}
	if room < 0 && c.titles <= maxContents || room > 0 && c.tokens <= room {
		c.all.once.Do(func() { c.all.block, c.all.names = render(c.chapters) })
		return c.all.block, c.all.names, true
	}
	// Not all of it fits: the chapters the passages are in first.
	var order []*chapter
	seen := map[*chapter]bool{}
	for _, d := range docs {
		if ch := c.byKey[d.Book+"\x00"+heading.TopHeading(d.Section)]; ch != nil && !seen[ch] {
			seen[ch] = true
			order = append(order, ch)
		}
	}
	for _, ch := range c.chapters {
		if !seen[ch] {
			order = append(order, ch)
		}
	}
	block, shown := render(order)
	return block, shown, false
}

// oneLine writes a heading on one line: a table of contents line holds a chapter's titles.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
