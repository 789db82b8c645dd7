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
	// Sparse, by component: component d holds rows colRow[colPtr[d]:colPtr[d+1]] with values
	// colVal[…]. Scoring walks only the components the query has, in increasing order, so each
	// row's sum adds the same non-zero products in the same order as its dense dot product.
	colPtr []uint32
	colRow []uint32
	colVal []float32
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
	e.Str(embedder)
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
	e.Uvarint(uint64(dims))
	e.Uvarint(uint64(len(vecs)))
	if !sparse {
		e.B = append(e.B, vecDense)
		for _, v := range vecs {
			for _, x := range v {
				e.B = binary.LittleEndian.AppendUint32(e.B, math.Float32bits(x))
			}
		}
		return e.B
	}
	e.B = append(e.B, vecSparse)
	e.Uvarint(uint64(nnz))
	at := uint32(0)
	for _, v := range vecs {
		for _, x := range v {
			if x != 0 {
				at++
			}
		}
		e.B = binary.LittleEndian.AppendUint32(e.B, at)
	}
	for _, v := range vecs {
		for i, x := range v {
			if x != 0 {
				e.B = binary.LittleEndian.AppendUint16(e.B, uint16(i))
			}
		}
	}
	for _, v := range vecs {
		for _, x := range v {
			if x != 0 {
				e.B = binary.LittleEndian.AppendUint32(e.B, math.Float32bits(x))
			}
		}
	}
	return e.B
}

// decodeVectors reads what encodeVectors wrote into Go slices.
func decodeVectors(payload []byte) (v *vectors, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, fmt.Errorf("%w: its content cannot be decoded (%v)", errDamaged, r)
		}
	}()
	d := dec{B: payload}
	v = &vectors{embedder: d.Str()}
	dims := d.Uvarint()
	if dims == 0 || dims > 1<<20 {
		panic("vectors of no or absurd length")
	}
	v.dims = int(dims)
	v.n = d.Count(4) // a row takes at least 4 bytes, dense or sparse
	kind := d.Bytes(1)[0]
	switch kind {
	case vecDense:
		b := d.Bytes(4 * v.n * v.dims)
		v.dense = make([]float32, v.n*v.dims)
		for i := range v.dense {
			v.dense[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
	case vecSparse:
		if v.dims > math.MaxUint16+1 {
			panic("sparse vectors longer than their component index")
		}
		nnz := d.Count(6)
		b := d.Bytes(4 * v.n)
		rowPtr := make([]uint32, v.n+1)
		for i := 0; i < v.n; i++ {
			rowPtr[i+1] = binary.LittleEndian.Uint32(b[4*i:])
			if rowPtr[i+1] < rowPtr[i] {
				panic("row pointers go back")
			}
		}
		if rowPtr[v.n] != uint32(nnz) {
			panic("row pointers do not add up")
		}
		idx := d.Bytes(2 * nnz)
		vals := d.Bytes(4 * nnz)
		// Rows to columns: count, then place (rows in increasing order within a column).
		v.colPtr = make([]uint32, v.dims+1)
		for k := 0; k < nnz; k++ {
			c := int(binary.LittleEndian.Uint16(idx[2*k:]))
			if c >= v.dims {
				panic("component past the vector's length")
			}
			v.colPtr[c+1]++
		}
		for c := 0; c < v.dims; c++ {
			v.colPtr[c+1] += v.colPtr[c]
		}
		next := append([]uint32(nil), v.colPtr[:v.dims]...)
		v.colRow = make([]uint32, nnz)
		v.colVal = make([]float32, nnz)
		for r := 0; r < v.n; r++ {
			for k := rowPtr[r]; k < rowPtr[r+1]; k++ {
				c := binary.LittleEndian.Uint16(idx[2*k:])
				v.colRow[next[c]] = uint32(r)
				v.colVal[next[c]] = math.Float32frombits(binary.LittleEndian.Uint32(vals[4*k:]))
				next[c]++
			}
		}
	default:
		panic(fmt.Sprintf("vector kind %d", kind))
	}
	if d.Off != len(payload) {
		panic("bytes left over")
	}
	return v, nil
}

// scores fills out (len v.n) with the dot product of every row with q (len(q) == v.dims).
func (v *vectors) scores(q []float32, out []float32) {
	if v.dense != nil {
		for i := range out {
			var s float32
			for j, x := range v.dense[i*v.dims : (i+1)*v.dims] {
				s += x * q[j]
			}
			out[i] = s
		}
		return
	}
	clear(out)
	for c, qc := range q {
		if qc == 0 {
			continue
		}
		lo, hi := v.colPtr[c], v.colPtr[c+1]
		vals := v.colVal[lo:hi]
		for k, r := range v.colRow[lo:hi] {
			out[r] += vals[k] * qc
		}
	}
}

// size is the bytes the vectors hold in memory.
func (v *vectors) size() int {
	return 4*len(v.dense) + 4*len(v.colPtr) + 4*len(v.colRow) + 4*len(v.colVal)
}
