// dynamic-slice and dynamic-update-slice. Start indices come either as one
// scalar operand per dimension or (legacy form) as one rank-1 vector; any
// integer type. Starts are clamped so the slice lies inside the operand, as
// the spec says: start = clamp(start, 0, dim - size).
#include <string.h>

#include "runtime/kernels/index_access.h"
#include "runtime/kernels/kernel.h"
#include "runtime/kernels/strided_copy.h"

// Reads the rank start indices beginning at operands[first] into starts
// (unclamped).
static hl_status_t read_starts(const hl_instruction_t *inst, hl_literal_t *const *operands,
                               int first, int rank, int64_t *starts) {
  int count = inst->operand_count - first;
  if (count == 1 && operands[first]->shape.rank == 1 && rank != 0) {
    const hl_literal_t *v = operands[first];
    if (!hl_index_type_ok(v->shape.dtype) || v->shape.dims[0] != rank)
      return HL_INVALID("start index vector is %s, expected an integer vector of %d elements",
                        hl_shape_debug_string(&v->shape), rank);
    for (int d = 0; d < rank; d++) starts[d] = hl_index_read(v->shape.dtype, v->data, d);
    return NULL;
  }
  if (count != rank)
    return HL_INVALID("%d start indices for an operand of rank %d", count, rank);
  for (int d = 0; d < rank; d++) {
    const hl_literal_t *s = operands[first + d];
    if (!hl_index_type_ok(s->shape.dtype) || s->shape.rank != 0)
      return HL_INVALID("start index %d is %s, expected an integer scalar", d,
                        hl_shape_debug_string(&s->shape));
    if (s->shape.dtype != operands[first]->shape.dtype)
      return HL_INVALID("start indices mix element types %s and %s",
                        hl_dtype_name(operands[first]->shape.dtype),
                        hl_dtype_name(s->shape.dtype));
    starts[d] = hl_index_read(s->shape.dtype, s->data, 0);
  }
  return NULL;
}

// dynamic-slice: result = operand[start : start + size] per dimension, sizes
// from dynamic_slice_sizes (or the result shape when absent).
hl_status_t hl_kernel_dynamic_slice(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                    hl_literal_t *const *operands, hl_literal_t **out) {
  const hl_literal_t *op = operands[0];
  const hl_shape_t *os = &op->shape, *rs = &inst->shape;
  if (!hl_shape_is_array(os) || !hl_shape_is_array(rs) || os->dtype != rs->dtype ||
      os->rank != rs->rank)
    return HL_INVALID("operand %s and result %s must be arrays of one element type and rank",
                      hl_shape_debug_string(os), hl_shape_debug_string(rs));
  const hl_i64_list_t *sizes = &inst->attrs.dynamic_slice_sizes;
  if (sizes->n != 0 && sizes->n != os->rank)
    return HL_INVALID("dynamic_slice_sizes has %d entries for rank %d", sizes->n, os->rank);
  int64_t starts[HL_MAX_RANK];
  HL_RETURN_IF_ERROR(read_starts(inst, operands, 1, os->rank, starts));
  int64_t ostr[HL_MAX_RANK], rstr[HL_MAX_RANK], off = 0;
  hl_shape_strides(os, ostr);
  hl_shape_strides(rs, rstr);
  for (int d = 0; d < os->rank; d++) {
    int64_t size = sizes->n ? sizes->v[d] : rs->dims[d];
    if (size != rs->dims[d] || size < 0 || size > os->dims[d])
      return HL_INVALID("slice size %lld of dimension %d does not fit operand %s / result %s",
                        (long long)size, d, hl_shape_debug_string(os), hl_shape_debug_string(rs));
    off += hl_index_clamp(starts[d], 0, os->dims[d] - size) * ostr[d];
  }
  HL_RETURN_IF_ERROR(hl_literal_create_uninitialized(rs, out));
  if (!(*out)->byte_size) return NULL;
  size_t es = hl_dtype_size(rs->dtype);
  hl_strided_copy((*out)->data, rstr, (const char *)op->data + off * (int64_t)es, ostr, rs->rank,
                  rs->dims, es);
  return NULL;
}

// dynamic-update-slice: the operand with update written at the clamped
// start. Takes the operand's buffer when it dies here.
hl_status_t hl_kernel_dynamic_update_slice(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                           hl_literal_t *const *operands, hl_literal_t **out) {
  hl_literal_t *op = operands[0];
  const hl_literal_t *up = operands[1];
  const hl_shape_t *os = &op->shape, *us = &up->shape, *rs = &inst->shape;
  if (!hl_shape_is_array(os) || !hl_shape_equal(os, rs))
    return HL_INVALID("result %s must equal the operand shape %s", hl_shape_debug_string(rs),
                      hl_shape_debug_string(os));
  if (!hl_shape_is_array(us) || us->dtype != os->dtype || us->rank != os->rank)
    return HL_INVALID("update %s must have the operand's element type and rank (%s)",
                      hl_shape_debug_string(us), hl_shape_debug_string(os));
  int64_t starts[HL_MAX_RANK];
  HL_RETURN_IF_ERROR(read_starts(inst, operands, 2, os->rank, starts));
  int64_t ostr[HL_MAX_RANK], ustr[HL_MAX_RANK], off = 0;
  hl_shape_strides(os, ostr);
  hl_shape_strides(us, ustr);
  for (int d = 0; d < os->rank; d++) {
    if (us->dims[d] > os->dims[d])
      return HL_INVALID("update dimension %d (size %lld) exceeds the operand's (%lld)", d,
                        (long long)us->dims[d], (long long)os->dims[d]);
    off += hl_index_clamp(starts[d], 0, os->dims[d] - us->dims[d]) * ostr[d];
  }
  HL_RETURN_IF_ERROR(hl_literal_create_uninitialized(rs, out));
  if (!(*out)->byte_size) return NULL;
  if (hl_kernel_operand_is_donatable(ctx, 0)) {
    void *fresh = (*out)->data;
    (*out)->data = op->data;
    op->data = fresh;
  } else {
    memcpy((*out)->data, op->data, op->byte_size);
  }
  if (!up->byte_size) return NULL;
  size_t es = hl_dtype_size(rs->dtype);
  hl_strided_copy((char *)(*out)->data + off * (int64_t)es, ostr, up->data, ustr, us->rank,
                  us->dims, es);
  return NULL;
}
