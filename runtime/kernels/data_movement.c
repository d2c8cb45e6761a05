// Data movement: broadcast, reshape, transpose, slice, concatenate, iota,
// copy, bitcast. None of them looks at element values, so they move
// elem_size-byte units and work for every dtype of runtime/base/dtype.h
// (iota is the exception: it writes numbers, converted per dtype).
//
// Broadcast, transpose and slice are one operation underneath: the result,
// written in row-major order, reads the operand at an affine offset with a
// stride per result dimension (0 for broadcast dimensions), copied by the
// kernels' one strided copy engine (strided_copy.h: merged runs copied with
// memcpy, broadcast runs filled, transposes tiled).
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/base/layout.h"
#include "runtime/kernels/kernel.h"
#include "runtime/kernels/kernel_scratch.h"
#include "runtime/kernels/strided_copy.h"
#include "runtime/threads/thread_pool.h"

//===----------------------------------------------------------------------===//
// Strided copy engine
//===----------------------------------------------------------------------===//

// Fills dst (row-major over dims) with src[sum_d index[d] * strides[d]].
// Strides are in elements; 0 repeats (broadcast).
static void strided_gather(void *dst, const void *src, size_t es, int rank, const int64_t *dims,
                           const int64_t *strides) {
  int64_t dstr[HL_MAX_RANK], acc = 1;
  for (int d = rank - 1; d >= 0; d--) {
    dstr[d] = acc;
    acc *= dims[d];
  }
  hl_strided_copy(dst, dstr, src, strides, rank, dims, es);
}

//===----------------------------------------------------------------------===//
// Shared checks
//===----------------------------------------------------------------------===//

static hl_status_t require_array(const hl_shape_t *s, const char *what) {
  if (!hl_shape_is_array(s))
    return HL_INVALID("%s must be an array, got %s", what, hl_shape_debug_string(s));
  return NULL;
}

// Operand and result are arrays of the same element type.
static hl_status_t check_same_dtype(const hl_instruction_t *inst, const hl_literal_t *op) {
  HL_RETURN_IF_ERROR(require_array(&op->shape, "operand"));
  HL_RETURN_IF_ERROR(require_array(&inst->shape, "result"));
  if (op->shape.dtype != inst->shape.dtype)
    return HL_INVALID("operand element type %s differs from result element type %s",
                      hl_dtype_name(op->shape.dtype), hl_dtype_name(inst->shape.dtype));
  return NULL;
}

// Large results are split along their major dimension over the thread pool
// (--threads); each part is the same strided copy of its rows.
typedef struct gather_split {
  char *dst;
  const char *src;
  size_t es;
  int rank;
  const int64_t *dims, *strides;
  int64_t row_elems, chunk;
} gather_split_t;

static void gather_task(void *arg, int64_t task, int worker) {
  const gather_split_t *g = arg;
  int64_t r0 = task * g->chunk, rows = g->dims[0] - r0 < g->chunk ? g->dims[0] - r0 : g->chunk;
  int64_t dims[HL_MAX_RANK];
  memcpy(dims, g->dims, sizeof(int64_t) * (size_t)g->rank);
  dims[0] = rows;
  strided_gather(g->dst + (size_t)(r0 * g->row_elems) * g->es,
                 g->src + (ptrdiff_t)(r0 * g->strides[0]) * (ptrdiff_t)g->es, g->es, g->rank,
                 dims, g->strides);
}

static hl_status_t gather_into_result(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                      const hl_literal_t *op, const int64_t *strides,
                                      int64_t offset, hl_literal_t **out) {
  HL_RETURN_IF_ERROR(hl_literal_create_uninitialized(&inst->shape, out));
  size_t es = hl_dtype_size(inst->shape.dtype);
  if (!(*out)->byte_size) return NULL;
  const char *src = (const char *)op->data + offset * (int64_t)es;
  const hl_exec_options_t *o = hl_kernel_options(ctx);
  int threads = hl_thread_pool_size(o ? o->pool : NULL);
  const hl_shape_t *s = &inst->shape;
  if (threads > 1 && s->rank >= 1 && s->dims[0] >= 2 * threads &&
      hl_shape_element_count(s) >= (INT64_C(1) << 16)) {
    gather_split_t g = {(*out)->data, src, es, s->rank, s->dims, strides,
                        hl_shape_element_count(s) / s->dims[0], 0};
    g.chunk = (s->dims[0] + 2 * threads - 1) / (2 * threads);
    hl_thread_pool_run(o->pool, (s->dims[0] + g.chunk - 1) / g.chunk, gather_task, &g);
    return NULL;
  }
  strided_gather((*out)->data, src, es, s->rank, s->dims, strides);
  return NULL;
}

