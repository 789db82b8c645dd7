package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"
)

// Errors of the text loaders, wrapped with the file name.
var (
	ErrBinary   = errors.New("binary data, not text (is it really a Markdown or text file?)")
	ErrEncoding = errors.New("the text is neither UTF-8 nor Windows-1252/Latin-1; save it as UTF-8 and ingest it again")
)

// decodeText returns the text of a Markdown or plain-text file as UTF-8, and a note when it was
// decoded from another encoding. UTF-8 is taken as it is (a byte-order mark dropped); UTF-16
// with a byte-order mark is decoded; other bytes are read as Windows-1252, which is Latin-1 for
// every printable character, so "épée" is found again. Binary data — NUL bytes, or more than one
// control character in a hundred — is refused with ErrBinary, and bytes Windows-1252 leaves
// undefined with ErrEncoding.
func decodeText(data []byte) (string, string, error) {
	switch {
	case bytes.HasPrefix(data, []byte{0xEF, 0xBB, 0xBF}):
		data = data[3:]
	case bytes.HasPrefix(data, []byte{0xFF, 0xFE}), bytes.HasPrefix(data, []byte{0xFE, 0xFF}):
		out, err := unicode.UTF16(unicode.BigEndian, unicode.ExpectBOM).NewDecoder().Bytes(data)
		if err != nil {
			return "", "", fmt.Errorf("%w: %w", ErrEncoding, err)
		}
		if err := checkControls(out); err != nil {
			return "", "", err
		}
		return string(out), "read as UTF-16", nil
	}
	if err := checkControls(data); err != nil {
		return "", "", err
	}
	if utf8.Valid(data) {
		return string(data), "", nil
	}
	for _, b := range data {
		if b == 0x81 || b == 0x8D || b == 0x8F || b == 0x90 || b == 0x9D { // undefined in Windows-1252
			return "", "", ErrEncoding
		}
	}
	out, err := charmap.Windows1252.NewDecoder().Bytes(data)
	if err != nil {
		return "", "", fmt.Errorf("%w: %w", ErrEncoding, err)
	}
	return string(out), "not UTF-8: read as Windows-1252 (Latin-1)", nil
}

// checkControls refuses binary data: a NUL byte, or more than one control character in a
// hundred bytes (tab, line breaks, form feed and escape excepted).
func checkControls(data []byte) error {
	controls := 0
	for _, b := range data {
		switch {
		case b == 0:
			return ErrBinary
		case b < 0x20 && b != '\t' && b != '\n' && b != '\r' && b != '\f' && b != 0x1B, b == 0x7F:
			controls++
		}
	}
	if controls > 0 && controls*100 > len(data) {
		return ErrBinary
	}
	return nil
}
