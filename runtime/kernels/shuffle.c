// shuffle (newest XLA only; not in the spec documents): a local op that
// moves the elements of its operand along `dimensions`; result and operand
// have one shape. Semantics from XLA's sources:
//   - xla/hlo/transforms/expanders/shuffle_expander.cc and its test:
//     mode=rotate, shifts={s_j}: dimension dimensions[j] is rotated to the
//     left by s_j (slice [s, n) then [0, s), concatenated), i.e.
//     result[.., i, ..] = operand[.., (i + s_j) mod n, ..], shifts taken
//     modulo the size (xla/shuffle.cc NormalizeShift; an empty dimension
//     stays empty).
//   - mode=permute, indices=<literal>: a gather of one operand element per
//     result element: result[r] = operand[s] with s[d] = r[d] for dimensions
//     not shuffled and s[dimensions[j]] = indices[b(r), j]. indices has the
//     operand's rank (one shuffled dimension; the coordinate axis left out)
//     or one more, the last of size len(dimensions); each of the other
//     dimensions equals the operand's or is 1, which broadcasts (b(r) takes
//     0 there).
// XLA's gather lowering clamps indices; whether out-of-range ones are valid
// input is not stated, so this runtime rejects them. The multi-rotate mode
// of xla/shuffle.h is not supported (its text form is not known here).
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/kernels/element_access.h"
#include "runtime/kernels/kernel.h"

// The shuffled dimensions: distinct and in range.
static hl_status_t check_dimensions(const hl_instruction_t *inst, const hl_shape_t *s) {
  const hl_i64_list_t *dl = &inst->attrs.dimensions;
  bool seen[HL_MAX_RANK] = {false};
  for (int j = 0; j < dl->n; j++) {
    int64_t d = dl->v[j];
    if (d < 0 || d >= s->rank || seen[d])
      return HL_INVALID("%s: dimensions[%d] = %lld is out of range or repeated for operand %s",
                        hl_instruction_location(inst), j, (long long)d, HL_SHAPE_STR(s));
    seen[d] = true;
  }
  return NULL;
}

static hl_status_t shuffle_rotate(const hl_instruction_t *inst, const hl_literal_t *x,
                                  hl_literal_t *y) {
  const hl_shape_t *s = &x->shape;
  const hl_i64_list_t *dl = &inst->attrs.dimensions, *sh = &inst->attrs.shuffle_shifts;
  if (sh->n != dl->n)
    return HL_INVALID("%s: mode=rotate needs one shift per shuffled dimension (%d), has %d",
                      hl_instruction_location(inst), dl->n, sh->n);
  int rank = s->rank;
  int64_t shift[HL_MAX_RANK] = {0}, stride[HL_MAX_RANK];
  for (int j = 0; j < dl->n; j++) {
    int64_t n = s->dims[dl->v[j]];
    shift[dl->v[j]] = n == 0 ? 0 : ((sh->v[j] % n) + n) % n;
  }
  if (!y->byte_size) return NULL;
  hl_shape_strides(s, stride);
  size_t es = hl_dtype_size(s->dtype);
  if (rank == 0) {
    memcpy(y->data, x->data, es);
    return NULL;
  }
  // Row by row over the innermost dimension: a row's source row follows
  // from the rotated outer coordinates; within the row, a rotation is two
  // contiguous runs.
  int64_t inner = s->dims[rank - 1], rows = (int64_t)(y->byte_size / es) / inner;
  int64_t idx[HL_MAX_RANK] = {0};
  int64_t lead = shift[rank - 1];
  size_t run1 = (size_t)(inner - lead) * es, run2 = (size_t)lead * es;
  for (int64_t row = 0; row < rows; row++) {
    int64_t src = 0;
    for (int d = 0; d < rank - 1; d++) {
      int64_t i = idx[d] + shift[d];
      if (i >= s->dims[d]) i -= s->dims[d];
      src += i * stride[d];
    }
    const char *from = (const char *)x->data + (size_t)src * es;
    char *to = (char *)y->data + (size_t)(row * inner) * es;
    memcpy(to, from + run2, run1);
    if (run2) memcpy(to + run1, from, run2);
    for (int d = rank - 2; d >= 0; d--) {
      if (++idx[d] < s->dims[d]) break;
      idx[d] = 0;
    }
  }
  return NULL;
}