// A fresh result holding operand 0's bytes: the operand's buffer itself when
// the executor says it dies here unshared (the result's fresh, untouched
// buffer goes to the dying operand instead), otherwise a copy.
static hl_status_t same_bytes_result(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                     hl_literal_t *op, hl_literal_t **out) {
  HL_RETURN_IF_ERROR(hl_literal_create_uninitialized(&inst->shape, out));
  if (!op->byte_size) return NULL;
  if ((*out)->byte_size == op->byte_size && hl_kernel_operand_is_donatable(ctx, 0)) {
    void *fresh = (*out)->data;
    (*out)->data = op->data;
    op->data = fresh;
  } else {
    memcpy((*out)->data, op->data, op->byte_size);
  }
  return NULL;
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

// broadcast: dimensions[i] is the result dimension that operand dimension i
// maps to; every other result dimension repeats the operand. An operand
// dimension of size 1 may also stretch (as in StableHLO broadcast_in_dim).
hl_status_t hl_kernel_broadcast(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                hl_literal_t *const *operands, hl_literal_t **out) {
  const hl_literal_t *op = operands[0];
  HL_RETURN_IF_ERROR(check_same_dtype(inst, op));
  const hl_i64_list_t *dm = &inst->attrs.dimensions;
  const hl_shape_t *os = &op->shape, *rs = &inst->shape;
  if (dm->n != os->rank)
    return HL_INVALID("dimensions has %d entries for an operand of rank %d", dm->n, os->rank);
  int64_t ostr[HL_MAX_RANK], str[HL_MAX_RANK] = {0};
  hl_shape_strides(os, ostr);
  bool used[HL_MAX_RANK] = {false};
  for (int i = 0; i < dm->n; i++) {
    int64_t d = dm->v[i];
    if (d < 0 || d >= rs->rank || used[d])
      return HL_INVALID("dimensions[%d] = %lld is out of range or repeated for a result of rank %d",
                        i, (long long)d, rs->rank);
    used[d] = true;
    if (os->dims[i] == rs->dims[d])
      str[d] = ostr[i];
    else if (os->dims[i] != 1)
      return HL_INVALID("operand dimension %d (size %lld) does not match result dimension %lld "
                        "(size %lld)",
                        i, (long long)os->dims[i], (long long)d, (long long)rs->dims[d]);
  }
  return gather_into_result(ctx, inst, op, str, 0, out);
}

// reshape: same elements in row-major order, new dimensions.
hl_status_t hl_kernel_reshape(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                              hl_literal_t *const *operands, hl_literal_t **out) {
  const hl_literal_t *op = operands[0];
  HL_RETURN_IF_ERROR(check_same_dtype(inst, op));
  int64_t n_in = hl_shape_element_count(&op->shape), n_out = hl_shape_element_count(&inst->shape);
  if (n_in != n_out)
    return HL_INVALID("cannot reshape %lld elements into %lld", (long long)n_in,
                      (long long)n_out);
  return same_bytes_result(ctx, inst, operands[0], out);
}

// transpose: result dimension i is operand dimension dimensions[i].
hl_status_t hl_kernel_transpose(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                hl_literal_t *const *operands, hl_literal_t **out) {
  const hl_literal_t *op = operands[0];
  HL_RETURN_IF_ERROR(check_same_dtype(inst, op));
  const hl_i64_list_t *perm = &inst->attrs.dimensions;
  const hl_shape_t *os = &op->shape, *rs = &inst->shape;
  if (perm->n != os->rank || rs->rank != os->rank)
    return HL_INVALID("dimensions has %d entries for operand rank %d and result rank %d", perm->n,
                      os->rank, rs->rank);
  int64_t ostr[HL_MAX_RANK], str[HL_MAX_RANK];
  hl_shape_strides(os, ostr);
  bool seen[HL_MAX_RANK] = {false};
  for (int i = 0; i < perm->n; i++) {
    int64_t p = perm->v[i];
    if (p < 0 || p >= os->rank || seen[p]) return HL_INVALID("dimensions is not a permutation");
    seen[p] = true;
  }
  for (int i = 0; i < perm->n; i++) {
    int64_t p = perm->v[i];
    if (rs->dims[i] != os->dims[p])
      return HL_INVALID("result dimension %d has size %lld, operand dimension %lld has %lld", i,
                        (long long)rs->dims[i], (long long)p, (long long)os->dims[p]);
    str[i] = ostr[p];
  }
  return gather_into_result(ctx, inst, op, str, 0, out);
}

// slice: per dimension, elements start, start+stride, ... below limit.
hl_status_t hl_kernel_slice(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                            hl_literal_t *const *operands, hl_literal_t **out) {
  const hl_literal_t *op = operands[0];
  HL_RETURN_IF_ERROR(check_same_dtype(inst, op));
  const hl_shape_t *os = &op->shape, *rs = &inst->shape;
  if (inst->attrs.slice_count != os->rank || rs->rank != os->rank)
    return HL_INVALID("slice has %d dimensions for operand rank %d and result rank %d",
                      inst->attrs.slice_count, os->rank, rs->rank);
  int64_t ostr[HL_MAX_RANK], str[HL_MAX_RANK], offset = 0;
  hl_shape_strides(os, ostr);
  for (int d = 0; d < os->rank; d++) {
    const hl_slice_dim_t *sd = &inst->attrs.slice_dimensions[d];
    int64_t stride = sd->stride;
    if (sd->start < 0 || sd->limit < sd->start || sd->limit > os->dims[d] || stride < 1)
      return HL_INVALID("slice [%lld:%lld:%lld] out of bounds for dimension %d of size %lld",
                        (long long)sd->start, (long long)sd->limit, (long long)stride, d,
                        (long long)os->dims[d]);
    int64_t count = sd->limit == sd->start ? 0 : (sd->limit - sd->start - 1) / stride + 1;
    if (count != rs->dims[d])
      return HL_INVALID("slice [%lld:%lld:%lld] of dimension %d has %lld elements, result has %lld",
                        (long long)sd->start, (long long)sd->limit, (long long)stride, d,
                        (long long)count, (long long)rs->dims[d]);
    offset += sd->start * ostr[d];
    str[d] = ostr[d] * stride;
  }
  return gather_into_result(ctx, inst, op, str, offset, out);
}

// concatenate: operands joined along dimensions[0].
hl_status_t hl_kernel_concatenate(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                  hl_literal_t *const *operands, hl_literal_t **out) {
  const hl_shape_t *rs = &inst->shape;
  HL_RETURN_IF_ERROR(require_array(rs, "result"));
  if (inst->operand_count < 1) return HL_INVALID("needs at least one operand");
  if (inst->attrs.dimensions.n != 1)
    return HL_INVALID("dimensions must have exactly one entry, has %d", inst->attrs.dimensions.n);
  int64_t cd = inst->attrs.dimensions.v[0];
  if (cd < 0 || cd >= rs->rank)
    return HL_INVALID("concatenate dimension %lld out of range for rank %d", (long long)cd,
                      rs->rank);
  int64_t total = 0;
  for (int k = 0; k < inst->operand_count; k++) {
    const hl_shape_t *os = &operands[k]->shape;
    if (!hl_shape_is_array(os) || os->dtype != rs->dtype || os->rank != rs->rank)
      return HL_INVALID("operand %d is %s, result is %s", k, hl_shape_debug_string(os),
                        hl_dtype_name(rs->dtype));
    for (int d = 0; d < rs->rank; d++)
      if (d != cd && os->dims[d] != rs->dims[d])
        return HL_INVALID("operand %d dimension %d has size %lld, result has %lld", k, d,
                          (long long)os->dims[d], (long long)rs->dims[d]);
    total += os->dims[cd];
  }
  if (total != rs->dims[cd])
    return HL_INVALID("operands add up to %lld along dimension %lld, result has %lld",
                      (long long)total, (long long)cd, (long long)rs->dims[cd]);
  HL_RETURN_IF_ERROR(hl_literal_create_uninitialized(rs, out));
  if (!(*out)->byte_size) return NULL;
  size_t es = hl_dtype_size(rs->dtype);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < cd; d++) outer *= rs->dims[d];
  for (int d = (int)cd + 1; d < rs->rank; d++) inner *= rs->dims[d];
  char *dst = (*out)->data;
  for (int64_t o = 0; o < outer; o++)
    for (int k = 0; k < inst->operand_count; k++) {
      size_t chunk = (size_t)(operands[k]->shape.dims[cd] * inner) * es;
      if (!chunk) continue;
      memcpy(dst, (const char *)operands[k]->data + (size_t)o * chunk, chunk);
      dst += chunk;
    }
  return NULL;
}

