// The kernels' strided copy engine (strided_copy.h, private to the kernels)
// for callers outside them: the embedding API reorders Fortran-order arrays
// with it (api/buffers.c).
#ifndef HL_RUNTIME_KERNELS_ARRAY_COPY_H_
#define HL_RUNTIME_KERNELS_ARRAY_COPY_H_

#include <stddef.h>
#include <stdint.h>

// For every index I of `dims` (`rank` dimensions), with strides in elements
// of `es` bytes: dst[sum I[d] * dst_strides[d]] = src[sum I[d] * src_strides[d]].
// Transposes are copied in cache-sized tiles.
void hl_array_copy_strided(void *dst, const int64_t *dst_strides, const void *src,
                           const int64_t *src_strides, int rank, const int64_t *dims, size_t es);

#endif  // HL_RUNTIME_KERNELS_ARRAY_COPY_H_
