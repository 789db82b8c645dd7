//go:build !amd64

package uselite

// haveKernel is false where there is no assembly kernel: gonum's SGEMM does the products.
var haveKernel = false

func kernel6x16(k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	panic("uselite: no SGEMM kernel on this architecture")
}
