package rag_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caprag/caprag/rag"
)

// Compile-time contract: both strategies implement the one interface.
var (
	_ rag.Strategy = rag.MultiHop{}
	_ rag.Strategy = rag.MultiQuestion{}
)

func TestContract(t *testing.T) {
	c := newCorpus().add("q", doc("core", "Grappling", "grab"))
	for name, st := range map[string]rag.Strategy{
		"multi-hop":      rag.MultiHop{Retriever: c, Analyzer: &scriptedAnalyzer{}, MaxHops: 3, MaxQueries: 3},
		"multi-question": rag.MultiQuestion{Retriever: c, Expander: fixedExpander{"x"}, MaxQueries: 3},
	} {
		s, err := st.Execute(context.Background(), rag.State{Question: "q"})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(s.Questions) == 0 || len(s.Context()) == 0 || s.Questions[0].Text != "q" {
			t.Fatalf("%s: state %+v lacks a question with context", name, s)
		}
	}
}

func TestOriginalQuestionIncluded(t *testing.T) {
	for _, variants := range [][]string{{"variant one", "variant two"}, nil, {"Q"}} {
		c := newCorpus()
		st := rag.MultiQuestion{Retriever: c, Expander: fixedExpander(variants), MaxQueries: 4}
		s, err := st.Execute(context.Background(), rag.State{Question: "q"})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(c.searched(), "q") {
			t.Fatalf("variants %v: searched %v, not the original question", variants, c.searched())
		}
		if len(s.Hops) != 1 || s.Hops[0].Queries[0] != "q" {
			t.Fatalf("hops %+v", s.Hops)
		}
		if n := len(c.searched()); n != len(s.Hops[0].Queries) {
			t.Fatalf("searched %d, hop lists %d queries", n, len(s.Hops[0].Queries))
		}
	}
}

func TestSingleHopWhenSufficient(t *testing.T) {
	c := newCorpus().add("what does magery 3 cost", doc("basic", "Magery", "Magery costs 35 points at level 3."))
	a := &scriptedAnalyzer{}
	s, err := rag.MultiHop{Retriever: c, Analyzer: a, MaxHops: 3, MaxQueries: 3}.Execute(context.Background(), rag.State{Question: "What does Magery 3 cost"})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Hops) != 1 || !s.Hops[0].Sufficient || a.calls != 1 || c.calls.Load() != 1 {
		t.Fatalf("hops %+v, analyzer calls %d, searches %d; want one sufficient hop", s.Hops, a.calls, c.calls.Load())
	}
}

func TestSeveralHopsForCrossBookRules(t *testing.T) {
	see := rag.Reference{Kind: rag.RefSee, Text: "see Rapid Strike", Target: "Rapid Strike"}
	c := newCorpus().
		add("how does trained by a master interact with combat", doc("Basic Set", "Trained by a Master", "Halves the Rapid Strike penalty.", see)).
		add("rapid strike", doc("Martial Arts", "Rapid Strike", "Attack twice at -6."))
	a := &scriptedAnalyzer{decisions: []rag.Analysis{{NewQueries: []string{"Rapid Strike"}, Following: []string{"Rapid Strike"}}}}
	var events []rag.Progress
	var mu sync.Mutex
	progress := func(_ context.Context, p rag.Progress) {
		mu.Lock()
		events = append(events, p)
		mu.Unlock()
	}
	s, err := rag.MultiHop{Retriever: c, Resolver: c, Analyzer: a, MaxHops: 3, MaxQueries: 3}.Execute(context.Background(), rag.State{Question: "How does Trained by a Master interact with combat", Progress: progress})
	if err != nil {
		t.Fatal(err)
	}
	books := map[string]bool{}
	for _, d := range s.Context() {
		books[d.Book] = true
	}
	if len(s.Hops) != 2 || !books["Basic Set"] || !books["Martial Arts"] {
		t.Fatalf("hops %+v, books %v; want 2 hops over both books", s.Hops, books)
	}
	if h := a.inputs[0].Hints(); len(h) != 1 || h[0].Target != "Rapid Strike" {
		t.Fatalf("analyzer hints %+v, want the unresolved Rapid Strike link", h)
	}
	if d := a.inputs[1].Documents; len(d) != 2 || d[1].Book != "Martial Arts" || d[1].Hop != 2 || d[0].Hop != 1 || len(d[0].Hints) != 0 {
		t.Fatalf("second analysis sees %+v, want Basic Set from hop 1 with its link resolved, Martial Arts from hop 2", d)
	}
	want := []rag.ProgressStage{rag.HopStarted, rag.HopFinished, rag.HopStarted, rag.HopFinished}
	if len(events) != 4 {
		t.Fatalf("events %+v", events)
	}
	for i, e := range events {
		if e.Stage != want[i] {
			t.Fatalf("event %d is %s, want %s", i, e.Stage, want[i])
		}
	}
	if events[2].Hop.N != 2 || !slices.Equal(events[2].Hop.Following, []string{"Rapid Strike"}) {
		t.Fatalf("hop 2 start %+v, want following Rapid Strike", events[2].Hop)
	}
	if events[3].Hop.New != 1 || !events[3].Hop.Sufficient {
		t.Fatalf("hop 2 end %+v", events[3].Hop)
	}
}

