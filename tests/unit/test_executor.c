// Tests of the executor core (runtime/exec/executor.c, plan.c) and of the
// structural and control-flow kernels it runs. Modules are built by hand with
// the module API; expected values are worked out by hand in each test.
#include <stdarg.h>
#include <time.h>

#include "runtime/base/alloc.h"
#include "runtime/base/literal.h"
#include "runtime/exec/executor.h"
#include "runtime/exec/plan.h"
#include "runtime/ir/module.h"
#include "runtime/text/hlo_parser.h"
#include "tests/unit/test_util.h"

//===----------------------------------------------------------------------===//
// Module builder
//===----------------------------------------------------------------------===//

static hl_shape_t shp(hl_dtype_t t, int rank, ...) {
  int64_t dims[HL_MAX_RANK] = {0};
  va_list ap;
  va_start(ap, rank);
  for (int i = 0; i < rank; i++) dims[i] = va_arg(ap, int);
  va_end(ap);
  return hl_shape_array(t, rank, dims);
}

static hl_shape_t tuple_shp(int n, const hl_shape_t *elems) {
  hl_shape_t t;
  hl_status_t st = hl_shape_tuple(elems, n, &t);
  CU_ASSERT_PTR_NULL_FATAL(st);
  return t;
}

static hl_instruction_t *add_inst(hl_computation_t *c, const char *name, hl_opcode_t op,
                                  hl_shape_t shape, int n, hl_instruction_t *const *ops) {
  hl_instruction_t *inst;
  HL_ASSERT_OK(hl_computation_add_instruction(c, name, op, &inst));
  inst->shape = shape;
  HL_ASSERT_OK(hl_instruction_set_operands(inst, ops, n));
  return inst;
}

#define OPS(...) \
  (int)(sizeof((hl_instruction_t *[]){__VA_ARGS__}) / sizeof(hl_instruction_t *)), \
      (hl_instruction_t *[]) { __VA_ARGS__ }

static hl_instruction_t *param(hl_computation_t *c, const char *name, int number,
                               hl_shape_t shape) {
  hl_instruction_t *p = add_inst(c, name, HL_OP_PARAMETER, shape, 0, NULL);
  p->attrs.parameter_number = number;
  return p;
}

// Takes ownership of lit.
static hl_instruction_t *constant(hl_computation_t *c, const char *name, hl_literal_t *lit) {
  hl_shape_t s;
  HL_ASSERT_OK(hl_shape_copy(&lit->shape, &s));
  hl_instruction_t *k = add_inst(c, name, HL_OP_CONSTANT, s, 0, NULL);
  k->attrs.literal = lit;
  return k;
}

static void finish(hl_computation_t *c, hl_instruction_t *root) {
  c->root = root;
  HL_ASSERT_OK(hl_computation_index_parameters(c));
}

static hl_computation_t *new_comp(hl_module_t *m, const char *name) {
  hl_computation_t *c;
  HL_ASSERT_OK(hl_module_add_computation(m, name, &c));
  return c;
}

static hl_module_t *new_module(void) {
  hl_module_t *m;
  HL_ASSERT_OK(hl_module_create("test", &m));
  return m;
}

static hl_literal_t *s32_scalar(int32_t v) {
  hl_shape_t s = hl_shape_scalar(HL_S32);
  hl_literal_t *l;
  HL_ASSERT_OK(hl_literal_create(&s, &l));
  ((int32_t *)l->data)[0] = v;
  return l;
}

static hl_literal_t *f32_scalar(float v) {
  hl_shape_t s = hl_shape_scalar(HL_F32);
  hl_literal_t *l;
  HL_ASSERT_OK(hl_literal_create(&s, &l));
  ((float *)l->data)[0] = v;
  return l;
}

static hl_literal_t *pred_scalar(bool v) {
  hl_shape_t s = hl_shape_scalar(HL_PRED);
  hl_literal_t *l;
  HL_ASSERT_OK(hl_literal_create(&s, &l));
  ((uint8_t *)l->data)[0] = v;
  return l;
}

static hl_literal_t *f32_array(int rank, const int64_t *dims, const float *values) {
  hl_shape_t s = hl_shape_array(HL_F32, rank, dims);
  hl_literal_t *l;
  HL_ASSERT_OK(hl_literal_create(&s, &l));
  memcpy(l->data, values, l->byte_size);
  return l;
}

//===----------------------------------------------------------------------===//
// Plans
//===----------------------------------------------------------------------===//

// IR order b, a but a is a control predecessor of b: the plan runs a first.
static void test_plan_honours_control_predecessors(void) {
  hl_module_t *m = new_module();
  hl_computation_t *c = new_comp(m, "main");
  hl_instruction_t *p0 = param(c, "p0", 0, shp(HL_F32, 1, 2));
  hl_instruction_t *b = add_inst(c, "b", HL_OP_COPY, shp(HL_F32, 1, 2), OPS(p0));
  hl_instruction_t *a = add_inst(c, "a", HL_OP_COPY, shp(HL_F32, 1, 2), OPS(p0));
  HL_ASSERT_OK(hl_instruction_set_control_predecessors(b, &a, 1));
  hl_shape_t el[2] = {shp(HL_F32, 1, 2), shp(HL_F32, 1, 2)};
  hl_instruction_t *t = add_inst(c, "t", HL_OP_TUPLE, tuple_shp(2, el), OPS(a, b));
  finish(c, t);
  m->entry = c;
  hl_plan_t *plan;
  HL_ASSERT_OK(hl_plan_create(c, &plan));
  CU_ASSERT_EQUAL(plan->count, 4);
  int pos_a = -1, pos_b = -1;
  for (int q = 0; q < plan->count; q++) {
    if (plan->order[q] == a) pos_a = q;
    if (plan->order[q] == b) pos_b = q;
  }
  CU_ASSERT(pos_a >= 0 && pos_b >= 0 && pos_a < pos_b);
  CU_ASSERT_PTR_EQUAL(plan->order[0], p0);
  CU_ASSERT_PTR_EQUAL(plan->order[3], t);
  hl_plan_destroy(plan);
  hl_module_destroy(m);
}

