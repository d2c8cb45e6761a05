// Operand and result buffers of a custom-call in their declared layouts.
#include "runtime/custom_calls/frame.h"

#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/kernels/element_access.h"

int64_t hl_cc_dims_product(const hl_cc_buffer_t *b, int from, int to) {
  int64_t n = 1;
  for (int i = from; i < to; i++) n *= b->dims[i];
  return n;
}

// Checks that m2m is a permutation of 0..rank-1.
static hl_status_t check_layout(const hl_custom_call_t *call, const hl_shape_t *s,
                                const char *what, int index) {
  if (!s->has_layout) return NULL;
  unsigned seen = 0;
  for (int i = 0; i < s->rank; i++) {
    int64_t d = s->minor_to_major[i];
    if (d < 0 || d >= s->rank || (seen & (1u << d)))
      return HL_INVALID("%s: custom-call \"%s\" %s %d has the layout %s, which is not a "
                        "permutation of its dimensions", hl_instruction_location(call->inst),
                        call->name, what, index, HL_SHAPE_STR(s));
    seen |= 1u << d;
  }
  return NULL;
}

static bool is_default_layout(const hl_cc_buffer_t *b) {
  for (int i = 0; i < b->rank; i++)
    if (b->minor_to_major[i] != b->rank - 1 - i) return false;
  return true;
}

// Copies between row-major (logical) and the buffer's layout. to_layout:
// logical -> layout; else layout -> logical.
static void relayout(const hl_cc_buffer_t *b, void *dst, const void *src, bool to_layout) {
  size_t es = hl_dtype_size(b->dtype);
  if (is_default_layout(b) || b->count <= 1) {
    memcpy(dst, src, (size_t)b->count * es);
    return;
  }
  int r = b->rank;
  int64_t logical_stride[HL_MAX_RANK], idx[HL_MAX_RANK] = {0};
  int64_t st = 1;
  for (int i = r - 1; i >= 0; i--) {
    logical_stride[i] = st;
    st *= b->dims[i];
  }
  // Walk the layout's memory in order (the minor-most dimension fastest) and
  // track the matching logical offset.
  int64_t logical = 0;
  const char *s = src;
  char *d = dst;
  for (int64_t phys = 0; phys < b->count; phys++) {
    if (to_layout)
      memcpy(d + (size_t)phys * es, s + (size_t)logical * es, es);
    else
      memcpy(d + (size_t)logical * es, s + (size_t)phys * es, es);
    for (int k = 0; k < r; k++) {
      int64_t dim = b->minor_to_major[k];
      if (++idx[dim] < b->dims[dim]) {
        logical += logical_stride[dim];
        break;
      }
      logical -= (b->dims[dim] - 1) * logical_stride[dim];
      idx[dim] = 0;
    }
  }
}

static hl_status_t buffer_init(hl_cc_buffer_t *b, const hl_shape_t *dims_shape,
                               const hl_shape_t *layout_shape) {
  b->dtype = dims_shape->dtype;
  b->rank = dims_shape->rank;
  memcpy(b->dims, dims_shape->dims, sizeof(b->dims));
  for (int i = 0; i < b->rank; i++)
    b->minor_to_major[i] = (layout_shape && layout_shape->has_layout)
                               ? layout_shape->minor_to_major[i] : b->rank - 1 - i;
  b->count = hl_shape_element_count(dims_shape);
  size_t bytes = (size_t)b->count * hl_dtype_size(b->dtype);
  b->data = hl_calloc(bytes ? bytes : 1, 1);
  return b->data ? NULL : HL_OOM();
}

