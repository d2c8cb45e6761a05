// scan (inputs..., inits...): a sequential loop over one dimension of the
// inputs, as XLA's ScanExpander lowers it (xla/service/scan_expander.cc):
//
//   carries = inits
//   for i in 0..N-1 (N-1..0 when is_reverse):
//     (outs..., carries...) = to_apply(input_0[.., i, ..], ..., carries...)
//     output_j[.., i, ..] = outs_j
//   result = (output_0, ..., carries...)
//
// The last num_carries operands are the initial carries; the others are the
// inputs, each sliced at position i of dimensions={d} (that dimension removed).
// to_apply returns a tuple (outputs..., new carries...), or one array when
// there is a single output and no carry (or no output and a single carry).
// Output j has the shape of to_apply's output j with N inserted at d. The
// result is a tuple (outputs..., final carries...) unless it has one element.
// is_associative only allows a backend to reorder the combiner; the value is
// the sequential scan's, which is what is computed here. N = 0 gives empty
// outputs and the inits as the final carries.
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/kernels/element_access.h"
#include "runtime/kernels/kernel.h"

#define SCAN_MAX_VALUES 64

typedef struct scan_plan {
  int num_inputs, num_carries, num_outputs;
  int dim;
  int64_t length;                           // N, the size of the scanned dimension
  hl_shape_t slice[SCAN_MAX_VALUES];        // each input without dimension d
  const hl_shape_t *out[SCAN_MAX_VALUES];   // result outputs (array shapes)
  const hl_shape_t *carry[SCAN_MAX_VALUES]; // result carries
} scan_plan_t;

static hl_shape_t drop_dim(const hl_shape_t *s, int d) {
  hl_shape_t r = hl_shape_scalar(s->dtype);
  for (int i = 0; i < s->rank; i++)
    if (i != d) r.dims[r.rank++] = s->dims[i];
  return r;
}

// The element of a result shape (the result itself when it is not a tuple).
static const hl_shape_t *result_element(const hl_shape_t *r, int i) {
  return hl_shape_is_tuple(r) ? &r->tuple[i] : r;
}

static hl_status_t plan_scan(const hl_instruction_t *inst, hl_literal_t *const *operands,
                             scan_plan_t *p) {
  const char *loc = hl_instruction_location(inst);
  const hl_attrs_t *a = &inst->attrs;
  int n = inst->operand_count;
  if (n > SCAN_MAX_VALUES) return HL_UNIMPL("%s: scan with %d operands", loc, n);
  if (a->num_carries < 0 || a->num_carries > n)
    return HL_INVALID("%s: num_carries=%lld must be between 0 and the operand count %d", loc,
                      (long long)a->num_carries, n);
  p->num_carries = (int)a->num_carries;
  p->num_inputs = n - p->num_carries;
  if (p->num_inputs < 1)
    return HL_INVALID("%s: scan needs at least one input before its %d carries", loc,
                      p->num_carries);
  if (a->dimensions.n != 1)
    return HL_INVALID("%s: dimensions must name exactly one scan dimension, has %d", loc,
                      a->dimensions.n);
  int64_t d = a->dimensions.v[0];
  for (int i = 0; i < p->num_inputs; i++) {
    const hl_shape_t *s = &operands[i]->shape;
    if (!hl_shape_is_array(s))
      return HL_INVALID("%s: input %d is %s, expected an array", loc, i, HL_SHAPE_STR(s));
    if (d < 0 || d >= s->rank)
      return HL_INVALID("%s: scan dimension %lld is out of range for input %d %s", loc,
                        (long long)d, i, HL_SHAPE_STR(s));
    if (i == 0) p->length = s->dims[d];
    if (s->dims[d] != p->length)
      return HL_INVALID("%s: input %d has %lld elements along dimension %lld, input 0 has %lld",
                        loc, i, (long long)s->dims[d], (long long)d, (long long)p->length);
    p->slice[i] = drop_dim(s, (int)d);
  }
  p->dim = (int)d;
  const hl_shape_t *r = &inst->shape;
  int results = hl_shape_is_tuple(r) ? r->tuple_count : 1;
  p->num_outputs = results - p->num_carries;
  if (p->num_outputs < 0)
    return HL_INVALID("%s: result %s has fewer elements than num_carries=%d", loc,
                      HL_SHAPE_STR(r), p->num_carries);
  for (int j = 0; j < p->num_outputs; j++) {
    const hl_shape_t *o = result_element(r, j);
    if (!hl_shape_is_array(o) || o->rank <= p->dim || o->dims[p->dim] != p->length)
      return HL_INVALID("%s: output %d is %s, expected an array with %lld elements along "
                        "dimension %d",
                        loc, j, HL_SHAPE_STR(o), (long long)p->length, p->dim);
    p->out[j] = o;
  }
  for (int j = 0; j < p->num_carries; j++) {
    const hl_shape_t *c = result_element(r, p->num_outputs + j);
    const hl_shape_t *init = &operands[p->num_inputs + j]->shape;
    if (!hl_shape_equal(c, init))
      return HL_INVALID("%s: carry %d of the result is %s, its init is %s", loc, j,
                        HL_SHAPE_STR(c), HL_SHAPE_STR(init));
    p->carry[j] = c;
  }
  return NULL;
}