// Encodes the number v as one element of dtype into buf (integers exactly,
// floats rounded as hl_literal_set_f64 does). False for dtypes without a
// conversion (f8 / f4 variants).
static bool encode_number(hl_dtype_t dtype, int64_t v, void *buf) {
  switch (dtype) {
    case HL_S8: *(int8_t *)buf = (int8_t)v; return true;
    case HL_U8: *(uint8_t *)buf = (uint8_t)v; return true;
    case HL_S16: *(int16_t *)buf = (int16_t)v; return true;
    case HL_U16: *(uint16_t *)buf = (uint16_t)v; return true;
    case HL_S32: *(int32_t *)buf = (int32_t)v; return true;
    case HL_U32: *(uint32_t *)buf = (uint32_t)v; return true;
    case HL_S64: *(int64_t *)buf = v; return true;
    case HL_U64: *(uint64_t *)buf = (uint64_t)v; return true;
    // Sub-byte ints wrap to their width and the f8 / f4 types round, both
    // through hl_literal_set_f64 (runtime/base/minifloat.h).
    case HL_S4: case HL_S2: case HL_S1: case HL_U4: case HL_U2: case HL_U1:
    case HL_F8E5M2: case HL_F8E4M3: case HL_F8E3M4: case HL_F8E4M3FN: case HL_F8E4M3FNUZ:
    case HL_F8E5M2FNUZ: case HL_F8E4M3B11FNUZ: case HL_F4E2M1FN: case HL_F8E8M0FNU:
    case HL_F6E2M3FN: case HL_F6E3M2FN:
    case HL_PRED: case HL_F16: case HL_BF16: case HL_F32: case HL_F64: case HL_C64:
    case HL_C128: {
      hl_literal_t one;
      memset(&one, 0, sizeof(one));
      one.shape.dtype = dtype;
      one.data = buf;
      hl_literal_set_f64(&one, 0, (double)v);
      return true;
    }
    default: return false;
  }
}

