package uselite

import (
	"runtime"
	"sync"
)

// sgemm computes C[n×m] += A[n×k] · B[k×m], all row-major and contiguous, with the 6×16
// AVX2/FMA kernel, m a multiple of 16. Rows are split across the cores for long inputs and
// columns for short ones (a query). The caller checks haveKernel.
func sgemm(n, m, k int, a, b, c []float32) {
	if m%16 != 0 || len(a) < n*k || len(b) < k*m || len(c) < n*m {
		panic("uselite: sgemm shapes do not match")
	}
	if n == 0 || k == 0 {
		return
	}
	parts := runtime.GOMAXPROCS(0)
	if parts == 1 || n*m*k < 1<<18 {
		gemm(0, n, 0, m, k, a, k, b, m, c, m)
		return
	}
	var wg sync.WaitGroup
	if n >= 16*parts {
		step := (n/parts + 5) / 6 * 6
		for r0 := 0; r0 < n; r0 += step {
			r1 := min(n, r0+step)
			wg.Add(1)
			go func() {
				defer wg.Done()
				gemm(r0, r1, 0, m, k, a, k, b, m, c, m)
			}()
		}
	} else {
		step := (m/parts + 15) &^ 15
		for c0 := 0; c0 < m; c0 += step {
			c1 := min(m, c0+step)
			wg.Add(1)
			go func() {
				defer wg.Done()
				gemm(0, n, c0, c1, k, a, k, b, m, c, m)
			}()
		}
	}
	wg.Wait()
}

// Cache blocking of gemm: a block of A (blockRows × blockK, 96 KiB) stays in L2 while each
// 16-column panel of B (blockK × 16, 16 KiB) is reused from L1 by all the block's 6-row tiles.
const (
	blockK    = 256
	blockRows = 96 // a multiple of 6
)

// gemm computes rows r0..r1 and columns c0..c1 (c1-c0 a multiple of 16) of C += A·B with
// leading dimensions lda, ldb, ldc, on the calling goroutine. The last 1–5 rows go through the
// kernel zero-padded to 6.
func gemm(r0, r1, c0, c1, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	full := r0 + (r1-r0)/6*6
	for p0 := 0; p0 < k; p0 += blockK {
		kk := min(blockK, k-p0)
		for i0 := r0; i0 < full; i0 += blockRows {
			i1 := min(full, i0+blockRows)
			for j := c0; j < c1; j += 16 {
				for i := i0; i < i1; i += 6 {
					kernel6x16(kk, a[i*lda+p0:], lda, b[p0*ldb+j:], ldb, c[i*ldc+j:], ldc)
				}
			}
		}
	}
	if full == r1 {
		return
	}
	rows := r1 - full
	pa := make([]float32, 6*k)
	for r := 0; r < rows; r++ {
		copy(pa[r*k:(r+1)*k], a[(full+r)*lda:(full+r)*lda+k])
	}
	var pc [6 * 16]float32
	for j := c0; j < c1; j += 16 {
		clear(pc[:])
		for r := 0; r < rows; r++ {
			copy(pc[r*16:r*16+16], c[(full+r)*ldc+j:(full+r)*ldc+j+16])
		}
		kernel6x16(k, pa, k, b[j:], ldb, pc[:], 16)
		for r := 0; r < rows; r++ {
			copy(c[(full+r)*ldc+j:(full+r)*ldc+j+16], pc[r*16:r*16+16])
		}
	}
}
