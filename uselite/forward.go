package uselite

import (
	"context"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
	"math"
	"runtime"
	"sync"
)

// Dims is the size of the sentence vectors.
const Dims = 512

// Tokens returns the token ids of a text (for tests and diagnostics).
func (m *Model) Tokens(text string) []int { return m.tok.encode(text) }

// batchTokens is about how many tokens go through the matrix products together.
const batchTokens = 2048

// Embed returns the L2-normalised vector of each text. Texts are grouped into batches whose
// tokens go through each matrix product together (attention stays within each text); the
// products run on all cores.
func (m *Model) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	ids := make([][]int, len(texts))
	for i, t := range texts {
		ids[i] = m.tok.encode(t)
		if len(ids[i]) > m.maxLen {
			ids[i] = ids[i][:m.maxLen]
		}
	}
	for start := 0; start < len(texts); {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		end, n := start, 0
		for end < len(texts) && (end == start || n+len(ids[end]) <= batchTokens) {
			n += len(ids[end])
			end++
		}
		copy(out[start:end], m.embedBatch(ids[start:end]))
		start = end
	}
	return out, nil
}

// embedBatch runs the graph for a batch of tokenised texts.
func (m *Model) embedBatch(ids [][]int) [][]float32 {
	var segs []segment
	n := 0
	for _, t := range ids {
		segs = append(segs, segment{n, len(t)})
		n += len(t)
	}
	out := make([][]float32, len(ids))
	if n == 0 {
		for i := range out {
			out[i] = m.pool(nil, segment{})
		}
		return out
	}
	// Input: twice the token embedding plus the timing signal of the token's position.
	d := m.embDim
	half := d / 2
	x := make([]float32, n*d)
	for si, sg := range segs {
		for p := 0; p < sg.n; p++ {
			tok := ids[si][p]
			e := m.emb[tok*d : (tok+1)*d]
			row := x[(sg.start+p)*d : (sg.start+p+1)*d]
			for j := 0; j < half; j++ {
				a := float32(p) * m.timing[j]
				row[j] = 2*e[j] + float32(math.Sin(float64(a)))
				row[half+j] = 2*e[half+j] + float32(math.Cos(float64(a)))
			}
		}
	}
	// Layer 0 works on 256-wide inputs; its residual is projected to 512.
	h := m.layers[0].forward(x, n, segs, m.dense.apply(x, n))
	h = m.layers[1].forward(h, n, segs, h)
	for i, sg := range segs {
		out[i] = m.pool(h, sg)
	}
	return out
}

type segment struct{ start, n int }

// pool is the mean over a text's tokens, the tanh layer and the L2 norm. A text without tokens
// has a zero mean, as in the graph.
func (m *Model) pool(h []float32, sg segment) []float32 {
	mean := make([]float32, Dims)
	for t := sg.start; t < sg.start+sg.n; t++ {
		for j := 0; j < Dims; j++ {
			mean[j] += h[t*Dims+j]
		}
	}
	for j := range mean {
		mean[j] /= float32(max(sg.n, 1))
	}
	v := m.tanh.apply(mean, 1)
	for i := range v {
		v[i] = float32(math.Tanh(float64(v[i])))
	}
	l2(v)
	return v
}

func l2(v []float32) {
	var s float32
	for _, x := range v {
		s += x * x
	}
	s = float32(math.Max(float64(s), 1e-12))
	r := float32(1 / math.Sqrt(float64(s)))
	for i := range v {
		v[i] *= r
	}
}

// apply computes x·W + b for n rows: with the AVX2/FMA kernel where the CPU has it, else with
// gonum's SGEMM.
func (l linear) apply(x []float32, n int) []float32 {
	out := make([]float32, n*l.out)
	for t := 0; t < n; t++ {
		copy(out[t*l.out:(t+1)*l.out], l.b)
	}
	if haveKernel && l.out%16 == 0 {
		sgemm(n, l.out, l.in, x, l.w, out)
		return out
	}
	parts := 1
	if n < 64 { // gonum splits large products itself; split a short query's by columns
		parts = min(runtime.GOMAXPROCS(0), 4)
	}
	if parts == 1 {
		blasImpl.Sgemm(blas.NoTrans, blas.NoTrans, n, l.out, l.in, 1, x, l.in, l.w, l.out, 1, out, l.out)
		return out
	}
	var wg sync.WaitGroup
	step := (l.out + parts - 1) / parts
	for c0 := 0; c0 < l.out; c0 += step {
		cols := min(step, l.out-c0)
		wg.Add(1)
		go func() {
			defer wg.Done()
			blasImpl.Sgemm(blas.NoTrans, blas.NoTrans, n, cols, l.in, 1, x, l.in, l.w[c0:], l.out, 1, out[c0:], l.out)
		}()
	}
	wg.Wait()
	return out
}

var blasImpl gonum.Implementation