hl_status_t hl_cc_frame_init(const hl_custom_call_t *call, hl_cc_frame_t *f) {
  memset(f, 0, sizeof(*f));
  const hl_instruction_t *inst = call->inst;
  const hl_attrs_t *a = &inst->attrs;
  int n = inst->operand_count;
  if (a->operand_shapes_with_layout_count > 0 && a->operand_shapes_with_layout_count != n)
    return HL_INVALID("%s: custom-call \"%s\" has %d operand_layout_constraints for %d operands",
                      hl_instruction_location(inst), call->name,
                      a->operand_shapes_with_layout_count, n);
  const hl_shape_t *rs = &inst->shape;
  int nr = rs->dtype == HL_TUPLE ? rs->tuple_count : 1;
  f->args = hl_calloc((size_t)(n ? n : 1), sizeof(hl_cc_buffer_t));
  f->rets = hl_calloc((size_t)(nr ? nr : 1), sizeof(hl_cc_buffer_t));
  if (!f->args || !f->rets) return HL_OOM();
  for (int i = 0; i < n; i++) {
    const hl_shape_t *os = &call->operands[i]->shape;
    if (!hl_shape_is_array(os))
      return HL_UNIMPL("%s: custom-call \"%s\" operand %d is %s; only array operands are "
                       "supported", hl_instruction_location(inst), call->name, i,
                       HL_SHAPE_STR(os));
    const hl_shape_t *ls = a->operand_shapes_with_layout_count > 0
                               ? &a->operand_shapes_with_layout[i] : &inst->operands[i]->shape;
    if (a->operand_shapes_with_layout_count > 0 && !hl_shape_same_dims(ls, os))
      return HL_INVALID("%s: custom-call \"%s\" operand %d is %s but its layout constraint is %s",
                        hl_instruction_location(inst), call->name, i, HL_SHAPE_STR(os),
                        HL_SHAPE_STR(ls));
    HL_RETURN_IF_ERROR(check_layout(call, ls, "operand", i));
    HL_RETURN_IF_ERROR(buffer_init(&f->args[i], os, ls));
    f->arg_count = i + 1;
    relayout(&f->args[i], f->args[i].data, call->operands[i]->data, true);
  }
  for (int i = 0; i < nr; i++) {
    const hl_shape_t *s = rs->dtype == HL_TUPLE ? &rs->tuple[i] : rs;
    if (!hl_shape_is_array(s))
      return HL_UNIMPL("%s: custom-call \"%s\" result %d is %s; only array results are "
                       "supported", hl_instruction_location(inst), call->name, i,
                       HL_SHAPE_STR(s));
    HL_RETURN_IF_ERROR(check_layout(call, s, "result", i));
    HL_RETURN_IF_ERROR(buffer_init(&f->rets[i], s, s));
    f->ret_count = i + 1;
  }
  // output_operand_aliases: under XLA the result IS the operand's buffer, so
  // a target may update it in place; it starts as the operand's values.
  for (int k = 0; k < a->output_operand_alias_count; k++) {
    const hl_output_operand_alias_t *al = &a->output_operand_aliases[k];
    if (al->output < 0 || al->output >= nr || al->operand < 0 || al->operand >= n ||
        f->rets[al->output].count != f->args[al->operand].count ||
        f->rets[al->output].dtype != f->args[al->operand].dtype)
      return HL_INVALID("%s: custom-call \"%s\" aliases result %d with operand %d of another "
                        "shape", hl_instruction_location(inst), call->name, al->output,
                        al->operand);
    relayout(&f->rets[al->output], f->rets[al->output].data, call->operands[al->operand]->data,
             true);
  }
  return NULL;
}

hl_status_t hl_cc_frame_finish(const hl_custom_call_t *call, const hl_cc_frame_t *f,
                               hl_literal_t **out) {
  *out = NULL;
  const hl_shape_t *rs = &call->inst->shape;
  hl_literal_t *parts[64] = {NULL};
  if (f->ret_count > 64)
    return HL_UNIMPL("%s: custom-call \"%s\" has %d results; at most 64 are supported",
                     hl_instruction_location(call->inst), call->name, f->ret_count);
  hl_status_t st = NULL;
  for (int i = 0; i < f->ret_count && !st; i++) {
    const hl_shape_t *s = rs->dtype == HL_TUPLE ? &rs->tuple[i] : rs;
    st = hl_literal_create_uninitialized(s, &parts[i]);
    if (!st) relayout(&f->rets[i], parts[i]->data, f->rets[i].data, false);
  }
  if (!st) {
    if (rs->dtype == HL_TUPLE) {
      st = hl_literal_create_tuple(parts, f->ret_count, out);
    } else {
      *out = parts[0];
      parts[0] = NULL;
    }
  }
  for (int i = 0; i < f->ret_count; i++) hl_literal_release(parts[i]);
  return st;
}

void hl_cc_frame_deinit(hl_cc_frame_t *f) {
  for (int i = 0; i < f->arg_count; i++) hl_free(f->args[i].data);
  for (int i = 0; i < f->ret_count; i++) hl_free(f->rets[i].data);
  hl_free(f->args);
  hl_free(f->rets);
  memset(f, 0, sizeof(*f));
}
