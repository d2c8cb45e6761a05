// Private to runtime/verifier: what the walk (verifier.c) and the op rules
// share. The walk checks every instruction's structure (check_generic) and
// then its op's rule, hl_verify_op (op_rules.c), which dispatches on the
// opcode to the rule of the op's family:
//   op_rules.c             element-wise, shape (broadcast ... iota), reduce,
//                          dot family, scan, control flow, tuples, parameters
//   data_movement_rules.c  pad, reverse, dynamic slices, gather / scatter,
//                          sort, top-k, map, dimension sizes, copy / async
//   collective_rules.c     all-reduce ... collective-permute, collective-reduce,
//                          dynamic-root broadcast, shuffle
//   numeric_rules.c        complex, precision, rng, convolution, windows,
//                          batch norm, cholesky, triangular-solve, fft, bitcast
// Not an API: verifier.h is.
#ifndef HL_RUNTIME_VERIFIER_VERIFIER_INTERNAL_H_
#define HL_RUNTIME_VERIFIER_VERIFIER_INTERNAL_H_

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#include "runtime/base/strbuf.h"
#include "runtime/ir/module.h"

typedef struct verifier {
  const hl_module_t *module;
  hl_strbuf_t problems;
  int count;
} verifier_t;

typedef struct check {
  verifier_t *v;
  const hl_instruction_t *inst;
} check_t;

// Appends one problem, prefixed with where it is (the instruction's
// file:line:col, or its computation and name; the computation; the module).
void hl_verify_reportv(verifier_t *v, const hl_instruction_t *inst, const hl_computation_t *c,
                       const char *fmt, va_list ap);

static inline void report(check_t *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void report(check_t *k, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  hl_verify_reportv(k->v, k->inst, k->inst->parent, fmt, ap);
  va_end(ap);
}

// Shape strings for messages; two buffers so a message can show two shapes.
static inline const char *shape_str(const hl_shape_t *s, int slot) {
  static _Thread_local char bufs[2][256];
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  hl_shape_print(s, false, &sb);
  snprintf(bufs[slot & 1], sizeof(bufs[0]), "%s", hl_strbuf_cstr(&sb));
  hl_strbuf_deinit(&sb);
  return bufs[slot & 1];
}

//===----------------------------------------------------------------------===//
// Helpers of every family
//===----------------------------------------------------------------------===//

static inline const hl_shape_t *operand_shape(const hl_instruction_t *inst, int i) {
  return &inst->operands[i]->shape;
}

static inline bool expect_array(check_t *k, const hl_shape_t *s, const char *what) {
  if (hl_shape_is_array(s)) return true;
  report(k, "%s must be an array, is %s", what, shape_str(s, 0));
  return false;
}

static inline void expect_result(check_t *k, const hl_shape_t *want, const char *why) {
  if (!hl_shape_equal(&k->inst->shape, want))
    report(k, "result shape %s does not match %s %s", shape_str(&k->inst->shape, 0), why,
           shape_str(want, 1));
}

static inline bool is_scalar_of(const hl_shape_t *s, hl_dtype_t t) {
  return s->dtype == t && s->rank == 0;
}

// Called computation `c` (named `role`) takes `count` parameters of `shapes`
// (op_rules.c).
bool hl_verify_callee_parameters(check_t *k, const hl_computation_t *c, const char *role,
                                 const hl_shape_t *const *shapes, int count);
// `l` lists distinct dimensions below rank, none already in `used` (marked)
// (data_movement_rules.c).
bool hl_verify_dim_set(check_t *k, const char *field, const hl_i64_list_t *l, int rank,
                       bool *used);

//===----------------------------------------------------------------------===//
// The rules, one per op or op family (k->inst passed the generic checks)
//===----------------------------------------------------------------------===//

// op_rules.c
void hl_verify_op(check_t *k);  // dispatch on the opcode
void hl_verify_unary(check_t *k);

// data_movement_rules.c
void hl_verify_pad(check_t *k);
void hl_verify_reverse(check_t *k);
void hl_verify_dynamic_slice(check_t *k);
void hl_verify_dynamic_update_slice(check_t *k);
void hl_verify_gather(check_t *k);
void hl_verify_scatter(check_t *k);
void hl_verify_sort(check_t *k);
void hl_verify_topk(check_t *k);
void hl_verify_map(check_t *k);
void hl_verify_dimension_size(check_t *k, bool set);
void hl_verify_copy_start(check_t *k);
void hl_verify_done(check_t *k, int i, const char *start);
void hl_verify_async_start(check_t *k);

// collective_rules.c
void hl_verify_collective(check_t *k);
void hl_verify_collective_reduce(check_t *k);
void hl_verify_dynamic_root_broadcast(check_t *k);
void hl_verify_shuffle(check_t *k);

// numeric_rules.c
void hl_verify_complex_op(check_t *k);
void hl_verify_reduce_precision(check_t *k);
void hl_verify_stochastic_convert(check_t *k);
void hl_verify_rng(check_t *k);
void hl_verify_rng_bit_generator(check_t *k);
void hl_verify_convolution(check_t *k);
void hl_verify_reduce_window(check_t *k);
void hl_verify_select_and_scatter(check_t *k);
void hl_verify_batch_norm(check_t *k, int count, int nvec, bool tuple_result);
void hl_verify_cholesky(check_t *k);
void hl_verify_triangular_solve(check_t *k);
void hl_verify_fft(check_t *k);
void hl_verify_bitcast(check_t *k);

#endif  // HL_RUNTIME_VERIFIER_VERIFIER_INTERNAL_H_