// iota: each element is its index along dimensions[0] (iota_dimension).
hl_status_t hl_kernel_iota(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                           hl_literal_t *const *operands, hl_literal_t **out) {
  const hl_shape_t *rs = &inst->shape;
  HL_RETURN_IF_ERROR(require_array(rs, "result"));
  if (inst->attrs.dimensions.n != 1)
    return HL_INVALID("needs one iota_dimension, has %d", inst->attrs.dimensions.n);
  int64_t id = inst->attrs.dimensions.v[0];
  if (id < 0 || id >= rs->rank)
    return HL_INVALID("iota_dimension %lld out of range for rank %d", (long long)id, rs->rank);
  unsigned char probe[16];
  if (!encode_number(rs->dtype, 0, probe))
    return HL_UNIMPL("iota of element type %s is not supported", hl_dtype_name(rs->dtype));
  HL_RETURN_IF_ERROR(hl_literal_create_uninitialized(rs, out));
  if (!(*out)->byte_size) return NULL;
  size_t es = hl_dtype_size(rs->dtype);
  int64_t outer = 1, inner = 1, n = rs->dims[id];
  for (int d = 0; d < id; d++) outer *= rs->dims[d];
  for (int d = (int)id + 1; d < rs->rank; d++) inner *= rs->dims[d];
  char *dst = (*out)->data;
  for (int64_t i = 0; i < n; i++) {
    unsigned char elem[16];
    encode_number(rs->dtype, i, elem);
    hl_fill_elements(dst + (size_t)(i * inner) * es, elem, es, inner);
  }
  size_t block = (size_t)(n * inner) * es;
  for (int64_t o = 1; o < outer; o++) memcpy(dst + (size_t)o * block, dst, block);
  return NULL;
}

// copy: the operand itself. A copy to another layout changes only how XLA
// stores the array, never its logical values, and every buffer here is
// logical row-major, so it is the identity and needs no new buffer.
hl_status_t hl_kernel_copy(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                           hl_literal_t *const *operands, hl_literal_t **out) {
  *out = hl_literal_retain(operands[0]);
  return NULL;
}

// bitcast: XLA reinterprets the operand's physical bytes (docs/LAYOUTS.md).
// The operand's elements, read in its layout's major-to-minor order, are the
// bytes the result's layout order reads back. Buffers here are logical
// row-major, so this is: operand -> physical stream (a transpose by its
// layout) -> result in its physical order -> logical row-major (the inverse
// transpose). Layouts are the instructions' own (the program's), not the
// literals'. When both physical orders are row-major it is a reshape.
static void to_physical(void *dst, const void *src, const hl_shape_t *s, size_t es) {
  int64_t mtm[HL_MAX_RANK], dims[HL_MAX_RANK], rstr[HL_MAX_RANK], str[HL_MAX_RANK];
  hl_layout_major_to_minor(s, mtm);
  hl_shape_strides(s, rstr);
  for (int k = 0; k < s->rank; k++) {
    dims[k] = s->dims[mtm[k]];
    str[k] = rstr[mtm[k]];
  }
  strided_gather(dst, src, es, s->rank, dims, str);
}

