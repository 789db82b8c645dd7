package uselite

import "golang.org/x/sys/cpu"

// sgemm6x16 computes C[0:6, 0:16] += A[0:6, 0:k] · B[0:k, 0:16] (row-major; leading dimensions
// in elements) with AVX2 and FMA. Implemented in sgemm_amd64.s.
//
//go:noescape
func sgemm6x16(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int)

// haveKernel reports whether this CPU runs the AVX2/FMA kernel.
var haveKernel = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// kernel6x16 checks that the slices hold every element the kernel touches, then runs it.
func kernel6x16(k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	if k <= 0 {
		return
	}
	if len(a) < 5*lda+k || len(b) < (k-1)*ldb+16 || len(c) < 5*ldc+16 {
		panic("uselite: kernel operands out of range")
	}
	sgemm6x16(k, &a[0], lda, &b[0], ldb, &c[0], ldc)
}
