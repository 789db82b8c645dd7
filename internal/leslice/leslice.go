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

// Uint64s views b (a multiple of 8 bytes) as little-endian uint64s.
func Uint64s(b []byte) []uint64 {
	if len(b) == 0 {
		return nil
	}
	if littleEndian && aligned(b, 8) {
		return unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), len(b)/8)
	}
	out := make([]uint64, len(b)/8)
	for i := range out {
		out[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	return out
}

// Uint32s views b (a multiple of 4 bytes) as little-endian uint32s.
func Uint32s(b []byte) []uint32 {
	if len(b) == 0 {
		return nil
	}
	if littleEndian && aligned(b, 4) {
		return unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), len(b)/4)
	}
	out := make([]uint32, len(b)/4)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return out
}

// Uint16s views b (a multiple of 2 bytes) as little-endian uint16s.
func Uint16s(b []byte) []uint16 {
	if len(b) == 0 {
		return nil
	}
	if littleEndian && aligned(b, 2) {
		return unsafe.Slice((*uint16)(unsafe.Pointer(&b[0])), len(b)/2)
	}
	out := make([]uint16, len(b)/2)
	for i := range out {
		out[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
	return out
}

// String views b as a string without copying; b must never change afterwards.
func String(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
