package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/caprag/caprag/ingest"
	"github.com/caprag/caprag/rag"
	"github.com/caprag/caprag/store"
)

// passageLister is the store's ability to list a book's passages in reading order.
type passageLister interface {
	Passages(ctx context.Context, book string) ([]ingest.Passage, error)
}

// runBooks lists the ingested books, removes one, or shows what was read from one.
func runBooks(ctx context.Context, a *app, args []string) error {
	fs := flag.NewFlagSet("books", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON")
	page := fs.Int("page", 0, "with show: only the passages cited on this page")
	server := fs.String("server", "", "the Discord server whose library to list or change (default: every library to list, the shared one to change)")
	rest, err := a.parseFlags(fs, args)
	if err != nil {
		return err
	}
	lib, err := library(*server)
	if err != nil {
		return err
	}
	if len(rest) > 0 && !(len(rest) == 2 && (rest[0] == "rm" || rest[0] == "show")) {
		return usagef("unexpected %q", strings.Join(rest, " "))
	}
	if *page != 0 && (len(rest) == 0 || rest[0] != "show") {
		return usagef("--page goes with show")
	}
	if len(rest) == 0 && *server == "" {
		return listLibraries(ctx, a, *asJSON)
	}
	s, err := a.openLibrary(ctx, lib, func(holder string) {
		fmt.Fprintf(a.stderr, "waiting: %s is changing the books (at most STORE_LOCK_TIMEOUT=%s)\n", holder, a.cfg.StoreLockTimeout)
	})
	if err != nil {
		return err
	}
	defer s.Close()
	if len(rest) > 0 && rest[0] == "rm" {
		if err := s.RemoveBook(ctx, rest[1]); err != nil {
			if errors.Is(err, store.ErrNoBook) {
				return fmt.Errorf("no book named %q (caprag books lists them)", rest[1])
			}
			return err
		}
		fmt.Fprintf(a.stdout, "removed %s\n", rest[1])
		return nil
	}
	if len(rest) > 0 && rest[0] == "show" {
		return showBook(ctx, a, s, rest[1], *page, *asJSON)
	}
	books, err := s.Books(ctx)
	if err != nil {
		return err
	}
	for i := range books {
		books[i].Library = lib
	}
	if *asJSON {
		if books == nil {
			books = []rag.BookInfo{}
		}
		return writeJSON(a.stdout, books)
	}
	if len(books) == 0 && lib != "" {
		fmt.Fprintf(a.stdout, "server %s has no books yet\n", lib)
		return nil
	}
	if len(books) == 0 {
		fmt.Fprintln(a.stdout, "no books ingested yet (caprag ingest PATH...); caprag ask answers from the built-in sample books meanwhile")
		return nil
	}
	for _, b := range books {
		fmt.Fprintf(a.stdout, "%-40s %6d passages\n", b.Name, b.Passages)
	}
	return nil
}

// listLibraries lists the books of every library: the shared one, then each server's.
func listLibraries(ctx context.Context, a *app, asJSON bool) error {
	servers, err := store.ListLibraries(ctx, a.cfg)
	if err != nil {
		return err
	}
	all := []rag.BookInfo{}
	for _, id := range append([]string{store.SharedLibrary}, servers...) {
		s, err := a.openLibrary(ctx, id, nil)
		if err != nil {
			return err
		}
		bs, err := s.Books(ctx)
		s.Close()
		if err != nil {
			return err
		}
		for _, b := range bs {
			b.Library = id
			all = append(all, b)
		}
	}
	if asJSON {
		return writeJSON(a.stdout, all)
	}
	if len(all) == 0 {
		fmt.Fprintln(a.stdout, "no books ingested yet (caprag ingest PATH...); caprag ask answers from the built-in sample books meanwhile")
		return nil
	}
	last := "-"
	for _, b := range all {
		if b.Library != last {
			if last != "-" {
				fmt.Fprintln(a.stdout)
			}
			if b.Library == "" {
				fmt.Fprintln(a.stdout, "shared library (every server):")
			} else {
				fmt.Fprintf(a.stdout, "server %s:\n", b.Library)
			}
			last = b.Library
		}
		fmt.Fprintf(a.stdout, "  %-38s %6d passages\n", b.Name, b.Passages)
	}
	return nil
}

type shownPassage struct {
	Position int    `json:"position"`
	Page     int    `json:"page"`
	Section  string `json:"section"`
	Text     string `json:"text"`
}

// showBook prints a book's passages in reading order — section, page and text — so that an
// admin can check what was read from a file (a PDF's words, sections and page numbers).
func showBook(ctx context.Context, a *app, s store.Store, book string, page int, asJSON bool) error {
	pl, ok := s.(passageLister)
	if !ok {
		return errors.New("this store cannot list a book's passages")
	}
	ps, err := pl.Passages(ctx, book)
	if errors.Is(err, store.ErrNoBook) {
		return fmt.Errorf("no book named %q (caprag books lists them)", book)
	}
	if err != nil {
		return err
	}
	shown := []shownPassage{}
	for _, p := range ps {
		if page == 0 || p.Page == page {
			shown = append(shown, shownPassage{Position: p.Position, Page: p.Page, Section: p.Section, Text: p.Text})
		}
	}
	if asJSON {
		name := book
		if len(ps) > 0 {
			name = ps[0].Book
		}
		return writeJSON(a.stdout, struct {
			Book     string         `json:"book"`
			Passages []shownPassage `json:"passages"`
		}{name, shown})
	}
	if len(shown) == 0 {
		fmt.Fprintf(a.stdout, "no passage of %s is cited on page %d\n", book, page)
		return nil
	}
	for _, p := range shown {
		where := p.Section
		if where == "" {
			where = "(no section)"
		}
		if p.Page > 0 {
			where = fmt.Sprintf("p. %d — %s", p.Page, where)
		}
		fmt.Fprintf(a.stdout, "[%d] %s\n%s\n\n", p.Position, where, p.Text)
	}
	return nil
}
