package uselite

import (
	"context"
	"math"
	"runtime"
	"sync"
)

// Dims is the size of the sentence vectors.
const Dims = 512

// Tokens returns the token ids of a text (for tests and diagnostics).
func (m *Model) Tokens(text string) []int { return m.tok.encode(text) }

// Embed returns the L2-normalised vector of each text, embedding texts in parallel on all cores.
func (m *Model) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	workers := min(runtime.GOMAXPROCS(0), len(texts))
	var (
		wg   sync.WaitGroup
		next = make(chan int)
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i] = m.embedOne(texts[i])
			}
		}()
	}
	var err error
	for i := range texts {
		if err = ctx.Err(); err != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if err != nil {
		return nil, err
	}
	return out, nil
}

// embedOne runs the graph for one sentence; tokens past the 128th are dropped, as the graph
// does. (The unknown piece, id 0, is a token like any other: the graph's padding value is -1.)
func (m *Model) embedOne(text string) []float32 {
	ids := m.tok.encode(text)
	if len(ids) > m.maxLen {
		ids = ids[:m.maxLen]
	}
	toks := ids
	n := len(toks)
	v := make([]float32, Dims)
	if n == 0 {
		// The graph's mean over no tokens is zero; tanh(bias) is what remains.
		copy(v, m.tanh.b)
		for i := range v {
			v[i] = float32(math.Tanh(float64(v[i])))
		}
		l2(v)
		return v
	}
	// Input: twice the token embedding plus the timing signal of the token's position.
	d := m.embDim
	x := make([]float32, n*d)
	half := d / 2
	for t := 0; t < n; t++ {
		e := m.emb[toks[t]*d : (toks[t]+1)*d]
		row := x[t*d : (t+1)*d]
		for j := 0; j < half; j++ {
			a := float32(t) * m.timing[j]
			row[j] = 2*e[j] + float32(math.Sin(float64(a)))
			row[half+j] = 2*e[half+j] + float32(math.Cos(float64(a)))
		}
	}
	// Layer 0 works on 256-wide inputs; its residual is projected to 512.
	h := m.layers[0].forward(x, n, m.dense.apply(x, n))
	h = m.layers[1].forward(h, n, h)
	// Mean over tokens, tanh layer, L2 norm.
	mean := make([]float32, Dims)
	for t := 0; t < n; t++ {
		for j := 0; j < Dims; j++ {
			mean[j] += h[t*Dims+j]
		}
	}
	for j := range mean {
		mean[j] /= float32(n)
	}
	v = m.tanh.apply(mean, 1)
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

// apply computes x·W + b for n rows.
func (l linear) apply(x []float32, n int) []float32 {
	out := make([]float32, n*l.out)
	for t := 0; t < n; t++ {
		row := out[t*l.out : (t+1)*l.out]
		copy(row, l.b)
		in := x[t*l.in : (t+1)*l.in]
		for i, xi := range in {
			if xi == 0 {
				continue
			}
			w := l.w[i*l.out : (i+1)*l.out]
			for j, wj := range w {
				row[j] += xi * wj
			}
		}
	}
	return out
}

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
// residual) on n tokens of width in; residual is the 512-wide input to add after attention.
func (l layer) forward(x []float32, n int, residual []float32) []float32 {
	in := l.qkv.in
	a := l.ln1.apply(x, n, in)
	qkv := l.qkv.apply(a, n) // [n, 3*in]: q | k | v
	ctxv := make([]float32, n*in)
	scores := make([]float32, n)
	for h := 0; h < l.heads; h++ {
		off := h * l.depth
		for i := 0; i < n; i++ {
			q := qkv[i*3*in+off : i*3*in+off+l.depth]
			maxs := float32(math.Inf(-1))
			for j := 0; j < n; j++ {
				k := qkv[j*3*in+in+off : j*3*in+in+off+l.depth]
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
			for j := 0; j < n; j++ {
				scores[j] = float32(math.Exp(float64(scores[j] - maxs)))
				sum += scores[j]
			}
			out := ctxv[i*in+off : i*in+off+l.depth]
			for j := 0; j < n; j++ {
				w := scores[j] / sum
				vv := qkv[j*3*in+2*in+off : j*3*in+2*in+off+l.depth]
				for c, vc := range vv {
					out[c] += w * vc
				}
			}
		}
	}
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
