// Shapes: an array shape (element type, dimensions, optional layout) or a
// tuple of shapes. All buffers in memory are dense row-major whatever the
// layout says, so kernels ignore layouts; the layout is the *physical* order
// XLA would store the array in, which only `bitcast` and proto literals look
// at (runtime/base/layout.h, docs/LAYOUTS.md).
#ifndef HL_RUNTIME_BASE_SHAPE_H_
#define HL_RUNTIME_BASE_SHAPE_H_

#include <stdbool.h>
#include <stdint.h>

#include "runtime/base/dtype.h"
#include "runtime/base/status.h"
#include "runtime/base/strbuf.h"

#define HL_MAX_RANK 16

typedef struct hl_shape {
  hl_dtype_t dtype;          // HL_TUPLE for tuples
  int rank;                  // 0 for scalars, tuples, tokens
  int64_t dims[HL_MAX_RANK]; // for a dynamic dimension, its bound (-1 if unbounded '?')
  uint32_t dynamic_mask;     // bit i set: dimension i is dynamic ("<=N" or "?")
  bool has_layout;           // minor_to_major is meaningful
  int64_t minor_to_major[HL_MAX_RANK];
  int64_t element_size_in_bits;  // layout E(n); 0: the element type's own size
  int64_t memory_space;          // layout S(n); 0: default memory
  struct hl_layout_ext *layout_ext;  // owned; the rarer layout parts (tiles, sparse
                                     // levels, ...: runtime/base/layout.h); NULL if none
  int tuple_count;
  struct hl_shape *tuple;    // owned array of tuple_count element shapes
} hl_shape_t;

// Array shape with the default (row-major) layout unset.
hl_shape_t hl_shape_array(hl_dtype_t dtype, int rank, const int64_t *dims);
hl_shape_t hl_shape_scalar(hl_dtype_t dtype);
hl_shape_t hl_shape_token(void);
// Takes ownership of nothing: `elements` are deep-copied.
hl_status_t hl_shape_tuple(const hl_shape_t *elements, int count, hl_shape_t *out);

hl_status_t hl_shape_copy(const hl_shape_t *src, hl_shape_t *out);  // deep copy
void hl_shape_deinit(hl_shape_t *shape);  // frees tuple children; leaves a zeroed shape

bool hl_shape_is_tuple(const hl_shape_t *s);
bool hl_shape_is_array(const hl_shape_t *s);  // has element data
int64_t hl_shape_element_count(const hl_shape_t *s);  // 1 for scalars; 0 for tuple/token
int64_t hl_shape_byte_size(const hl_shape_t *s);      // element count * dtype size
// The element size times every non-zero dimension fits in int64, for the
// shape and each tuple element. Later stages multiply dimensions in int64
// unchecked, so every loader and the verifier refuse shapes where this fails.
bool hl_shape_size_fits(const hl_shape_t *s);
// Same element type and dimensions (and tuple structure); layouts ignored.
bool hl_shape_equal(const hl_shape_t *a, const hl_shape_t *b);
// Same dimensions, element type ignored.
bool hl_shape_same_dims(const hl_shape_t *a, const hl_shape_t *b);
// Row-major strides in elements (strides[rank-1] == 1).
void hl_shape_strides(const hl_shape_t *s, int64_t *strides);
// The layout is the default {rank-1,...,0} (or absent).
bool hl_shape_has_default_layout(const hl_shape_t *s);

// HLO text spelling: "f32[2,3]{1,0}", "(f32[], s32[2]{0})", "token[]".
// with_layout=false omits layouts.
void hl_shape_print(const hl_shape_t *s, bool with_layout, hl_strbuf_t *out);
// Convenience for error messages: a thread-local buffer that stays valid for
// the next three calls too, so one message may show up to four shapes.
const char *hl_shape_debug_string(const hl_shape_t *s);
// The same with the layout ("f32[2,3]{0,1}"), for messages about layouts.
const char *hl_shape_layout_debug_string(const hl_shape_t *s);

#endif  // HL_RUNTIME_BASE_SHAPE_H_