// p0 -> n1 -> n2 (root), plus an unused instruction u.
static void test_plan_last_use(void) {
  hl_module_t *m = new_module();
  hl_computation_t *c = new_comp(m, "main");
  hl_instruction_t *p0 = param(c, "p0", 0, shp(HL_F32, 2, 2, 3));
  hl_instruction_t *n1 = add_inst(c, "n1", HL_OP_RESHAPE, shp(HL_F32, 1, 6), OPS(p0));
  hl_instruction_t *u = add_inst(c, "u", HL_OP_RESHAPE, shp(HL_F32, 2, 3, 2), OPS(p0));
  hl_instruction_t *n2 = add_inst(c, "n2", HL_OP_RESHAPE, shp(HL_F32, 2, 6, 1), OPS(n1));
  finish(c, n2);
  hl_plan_t *plan;
  HL_ASSERT_OK(hl_plan_create(c, &plan));
  // IR order is valid, so positions equal indices.
  CU_ASSERT_EQUAL(hl_plan_last_use(plan, p0->index), u->index);  // used by n1 and u
  CU_ASSERT_EQUAL(hl_plan_last_use(plan, n1->index), n2->index);
  CU_ASSERT_EQUAL(hl_plan_last_use(plan, u->index), u->index);   // dead: freed at once
  CU_ASSERT_EQUAL(hl_plan_last_use(plan, n2->index), -1);        // root is kept
  hl_plan_destroy(plan);
  hl_module_destroy(m);
}

static void test_plan_rejects_cycle(void) {
  hl_module_t *m = new_module();
  hl_computation_t *c = new_comp(m, "main");
  hl_instruction_t *p0 = param(c, "p0", 0, shp(HL_F32, 0));
  hl_instruction_t *a = add_inst(c, "a", HL_OP_COPY, shp(HL_F32, 0), OPS(p0));
  hl_instruction_t *b = add_inst(c, "b", HL_OP_COPY, shp(HL_F32, 0), OPS(a));
  HL_ASSERT_OK(hl_instruction_set_control_predecessors(a, &b, 1));
  finish(c, b);
  hl_plan_t *plan = NULL;
  HL_ASSERT_ERROR_CONTAINS(hl_plan_create(c, &plan), "cycle");
  CU_ASSERT_PTR_NULL(plan);
  hl_module_destroy(m);
}

static void test_plan_rejects_wrong_operand_count(void) {
  hl_module_t *m = new_module();
  hl_computation_t *c = new_comp(m, "main");
  hl_instruction_t *p0 = param(c, "p0", 0, shp(HL_F32, 0));
  hl_instruction_t *r = add_inst(c, "bad", HL_OP_RESHAPE, shp(HL_F32, 0), OPS(p0, p0));
  finish(c, r);
  m->entry = c;
  hl_literal_t *x = f32_scalar(1), *out = NULL;
  HL_ASSERT_ERROR_CONTAINS(hl_execute(m, NULL, &x, 1, &out),
                           "instruction 'bad' (reshape) in computation 'main': expected 1 operand, got 2");
  CU_ASSERT_PTR_NULL(out);
  hl_literal_release(x);
  hl_module_destroy(m);
}

// An operand owned by another computation must not be read.
static void test_plan_rejects_foreign_operand(void) {
  hl_module_t *m = new_module();
  hl_computation_t *other = new_comp(m, "other");
  hl_instruction_t *q = param(other, "q", 0, shp(HL_F32, 0));
  finish(other, q);
  hl_computation_t *c = new_comp(m, "main");
  hl_instruction_t *p0 = param(c, "p0", 0, shp(HL_F32, 0));
  (void)p0;
  hl_instruction_t *r = add_inst(c, "r", HL_OP_COPY, shp(HL_F32, 0), OPS(q));
  finish(c, r);
  hl_plan_t *plan = NULL;
  HL_ASSERT_ERROR_CONTAINS(hl_plan_create(c, &plan), "is not an instruction of computation 'main'");
  hl_module_destroy(m);
}

//===----------------------------------------------------------------------===//
// Execution: values, arguments, errors
//===----------------------------------------------------------------------===//

// A chain of n reshapes alternating between f32[2,3] and f32[6]: with
// release after last use, at most the constant-free chain's two neighbours
// (plus the borrowed parameter's slot early on) are alive at once.
static void test_live_values_bounded_in_long_chain(void) {
  enum { kN = 10000 };
  hl_module_t *m = new_module();
  hl_computation_t *c = new_comp(m, "main");
  hl_instruction_t *prev = param(c, "p0", 0, shp(HL_F32, 2, 2, 3));
  for (int i = 0; i < kN; i++) {
    char name[32];
    snprintf(name, sizeof(name), "r%d", i);
    hl_shape_t s = (i % 2 == 0) ? shp(HL_F32, 1, 6) : shp(HL_F32, 2, 2, 3);
    prev = add_inst(c, name, HL_OP_RESHAPE, s, OPS(prev));
  }
  finish(c, prev);
  m->entry = c;
  int64_t dims[2] = {2, 3};
  float vals[6] = {1, 2, 3, 4, 5, 6};
  hl_literal_t *x = f32_array(2, dims, vals), *out = NULL;
  hl_exec_stats_reset();
  HL_ASSERT_OK(hl_execute(m, NULL, &x, 1, &out));
  hl_exec_stats_t st = hl_exec_stats();
  CU_ASSERT(st.peak_live_values <= 2);
  CU_ASSERT_EQUAL(st.live_values, 0);  // the root was handed to us
  CU_ASSERT_EQUAL(st.instructions_executed, kN + 1);
  // Every reshape but the first (whose operand is the caller's argument)
  // takes its dying operand's buffer instead of copying.
  CU_ASSERT_EQUAL(st.buffers_donated, kN - 1);
  // kN even: the last reshape (index kN-1, odd) gives f32[2,3] with the same data.
  CU_ASSERT_TRUE(hl_literal_equal(out, x));
  CU_ASSERT_EQUAL(x->refcount, 1);  // the parameter was only borrowed
  hl_literal_release(out);
  hl_literal_release(x);
  hl_module_destroy(m);
}

// Counter-check of the test above: when the root uses every value, all of
// them stay alive, so the bound really measures release-after-last-use.
static void test_live_values_peak_when_all_used_by_root(void) {
  enum { kN = 50 };
  hl_module_t *m = new_module();
  hl_computation_t *c = new_comp(m, "main");
  hl_instruction_t *p0 = param(c, "p0", 0, shp(HL_F32, 0));
  hl_instruction_t *ops[kN];
  hl_shape_t el[kN];
  for (int i = 0; i < kN; i++) {
    char name[32];
    snprintf(name, sizeof(name), "r%d", i);
    ops[i] = add_inst(c, name, HL_OP_RESHAPE, shp(HL_F32, 0), OPS(p0));
    el[i] = shp(HL_F32, 0);
  }
  hl_instruction_t *t = add_inst(c, "t", HL_OP_TUPLE, tuple_shp(kN, el), kN, ops);
  finish(c, t);
  m->entry = c;
  hl_literal_t *x = f32_scalar(2), *out = NULL;
  hl_exec_stats_reset();
  HL_ASSERT_OK(hl_execute(m, NULL, &x, 1, &out));
  CU_ASSERT(hl_exec_stats().peak_live_values >= kN + 1);
  CU_ASSERT_EQUAL(hl_exec_stats().live_values, 0);
  hl_literal_release(out);
  hl_literal_release(x);
  hl_module_destroy(m);
}

