package store

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"
)

// vectors are the embeddings of one book's children, in reading order, held compactly: float32
// rows in one contiguous slice, or — when most components are zero, as with the local hashed
// embedder (about 120 of its 2,048) — sparse rows (component index and value). A sparse row
// sums its non-zero products in the order of its components, so it scores exactly as the dense
// row would. They are loaded only by a search mode that reads vectors.
type vectors struct {
	embedder string
	dims     int
	n        int
	dense    []float32 // n × dims, when not sparse
	rowPtr   []uint32  // sparse: row i is idx/val[rowPtr[i]:rowPtr[i+1]]
	idx      []uint16
	val      []float32
}

// vectorsSlot holds a segment's vectors, read on first use.
type vectorsSlot struct {
	mu   sync.Mutex
	load func() (*vectors, error) // nil: no vectors here (a Chroma store keeps them on the server)
	v    *vectors
	err  error
}

// get returns the vectors, loading them once; nil without error when there are none.
func (s *vectorsSlot) get() (*vectors, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.v == nil && s.err == nil && s.load != nil {
		s.v, s.err = s.load()
	}
	return s.v, s.err
}

// set installs vectors already in memory.
func (s *vectorsSlot) set(v *vectors) {
	s.mu.Lock()
	s.v, s.err, s.load = v, nil, nil
	s.mu.Unlock()
}

// loaded reports whether the vectors are in memory (tests).
func (s *vectorsSlot) loaded() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.v != nil
}

const (
	vecDense  = 0
	vecSparse = 1
)

// encodeVectors encodes a book's vectors (all of one length) with the embedder that made them.
func encodeVectors(embedder string, vecs [][]float32) []byte {
	var e enc
	e.str(embedder)
	dims := 0
	if len(vecs) > 0 {
		dims = len(vecs[0])
	}
	nnz := 0
	for _, v := range vecs {
		for _, x := range v {
			if x != 0 {
				nnz++
			}
		}
	}
	sparse := dims <= math.MaxUint16+1 && nnz*6 < len(vecs)*dims*2
	e.uvarint(uint64(dims))
	e.uvarint(uint64(len(vecs)))
	if !sparse {
		e.b = append(e.b, vecDense)
		for _, v := range vecs {
			for _, x := range v {
				e.b = binary.LittleEndian.AppendUint32(e.b, math.Float32bits(x))
			}
		}
		return e.b
	}
	e.b = append(e.b, vecSparse)
	e.uvarint(uint64(nnz))
	at := uint32(0)
	for _, v := range vecs {
		for _, x := range v {
			if x != 0 {
				at++
			}
		}
		e.b = binary.LittleEndian.AppendUint32(e.b, at)
	}
	for _, v := range vecs {
		for i, x := range v {
			if x != 0 {
				e.b = binary.LittleEndian.AppendUint16(e.b, uint16(i))
			}
		}
	}
	for _, v := range vecs {
		for _, x := range v {
			if x != 0 {
				e.b = binary.LittleEndian.AppendUint32(e.b, math.Float32bits(x))
			}
		}
	}
	return e.b
}

// decodeVectors reads what encodeVectors wrote into Go slices.
func decodeVectors(payload []byte) (v *vectors, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, fmt.Errorf("%w: its content cannot be decoded (%v)", errDamaged, r)
		}
	}()
	d := dec{b: payload}
	v = &vectors{embedder: d.str(), dims: int(d.uvarint()), n: int(d.uvarint())}
	kind := d.bytes(1)[0]
	switch kind {
	case vecDense:
		b := d.bytes(4 * v.n * v.dims)
		v.dense = make([]float32, v.n*v.dims)
		for i := range v.dense {
			v.dense[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
	case vecSparse:
		nnz := int(d.uvarint())
		b := d.bytes(4 * v.n)
		v.rowPtr = make([]uint32, v.n+1)
		for i := 0; i < v.n; i++ {
			v.rowPtr[i+1] = binary.LittleEndian.Uint32(b[4*i:])
		}
		b = d.bytes(2 * nnz)
		v.idx = make([]uint16, nnz)
		for i := range v.idx {
			v.idx[i] = binary.LittleEndian.Uint16(b[2*i:])
			if int(v.idx[i]) >= v.dims {
				panic("component past the vector's length")
			}
		}
		b = d.bytes(4 * nnz)
		v.val = make([]float32, nnz)
		for i := range v.val {
			v.val[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		if v.rowPtr[v.n] != uint32(nnz) {
			panic("row pointers do not add up")
		}
	default:
		panic(fmt.Sprintf("vector kind %d", kind))
	}
	if d.off != len(payload) {
		panic("bytes left over")
	}
	return v, nil
}

// dot is the dot product of row i with q (len(q) == v.dims).
func (v *vectors) dot(i int, q []float32) float32 {
	var s float32
	if v.dense != nil {
		for j, x := range v.dense[i*v.dims : (i+1)*v.dims] {
			s += x * q[j]
		}
		return s
	}
	lo, hi := v.rowPtr[i], v.rowPtr[i+1]
	val := v.val[lo:hi]
	for j, k := range v.idx[lo:hi] {
		s += val[j] * q[k]
	}
	return s
}

// size is the bytes the vectors hold in memory.
func (v *vectors) size() int {
	return 4*len(v.dense) + 4*len(v.rowPtr) + 2*len(v.idx) + 4*len(v.val)
}
