package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/caprag/caprag/rag"
	"github.com/caprag/caprag/store"
)

// runBooks lists the ingested books or removes one.
func runBooks(ctx context.Context, a *app, args []string) error {
	fs := flag.NewFlagSet("books", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON")
	rest, err := a.parseFlags(fs, args)
	if err != nil {
		return err
	}
	s, err := a.openStore(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	if len(rest) > 0 {
		if rest[0] != "rm" || len(rest) != 2 {
			return usagef("unexpected %q", strings.Join(rest, " "))
		}
		if err := s.RemoveBook(ctx, rest[1]); err != nil {
			if errors.Is(err, store.ErrNoBook) {
				return fmt.Errorf("no book named %q (caprag books lists them)", rest[1])
			}
			return err
		}
		fmt.Fprintf(a.stdout, "removed %s\n", rest[1])
		return nil
	}
	books, err := s.Books(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		if books == nil {
			books = []rag.BookInfo{}
		}
		return writeJSON(a.stdout, books)
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
