// hlo_buffer_t <-> the runtime's literals: dtype mapping, shape checks and
// the column-major reordering (api/buffers.c).
#ifndef HL_API_BUFFERS_H_
#define HL_API_BUFFERS_H_

#include <stdbool.h>

#include "api/hlo_runtime.h"
#include "runtime/base/literal.h"
#include "runtime/base/shape.h"
#include "runtime/base/status.h"

// Whether hlo_buffer_t carries `dtype` (whole-byte element types).
bool hl_api_dtype_supported(hl_dtype_t dtype);

// NULL when `buffer` has exactly the shape `want` (dtype, rank, dims);
// otherwise an error naming `what` ("argument 1") and both shapes.
hl_status_t hl_api_check_buffer(const hlo_buffer_t *buffer, const hl_shape_t *want,
                                const char *what);

// Fills a literal header (refcount 1) that points at `data` without owning
// it: shape from `shape`, byte size from it.
void hl_api_wrap(const hl_shape_t *shape, void *data, hl_literal_t *out);

// Copies `src` (row-major when from_column_major is false) of `dims` into
// `dst` in the other order. Element size `size` bytes.
void hl_api_reorder(const void *src, void *dst, int rank, const int64_t *dims, size_t size,
                    bool from_column_major);

#endif  // HL_API_BUFFERS_H_