// r0 has two users: the first (r1) must copy, the second (r2) may take r0's
// buffer; both results still hold r0's data.
static void test_donation_only_at_last_use(void) {
  hl_module_t *m = new_module();
  hl_computation_t *c = new_comp(m, "main");
  hl_instruction_t *p0 = param(c, "p0", 0, shp(HL_F32, 2, 2, 3));
  hl_instruction_t *r0 = add_inst(c, "r0", HL_OP_RESHAPE, shp(HL_F32, 1, 6), OPS(p0));
  hl_instruction_t *r1 = add_inst(c, "r1", HL_OP_RESHAPE, shp(HL_F32, 2, 3, 2), OPS(r0));
  hl_instruction_t *r2 = add_inst(c, "r2", HL_OP_BITCAST, shp(HL_S32, 2, 6, 1), OPS(r0));
  hl_shape_t el[2] = {shp(HL_F32, 2, 3, 2), shp(HL_S32, 2, 6, 1)};
  finish(c, add_inst(c, "t", HL_OP_TUPLE, tuple_shp(2, el), OPS(r1, r2)));
  m->entry = c;
  int64_t dims[2] = {2, 3};
  float vals[6] = {1, 2, 3, 4, 5, 6};
  hl_literal_t *x = f32_array(2, dims, vals), *out = NULL;
  hl_exec_stats_reset();
  HL_ASSERT_OK(hl_execute(m, NULL, &x, 1, &out));
  CU_ASSERT_EQUAL(hl_exec_stats().buffers_donated, 1);
  CU_ASSERT_EQUAL(memcmp(out->elements[0]->data, vals, sizeof(vals)), 0);
  CU_ASSERT_EQUAL(memcmp(out->elements[1]->data, vals, sizeof(vals)), 0);
  CU_ASSERT_EQUAL(memcmp(x->data, vals, sizeof(vals)), 0);  // argument untouched
  hl_literal_release(out);
  hl_literal_release(x);
  hl_module_destroy(m);
}

static hl_module_t *identity_module_f32_2x3(void) {
  hl_module_t *m = new_module();
  hl_computation_t *c = new_comp(m, "main");
  hl_instruction_t *p0 = param(c, "p0", 0, shp(HL_F32, 2, 2, 3));
  finish(c, p0);
  m->entry = c;
  return m;
}

static void test_argument_count_checked(void) {
  hl_module_t *m = identity_module_f32_2x3();
  int64_t dims[2] = {2, 3};
  float vals[6] = {0};
  hl_literal_t *args[2] = {f32_array(2, dims, vals), f32_array(2, dims, vals)};
  hl_literal_t *out = NULL;
  HL_ASSERT_ERROR_CONTAINS(hl_execute(m, NULL, args, 2, &out), "takes 1 argument, got 2");
  HL_ASSERT_ERROR_CONTAINS(hl_execute(m, NULL, args, 0, &out), "takes 1 argument, got 0");
  CU_ASSERT_PTR_NULL(out);
  hl_literal_release(args[0]);
  hl_literal_release(args[1]);
  hl_module_destroy(m);
}

static void test_argument_shape_checked(void) {
  hl_module_t *m = identity_module_f32_2x3();
  int64_t dims[2] = {3, 2};
  float vals[6] = {0};
  hl_literal_t *x = f32_array(2, dims, vals), *out = NULL;
  hl_status_t st = hl_execute(m, NULL, &x, 1, &out);
  CU_ASSERT_EQUAL(hl_status_code(st), HL_INVALID_ARGUMENT);
  HL_ASSERT_ERROR_CONTAINS(st, "argument 0: expected f32[2,3], got f32[3,2]");
  hl_literal_t *y = s32_scalar(1);
  HL_ASSERT_ERROR_CONTAINS(hl_execute(m, NULL, &y, 1, &out), "expected f32[2,3], got s32[]");
  hl_literal_release(x);
  hl_literal_release(y);
  hl_module_destroy(m);
}

static void test_identity_returns_argument(void) {
  hl_module_t *m = identity_module_f32_2x3();
  int64_t dims[2] = {2, 3};
  float vals[6] = {1, 2, 3, 4, 5, 6};
  hl_literal_t *x = f32_array(2, dims, vals), *out = NULL;
  HL_ASSERT_OK(hl_execute(m, NULL, &x, 1, &out));
  CU_ASSERT_PTR_EQUAL(out, x);  // shared, not copied
  CU_ASSERT_EQUAL(x->refcount, 2);
  hl_literal_release(out);
  hl_literal_release(x);
  hl_module_destroy(m);
}

static void test_unimplemented_op_error_names_instruction_once(void) {
  hl_module_t *m = new_module();
  hl_computation_t *c = new_comp(m, "main");
  hl_instruction_t *p0 = param(c, "p0", 0, shp(HL_F32, 1, 4));
  hl_instruction_t *f = add_inst(c, "shuffle.7", HL_OP_SHUFFLE, shp(HL_F32, 1, 4), OPS(p0));
  finish(c, f);
  m->entry = c;
  float v[4] = {0};
  int64_t d = 4;
  hl_literal_t *x = f32_array(1, &d, v), *out = NULL;
  hl_status_t st = hl_execute(m, NULL, &x, 1, &out);
  CU_ASSERT_EQUAL(hl_status_code(st), HL_UNIMPLEMENTED);
  const char *msg = hl_status_message(st);
  // Every opcode has a kernel now; a shuffle without a mode (as a proto
  // loads it) is the remaining unsupported form.
  CU_ASSERT_STRING_EQUAL(msg,
                         "instruction 'shuffle.7' (shuffle) in computation 'main': shuffle "
                         "needs mode=rotate or mode=permute (a proto-loaded shuffle carries no "
                         "mode here)");
  hl_status_free(st);
  CU_ASSERT_PTR_NULL(out);
  CU_ASSERT_EQUAL(hl_exec_stats().live_values, 0);  // the error path released everything
  hl_literal_release(x);
  hl_module_destroy(m);
}