// The analyzer gets one fact sheet per passage: its best rank (a passage fetched because the
// question names it counts three places lower), the hop that found it, the names the question
// names it by, and its own unresolved references.
func TestAnalyzerSeesEachPassagesFacts(t *testing.T) {
	poisons := doc("Rules", "Poisons", "Malice (Inhaled). A creature is poisoned.")
	named := doc("Rules", "Poisons 2", "Torpor (Ingested). A creature is incapacitated.")
	c := titled{newCorpus().
		add("what does malice do to me", doc("Creatures", "Assassin", "Assassins use poisons (see Poisons).", rag.Reference{Kind: rag.RefSee, Text: "see Poisons", Target: "Poisons"}), poisons,
			doc("Rules", "Saving Throws", "Roll a d20.", rag.Reference{Kind: rag.RefSee, Text: "see Advantage", Target: "Advantage"})).
		add("malice", poisons).
		add("torpor", named), []string{"Malice", "Torpor"}}
	a := &scriptedAnalyzer{}
	_, err := rag.MultiHop{Retriever: c, Resolver: c, Analyzer: a, MaxHops: 2, MaxQueries: 3}.Execute(context.Background(), rag.State{Question: "What does malice do to me"})
	if err != nil {
		t.Fatal(err)
	}
	type fact struct {
		section     string
		rank, hop   int
		named, hint string
	}
	var got []fact
	for _, d := range a.inputs[0].Documents {
		f := fact{section: d.Section, rank: d.Rank, hop: d.Hop, named: strings.Join(d.Named, ",")}
		for _, h := range d.Hints {
			f.hint += h.Target
		}
		got = append(got, f)
	}
	want := []fact{
		{"Assassin", 0, 1, "", ""}, // its link to Poisons is resolved: Poisons is in the context
		{"Poisons", 1, 1, "Malice", ""},
		{"Saving Throws", 2, 1, "", "Advantage"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("analyzer facts\n got %+v\nwant %+v", got, want)
	}
	if names := a.inputs[0].Names(); !slices.Equal(names, []string{"Malice"}) {
		t.Errorf("Names() = %q", names)
	}
}

func TestHopCapWhenAnalyzerNeverSufficient(t *testing.T) {
	c := newCorpus().add("q", doc("b", "S", "text"))
	a := &neverSufficient{}
	s, err := rag.MultiHop{Retriever: c, Analyzer: a, MaxHops: 3, MaxQueries: 2}.Execute(context.Background(), rag.State{Question: "q"})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Hops) != 3 || s.Hops[2].Sufficient {
		t.Fatalf("hops %+v, want exactly 3, the last not sufficient", s.Hops)
	}
	if n := a.n.Load(); n != 2 {
		t.Errorf("the analyzer was asked %d times in 3 hops, want 2: after the last allowed hop its verdict could change nothing", n)
	}
	if len(s.Context()) == 0 {
		t.Fatal("no context to answer from after the cap")
	}
}

