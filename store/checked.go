package store

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// A checked file is a payload behind a header that holds its SHA-256 and length:
//
//	"caprag\x00\x01" (8 bytes) | SHA-256 of the payload (32 bytes) | payload length (8 bytes, big endian) | payload
//
// It is written to a temporary file in the same folder, synced, and renamed over the old one,
// so a reader sees the old file or the new one, never half of one; and it is verified before a
// byte of the payload is used, so a damaged file is named instead of served. Any on-disk format
// can sit inside it.

var checkedMagic = []byte("caprag\x00\x01")

const checkedHeader = 8 + sha256.Size + 8

// ErrNotChecked is returned by OpenChecked for a file written before checked files existed.
var ErrNotChecked = errors.New("not a checked file")

// DamagedError says a store file failed its check: which file, why, and what to run.
type DamagedError struct {
	Path   string
	Reason string
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("the book store file %s is damaged (%s): remove it and run `caprag ingest` with your books again", e.Path, e.Reason)
}

// tempPrefix is how the temporary files of a checked file at path begin.
func tempPrefix(path string) string { return "." + filepath.Base(path) + ".tmp-" }

// WriteChecked replaces the file at path with what write writes, atomically: a temporary file
// beside it, the header filled in once the payload is written, fsync, rename, fsync of the
// folder.
func WriteChecked(path string, write func(io.Writer) error) (sum string, err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, tempPrefix(path)+"*")
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(make([]byte, checkedHeader)); err != nil {
		return "", err
	}
	h := sha256.New()
	bw := bufio.NewWriterSize(tmp, 1<<20)
	cw := &countWriter{w: io.MultiWriter(bw, h)}
	if err := write(cw); err != nil {
		return "", err
	}
	if err := bw.Flush(); err != nil {
		return "", err
	}
	header := append(append([]byte{}, checkedMagic...), h.Sum(nil)...)
	header = binary.BigEndian.AppendUint64(header, uint64(cw.n))
	if _, err := tmp.WriteAt(header, 0); err != nil {
		return "", err
	}
	if err := tmp.Sync(); err != nil {
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", err
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // the rename itself survives a power cut
		d.Close()
	}
	return hex.EncodeToString(header[len(checkedMagic) : len(checkedMagic)+sha256.Size]), nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// OpenChecked opens a checked file after verifying its whole payload against the header:
// a *DamagedError names the file when it does not match or is cut short; ErrNotChecked when the
// file has no header (an older format). The reader returns the payload; sum identifies it.
func OpenChecked(path string) (r io.ReadCloser, sum string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, "", err
	}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	header := make([]byte, checkedHeader)
	n, err := io.ReadFull(f, header)
	if !bytes.HasPrefix(header[:n], checkedMagic) {
		return nil, "", ErrNotChecked
	}
	if err != nil {
		return nil, "", &DamagedError{Path: path, Reason: "cut short inside its header"}
	}
	want := header[len(checkedMagic) : len(checkedMagic)+sha256.Size]
	size := int64(binary.BigEndian.Uint64(header[len(checkedMagic)+sha256.Size:]))
	if err := verify(f, sha256.New(), size, want); err != nil {
		return nil, "", &DamagedError{Path: path, Reason: err.Error()}
	}
	if _, err := f.Seek(checkedHeader, io.SeekStart); err != nil {
		return nil, "", err
	}
	return struct {
		io.Reader
		io.Closer
	}{io.LimitReader(f, size), f}, hex.EncodeToString(want), nil
}

// verify hashes the rest of f and compares it with want and size.
func verify(f io.Reader, h hash.Hash, size int64, want []byte) error {
	n, err := io.Copy(h, f)
	switch {
	case err != nil:
		return fmt.Errorf("reading it failed: %w", err)
	case n < size:
		return fmt.Errorf("cut short: %d of %d bytes", n, size)
	case n > size:
		return fmt.Errorf("%d bytes more than its header says", n-size)
	case !bytes.Equal(h.Sum(nil), want):
		return errors.New("its checksum does not match its content")
	}
	return nil
}

// CheckedSum returns the sum in a checked file's header without verifying the payload ("" when
// the file does not exist or has no header): a cheap way to tell whether another process has
// replaced the file since it was read.
func CheckedSum(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	header := make([]byte, checkedHeader)
	if _, err := io.ReadFull(f, header); err != nil || !bytes.HasPrefix(header, checkedMagic) {
		if info, err := f.Stat(); err == nil {
			return fmt.Sprintf("unchecked:%d:%d", info.Size(), info.ModTime().UnixNano())
		}
		return ""
	}
	return hex.EncodeToString(header[len(checkedMagic) : len(checkedMagic)+sha256.Size])
}

// CleanTemps removes the temporary files that writes of the checked file at path left behind
// when their process was killed. Call it only while holding the writer lock: then no write is
// under way. extra are older temporary-name prefixes to clean as well.
func CleanTemps(path string, extra ...string) (int, error) {
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return 0, nil
		}
		return 0, err
	}
	removed := 0
	for _, e := range entries {
		name := e.Name()
		match := strings.HasPrefix(name, tempPrefix(path))
		for _, p := range extra {
			match = match || strings.HasPrefix(name, p)
		}
		if !match || e.IsDir() {
			continue
		}
		if err := os.Remove(filepath.Join(filepath.Dir(path), name)); err == nil {
			removed++
		}
	}
	return removed, nil
}