// A kernel error inside a called computation names the failing instruction
// once and each call site once.
static void test_nested_error_context(void) {
  hl_module_t *m = new_module();
  hl_computation_t *inner = new_comp(m, "inner");
  hl_instruction_t *ip = param(inner, "x", 0, shp(HL_F32, 0));
  hl_instruction_t *bad = add_inst(inner, "bad.1", HL_OP_SHUFFLE, shp(HL_F32, 0), OPS(ip));
  finish(inner, bad);
  hl_computation_t *mid = new_comp(m, "mid");
  hl_instruction_t *mp = param(mid, "y", 0, shp(HL_F32, 0));
  hl_instruction_t *call1 = add_inst(mid, "call.1", HL_OP_CALL, shp(HL_F32, 0), OPS(mp));
  HL_ASSERT_OK(hl_instruction_set_called(call1, &inner, 1));
  finish(mid, call1);
  hl_computation_t *c = new_comp(m, "main");
  hl_instruction_t *p0 = param(c, "p0", 0, shp(HL_F32, 0));
  hl_instruction_t *call2 = add_inst(c, "call.2", HL_OP_CALL, shp(HL_F32, 0), OPS(p0));
  HL_ASSERT_OK(hl_instruction_set_called(call2, &mid, 1));
  finish(c, call2);
  m->entry = c;
  hl_literal_t *x = f32_scalar(1), *out = NULL;
  hl_status_t st = hl_execute(m, NULL, &x, 1, &out);
  const char *msg = hl_status_message(st);
  CU_ASSERT_STRING_EQUAL(msg,
                         "instruction 'bad.1' (shuffle) in computation 'inner': shuffle "
                         "needs mode=rotate or mode=permute (a proto-loaded shuffle carries no "
                         "mode here); in call from "
                         "instruction 'call.1' (call) in computation 'mid'; in call from "
                         "instruction 'call.2' (call) in computation 'main'");
  CU_ASSERT_EQUAL(hl_test_count(msg, "bad.1"), 1);
  CU_ASSERT_EQUAL(hl_status_code(st), HL_UNIMPLEMENTED);
  hl_status_free(st);
  hl_literal_release(x);
  hl_module_destroy(m);
}

// Kernels that already name their instruction do not get it twice.
static void test_kernel_located_error_not_repeated(void) {
  hl_module_t *m = new_module();
  hl_computation_t *c = new_comp(m, "main");
  hl_instruction_t *a = param(c, "a", 0, shp(HL_S32, 0));
  hl_instruction_t *lt = add_inst(c, "lt.3", HL_OP_COMPARE, shp(HL_PRED, 0), OPS(a, a));
  finish(c, lt);  // no comparison direction: invalid
  m->entry = c;
  hl_literal_t *x = s32_scalar(1), *out = NULL;
  hl_status_t st = hl_execute(m, NULL, &x, 1, &out);
  CU_ASSERT_PTR_NOT_NULL(st);
  CU_ASSERT_EQUAL(hl_test_count(hl_status_message(st), "instruction 'lt.3' (compare)"), 1);
  hl_status_free(st);
  hl_literal_release(x);
  hl_module_destroy(m);
}

static void test_recursion_rejected(void) {
  hl_module_t *m = new_module();
  hl_computation_t *c = new_comp(m, "main");
  hl_instruction_t *p0 = param(c, "p0", 0, shp(HL_F32, 0));
  hl_instruction_t *call = add_inst(c, "self", HL_OP_CALL, shp(HL_F32, 0), OPS(p0));
  HL_ASSERT_OK(hl_instruction_set_called(call, &c, 1));
  finish(c, call);
  m->entry = c;
  hl_literal_t *x = f32_scalar(1), *out = NULL;
  HL_ASSERT_ERROR_CONTAINS(hl_execute(m, NULL, &x, 1, &out), "computation 'main' calls itself");
  hl_literal_release(x);
  hl_module_destroy(m);
}

// A constant whose literal disagrees with the instruction's shape is caught
// after the kernel, not passed on.
static void test_result_shape_checked(void) {
  hl_module_t *m = new_module();
  hl_computation_t *c = new_comp(m, "main");
  hl_instruction_t *k = constant(c, "k", s32_scalar(3));
  k->shape = shp(HL_F32, 0);
  finish(c, k);
  m->entry = c;
  hl_literal_t *out = NULL;
  HL_ASSERT_ERROR_CONTAINS(hl_execute(m, NULL, NULL, 0, &out),
                           "instruction 'k' (constant) in computation 'main': kernel produced "
                           "s32[], expected f32[]");
  hl_module_destroy(m);
}

//===----------------------------------------------------------------------===//
// Structural kernels
//===----------------------------------------------------------------------===//

// ((p0, k), token) -> gte(gte(t,0),1) = k; add-dependency(p0, after-all) = p0;
// replica-id / partition-id from the options.
static void test_structural_ops(void) {
  hl_module_t *m = new_module();
  hl_computation_t *c = new_comp(m, "main");
  hl_instruction_t *p0 = param(c, "p0", 0, shp(HL_S32, 0));
  hl_instruction_t *k = constant(c, "k", s32_scalar(42));
  hl_shape_t pair[2] = {shp(HL_S32, 0), shp(HL_S32, 0)};
  hl_instruction_t *t = add_inst(c, "t", HL_OP_TUPLE, tuple_shp(2, pair), OPS(p0, k));
  hl_instruction_t *g = add_inst(c, "g", HL_OP_GET_TUPLE_ELEMENT, shp(HL_S32, 0), OPS(t));
  g->attrs.tuple_index = 1;
  hl_instruction_t *tok = add_inst(c, "tok", HL_OP_AFTER_ALL, hl_shape_token(), 0, NULL);
  hl_instruction_t *dep =
      add_inst(c, "dep", HL_OP_ADD_DEPENDENCY, shp(HL_S32, 0), OPS(p0, tok));
  hl_instruction_t *rid = add_inst(c, "rid", HL_OP_REPLICA_ID, shp(HL_U32, 0), 0, NULL);
  hl_instruction_t *pid = add_inst(c, "pid", HL_OP_PARTITION_ID, shp(HL_U32, 0), 0, NULL);
  hl_shape_t el[5] = {shp(HL_S32, 0), shp(HL_S32, 0), shp(HL_U32, 0), shp(HL_U32, 0),
                      hl_shape_token()};
  hl_instruction_t *root =
      add_inst(c, "root", HL_OP_TUPLE, tuple_shp(5, el), OPS(g, dep, rid, pid, tok));
  finish(c, root);
  m->entry = c;
  hl_exec_options_t opts = {.replica_id = 3, .partition_id = 5, .num_replicas = 4,
                            .num_partitions = 8};
  hl_literal_t *x = s32_scalar(7), *out = NULL;
  HL_ASSERT_OK(hl_execute(m, &opts, &x, 1, &out));
  CU_ASSERT_EQUAL(out->shape.tuple_count, 5);
  CU_ASSERT_EQUAL(((int32_t *)out->elements[0]->data)[0], 42);
  CU_ASSERT_PTR_EQUAL(out->elements[1], x);
  CU_ASSERT_EQUAL(((uint32_t *)out->elements[2]->data)[0], 3u);
  CU_ASSERT_EQUAL(((uint32_t *)out->elements[3]->data)[0], 5u);
  CU_ASSERT_EQUAL(out->elements[4]->shape.dtype, HL_TOKEN);
  hl_literal_release(out);
  hl_literal_release(x);
  hl_module_destroy(m);
}

