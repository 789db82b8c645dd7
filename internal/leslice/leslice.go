// Package leslice views the little-endian arrays of an encoded file as Go slices: in place when
// the machine is little-endian (all that Go runs caprag on in practice) and the bytes are aligned
// for the element, else copied. The files of the store (segments, their lexicon parts) keep
// their fixed-width arrays this way, so reading them decodes nothing; Encoder and Decoder write
// and read the varints, strings and padding around them.
package leslice

import (
	"encoding/binary"
	"unsafe"
)

// littleEndian reports whether the machine stores integers as the files do.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

func aligned(b []byte, n uintptr) bool {
	return len(b) == 0 || uintptr(unsafe.Pointer(&b[0]))%n == 0
}

// view views b (a multiple of T's size) as little-endian Ts: in place when it can, else
// decoded with get.
func view[T uint16 | uint32 | uint64](b []byte, get func([]byte) T) []T {
	if len(b) == 0 {
		return nil
	}
	size := int(unsafe.Sizeof(T(0)))
	if littleEndian && aligned(b, uintptr(size)) {
		return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), len(b)/size)
	}
	out := make([]T, len(b)/size)
	for i := range out {
		out[i] = get(b[size*i:])
	}
	return out
}

// Uint64s views b (a multiple of 8 bytes) as little-endian uint64s.
func Uint64s(b []byte) []uint64 { return view(b, binary.LittleEndian.Uint64) }

// Uint32s views b (a multiple of 4 bytes) as little-endian uint32s.
func Uint32s(b []byte) []uint32 { return view(b, binary.LittleEndian.Uint32) }

// Uint16s views b (a multiple of 2 bytes) as little-endian uint16s.
func Uint16s(b []byte) []uint16 { return view(b, binary.LittleEndian.Uint16) }

// String views b as a string without copying; b must never change afterwards.
func String(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
