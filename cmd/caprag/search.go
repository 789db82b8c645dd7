package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/caprag/caprag/rag"
	"github.com/caprag/caprag/store"
)

type searchResult struct {
	Book    string  `json:"book"`
	Page    int     `json:"page"`
	Section string  `json:"section"`
	Score   float64 `json:"score"`
	Text    string  `json:"text"`
}

// runSearch prints the passages that best match a query.
func runSearch(ctx context.Context, a *app, args []string) error {
	fs := flag.NewFlagSet("search", flag.ContinueOnError)
	book := fs.String("book", "", "search only this book")
	k := fs.Int("k", a.cfg.TopK, "number of results")
	asJSON := fs.Bool("json", false, "print JSON")
	server := fs.String("server", "", "search as in this Discord server: its books and the shared ones")
	rest, err := a.parseFlags(fs, args)
	if err != nil {
		return err
	}
	lib, err := library(*server)
	if err != nil {
		return err
	}
	query := strings.TrimSpace(strings.Join(rest, " "))
	if query == "" {
		return usagef("give a query")
	}
	if *k < 1 || *k > 100 {
		return usagef("-k must be between 1 and 100")
	}
	var s interface {
		rag.Retriever
		rag.Library
	}
	if lib == "" {
		books, _, err := a.openBooks(ctx)
		if err != nil {
			return err
		}
		defer books.Close()
		s = books
	} else {
		libs, err := a.openLibraries(ctx, nil)
		if err != nil {
			return err
		}
		defer libs.Close()
		sc, err := libs.Scope(ctx, lib)
		if err != nil {
			return err
		}
		s = sc.(*store.Scope)
	}
	opts := rag.SearchOptions{K: *k, NoRefs: true} // listed without their references
	if *book != "" {
		if err := knownBook(ctx, s, *book); err != nil {
			return err
		}
		opts.Books = []string{*book}
	}
	docs, err := s.Retrieve(ctx, query, opts)
	if err != nil {
		return err
	}
	results := make([]searchResult, len(docs))
	for i, d := range docs {
		results[i] = searchResult{Book: d.Book, Page: d.Page, Section: d.Section, Score: d.Score, Text: d.Match}
	}
	if *asJSON {
		return writeJSON(a.stdout, struct {
			Query   string         `json:"query"`
			Results []searchResult `json:"results"`
		}{query, results})
	}
	if len(results) == 0 {
		fmt.Fprintln(a.stdout, "no passage matches")
	}
	for i, r := range results {
		fmt.Fprintf(a.stdout, "%d. %s — %s  (score %.4f)\n   %s\n", i+1, cite(r.Book, r.Page), r.Section, r.Score, shortText(r.Text, 160))
	}
	return nil
}
