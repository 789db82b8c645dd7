package leslice

import "encoding/binary"

// Encoder appends what the store's files hold around their arrays: unsigned varints,
// length-prefixed strings, and padding before an array.
type Encoder struct{ B []byte }

func (e *Encoder) Uvarint(v uint64) { e.B = binary.AppendUvarint(e.B, v) }
func (e *Encoder) Str(s string)     { e.Uvarint(uint64(len(s))); e.B = append(e.B, s...) }

func (e *Encoder) Bool(v bool) {
	if v {
		e.Uvarint(1)
	} else {
		e.Uvarint(0)
	}
}

// Align pads to a multiple of n bytes, where an array of n-byte elements starts.
func (e *Encoder) Align(n int) {
	for len(e.B)%n != 0 {
		e.B = append(e.B, 0)
	}
}

// Decoder reads what Encoder wrote. It panics on malformed input: its callers recover and
// report the file damaged.
type Decoder struct {
	B   []byte
	Off int
}

func (d *Decoder) Uvarint() uint64 {
	v, n := binary.Uvarint(d.B[d.Off:])
	if n <= 0 {
		panic("bad varint")
	}
	d.Off += n
	return v
}

// Count reads a number of items each taking at least min bytes, refusing one that the bytes
// left cannot hold (a damaged count must not allocate without bound).
func (d *Decoder) Count(min int) int {
	n := d.Uvarint()
	if min > 0 && n > uint64(len(d.B)-d.Off)/uint64(min) || n > uint64(len(d.B)) {
		panic("a count larger than the bytes left")
	}
	return int(n)
}

// Index reads an index below n.
func (d *Decoder) Index(n int) int {
	v := d.Uvarint()
	if v >= uint64(n) {
		panic("an index out of range")
	}
	return int(v)
}

// Bytes returns the next n bytes, shared with the decoder's input.
func (d *Decoder) Bytes(n int) []byte {
	if n < 0 || n > len(d.B)-d.Off {
		panic("length past the end")
	}
	b := d.B[d.Off : d.Off+n : d.Off+n]
	d.Off += n
	return b
}

// Str returns a string that shares the decoder's input (which is never written again).
func (d *Decoder) Str() string { return String(d.Bytes(int(d.Uvarint()))) }

// Align skips the padding Encoder.Align(n) wrote.
func (d *Decoder) Align(n int) {
	for d.Off%n != 0 {
		d.Bytes(1)
	}
}