static void test_get_tuple_element_index_checked(void) {
  hl_module_t *m = new_module();
  hl_computation_t *c = new_comp(m, "main");
  hl_shape_t pair[2] = {shp(HL_S32, 0), shp(HL_S32, 0)};
  hl_instruction_t *p0 = param(c, "p0", 0, tuple_shp(2, pair));
  hl_instruction_t *g = add_inst(c, "g", HL_OP_GET_TUPLE_ELEMENT, shp(HL_S32, 0), OPS(p0));
  g->attrs.tuple_index = 2;
  finish(c, g);
  m->entry = c;
  hl_literal_t *a = s32_scalar(1), *b = s32_scalar(2), *t, *out = NULL;
  hl_literal_t *ab[2] = {a, b};
  HL_ASSERT_OK(hl_literal_create_tuple(ab, 2, &t));
  HL_ASSERT_ERROR_CONTAINS(hl_execute(m, NULL, &t, 1, &out),
                           "instruction 'g' (get-tuple-element) in computation 'main': index 2 "
                           "out of range for a tuple of 2 elements");
  g->attrs.tuple_index = 1;
  HL_ASSERT_OK(hl_execute(m, NULL, &t, 1, &out));
  CU_ASSERT_PTR_EQUAL(out, b);
  hl_literal_release(out);
  hl_literal_release(t);
  hl_literal_release(a);
  hl_literal_release(b);
  hl_module_destroy(m);
}

//===----------------------------------------------------------------------===//
// Control flow
//===----------------------------------------------------------------------===//

// add(x, y) on s32[] as a callable computation.
static hl_computation_t *adder(hl_module_t *m, const char *name) {
  hl_computation_t *c = new_comp(m, name);
  hl_instruction_t *x = param(c, "x", 0, shp(HL_S32, 0));
  hl_instruction_t *y = param(c, "y", 1, shp(HL_S32, 0));
  finish(c, add_inst(c, "sum", HL_OP_ADD, shp(HL_S32, 0), OPS(x, y)));
  return c;
}

static void test_call_and_fusion(void) {
  hl_module_t *m = new_module();
  hl_computation_t *f = adder(m, "f");
  hl_computation_t *c = new_comp(m, "main");
  hl_instruction_t *a = param(c, "a", 0, shp(HL_S32, 0));
  hl_instruction_t *b = param(c, "b", 1, shp(HL_S32, 0));
  hl_instruction_t *call = add_inst(c, "call", HL_OP_CALL, shp(HL_S32, 0), OPS(a, b));
  HL_ASSERT_OK(hl_instruction_set_called(call, &f, 1));
  hl_instruction_t *fus = add_inst(c, "fus", HL_OP_FUSION, shp(HL_S32, 0), OPS(call, b));
  HL_ASSERT_OK(hl_instruction_set_called(fus, &f, 1));
  finish(c, fus);
  m->entry = c;
  hl_literal_t *args[2] = {s32_scalar(5), s32_scalar(7)}, *out = NULL;
  HL_ASSERT_OK(hl_execute(m, NULL, args, 2, &out));
  CU_ASSERT_EQUAL(((int32_t *)out->data)[0], 19);  // (5 + 7) + 7
  hl_literal_release(out);
  hl_literal_release(args[0]);
  hl_literal_release(args[1]);
  hl_module_destroy(m);
}

// A call whose operands do not match the callee's parameters is caught at
// the call, naming the call instruction.
static void test_call_argument_shape_checked(void) {
  hl_module_t *m = new_module();
  hl_computation_t *f = adder(m, "f");
  hl_computation_t *c = new_comp(m, "main");
  hl_instruction_t *a = param(c, "a", 0, shp(HL_S32, 0));
  hl_instruction_t *b = param(c, "b", 1, shp(HL_F32, 0));
  hl_instruction_t *call = add_inst(c, "call", HL_OP_CALL, shp(HL_S32, 0), OPS(a, b));
  HL_ASSERT_OK(hl_instruction_set_called(call, &f, 1));
  finish(c, call);
  m->entry = c;
  hl_literal_t *args[2] = {s32_scalar(5), f32_scalar(7)}, *out = NULL;
  HL_ASSERT_ERROR_CONTAINS(hl_execute(m, NULL, args, 2, &out),
                           "instruction 'call' (call) in computation 'main': calling computation "
                           "'f': argument 1: expected s32[], got f32[]");
  hl_literal_release(args[0]);
  hl_literal_release(args[1]);
  hl_module_destroy(m);
}

// while (i < limit) { i = i + 1; acc = acc + i }  on the state (i, acc, limit).
// From (0, 0, 10): i = 10, acc = 1 + 2 + ... + 10 = 55.
static hl_module_t *sum_loop_module(void) {
  hl_module_t *m = new_module();
  hl_shape_t el[3] = {shp(HL_S32, 0), shp(HL_S32, 0), shp(HL_S32, 0)};
  hl_computation_t *cond = new_comp(m, "cond");
  {
    hl_instruction_t *s = param(cond, "s", 0, tuple_shp(3, el));
    hl_instruction_t *i = add_inst(cond, "i", HL_OP_GET_TUPLE_ELEMENT, shp(HL_S32, 0), OPS(s));
    hl_instruction_t *n = add_inst(cond, "n", HL_OP_GET_TUPLE_ELEMENT, shp(HL_S32, 0), OPS(s));
    n->attrs.tuple_index = 2;
    hl_instruction_t *lt = add_inst(cond, "lt", HL_OP_COMPARE, shp(HL_PRED, 0), OPS(i, n));
    lt->attrs.comparison_direction = HL_CMP_LT;
    finish(cond, lt);
  }
  hl_computation_t *body = new_comp(m, "body");
  {
    hl_instruction_t *s = param(body, "s", 0, tuple_shp(3, el));
    hl_instruction_t *i = add_inst(body, "i", HL_OP_GET_TUPLE_ELEMENT, shp(HL_S32, 0), OPS(s));
    hl_instruction_t *acc =
        add_inst(body, "acc", HL_OP_GET_TUPLE_ELEMENT, shp(HL_S32, 0), OPS(s));
    acc->attrs.tuple_index = 1;
    hl_instruction_t *n = add_inst(body, "n", HL_OP_GET_TUPLE_ELEMENT, shp(HL_S32, 0), OPS(s));
    n->attrs.tuple_index = 2;
    hl_instruction_t *one = constant(body, "one", s32_scalar(1));
    hl_instruction_t *i1 = add_inst(body, "i1", HL_OP_ADD, shp(HL_S32, 0), OPS(i, one));
    hl_instruction_t *acc1 = add_inst(body, "acc1", HL_OP_ADD, shp(HL_S32, 0), OPS(acc, i1));
    finish(body, add_inst(body, "next", HL_OP_TUPLE, tuple_shp(3, el), OPS(i1, acc1, n)));
  }
  hl_computation_t *c = new_comp(m, "main");
  hl_instruction_t *init = param(c, "init", 0, tuple_shp(3, el));
  hl_instruction_t *w = add_inst(c, "w", HL_OP_WHILE, tuple_shp(3, el), OPS(init));
  hl_computation_t *called[2] = {body, cond};  // proto order: body, condition
  HL_ASSERT_OK(hl_instruction_set_called(w, called, 2));
  finish(c, w);
  m->entry = c;
  return m;
}

