// OpenBLAS's own thread count, read and set at run time (the BLAS linked may
// not be OpenBLAS: then get returns 0 and set does nothing). Kernels that
// split work across the runtime's thread pool run BLAS single-threaded inside
// each task, so the pool's threads and BLAS's do not oversubscribe the cores.
#ifndef HL_RUNTIME_KERNELS_BLAS_THREADS_H_
#define HL_RUNTIME_KERNELS_BLAS_THREADS_H_

int hl_blas_threads_get(void);       // 0 when unknown (not OpenBLAS)
void hl_blas_threads_set(int count);  // count >= 1; no-op when unknown

#endif  // HL_RUNTIME_KERNELS_BLAS_THREADS_H_