static void from_physical(void *dst, const void *src, const hl_shape_t *s, size_t es) {
  int64_t mtm[HL_MAX_RANK], pstr[HL_MAX_RANK], str[HL_MAX_RANK], acc = 1;
  hl_layout_major_to_minor(s, mtm);
  for (int k = s->rank - 1; k >= 0; k--) {
    pstr[k] = acc;
    acc *= s->dims[mtm[k]];
  }
  for (int k = 0; k < s->rank; k++) str[mtm[k]] = pstr[k];
  strided_gather(dst, src, es, s->rank, s->dims, str);
}

// A bitcast between sub-byte types of one width (s4 -> u4, ...) keeps each
// element's low bits; the result type's own in-memory form is then restored
// (signed kept sign-extended in its byte, unsigned and f4 zero-extended).
static void retype_sub_byte(hl_literal_t *y, hl_dtype_t from) {
  int bits = hl_dtype_bit_width(y->shape.dtype);
  if (y->shape.dtype == from || bits >= 8) return;
  uint8_t mask = (uint8_t)((1u << bits) - 1), sign = (uint8_t)(1u << (bits - 1));
  bool is_signed = hl_dtype_is_signed_int(y->shape.dtype);
  uint8_t *v = y->data;
  for (size_t i = 0; i < y->byte_size; i++) {
    uint8_t b = v[i] & mask;
    v[i] = is_signed && (b & sign) ? (uint8_t)(b | ~mask) : b;
  }
}

hl_status_t hl_kernel_bitcast(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                              hl_literal_t *const *operands, hl_literal_t **out) {
  hl_literal_t *op = operands[0];
  HL_RETURN_IF_ERROR(require_array(&op->shape, "operand"));
  HL_RETURN_IF_ERROR(require_array(&inst->shape, "result"));
  const hl_shape_t *os = inst->operand_count > 0 && inst->operands[0]
                             ? &inst->operands[0]->shape : &op->shape;
  const hl_shape_t *rs = &inst->shape;
  if (!hl_shape_same_dims(os, &op->shape) || os->dtype != op->shape.dtype)
    return HL_INTERNAL_ERROR("operand value %s does not have the operand's shape %s",
                             hl_shape_debug_string(&op->shape), hl_shape_debug_string(os));
  HL_RETURN_IF_ERROR(hl_layout_check_bitcast(os, rs));
  int64_t bytes = hl_shape_byte_size(rs);
  if (bytes != (int64_t)op->byte_size)
    return HL_INVALID("operand %s has %zu bytes in memory, result %s has %lld",
                      hl_shape_debug_string(os), op->byte_size, hl_shape_debug_string(rs),
                      (long long)bytes);
  if (hl_layout_is_row_major_order(os) && hl_layout_is_row_major_order(rs)) {
    HL_RETURN_IF_ERROR(same_bytes_result(ctx, inst, op, out));
    retype_sub_byte(*out, os->dtype);
    return NULL;
  }
  size_t oes = hl_dtype_size(os->dtype), res = hl_dtype_size(rs->dtype);
  void *phys = NULL;
  const void *stream = op->data;
  if (!hl_layout_is_row_major_order(os)) {
    phys = hl_malloc(op->byte_size ? op->byte_size : 1);
    if (!phys) return HL_OOM();
    to_physical(phys, op->data, os, oes);
    stream = phys;
  }
  hl_status_t st = hl_literal_create_uninitialized(rs, out);
  if (!st && bytes > 0) {
    if (hl_layout_is_row_major_order(rs))
      memcpy((*out)->data, stream, (size_t)bytes);
    else
      from_physical((*out)->data, stream, rs, res);
    retype_sub_byte(*out, os->dtype);
  }
  hl_free(phys);
  return st;
}

// A bitcast from a column-major (or other) layout gathers the operand's
// physical bytes into a copy first (kernel_scratch.h).
void hl_bitcast_scratch(const hl_instruction_t *inst, hl_kernel_scratch_t *out) {
  out->count = 0;
  if (inst->operand_count != 1 || !hl_shape_is_array(&inst->operands[0]->shape)) return;
  const hl_shape_t *os = &inst->operands[0]->shape;
  if (hl_layout_is_row_major_order(os) && hl_layout_is_row_major_order(&inst->shape)) return;
  if (!hl_layout_is_row_major_order(os)) hl_kernel_scratch_add(out, hl_shape_byte_size(os));
}