static hl_literal_t *s32_triple(int32_t a, int32_t b, int32_t c) {
  hl_literal_t *e[3] = {s32_scalar(a), s32_scalar(b), s32_scalar(c)}, *t;
  HL_ASSERT_OK(hl_literal_create_tuple(e, 3, &t));
  for (int i = 0; i < 3; i++) hl_literal_release(e[i]);
  return t;
}

static void test_while_loop(void) {
  hl_module_t *m = sum_loop_module();
  hl_literal_t *init = s32_triple(0, 0, 10), *out = NULL;
  HL_ASSERT_OK(hl_execute(m, NULL, &init, 1, &out));
  CU_ASSERT_EQUAL(hl_literal_get_s64(out->elements[0], 0), 10);
  CU_ASSERT_EQUAL(hl_literal_get_s64(out->elements[1], 0), 55);
  CU_ASSERT_EQUAL(hl_literal_get_s64(out->elements[2], 0), 10);
  hl_literal_release(out);
  hl_literal_release(init);
  // Condition false at once: the state comes back unchanged.
  init = s32_triple(5, 3, 2);
  HL_ASSERT_OK(hl_execute(m, NULL, &init, 1, &out));
  CU_ASSERT_TRUE(hl_literal_equal(out, init));
  hl_literal_release(out);
  hl_literal_release(init);
  hl_module_destroy(m);
}

static void test_while_cancellable(void) {
  hl_module_t *m = sum_loop_module();
  hl_literal_t *init = s32_triple(0, 0, 10), *out = NULL;
  hl_exec_request_cancel();
  HL_ASSERT_ERROR_CONTAINS(hl_execute(m, NULL, &init, 1, &out),
                           "instruction 'w' (while) in computation 'main': execution cancelled");
  hl_exec_clear_cancel();
  CU_ASSERT_PTR_NULL(out);
  HL_ASSERT_OK(hl_execute(m, NULL, &init, 1, &out));
  hl_literal_release(out);
  hl_literal_release(init);
  hl_module_destroy(m);
}

static void test_while_condition_must_return_pred(void) {
  hl_module_t *m = new_module();
  hl_computation_t *cond = new_comp(m, "cond");
  finish(cond, param(cond, "s", 0, shp(HL_S32, 0)));  // returns s32[], not pred[]
  hl_computation_t *body = new_comp(m, "body");
  finish(body, param(body, "s", 0, shp(HL_S32, 0)));
  hl_computation_t *c = new_comp(m, "main");
  hl_instruction_t *p0 = param(c, "p0", 0, shp(HL_S32, 0));
  hl_instruction_t *w = add_inst(c, "w", HL_OP_WHILE, shp(HL_S32, 0), OPS(p0));
  hl_computation_t *called[2] = {body, cond};
  HL_ASSERT_OK(hl_instruction_set_called(w, called, 2));
  finish(c, w);
  m->entry = c;
  hl_literal_t *x = s32_scalar(1), *out = NULL;
  HL_ASSERT_ERROR_CONTAINS(hl_execute(m, NULL, &x, 1, &out),
                           "condition returned s32[], expected pred[]");
  hl_literal_release(x);
  hl_module_destroy(m);
}

// Branch computations return constants 10, 20, 30 plus their argument.
static hl_module_t *conditional_module(hl_dtype_t selector, int branches) {
  hl_module_t *m = new_module();
  hl_computation_t *br[3];
  for (int b = 0; b < branches; b++) {
    char name[32];
    snprintf(name, sizeof(name), "branch%d", b);
    br[b] = new_comp(m, name);
    hl_instruction_t *x = param(br[b], "x", 0, shp(HL_S32, 0));
    hl_instruction_t *k = constant(br[b], "k", s32_scalar(10 * (b + 1)));
    finish(br[b], add_inst(br[b], "r", HL_OP_ADD, shp(HL_S32, 0), OPS(x, k)));
  }
  hl_computation_t *c = new_comp(m, "main");
  hl_instruction_t *sel = param(c, "sel", 0, shp(selector, 0));
  hl_instruction_t *ops[4] = {sel};
  for (int b = 0; b < branches; b++) {
    char name[32];
    snprintf(name, sizeof(name), "a%d", b);
    ops[b + 1] = param(c, name, b + 1, shp(HL_S32, 0));
  }
  hl_instruction_t *cond =
      add_inst(c, "cond", HL_OP_CONDITIONAL, shp(HL_S32, 0), branches + 1, ops);
  HL_ASSERT_OK(hl_instruction_set_called(cond, br, branches));
  finish(c, cond);
  m->entry = c;
  return m;
}

static int32_t run_conditional(hl_module_t *m, hl_literal_t *sel, int branches) {
  hl_literal_t *args[4] = {sel};
  for (int b = 0; b < branches; b++) args[b + 1] = s32_scalar(b + 1);  // a_b = b + 1
  hl_literal_t *out = NULL;
  hl_status_t st = hl_execute(m, NULL, args, branches + 1, &out);
  int32_t v = -1;
  if (st)
    hl_status_report(st, stderr, "conditional");
  else
    v = ((int32_t *)out->data)[0];
  hl_literal_release(out);
  for (int b = 0; b <= branches; b++) hl_literal_release(args[b]);
  return v;
}

static void test_conditional(void) {
  hl_module_t *m = conditional_module(HL_PRED, 2);
  CU_ASSERT_EQUAL(run_conditional(m, pred_scalar(true), 2), 11);   // branch 0 with a0 = 1
  CU_ASSERT_EQUAL(run_conditional(m, pred_scalar(false), 2), 22);  // branch 1 with a1 = 2
  hl_module_destroy(m);
  m = conditional_module(HL_S32, 3);
  CU_ASSERT_EQUAL(run_conditional(m, s32_scalar(0), 3), 11);
  CU_ASSERT_EQUAL(run_conditional(m, s32_scalar(1), 3), 22);
  CU_ASSERT_EQUAL(run_conditional(m, s32_scalar(2), 3), 33);
  CU_ASSERT_EQUAL(run_conditional(m, s32_scalar(3), 3), 33);   // out of range: last branch
  CU_ASSERT_EQUAL(run_conditional(m, s32_scalar(-1), 3), 33);  // negative too
  hl_module_destroy(m);
}

