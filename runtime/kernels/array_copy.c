#include "runtime/kernels/array_copy.h"

#include "runtime/kernels/strided_copy.h"

void hl_array_copy_strided(void *dst, const int64_t *dst_strides, const void *src,
                           const int64_t *src_strides, int rank, const int64_t *dims,
                           size_t es) {
  hl_strided_copy(dst, dst_strides, src, src_strides, rank, dims, es);
}
