package uselite

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
)

// The assembly kernel agrees with a plain triple loop on every shape the driver handles: row
// counts that are and are not multiples of 6, one and several column and k blocks.
func TestSgemmMatchesNaive(t *testing.T) {
	if !haveKernel {
		t.Skip("this CPU has no AVX2/FMA: gonum's SGEMM does the products")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 3, 4, 5, 6, 11, 13, 64, 130, 200} {
		for _, m := range []int{16, 48, 512} {
			for _, k := range []int{1, 7, 256, 300} {
				a, b, c := randVec(rng, n*k), randVec(rng, k*m), randVec(rng, n*m)
				want := append([]float32(nil), c...)
				for i := 0; i < n; i++ {
					for j := 0; j < m; j++ {
						s := float64(want[i*m+j])
						for p := 0; p < k; p++ {
							s += float64(a[i*k+p]) * float64(b[p*m+j])
						}
						want[i*m+j] = float32(s)
					}
				}
				sgemm(n, m, k, a, b, c)
				for i := range c {
					if d := math.Abs(float64(c[i] - want[i])); d > 1e-4*math.Sqrt(float64(k)) {
						t.Fatalf("n=%d m=%d k=%d: element %d = %g, want %g", n, m, k, i, c[i], want[i])
					}
				}
			}
		}
	}
}

func randVec(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = rng.Float32()*2 - 1
	}
	return v
}

// BenchmarkSgemm is the FFN's first product for a batch of 512 tokens (512×512 · 512×1536).
func BenchmarkSgemm(b *testing.B) {
	if !haveKernel {
		b.Skip("no AVX2/FMA")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const n, k, m = 512, 512, 1536
	a, w, c := randVec(rng, n*k), randVec(rng, k*m), make([]float32, n*m)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sgemm(n, m, k, a, w, c)
	}
	b.ReportMetric(2*n*m*k*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

func BenchmarkGonumSgemm(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n, k, m = 512, 512, 1536
	a, w, c := randVec(rng, n*k), randVec(rng, k*m), make([]float32, n*m)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		blasImpl.Sgemm(blas.NoTrans, blas.NoTrans, n, m, k, 1, a, k, w, m, 1, c, m)
	}
	b.ReportMetric(2*n*m*k*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}