// Bytes of one row (everything after dimension d) and rows before it.
static void split_at(const hl_shape_t *s, int d, int64_t *outer, int64_t *inner_bytes) {
  int64_t o = 1, in = (int64_t)hl_dtype_size(s->dtype);
  for (int i = 0; i < d; i++) o *= s->dims[i];
  for (int i = d + 1; i < s->rank; i++) in *= s->dims[i];
  *outer = o;
  *inner_bytes = in;
}

// dst (dimension d removed) = src[.., at, ..]; or the reverse when `store`.
static void move_slice(hl_literal_t *full, hl_literal_t *part, int d, int64_t at, bool store) {
  int64_t outer, inner;
  split_at(&full->shape, d, &outer, &inner);
  int64_t n = full->shape.dims[d];
  if (inner == 0) return;
  for (int64_t o = 0; o < outer; o++) {
    char *f = (char *)full->data + (o * n + at) * inner;
    char *q = (char *)part->data + o * inner;
    if (store) memcpy(f, q, (size_t)inner);
    else memcpy(q, f, (size_t)inner);
  }
}

// Splits to_apply's value into outputs and carries (borrowed from `v`).
static hl_status_t unpack_step(const char *loc, const scan_plan_t *p, hl_literal_t *v,
                               hl_literal_t **outs, hl_literal_t **carries) {
  int want = p->num_outputs + p->num_carries;
  if (hl_shape_is_tuple(&v->shape)) {
    if (v->shape.tuple_count != want)
      return HL_INVALID("%s: to_apply returned %d values, expected %d outputs and %d carries",
                        loc, v->shape.tuple_count, p->num_outputs, p->num_carries);
    for (int j = 0; j < p->num_outputs; j++) outs[j] = v->elements[j];
    for (int j = 0; j < p->num_carries; j++) carries[j] = v->elements[p->num_outputs + j];
  } else {
    if (want != 1)
      return HL_INVALID("%s: to_apply returned %s, expected a tuple of %d outputs and %d "
                        "carries",
                        loc, HL_SHAPE_STR(&v->shape), p->num_outputs, p->num_carries);
    if (p->num_outputs) outs[0] = v;
    else carries[0] = v;
  }
  for (int j = 0; j < p->num_outputs; j++) {
    hl_shape_t want_out = drop_dim(p->out[j], p->dim);
    if (!hl_shape_is_array(&outs[j]->shape) || outs[j]->shape.dtype != want_out.dtype ||
        !hl_shape_same_dims(&outs[j]->shape, &want_out))
      return HL_INVALID("%s: to_apply output %d is %s, expected %s (result output %s without "
                        "dimension %d)",
                        loc, j, HL_SHAPE_STR(&outs[j]->shape), HL_SHAPE_STR(&want_out),
                        HL_SHAPE_STR(p->out[j]), p->dim);
  }
  for (int j = 0; j < p->num_carries; j++)
    if (!hl_shape_equal(&carries[j]->shape, p->carry[j]))
      return HL_INVALID("%s: to_apply carry %d is %s, expected %s", loc, j,
                        HL_SHAPE_STR(&carries[j]->shape), HL_SHAPE_STR(p->carry[j]));
  return NULL;
}