func (nm norm) apply(x []float32, n, d int) []float32 {
	out := make([]float32, n*d)
	for t := 0; t < n; t++ {
		row := x[t*d : (t+1)*d]
		var mean float32
		for _, v := range row {
			mean += v
		}
		mean /= float32(d)
		var vr float32
		for _, v := range row {
			vr += (v - mean) * (v - mean)
		}
		vr /= float32(d)
		r := float32(1 / math.Sqrt(float64(vr+1e-6)))
		o := out[t*d : (t+1)*d]
		for j, v := range row {
			o[j] = nm.scale[j]*r*(v-mean) + nm.bias[j]
		}
	}
	return out
}

// forward runs one transformer layer (pre-norm attention and feed-forward, each with a
// residual) on n tokens of width in; attention stays within each segment (text); residual is
// the 512-wide input to add after attention.
func (l layer) forward(x []float32, n int, segs []segment, residual []float32) []float32 {
	in := l.qkv.in
	a := l.ln1.apply(x, n, in)
	qkv := l.qkv.apply(a, n) // [n, 3*in]: q | k | v
	ctxv := make([]float32, n*in)
	var wg sync.WaitGroup
	work := make(chan segment)
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for sg := range work {
				l.attend(qkv, ctxv, sg)
			}
		}()
	}
	for _, sg := range segs {
		work <- sg
	}
	close(work)
	wg.Wait()
	att := l.out.apply(ctxv, n)
	for i := range att {
		att[i] += residual[i]
	}
	f := l.ffn1.apply(l.ln2.apply(att, n, 512), n)
	for i, v := range f {
		if v < 0 {
			f[i] = 0
		}
	}
	f = l.ffn2.apply(f, n)
	for i := range f {
		f[i] += att[i]
	}
	return f
}

// attend computes scaled dot-product attention of one text's tokens over themselves: with the
// AVX2/FMA kernel (scores = Q·Kᵀ, context = softmax·V) where the CPU has it, else in loops.
func (l layer) attend(qkv, ctxv []float32, sg segment) {
	if haveKernel && l.depth%16 == 0 {
		l.attendKernel(qkv, ctxv, sg)
		return
	}
	l.attendLoops(qkv, ctxv, sg)
}

// attendKernel is attend with the matrix kernel; scores are computed for the text's n tokens
// padded to a multiple of 16 columns, and the padding gets zero weight.
func (l layer) attendKernel(qkv, ctxv []float32, sg segment) {
	in, d, n := l.qkv.in, l.depth, sg.n
	np := (n + 15) &^ 15
	kt := make([]float32, d*np)     // Kᵀ of one head
	scores := make([]float32, n*np) // then the attention weights
	base := sg.start * 3 * in
	for h := 0; h < l.heads; h++ {
		off := h * d
		for j := 0; j < n; j++ {
			k := qkv[base+j*3*in+in+off : base+j*3*in+in+off+d]
			for c, v := range k {
				kt[c*np+j] = v
			}
		}
		clear(scores)
		gemm(0, n, 0, np, d, qkv[base+off:], 3*in, kt, np, scores, np)
		for i := 0; i < n; i++ {
			row := scores[i*np : i*np+n]
			maxs := float32(math.Inf(-1))
			for j := range row {
				row[j] *= l.scale
				maxs = max(maxs, row[j])
			}
			var sum float32
			for j := range row {
				row[j] = float32(math.Exp(float64(row[j] - maxs)))
				sum += row[j]
			}
			for j := range row {
				row[j] /= sum
			}
		}
		// The padding columns multiply V rows that belong to the next text (or past the end):
		// only n columns take part.
		gemm(0, n, 0, d, n, scores, np, qkv[base+2*in+off:], 3*in, ctxv[sg.start*in+off:], in)
	}
}

// attendLoops is attend in plain loops.
func (l layer) attendLoops(qkv, ctxv []float32, sg segment) {
	in := l.qkv.in
	scores := make([]float32, sg.n)
	for h := 0; h < l.heads; h++ {
		off := h * l.depth
		for i := sg.start; i < sg.start+sg.n; i++ {
			q := qkv[i*3*in+off : i*3*in+off+l.depth]
			maxs := float32(math.Inf(-1))
			for j := 0; j < sg.n; j++ {
				t := sg.start + j
				k := qkv[t*3*in+in+off : t*3*in+in+off+l.depth]
				var s float32
				for c, qc := range q {
					s += qc * l.scale * k[c]
				}
				scores[j] = s
				if s > maxs {
					maxs = s
				}
			}
			var sum float32
			for j := range scores {
				scores[j] = float32(math.Exp(float64(scores[j] - maxs)))
				sum += scores[j]
			}
			out := ctxv[i*in+off : i*in+off+l.depth]
			for j := range scores {
				w := scores[j] / sum
				t := sg.start + j
				vv := qkv[t*3*in+2*in+off : t*3*in+2*in+off+l.depth]
				for c, vc := range vv {
					out[c] += w * vc
				}
			}
		}
	}
}