//===----------------------------------------------------------------------===//
// Modules from HLO text (also checks the parser's IR matches what the
// executor expects, e.g. while's called computations are [body, condition])
//===----------------------------------------------------------------------===//

static hl_module_t *parse(const char *text) {
  hl_module_t *m = NULL;
  HL_ASSERT_OK(hl_parse_hlo_module(text, strlen(text), "t.hlo", &m));
  return m;
}

// state (i, a): while i < 5 { i += 1; a *= i } from (0, 1): a = 5! = 120.
static void test_text_while_factorial(void) {
  hl_module_t *m = parse(
      "HloModule m\n"
      "cond {\n"
      "  s = (s32[], s32[]) parameter(0)\n"
      "  i = s32[] get-tuple-element(s), index=0\n"
      "  n = s32[] constant(5)\n"
      "  ROOT lt = pred[] compare(i, n), direction=LT\n"
      "}\n"
      "body {\n"
      "  s = (s32[], s32[]) parameter(0)\n"
      "  i = s32[] get-tuple-element(s), index=0\n"
      "  a = s32[] get-tuple-element(s), index=1\n"
      "  one = s32[] constant(1)\n"
      "  i1 = s32[] add(i, one)\n"
      "  a1 = s32[] multiply(a, i1)\n"
      "  ROOT t = (s32[], s32[]) tuple(i1, a1)\n"
      "}\n"
      "ENTRY main {\n"
      "  z = s32[] constant(0)\n"
      "  o = s32[] constant(1)\n"
      "  t = (s32[], s32[]) tuple(z, o)\n"
      "  w = (s32[], s32[]) while(t), condition=cond, body=body\n"
      "  ROOT r = s32[] get-tuple-element(w), index=1\n"
      "}\n");
  hl_literal_t *out = NULL;
  HL_ASSERT_OK(hl_execute(m, NULL, NULL, 0, &out));
  CU_ASSERT_EQUAL(hl_literal_get_s64(out, 0), 120);
  hl_literal_release(out);
  hl_module_destroy(m);
}

// One executable, many runs: plans and compiled reducers are kept, and a run
// that fails half-way (branch 1 reaches an unknown custom-call) leaves
// nothing behind for the next run. Sums worked by hand.
static void test_executable_reused_across_runs(void) {
  hl_module_t *m = parse(
      "HloModule m\n"
      "add {\n"
      "  a = s32[] parameter(0)\n"
      "  b = s32[] parameter(1)\n"
      "  ROOT s = s32[] add(a, b)\n"
      "}\n"
      "ok {\n"
      "  x = s32[3] parameter(0)\n"
      "  z = s32[] constant(0)\n"
      "  ROOT r = s32[] reduce(x, z), dimensions={0}, to_apply=add\n"
      "}\n"
      "bad {\n"
      "  x = s32[3] parameter(0)\n"
      "  ROOT r = s32[] custom-call(x), custom_call_target=\"no_such_target\"\n"
      "}\n"
      "ENTRY main {\n"
      "  i = s32[] parameter(0)\n"
      "  x = s32[3] parameter(1)\n"
      "  ROOT c = s32[] conditional(i, x, x), branch_computations={ok, bad}\n"
      "}\n");
  hl_executable_t *exe = NULL;
  HL_ASSERT_OK(hl_executable_create(m, &exe));
  int64_t three = 3;
  hl_shape_t vec = hl_shape_array(HL_S32, 1, &three), scalar = hl_shape_scalar(HL_S32);
  hl_literal_t *args[2];
  HL_ASSERT_OK(hl_literal_create(&scalar, &args[0]));
  HL_ASSERT_OK(hl_literal_create(&vec, &args[1]));
  const int64_t branch[4] = {0, 1, 0, 0};
  for (int run = 0; run < 4; run++) {
    ((int32_t *)args[0]->data)[0] = (int32_t)branch[run];
    for (int k = 0; k < 3; k++) ((int32_t *)args[1]->data)[k] = 10 * run + k;  // sum 30 run + 3
    hl_literal_t *out = NULL;
    hl_status_t st = hl_executable_run(exe, NULL, args, 2, &out);
    if (branch[run] == 1) {
      HL_ASSERT_ERROR_CONTAINS(st, "no_such_target");
      CU_ASSERT_PTR_NULL(out);
      continue;
    }
    HL_ASSERT_OK(st);
    CU_ASSERT_EQUAL(hl_literal_get_s64(out, 0), 30 * run + 3);
    hl_literal_release(out);
  }
  CU_ASSERT_EQUAL(hl_exec_stats().live_values, 0);
  hl_literal_release(args[0]);
  hl_literal_release(args[1]);
  hl_executable_destroy(exe);
  hl_module_destroy(m);
}

// branch_computations: index 1 -> b1; 7 and -2 are out of range -> last (b2).
static void test_text_conditional_branches(void) {
  hl_module_t *m = parse(
      "HloModule m\n"
      "b0 {\n  x = f32[] parameter(0)\n  ROOT n = f32[] negate(x)\n}\n"
      "b1 {\n  x = f32[] parameter(0)\n  ROOT y = f32[] add(x, x)\n}\n"
      "b2 {\n  x = f32[] parameter(0)\n  ROOT y = f32[] multiply(x, x)\n}\n"
      "ENTRY main {\n"
      "  i = s32[] parameter(0)\n"
      "  a = f32[] parameter(1)\n"
      "  ROOT c = f32[] conditional(i, a, a, a), branch_computations={b0, b1, b2}\n"
      "}\n");
  const int32_t sel[4] = {0, 1, 7, -2};
  const float want[4] = {-3.0f, 6.0f, 9.0f, 9.0f};  // a = 3
  for (int t = 0; t < 4; t++) {
    hl_literal_t *args[2] = {s32_scalar(sel[t]), f32_scalar(3.0f)}, *out = NULL;
    HL_ASSERT_OK(hl_execute(m, NULL, args, 2, &out));
    CU_ASSERT_EQUAL(((float *)out->data)[0], want[t]);
    hl_literal_release(out);
    hl_literal_release(args[0]);
    hl_literal_release(args[1]);
  }
  hl_module_destroy(m);
}