static hl_status_t shuffle_permute(const hl_instruction_t *inst, const hl_literal_t *x,
                                   hl_literal_t *y) {
  const char *loc = hl_instruction_location(inst);
  const hl_shape_t *s = &x->shape;
  const hl_i64_list_t *dl = &inst->attrs.dimensions;
  const hl_literal_t *ix = inst->attrs.shuffle_indices;
  if (!ix) return HL_INVALID("%s: mode=permute needs indices=<literal>", loc);
  const hl_shape_t *is = &ix->shape;
  int rank = s->rank, k = dl->n;
  // With one shuffled dimension the coordinate axis may be left out.
  bool has_axis = is->rank == rank + 1;
  bool shape_ok = hl_shape_is_array(is) && hl_dtype_is_integer(is->dtype) &&
                  (has_axis ? is->dims[rank] == k : is->rank == rank && k == 1);
  for (int d = 0; shape_ok && d < rank; d++)
    shape_ok = is->dims[d] == s->dims[d] || is->dims[d] == 1;
  if (!shape_ok)
    return HL_INVALID("%s: indices %s do not fit operand %s with %d shuffled dimension(s): "
                      "expected an integer array of the operand's dimensions (or 1 to share a "
                      "coordinate) followed by a coordinate axis of size %d (which may be left "
                      "out when one dimension is shuffled)",
                      loc, HL_SHAPE_STR(is), HL_SHAPE_STR(s), k, k);
  if (!y->byte_size) return NULL;
  int64_t ostride[HL_MAX_RANK], istride[HL_MAX_RANK + 1];
  hl_shape_strides(s, ostride);
  hl_shape_strides(is, istride);
  // Index strides of the broadcast view: 0 along dimensions of size 1.
  int64_t bstride[HL_MAX_RANK];
  for (int d = 0; d < rank; d++) bstride[d] = is->dims[d] == 1 ? 0 : istride[d];
  int64_t axis_stride = has_axis ? istride[rank] : 0;
  // The indices widened once (and checked: coordinate j of every index
  // vector, the innermost position when the axis is present, names a
  // position along dimensions[j]).
  int64_t icount = hl_literal_element_count(ix);
  int64_t *iv = hl_malloc((size_t)(icount ? icount : 1) * sizeof(int64_t));
  if (!iv) return HL_OOM();
  for (int64_t e = 0; e < icount; e++) {
    int64_t d = dl->v[has_axis ? e % k : 0], v = hl_literal_get_s64(ix, e);
    if (v < 0 || v >= s->dims[d]) {
      hl_free(iv);
      return HL_INVALID("%s: index %lld for dimension %lld is out of range [0, %lld)", loc,
                        (long long)v, (long long)d, (long long)s->dims[d]);
    }
    iv[e] = v;
  }
  size_t es = hl_dtype_size(s->dtype);
  int64_t total = (int64_t)(y->byte_size / es);
  int64_t idx[HL_MAX_RANK] = {0};
  for (int64_t e = 0; e < total; e++) {
    int64_t src = 0, ioff = 0;
    for (int d = 0; d < rank; d++) {
      src += idx[d] * ostride[d];
      ioff += idx[d] * bstride[d];
    }
    for (int j = 0; j < k; j++) {
      int64_t d = dl->v[j];
      src += (iv[ioff + j * axis_stride] - idx[d]) * ostride[d];
    }
    memcpy((char *)y->data + (size_t)e * es, (const char *)x->data + (size_t)src * es, es);
    for (int d = rank - 1; d >= 0; d--) {
      if (++idx[d] < s->dims[d]) break;
      idx[d] = 0;
    }
  }
  hl_free(iv);
  return NULL;
}

hl_status_t hl_kernel_shuffle(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                              hl_literal_t *const *operands, hl_literal_t **out) {
  (void)ctx;
  const hl_literal_t *x = operands[0];
  const char *loc = hl_instruction_location(inst);
  if (!hl_shape_is_array(&x->shape) || !hl_shape_equal(&x->shape, &inst->shape))
    return HL_INVALID("%s: result %s must have the operand's shape %s", loc,
                      HL_SHAPE_STR(&inst->shape), HL_SHAPE_STR(&x->shape));
  HL_RETURN_IF_ERROR(check_dimensions(inst, &x->shape));
  hl_shuffle_mode_t mode = inst->attrs.shuffle_mode;
  if (mode != HL_SHUFFLE_ROTATE && mode != HL_SHUFFLE_PERMUTE)
    return HL_UNIMPL("%s: shuffle needs mode=rotate or mode=permute (a proto-loaded shuffle "
                     "carries no mode here)", loc);
  HL_RETURN_IF_ERROR(hl_literal_create_uninitialized(&inst->shape, out));
  hl_status_t st = mode == HL_SHUFFLE_ROTATE ? shuffle_rotate(inst, x, *out)
                                             : shuffle_permute(inst, x, *out);
  if (st) {
    hl_literal_release(*out);
    *out = NULL;
  }
  return st;
}