hl_status_t hl_kernel_scan(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                           hl_literal_t *const *operands, hl_literal_t **out) {
  *out = NULL;
  const char *loc = hl_instruction_location(inst);
  scan_plan_t p;
  HL_RETURN_IF_ERROR(plan_scan(inst, operands, &p));
  const hl_computation_t *body = hl_instruction_to_apply(inst);
  if (!body) return HL_INVALID("%s: scan has no to_apply computation", loc);
  if (body->parameter_count != p.num_inputs + p.num_carries)
    return HL_INVALID("%s: to_apply '%s' takes %d parameters, expected %d inputs + %d carries",
                      loc, body->name, body->parameter_count, p.num_inputs, p.num_carries);

  hl_literal_t *args[SCAN_MAX_VALUES] = {0};   // slices, then the current carries (owned)
  hl_literal_t *outputs[SCAN_MAX_VALUES] = {0};
  hl_status_t st = NULL;
  for (int i = 0; i < p.num_inputs && !st; i++)
    st = hl_literal_create_uninitialized(&p.slice[i], &args[i]);
  for (int j = 0; j < p.num_carries; j++)
    args[p.num_inputs + j] = hl_literal_retain(operands[p.num_inputs + j]);
  // Zero-filled like the expander's broadcast(0), though every row is written.
  for (int j = 0; j < p.num_outputs && !st; j++) st = hl_literal_create(p.out[j], &outputs[j]);

  for (int64_t step = 0; step < p.length && !st; step++) {
    int64_t at = inst->attrs.is_reverse ? p.length - 1 - step : step;
    for (int i = 0; i < p.num_inputs; i++) {
      // The callee may have kept a reference to last step's slice (it may
      // return a parameter): refill only a slice nobody else holds.
      if (args[i]->refcount > 1) {
        hl_literal_t *fresh = NULL;
        st = hl_literal_create_uninitialized(&p.slice[i], &fresh);
        if (st) break;
        hl_literal_release(args[i]);
        args[i] = fresh;
      }
      move_slice(operands[i], args[i], p.dim, at, false);
    }
    if (st) break;
    hl_literal_t *v = NULL;
    st = hl_kernel_call_computation(ctx, body, args, p.num_inputs + p.num_carries, &v);
    if (st) {
      st = hl_status_annotate(st, "%s: to_apply '%s' at scan index %lld", loc, body->name,
                                 (long long)at);
      break;
    }
    hl_literal_t *step_out[SCAN_MAX_VALUES], *step_carry[SCAN_MAX_VALUES];
    st = unpack_step(loc, &p, v, step_out, step_carry);
    if (!st) {
      for (int j = 0; j < p.num_outputs; j++)
        move_slice(outputs[j], step_out[j], p.dim, at, true);
      for (int j = 0; j < p.num_carries; j++) {
        hl_literal_t *c = hl_literal_retain(step_carry[j]);
        hl_literal_release(args[p.num_inputs + j]);
        args[p.num_inputs + j] = c;
      }
    }
    hl_literal_release(v);
  }

  if (!st) {
    hl_literal_t *elems[SCAN_MAX_VALUES];
    int count = 0;
    for (int j = 0; j < p.num_outputs; j++) elems[count++] = outputs[j];
    for (int j = 0; j < p.num_carries; j++) elems[count++] = args[p.num_inputs + j];
    if (hl_shape_is_tuple(&inst->shape)) st = hl_literal_create_tuple(elems, count, out);
    else *out = hl_literal_retain(elems[0]);
  }
  for (int i = 0; i < p.num_inputs + p.num_carries; i++) hl_literal_release(args[i]);
  for (int j = 0; j < p.num_outputs; j++) hl_literal_release(outputs[j]);
  return st;
}