// p = [[1,2,3],[4,5,6]]; numpy:
//   b = np.broadcast_to(p.T, (4,3,2)); s = b[1:4:2, 0:3:2, 1:2]
//   np.concatenate([s.reshape(4), np.arange(3)]) -> [4, 6, 4, 6, 0, 1, 2]
static void test_text_data_movement_pipeline(void) {
  hl_module_t *m = parse(
      "HloModule m\n"
      "ENTRY main {\n"
      "  p = s32[2,3] constant({{1, 2, 3}, {4, 5, 6}})\n"
      "  t = s32[3,2] transpose(p), dimensions={1,0}\n"
      "  b = s32[4,3,2] broadcast(t), dimensions={1,2}\n"
      "  s = s32[2,2,1] slice(b), slice={[1:4:2], [0:3:2], [1:2]}\n"
      "  r = s32[4] reshape(s)\n"
      "  i = s32[3] iota(), iota_dimension=0\n"
      "  ROOT c = s32[7] concatenate(r, i), dimensions={0}\n"
      "}\n");
  hl_literal_t *out = NULL;
  HL_ASSERT_OK(hl_execute(m, NULL, NULL, 0, &out));
  const int32_t want[7] = {4, 6, 4, 6, 0, 1, 2};
  CU_ASSERT_EQUAL(memcmp(out->data, want, sizeof(want)), 0);
  hl_literal_release(out);
  hl_module_destroy(m);
}

// Text-loaded modules put the source position in the location.
static void test_text_error_has_source_position(void) {
  hl_module_t *m = parse(
      "HloModule m\n"
      "ENTRY main {\n"
      "  p = f32[4] parameter(0)\n"
      "  ROOT s = f32[2] slice(p), slice={[3:5]}\n"
      "}\n");
  float v[4] = {0};
  int64_t d = 4;
  hl_literal_t *x = f32_array(1, &d, v), *out = NULL;
  HL_ASSERT_ERROR_CONTAINS(hl_execute(m, NULL, &x, 1, &out),
                           "instruction 's' (slice) in computation 'main' at t.hlo:4:");
  hl_literal_release(x);
  hl_module_destroy(m);
}

//===----------------------------------------------------------------------===//
// Robustness and speed
//===----------------------------------------------------------------------===//

// Every allocation failure point of a run with control flow returns an error
// (no crash; ASan checks for leaks) until enough allocations succeed.
static void test_allocation_failures(void) {
  hl_module_t *m = sum_loop_module();
  hl_literal_t *init = s32_triple(0, 0, 3);
  bool succeeded = false;
  for (long k = 0; k < 2000 && !succeeded; k++) {
    hl_literal_t *out = NULL;
    hl_alloc_fail_after(k);
    hl_status_t st = hl_execute(m, NULL, &init, 1, &out);
    hl_alloc_fail_after(-1);
    if (!st) {
      succeeded = true;
      CU_ASSERT_EQUAL(hl_literal_get_s64(out->elements[1], 0), 6);  // 1 + 2 + 3
      hl_literal_release(out);
    } else {
      CU_ASSERT_PTR_NULL(out);
      hl_status_free(st);
    }
    CU_ASSERT_EQUAL(hl_exec_stats().live_values, 0);
  }
  CU_ASSERT_TRUE(succeeded);
  CU_ASSERT_EQUAL(init->refcount, 1);
  hl_literal_release(init);
  hl_module_destroy(m);
}

// A chain of 10,000 scalar adds; prints the time per instruction (the
// target is < 2 us in an optimised build; only sanity is asserted here).
static void test_scalar_add_chain_speed(void) {
  enum { kN = 10000 };
  hl_module_t *m = new_module();
  hl_computation_t *c = new_comp(m, "main");
  hl_instruction_t *x = param(c, "x", 0, shp(HL_F32, 0));
  hl_instruction_t *one = constant(c, "one", f32_scalar(1.0f));
  hl_instruction_t *prev = x;
  for (int i = 0; i < kN; i++) {
    char name[32];
    snprintf(name, sizeof(name), "add.%d", i);
    prev = add_inst(c, name, HL_OP_ADD, shp(HL_F32, 0), OPS(prev, one));
  }
  finish(c, prev);
  m->entry = c;
  hl_literal_t *arg = f32_scalar(0.5f), *out = NULL;
  hl_exec_stats_reset();
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  HL_ASSERT_OK(hl_execute(m, NULL, &arg, 1, &out));
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double us = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 1e3 / kN;
  fprintf(stderr, "\n    %d scalar adds: %.3f us per instruction, peak live values %lld\n", kN,
          us, (long long)hl_exec_stats().peak_live_values);
  CU_ASSERT_EQUAL(((float *)out->data)[0], 10000.5f);  // exact in f32
  CU_ASSERT(hl_exec_stats().peak_live_values <= 4);
  hl_literal_release(out);
  hl_literal_release(arg);
  hl_module_destroy(m);
}

static CU_TestInfo tests[] = {
    {"plan_honours_control_predecessors", test_plan_honours_control_predecessors},
    {"plan_last_use", test_plan_last_use},
    {"plan_rejects_cycle", test_plan_rejects_cycle},
    {"plan_rejects_wrong_operand_count", test_plan_rejects_wrong_operand_count},
    {"plan_rejects_foreign_operand", test_plan_rejects_foreign_operand},
    {"live_values_bounded_in_long_chain", test_live_values_bounded_in_long_chain},
    {"live_values_peak_when_all_used_by_root", test_live_values_peak_when_all_used_by_root},
    {"donation_only_at_last_use", test_donation_only_at_last_use},
    {"argument_count_checked", test_argument_count_checked},
    {"argument_shape_checked", test_argument_shape_checked},
    {"identity_returns_argument", test_identity_returns_argument},
    {"unimplemented_op_error_names_instruction_once",
     test_unimplemented_op_error_names_instruction_once},
    {"nested_error_context", test_nested_error_context},
    {"kernel_located_error_not_repeated", test_kernel_located_error_not_repeated},
    {"recursion_rejected", test_recursion_rejected},
    {"result_shape_checked", test_result_shape_checked},
    {"structural_ops", test_structural_ops},
    {"get_tuple_element_index_checked", test_get_tuple_element_index_checked},
    {"call_and_fusion", test_call_and_fusion},
    {"call_argument_shape_checked", test_call_argument_shape_checked},
    {"while_loop", test_while_loop},
    {"while_cancellable", test_while_cancellable},
    {"while_condition_must_return_pred", test_while_condition_must_return_pred},
    {"conditional", test_conditional},
    {"text_while_factorial", test_text_while_factorial},
    {"executable_reused_across_runs", test_executable_reused_across_runs},
    {"text_conditional_branches", test_text_conditional_branches},
    {"text_data_movement_pipeline", test_text_data_movement_pipeline},
    {"text_error_has_source_position", test_text_error_has_source_position},
    {"allocation_failures", test_allocation_failures},
    {"scalar_add_chain_speed", test_scalar_add_chain_speed},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN("executor", tests)