func TestDedupeAcrossHops(t *testing.T) {
	same := doc("core", "Grappled", "A grappled creature's speed becomes 0.")
	c := newCorpus().add("q", same, doc("core", "Grappling", "grab")).add("grappled", same)
	a := &scriptedAnalyzer{decisions: []rag.Analysis{{NewQueries: []string{"grappled"}}}}
	p, err := rag.NewPipeline(rag.PipelineOptions{Retriever: c, Models: rag.Models{Analyzer: a, Writer: &echoWriter{}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Run(context.Background(), rag.Request{Question: "q"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hops) != 2 || res.Hops[1].Found != 1 || res.Hops[1].New != 0 {
		t.Fatalf("hops %+v; want hop 2 to find the same passage again, nothing new", res.Hops)
	}
	if len(res.Sources) != 2 {
		t.Fatalf("sources %+v; want the repeated passage once", res.Sources)
	}
	// Same text in another book is another source.
	other := same
	other.Book = "house rules"
	c.add("grappled", other)
	a.decisions = []rag.Analysis{{NewQueries: []string{"grappled"}}}
	res, _ = p.Run(context.Background(), rag.Request{Question: "q", Strategy: rag.StrategyMultiHop, Books: []string{"x"}})
	if len(res.Sources) != 3 {
		t.Fatalf("sources %+v; the same text from another book must stay", res.Sources)
	}
}

func TestQueriesOfAHopRunInParallel(t *testing.T) {
	c := newCorpus()
	c.block = make(chan struct{})
	st := rag.MultiQuestion{Retriever: c, Expander: fixedExpander{"a", "b", "c"}, MaxQueries: 4}
	done := make(chan error, 1)
	go func() {
		_, err := st.Execute(context.Background(), rag.State{Question: "q"})
		done <- err
	}()
	deadline := time.After(10 * time.Second)
	for c.calls.Load() < 4 {
		select {
		case <-deadline:
			t.Fatalf("only %d of 4 searches started while the first were blocked: queries run one after another", c.calls.Load())
		case <-time.After(time.Millisecond):
		}
	}
	close(c.block)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestRetrieverErrorIsReported(t *testing.T) {
	c := newCorpus()
	c.err = errors.New("chroma is down")
	for _, st := range []rag.Strategy{rag.MultiHop{Retriever: c, MaxHops: 3}, rag.MultiQuestion{Retriever: c, MaxQueries: 1}} {
		_, err := st.Execute(context.Background(), rag.State{Question: "q"})
		if !errors.Is(err, c.err) {
			t.Fatalf("%T: err = %v, want the retriever's error wrapped", st, err)
		}
	}
}

func TestAnalyzerWantingNothingNewStops(t *testing.T) {
	c := newCorpus().add("q", doc("b", "S", "t"))
	a := &scriptedAnalyzer{decisions: []rag.Analysis{{Sufficient: false, NewQueries: []string{"q"}}}}
	s, err := rag.MultiHop{Retriever: c, Analyzer: a, MaxHops: 3, MaxQueries: 3}.Execute(context.Background(), rag.State{Question: "q"})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Hops) != 1 {
		t.Fatalf("hops %+v: an analyzer repeating a searched query must not cause another hop", s.Hops)
	}
}

// titled is a corpus that also finds the titles a question names.
type titled struct {
	*corpus
	titles []string
}

func (c titled) Mentions(_ context.Context, text string) ([]rag.Reference, error) {
	var out []rag.Reference
	for _, t := range c.titles {
		if strings.Contains(strings.ToLower(text), strings.ToLower(t)) {
			out = append(out, rag.Reference{Kind: rag.RefMention, Target: t, Text: t})
		}
	}
	return out, nil
}

func TestFirstHopFetchesTheRulesTheQuestionNames(t *testing.T) {
	c := titled{newCorpus().
		add("i'm concentrating on haste and take 22 damage", doc("spellcasting", "Concentration", "Taking damage: Constitution save.")).
		add("haste", doc("spells", "Haste", "Concentration, up to 1 minute. When the spell ends the target can't move.")), []string{"Haste", "Fireball"}}
	an := &scriptedAnalyzer{}
	s, err := rag.MultiHop{Retriever: c, Resolver: c, Analyzer: an, MaxHops: 3, MaxQueries: 3}.Execute(context.Background(), rag.State{Question: "I'm concentrating on haste and take 22 damage"})
	if err != nil {
		t.Fatal(err)
	}
	var sections []string
	for _, d := range s.Context() {
		sections = append(sections, d.Section)
	}
	if len(s.Hops) != 1 || !slices.Contains(sections, "Haste") || !slices.Contains(sections, "Concentration") {
		t.Fatalf("hops %d, context %v; want Haste fetched in hop 1 beside the search", len(s.Hops), sections)
	}
	if len(an.inputs) != 1 || !slices.Equal(an.inputs[0].Names(), []string{"Haste"}) {
		t.Errorf("the analyzer is not told which rules the question names: %+v", an.inputs)
	}
}

// The first hop of multi-hop searches the expander's queries beside the question, as
// multi-question does; at most MaxQueries in all.
func TestMultiHopStartsFromTheExpandedQuestion(t *testing.T) {
	c := newCorpus().
		add("I grab the cultist", doc("Monsters", "Cultist", "A zealot.")).
		add("grab", doc("Rules", "Grappling", "When you want to grab a creature…")).
		add("cultist", doc("Monsters", "Cultist", "A zealot."))
	s, err := rag.MultiHop{Retriever: c, Expander: fixedExpander{"grab", "cultist", "a third"}, Analyzer: &scriptedAnalyzer{}, MaxHops: 3, MaxQueries: 3}.Execute(context.Background(), rag.State{Question: "I grab the cultist"})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Hops) != 1 || !slices.Equal(s.Hops[0].Queries, []string{"I grab the cultist", "grab", "cultist"}) {
		t.Fatalf("hops %+v, want one hop searching the question and two expansions", s.Hops)
	}
	var sections []string
	for _, d := range s.Context() {
		sections = append(sections, d.Section)
	}
	if !slices.Equal(sections, []string{"Cultist", "Grappling"}) {
		t.Errorf("context %q, want the cultist once and the grappling rule", sections)
	}
}

// A later hop resolves a name the analyzer asks for through the link of that name (every
// passage the books define by it, by ID), else through the section of that name, and searches
// only what resolves to nothing.
func TestFollowResolvesLinksByIDThenByName(t *testing.T) {
	conds := doc("Conditions", "Teamwork", "Combine skills.")
	robo := doc("Robo", "Teamwork", "Invent together.")
	c := newCorpus().
		add("how do we invent together", doc("Robo", "Invention", "Use the teamwork rules.",
			rag.Reference{Kind: rag.RefMention, Target: "Teamwork", Book: "Conditions", ID: conds.ID},
			rag.Reference{Kind: rag.RefMention, Target: "Teamwork", Book: "Robo", ID: robo.ID})).
		add("Fate Fractal", doc("Core", "The Fate Fractal", "Anything is a character.")).
		add("dice", doc("Core", "Dice", "Roll four."))
	byID := &idResolver{corpus: c, byID: map[string]rag.Document{conds.ID: conds, robo.ID: robo}}
	a := &scriptedAnalyzer{decisions: []rag.Analysis{{NewQueries: []string{"Teamwork", "Fate Fractal", "dice"}}}}
	s, err := rag.MultiHop{Retriever: c, Resolver: byID, Analyzer: a, MaxHops: 2, MaxQueries: 3}.Execute(context.Background(), rag.State{Question: "How do we invent together"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, q := range s.Questions[1:] {
		for _, d := range q.Documents {
			got = append(got, q.Text+"→"+d.Book+"/"+d.Section)
		}
	}
	want := []string{"Teamwork→Conditions/Teamwork", "Teamwork→Robo/Teamwork", "Fate Fractal→Core/The Fate Fractal", "dice→Core/Dice"}
	if !slices.Equal(got, want) {
		t.Errorf("hop 2 found %q, want %q", got, want)
	}
	if byID.names != 1 {
		t.Errorf("%d names resolved by name, want 1 (Fate Fractal; dice is searched)", byID.names)
	}
}

// idResolver resolves a reference with an ID to that document, else by name through the corpus
// (the name "dice" names no section: it resolves to nothing and is searched).
type idResolver struct {
	*corpus
	byID  map[string]rag.Document
	names int
}

func (r *idResolver) Resolve(ctx context.Context, from rag.Document, ref rag.Reference, opts rag.SearchOptions) ([]rag.Document, error) {
	if d, ok := r.byID[ref.ID]; ok {
		return []rag.Document{d}, nil
	}
	if ref.Target == "dice" {
		return nil, nil
	}
	r.names++
	return r.corpus.Resolve(ctx, from, ref, opts)
}

// A reference that names the passage it resolves to stays unresolved until that passage is in
// the context, whatever sections the context holds; two references to two passages of one name
// are both wanted.
func TestUnresolvedByID(t *testing.T) {
	from := doc("Robo", "Invention", "…", rag.Reference{Kind: rag.RefMention, Target: "Teamwork", ID: "core/teamwork"}, rag.Reference{Kind: rag.RefMention, Target: "Teamwork", ID: "robo/teamwork"})
	other := rag.Document{ID: "robo/teamwork", Book: "Robo", Section: "Teamwork"}
	hs := rag.Unresolved([]rag.Document{from, other})
	if len(hs) != 1 || hs[0].Ref.ID != "core/teamwork" {
		t.Fatalf("unresolved %+v, want the other book's Teamwork only", hs)
	}
}

// kCorpus is a corpus whose searches return at most opts.K documents.
type kCorpus struct{ *corpus }

func (c kCorpus) Retrieve(ctx context.Context, q string, opts rag.SearchOptions) ([]rag.Document, error) {
	docs, err := c.corpus.Retrieve(ctx, q, opts)
	if opts.K > 0 && len(docs) > opts.K {
		docs = docs[:opts.K]
	}
	return docs, err
}

// sectionAnalyzer is a scripted analyzer that reads AnalyzeInput.Sections.
type sectionAnalyzer struct {
	scriptedAnalyzer
	n int
}

func (a *sectionAnalyzer) Sections() int { return a.n }

// TestAnalyzerIsShownTheSectionsItMayName: an analyzer that names missing rules by title is
// shown the titles of sections outside the context — the passages' unresolved cross-references
// first (page references left out), then what a wider search of the question finds, without
// the context's own titles, each once, at most as many as it wants — and a title
// it names is fetched as that section. An analyzer that does not read them costs no search.
func TestAnalyzerIsShownTheSectionsItMayName(t *testing.T) {
	const q = "Can my corvette ram a freighter at full thrust?"
	ramming := doc("Starfall", "Ship Combat > Ramming", "A ship that rams takes hull damage (see Hull Damage, page 12).",
		rag.Reference{Kind: rag.RefSee, Text: "see Hull Damage", Target: "Hull Damage"}, rag.Reference{Kind: rag.RefPage, Text: "page 12", Target: "12"})
	thrust := doc("Starfall", "Movement > Full Thrust", "At full thrust a ship moves twice its speed.")
	evasive := doc("Starfall", "Ship Combat > Evasive Maneuvers", "A pilot may roll Piloting to avoid a ram.")
	c := kCorpus{newCorpus().
		add(q, ramming, thrust, doc("Smugglers Guide", "Ships > Ramming", "Smugglers never ram."), evasive,
			doc("Starfall", "Ships > Freighters", "Freighters are slow."), doc("Starfall", "Ships > Corvettes", "Corvettes are fast."),
			doc("Starfall", "Movement > Docking", "Docking takes a turn.")).
		add("ram freighter", ramming, doc("Starfall", "Ship Combat > Boarding", "Boarders cross after a ram."), evasive).
		add("evasive maneuvers", evasive)}
	a := &sectionAnalyzer{n: 6, scriptedAnalyzer: scriptedAnalyzer{decisions: []rag.Analysis{{NewQueries: []string{"Evasive Maneuvers"}}}}}
	s, err := rag.MultiHop{Retriever: c, Resolver: c, Expander: fixedExpander{"ram freighter"}, Analyzer: a, TopK: 2, MaxHops: 2, MaxQueries: 3}.Execute(context.Background(), rag.State{Question: q})
	if err != nil {
		t.Fatal(err)
	}
	// The wider search of the question reads the 5 titles still wanted: Ramming of another
	// book is the context's title; Corvettes ranks beyond; Boarding (in the context, found by
	// the expanded query) is not shown.
	want := []string{"Hull Damage", "Evasive Maneuvers", "Freighters"}
	if got := a.inputs[0].Sections; !slices.Equal(got, want) {
		t.Errorf("sections shown\n got %q\nwant %q", got, want)
	}
	if !slices.ContainsFunc(s.Context(), func(d rag.Document) bool { return d.Section == evasive.Section }) {
		t.Errorf("the section named by its title was not fetched: %+v", s.Context())
	}

	one := &sectionAnalyzer{n: 1}
	if _, err := (rag.MultiHop{Retriever: c, Resolver: c, Analyzer: one, TopK: 2, MaxHops: 2}).Execute(context.Background(), rag.State{Question: q}); err != nil {
		t.Fatal(err)
	}
	if got := one.inputs[0].Sections; !slices.Equal(got, []string{"Hull Damage"}) {
		t.Errorf("one section wanted, shown %q", got)
	}

	plain := &scriptedAnalyzer{}
	c2 := kCorpus{newCorpus().add(q, ramming, thrust, evasive)}
	if _, err := (rag.MultiHop{Retriever: c2, Resolver: c2, Analyzer: plain, TopK: 2, MaxHops: 2}).Execute(context.Background(), rag.State{Question: q}); err != nil {
		t.Fatal(err)
	}
	if plain.inputs[0].Sections != nil || len(c2.searched()) != 1 {
		t.Errorf("an analyzer that does not read sections got %q after searches %q", plain.inputs[0].Sections, c2.searched())
	}
}

// tocCorpus is a corpus that lists a table of contents, and records the book filter it is
// asked with.
type tocCorpus struct {
	kCorpus
	toc   []rag.Heading
	books *[]string
}

func (c tocCorpus) Contents(_ context.Context, opts rag.SearchOptions) ([]rag.Heading, error) {
	*c.books = opts.Books
	return c.toc, nil
}

// An analyzer that names rules by title is shown the books' table of contents when the
// retriever lists one (of the books the question is limited to); one that does not read
// titles is not.
func TestAnalyzerIsShownTheTableOfContents(t *testing.T) {
	const q = "Can my corvette ram a freighter at full thrust?"
	ramming := doc("Starfall", "Ship Combat > Ramming", "A ship that rams takes hull damage.")
	toc := []rag.Heading{{Book: "Starfall", Section: "Ship Combat > Ramming"}, {Book: "Starfall", Section: "Ship Combat > Hull Damage"}}
	var books []string
	c := tocCorpus{kCorpus{newCorpus().add(q, ramming)}, toc, &books}
	a := &sectionAnalyzer{n: 5}
	if _, err := (rag.MultiHop{Retriever: c, Resolver: c, Analyzer: a, TopK: 2, MaxHops: 2}).Execute(context.Background(), rag.State{Question: q, Books: []string{"Starfall"}}); err != nil {
		t.Fatal(err)
	}
	if got := a.inputs[0].Contents; !slices.Equal(got, toc) || !slices.Equal(books, []string{"Starfall"}) {
		t.Errorf("contents shown %v (books %q), want %v of Starfall", got, books, toc)
	}
	plain := &scriptedAnalyzer{}
	if _, err := (rag.MultiHop{Retriever: c, Resolver: c, Analyzer: plain, TopK: 2, MaxHops: 2}).Execute(context.Background(), rag.State{Question: q}); err != nil {
		t.Fatal(err)
	}
	if plain.inputs[0].Contents != nil {
		t.Errorf("an analyzer that does not read titles was shown the contents")
	}
}

// tocExpander is an expander that reads the table of contents: it names the last title listed.
type tocExpander struct{ got []rag.Heading }

func (e *tocExpander) Expand(context.Context, string, int) ([]string, error) {
	return nil, errors.New("the table of contents was not given")
}

func (e *tocExpander) ExpandWithContents(_ context.Context, _ string, _ int, toc []rag.Heading, _ []rag.Document) ([]string, error) {
	e.got = toc
	last := toc[len(toc)-1].Section
	return []string{last[strings.LastIndex(last, " > ")+3:]}, nil
}

// An expander that reads the books' table of contents is given the retriever's, in both
// strategies, and its queries are searched in the first hop.
func TestExpanderIsShownTheTableOfContents(t *testing.T) {
	const q = "Can my corvette ram a freighter at full thrust?"
	hull := doc("Starfall", "Ship Combat > Hull Damage", "Hull damage slows a ship.")
	toc := []rag.Heading{{Book: "Starfall", Section: "Ship Combat > Ramming"}, {Book: "Starfall", Section: "Ship Combat > Hull Damage"}}
	var books []string
	c := tocCorpus{kCorpus{newCorpus().add(q, doc("Starfall", "Ship Combat > Ramming", "A ship that rams takes damage.")).add("Hull Damage", hull)}, toc, &books}
	for _, st := range []rag.Strategy{
		rag.MultiQuestion{Retriever: c, Expander: &tocExpander{}, TopK: 2, MaxQueries: 3},
		rag.MultiHop{Retriever: c, Resolver: c, Expander: &tocExpander{}, Analyzer: &scriptedAnalyzer{}, TopK: 2, MaxHops: 1, MaxQueries: 3},
	} {
		before := len(c.searched())
		s, err := st.Execute(context.Background(), rag.State{Question: q, Books: []string{"Starfall"}})
		if n := slices.Index(c.searched()[before:], q); n < 0 || slices.Contains(c.searched()[before+n+1:], q) {
			t.Errorf("%T: the question searched %q, want once (its results are given to the expander and kept for the hop)", st, c.searched()[before:])
		}
		if err != nil {
			t.Fatalf("%T: %v", st, err)
		}
		if !slices.Equal(books, []string{"Starfall"}) || !slices.ContainsFunc(s.Context(), func(d rag.Document) bool { return d.Section == hull.Section }) {
			t.Errorf("%T: the expander's title from the table of contents was not searched (books %q): %+v", st, books, s.Context())
		}
	}
}
