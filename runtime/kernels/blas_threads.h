// OpenBLAS's own thread count, read and set at run time (the BLAS linked may
// not be OpenBLAS: then get returns 0 and set does nothing). The gemm tiles
// (gemm_tiles.h) run BLAS single-threaded: its thread count changes its bits.
#ifndef HL_RUNTIME_KERNELS_BLAS_THREADS_H_
#define HL_RUNTIME_KERNELS_BLAS_THREADS_H_

int hl_blas_threads_get(void);       // 0 when unknown (not OpenBLAS)
void hl_blas_threads_set(int count);  // count >= 1; no-op when unknown

#endif  // HL_RUNTIME_KERNELS_BLAS_THREADS_H_
