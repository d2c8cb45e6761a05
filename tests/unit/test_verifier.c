// Verifier: one malformed module per check, each asserting the message names
// the instruction (or file:line:col) and the problem; well-formed modules pass.
#include <stdarg.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/ir/module.h"
#include "runtime/text/hlo_parser.h"
#include "runtime/verifier/verifier.h"
#include "test_util.h"
#include "tests/unit/ir_build_util.h"

static hl_shape_t arr(hl_dtype_t t, int rank, ...) {
  int64_t dims[HL_MAX_RANK];
  va_list ap;
  va_start(ap, rank);
  for (int i = 0; i < rank; i++) dims[i] = va_arg(ap, int64_t);
  va_end(ap);
  return hl_shape_array(t, rank, dims);
}

#define S(t, ...) arr(t, __VA_ARGS__)
#define SCALAR(t) arr(t, 0)
#define D(x) ((int64_t)(x))

// Like ir_add, and the new instruction becomes the computation's root.
static hl_instruction_t *add(hl_computation_t *c, const char *name, hl_opcode_t op,
                             hl_shape_t shape, int n, ...) {
  va_list ap;
  va_start(ap, n);
  hl_instruction_t *inst = ir_add_v(c, name, op, shape, n, ap);
  va_end(ap);
  c->root = inst;
  return inst;
}

static hl_instruction_t *param(hl_computation_t *c, const char *name, int64_t number,
                               hl_shape_t shape) {
  hl_instruction_t *p = add(c, name, HL_OP_PARAMETER, shape, 0);
  p->attrs.parameter_number = number;
  return p;
}


typedef struct fixture {
  hl_module_t *m;
  hl_computation_t *c;
  hl_instruction_t *a;  // f32[2,3]
  hl_instruction_t *s;  // f32[]
} fixture_t;

static fixture_t fixture(void) {
  fixture_t f;
  HL_ASSERT_OK(hl_module_create("m", &f.m));
  HL_ASSERT_OK(hl_module_add_computation(f.m, "main", &f.c));
  f.m->entry = f.c;
  f.a = param(f.c, "a", 0, S(HL_F32, 2, D(2), D(3)));
  f.s = param(f.c, "s", 1, SCALAR(HL_F32));
  return f;
}

static hl_computation_t *scalar_add(hl_module_t *m, const char *name, hl_dtype_t t) {
  hl_computation_t *c = NULL;
  HL_ASSERT_OK(hl_module_add_computation(m, name, &c));
  hl_instruction_t *x = param(c, "x", 0, SCALAR(t));
  hl_instruction_t *y = param(c, "y", 1, SCALAR(t));
  add(c, "sum", HL_OP_ADD, SCALAR(t), 2, x, y);
  return c;
}

// Verifies f's module, expects an error holding the location of `name`
// (op) and `problem`, then destroys the module.
static void expect_problem(fixture_t *f, const char *name, const char *op, const char *problem) {
  char where[128];
  snprintf(where, sizeof(where), "computation 'main', instruction '%s' (%s): ", name, op);
  hl_status_t st = hl_verify_module(f->m);
  CU_ASSERT_PTR_NOT_NULL(st);
  if (st) {
    const char *msg = hl_status_message(st);
    if (!strstr(msg, where) || !strstr(msg, problem)) {
      fprintf(stderr, "\n  message '%s'\n  lacks '%s' / '%s'\n", msg, where, problem);
      CU_FAIL("verifier message");
    }
    hl_status_free(st);
  }
  hl_module_destroy(f->m);
}

static void expect_ok(fixture_t *f) {
  HL_ASSERT_OK(hl_verify_module(f->m));
  hl_module_destroy(f->m);
}

//===----------------------------------------------------------------------===//

static void test_good_module(void) {
  fixture_t f = fixture();
  hl_computation_t *sum = scalar_add(f.m, "sum", HL_F32);
  // Move the reducer before main, as loaders order callees first.
  f.m->computations[0] = sum;
  f.m->computations[1] = f.c;
  hl_instruction_t *n = add(f.c, "n", HL_OP_NEGATE, S(HL_F32, 2, D(2), D(3)), 1, f.a);
  hl_instruction_t *m = add(f.c, "m", HL_OP_MULTIPLY, S(HL_F32, 2, D(2), D(3)), 2, n, f.a);
  hl_instruction_t *b = add(f.c, "b", HL_OP_BROADCAST, S(HL_F32, 3, D(4), D(2), D(3)), 1, m);
  ir_set_list(&b->attrs.dimensions, 2, D(1), D(2));
  hl_instruction_t *t = add(f.c, "t", HL_OP_TRANSPOSE, S(HL_F32, 2, D(3), D(2)), 1, m);
  ir_set_list(&t->attrs.dimensions, 2, D(1), D(0));
  hl_instruction_t *d = add(f.c, "d", HL_OP_DOT, S(HL_F32, 2, D(2), D(2)), 2, m, t);
  d->attrs.has_dot_dimension_numbers = true;
  ir_set_list(&d->attrs.dot_dimension_numbers.lhs_contracting_dimensions, 1, D(1));
  ir_set_list(&d->attrs.dot_dimension_numbers.rhs_contracting_dimensions, 1, D(0));
  hl_instruction_t *r = add(f.c, "r", HL_OP_REDUCE, S(HL_F32, 1, D(2)), 2, d, f.s);
  ir_set_list(&r->attrs.dimensions, 1, D(1));
  HL_ASSERT_OK(hl_instruction_set_called(r, &sum, 1));
  hl_instruction_t *cmp = add(f.c, "cmp", HL_OP_COMPARE, S(HL_PRED, 1, D(2)), 2, r, r);
  cmp->attrs.comparison_direction = HL_CMP_LT;
  hl_instruction_t *sel = add(f.c, "sel", HL_OP_SELECT, S(HL_F32, 1, D(2)), 3, cmp, r, r);
  hl_instruction_t *cv = add(f.c, "cv", HL_OP_CONVERT, S(HL_S32, 1, D(2)), 1, sel);
  hl_instruction_t *bc = add(f.c, "bc", HL_OP_BITCAST_CONVERT, S(HL_U8, 2, D(2), D(4)), 1, cv);
  hl_instruction_t *rs = add(f.c, "rs", HL_OP_RESHAPE, S(HL_U8, 1, D(8)), 1, bc);
  hl_instruction_t *sl = add(f.c, "sl", HL_OP_SLICE, S(HL_U8, 1, D(3)), 1, rs);
  sl->attrs.slice_dimensions = hl_calloc(1, sizeof(hl_slice_dim_t));
  sl->attrs.slice_count = 1;
  sl->attrs.slice_dimensions[0] = (hl_slice_dim_t){1, 7, 2};
  hl_instruction_t *cc = add(f.c, "cc", HL_OP_CONCATENATE, S(HL_U8, 1, D(11)), 2, sl, rs);
  ir_set_list(&cc->attrs.dimensions, 1, D(0));
  hl_instruction_t *io = add(f.c, "io", HL_OP_IOTA, S(HL_S32, 2, D(2), D(2)), 0);
  ir_set_list(&io->attrs.dimensions, 1, D(1));
  hl_instruction_t *rid = add(f.c, "rid", HL_OP_REPLICA_ID, SCALAR(HL_U32), 0);
  hl_shape_t el[3] = {cc->shape, io->shape, rid->shape};
  hl_instruction_t *tup = add(f.c, "tup", HL_OP_TUPLE, SCALAR(HL_F32), 3, cc, io, rid);
  HL_ASSERT_OK(hl_shape_tuple(el, 3, &tup->shape));
  hl_instruction_t *g = add(f.c, "g", HL_OP_GET_TUPLE_ELEMENT, S(HL_S32, 2, D(2), D(2)), 1, tup);
  g->attrs.tuple_index = 1;
  hl_instruction_t *k = add(f.c, "k", HL_OP_CONSTANT, SCALAR(HL_F32), 0);
  HL_ASSERT_OK(hl_literal_create(&k->shape, &k->attrs.literal));
  hl_instruction_t *cl = add(f.c, "cl", HL_OP_CLAMP, S(HL_F32, 2, D(2), D(3)), 3, k, f.a, k);
  hl_computation_t *callee = scalar_add(f.m, "callee", HL_F32);
  hl_instruction_t *call = add(f.c, "call", HL_OP_CALL, SCALAR(HL_F32), 2, k, f.s);
  HL_ASSERT_OK(hl_instruction_set_called(call, &callee, 1));
  (void)cl;
  (void)g;
  expect_ok(&f);
}

static void test_control_flow_ok_and_bad(void) {
  // while: condition returns pred[], body returns its parameter shape.
  fixture_t f = fixture();
  hl_computation_t *cond = NULL, *body = NULL;
  HL_ASSERT_OK(hl_module_add_computation(f.m, "cond", &cond));
  hl_instruction_t *cp = param(cond, "p", 0, SCALAR(HL_F32));
  hl_instruction_t *lt = add(cond, "lt", HL_OP_COMPARE, SCALAR(HL_PRED), 2, cp, cp);
  lt->attrs.comparison_direction = HL_CMP_LT;
  HL_ASSERT_OK(hl_module_add_computation(f.m, "body", &body));
  hl_instruction_t *bp = param(body, "p", 0, SCALAR(HL_F32));
  add(body, "n", HL_OP_NEGATE, SCALAR(HL_F32), 1, bp);
  hl_instruction_t *w = add(f.c, "w", HL_OP_WHILE, SCALAR(HL_F32), 1, f.s);
  hl_computation_t *wc[2] = {body, cond};
  HL_ASSERT_OK(hl_instruction_set_called(w, wc, 2));
  hl_instruction_t *pr = param(f.c, "pr", 2, SCALAR(HL_PRED));
  hl_instruction_t *cd = add(f.c, "cd", HL_OP_CONDITIONAL, SCALAR(HL_F32), 3, pr, w, f.s);
  hl_computation_t *br[2] = {body, body};
  HL_ASSERT_OK(hl_instruction_set_called(cd, br, 2));
  expect_ok(&f);

  // The condition returns f32[] instead of pred[].
  f = fixture();
  HL_ASSERT_OK(hl_module_add_computation(f.m, "cond", &cond));
  cp = param(cond, "p", 0, SCALAR(HL_F32));
  add(cond, "n", HL_OP_NEGATE, SCALAR(HL_F32), 1, cp);
  w = add(f.c, "w", HL_OP_WHILE, SCALAR(HL_F32), 1, f.s);
  hl_computation_t *wc2[2] = {cond, cond};
  HL_ASSERT_OK(hl_instruction_set_called(w, wc2, 2));
  expect_problem(&f, "w", "while", "condition computation 'cond' returns f32[], must return pred[]");

  // Branch results differ from the conditional's shape.
  f = fixture();
  HL_ASSERT_OK(hl_module_add_computation(f.m, "b0", &body));
  bp = param(body, "p", 0, SCALAR(HL_F32));
  add(body, "c", HL_OP_CONVERT, SCALAR(HL_S32), 1, bp);
  pr = param(f.c, "pr", 2, SCALAR(HL_PRED));
  cd = add(f.c, "cd", HL_OP_CONDITIONAL, SCALAR(HL_F32), 3, pr, f.s, f.s);
  hl_computation_t *br2[2] = {body, body};
  HL_ASSERT_OK(hl_instruction_set_called(cd, br2, 2));
  expect_problem(&f, "cd", "conditional", "branch 0 computation 'b0' returns s32[]");

  // A call with the wrong number of arguments.
  f = fixture();
  hl_computation_t *callee = scalar_add(f.m, "callee", HL_F32);
  hl_instruction_t *call = add(f.c, "call", HL_OP_CALL, SCALAR(HL_F32), 1, f.s);
  HL_ASSERT_OK(hl_instruction_set_called(call, &callee, 1));
  expect_problem(&f, "call", "call", "called computation 'callee' takes 2 parameters, expected 1");

  // A while without its computations.
  f = fixture();
  add(f.c, "w", HL_OP_WHILE, SCALAR(HL_F32), 1, f.s);
  expect_problem(&f, "w", "while", "expects 2 called computations, has 0");
}

static void test_parameter_and_tuple(void) {
  fixture_t f = fixture();
  param(f.c, "p9", 9, SCALAR(HL_F32));
  expect_problem(&f, "p9", "parameter", "parameter number 9 out of range");

  f = fixture();
  hl_instruction_t *t = add(f.c, "t", HL_OP_TUPLE, SCALAR(HL_F32), 2, f.a, f.s);
  hl_shape_t el[2] = {f.s->shape, f.s->shape};
  HL_ASSERT_OK(hl_shape_tuple(el, 2, &t->shape));
  expect_problem(&f, "t", "tuple", "tuple element 0 shape f32[] differs from operand shape f32[2,3]");

  f = fixture();
  t = add(f.c, "t", HL_OP_TUPLE, SCALAR(HL_F32), 2, f.a, f.s);
  hl_shape_t el2[2] = {f.a->shape, f.s->shape};
  HL_ASSERT_OK(hl_shape_tuple(el2, 2, &t->shape));
  hl_instruction_t *g = add(f.c, "g", HL_OP_GET_TUPLE_ELEMENT, SCALAR(HL_F32), 1, t);
  g->attrs.tuple_index = 2;
  expect_problem(&f, "g", "get-tuple-element",
                 "attribute index = 2 out of range for a tuple of 2 elements");
}

static void test_elementwise(void) {
  fixture_t f = fixture();
  add(f.c, "x", HL_OP_ADD, S(HL_F32, 2, D(2), D(3)), 2, f.a, f.s);
  expect_problem(&f, "x", "add", "operand shapes f32[2,3] and f32[] differ");

  f = fixture();
  hl_instruction_t *c = add(f.c, "c", HL_OP_COMPARE, S(HL_F32, 2, D(2), D(3)), 2, f.a, f.a);
  c->attrs.comparison_direction = HL_CMP_EQ;
  expect_problem(&f, "c", "compare", "result element type f32 should be pred");

  f = fixture();
  add(f.c, "sel", HL_OP_SELECT, SCALAR(HL_F32), 3, f.s, f.s, f.s);
  expect_problem(&f, "sel", "select", "predicate element type is f32, must be pred");

  f = fixture();
  add(f.c, "cl", HL_OP_CLAMP, SCALAR(HL_F32), 3, f.a, f.s, f.s);
  expect_problem(&f, "cl", "clamp", "min shape f32[2,3] must be a scalar or the shape of operand");

  f = fixture();
  add(f.c, "cv", HL_OP_CONVERT, S(HL_S32, 1, D(6)), 1, f.a);
  expect_problem(&f, "cv", "convert", "does not have the dimensions of operand");

  f = fixture();
  add(f.c, "bc", HL_OP_BITCAST_CONVERT, S(HL_U8, 2, D(2), D(3)), 1, f.a);
  expect_problem(&f, "bc", "bitcast-convert", "cannot bitcast-convert f32[2,3] (32 bits)");

  f = fixture();
  add(f.c, "fin", HL_OP_IS_FINITE, S(HL_F32, 2, D(2), D(3)), 1, f.a);
  expect_problem(&f, "fin", "is-finite", "result element type f32 should be pred");
}

static void test_shape_ops(void) {
  fixture_t f = fixture();
  hl_instruction_t *b = add(f.c, "b", HL_OP_BROADCAST, S(HL_F32, 2, D(2), D(3)), 1, f.a);
  ir_set_list(&b->attrs.dimensions, 2, D(0), D(5));
  expect_problem(&f, "b", "broadcast", "attribute dimensions[1] = 5 out of range for rank 2");

  f = fixture();
  b = add(f.c, "b", HL_OP_BROADCAST, S(HL_F32, 3, D(3), D(2), D(3)), 1, f.a);
  ir_set_list(&b->attrs.dimensions, 2, D(2), D(1));
  expect_problem(&f, "b", "broadcast", "attribute dimensions must be strictly increasing");

  f = fixture();
  b = add(f.c, "b", HL_OP_BROADCAST, S(HL_F32, 2, D(2), D(4)), 1, f.a);
  ir_set_list(&b->attrs.dimensions, 2, D(0), D(1));
  expect_problem(&f, "b", "broadcast",
                 "operand dimension 1 has size 3 but result dimension 1 has size 4");

  f = fixture();
  add(f.c, "r", HL_OP_RESHAPE, S(HL_F32, 1, D(7)), 1, f.a);
  expect_problem(&f, "r", "reshape", "element count changes from 6 (f32[2,3]) to 7 (f32[7])");

  f = fixture();
  hl_instruction_t *t = add(f.c, "t", HL_OP_TRANSPOSE, S(HL_F32, 2, D(3), D(2)), 1, f.a);
  ir_set_list(&t->attrs.dimensions, 2, D(1), D(1));
  expect_problem(&f, "t", "transpose", "attribute dimensions is not a permutation");

  f = fixture();
  hl_instruction_t *sl = add(f.c, "sl", HL_OP_SLICE, S(HL_F32, 2, D(1), D(3)), 1, f.a);
  sl->attrs.slice_dimensions = hl_calloc(2, sizeof(hl_slice_dim_t));
  sl->attrs.slice_count = 2;
  sl->attrs.slice_dimensions[0] = (hl_slice_dim_t){1, 2, 1};
  sl->attrs.slice_dimensions[1] = (hl_slice_dim_t){0, 4, 1};
  expect_problem(&f, "sl", "slice", "attribute slice[1] = [0:4] out of bounds for dimension size 3");

  f = fixture();
  hl_instruction_t *cc = add(f.c, "cc", HL_OP_CONCATENATE, S(HL_F32, 2, D(4), D(3)), 2, f.a, f.a);
  ir_set_list(&cc->attrs.dimensions, 1, D(2));
  expect_problem(&f, "cc", "concatenate", "attribute dimensions[0] = 2 out of range for rank 2");

  f = fixture();
  cc = add(f.c, "cc", HL_OP_CONCATENATE, S(HL_F32, 2, D(2), D(7)), 2, f.a, f.a);
  ir_set_list(&cc->attrs.dimensions, 1, D(1));
  expect_problem(&f, "cc", "concatenate", "does not match concatenated shape f32[2,6]");

  f = fixture();
  hl_instruction_t *io = add(f.c, "io", HL_OP_IOTA, S(HL_S32, 1, D(4)), 0);
  ir_set_list(&io->attrs.dimensions, 1, D(1));
  expect_problem(&f, "io", "iota", "attribute iota_dimension = 1 out of range for rank 1");
}

static void test_reduce_and_dot(void) {
  fixture_t f = fixture();
  hl_computation_t *sum = scalar_add(f.m, "sum", HL_F32);
  hl_instruction_t *r = add(f.c, "r", HL_OP_REDUCE, S(HL_F32, 1, D(2)), 2, f.a, f.s);
  ir_set_list(&r->attrs.dimensions, 1, D(3));
  HL_ASSERT_OK(hl_instruction_set_called(r, &sum, 1));
  expect_problem(&f, "r", "reduce", "attribute dimensions[0] = 3 out of range for rank 2");

  f = fixture();
  sum = scalar_add(f.m, "sum", HL_F32);
  r = add(f.c, "r", HL_OP_REDUCE, S(HL_F32, 1, D(2)), 2, f.a, f.s);
  ir_set_list(&r->attrs.dimensions, 2, D(1), D(1));
  HL_ASSERT_OK(hl_instruction_set_called(r, &sum, 1));
  expect_problem(&f, "r", "reduce", "attribute dimensions repeats dimension 1");

  f = fixture();
  hl_computation_t *isum = scalar_add(f.m, "isum", HL_S32);
  r = add(f.c, "r", HL_OP_REDUCE, S(HL_F32, 1, D(2)), 2, f.a, f.s);
  ir_set_list(&r->attrs.dimensions, 1, D(1));
  HL_ASSERT_OK(hl_instruction_set_called(r, &isum, 1));
  expect_problem(&f, "r", "reduce",
                 "reducer computation 'isum' parameter 0 has shape s32[], expected f32[]");

  f = fixture();
  sum = scalar_add(f.m, "sum", HL_F32);
  r = add(f.c, "r", HL_OP_REDUCE, S(HL_F32, 1, D(3)), 2, f.a, f.s);
  ir_set_list(&r->attrs.dimensions, 1, D(1));
  HL_ASSERT_OK(hl_instruction_set_called(r, &sum, 1));
  expect_problem(&f, "r", "reduce", "does not match reduced shape f32[2]");

  // The reducer takes the right parameters but returns pred[].
  f = fixture();
  hl_computation_t *bad = NULL;
  HL_ASSERT_OK(hl_module_add_computation(f.m, "bad", &bad));
  hl_instruction_t *bx = param(bad, "x", 0, SCALAR(HL_F32));
  hl_instruction_t *by = param(bad, "y", 1, SCALAR(HL_F32));
  hl_instruction_t *blt = add(bad, "lt", HL_OP_COMPARE, SCALAR(HL_PRED), 2, bx, by);
  blt->attrs.comparison_direction = HL_CMP_LT;
  r = add(f.c, "r", HL_OP_REDUCE, S(HL_F32, 1, D(2)), 2, f.a, f.s);
  ir_set_list(&r->attrs.dimensions, 1, D(1));
  HL_ASSERT_OK(hl_instruction_set_called(r, &bad, 1));
  expect_problem(&f, "r", "reduce", "reducer computation 'bad' returns pred[], expected f32[]");

  f = fixture();
  hl_instruction_t *d = add(f.c, "d", HL_OP_DOT, S(HL_F32, 2, D(2), D(2)), 2, f.a, f.a);
  d->attrs.has_dot_dimension_numbers = true;
  ir_set_list(&d->attrs.dot_dimension_numbers.lhs_contracting_dimensions, 1, D(1));
  ir_set_list(&d->attrs.dot_dimension_numbers.rhs_contracting_dimensions, 1, D(0));
  expect_problem(&f, "d", "dot", "contracting dimension 0: lhs size 3 != rhs size 2");

  f = fixture();
  hl_instruction_t *b = param(f.c, "b", 2, S(HL_F32, 2, D(3), D(4)));
  d = add(f.c, "d", HL_OP_DOT, S(HL_F32, 2, D(2), D(3)), 2, f.a, b);
  d->attrs.has_dot_dimension_numbers = true;
  ir_set_list(&d->attrs.dot_dimension_numbers.lhs_contracting_dimensions, 1, D(1));
  ir_set_list(&d->attrs.dot_dimension_numbers.rhs_contracting_dimensions, 1, D(0));
  expect_problem(&f, "d", "dot", "result shape f32[2,3] does not match dot shape f32[2,4]");
}

static void test_generic_checks(void) {
  fixture_t f = fixture();
  add(f.c, "x", HL_OP_ADD, SCALAR(HL_F32), 1, f.s);
  expect_problem(&f, "x", "add", "expects 2 operands, has 1");

  f = fixture();
  hl_instruction_t *r = add(f.c, "r", HL_OP_REDUCE, S(HL_F32, 1, D(2)), 2, f.a, f.s);
  ir_set_list(&r->attrs.dimensions, 1, D(1));
  expect_problem(&f, "r", "reduce", "expects 1 called computation, has 0");

  f = fixture();
  hl_computation_t *extra = scalar_add(f.m, "extra", HL_F32);
  hl_instruction_t *neg = add(f.c, "neg", HL_OP_NEGATE, SCALAR(HL_F32), 1, f.s);
  HL_ASSERT_OK(hl_instruction_set_called(neg, &extra, 1));
  expect_problem(&f, "neg", "negate", "takes no called computations, has 1");

  f = fixture();
  hl_instruction_t *n = add(f.c, "n", HL_OP_NEGATE, SCALAR(HL_F32), 1, f.s);
  n->shape.dtype = (hl_dtype_t)99;
  expect_problem(&f, "n", "negate", "unsupported element type");

  // Element counts that overflow int64 would wrap in every later size
  // computation (f32[2^62+1,4]: 2^64+4 elements).
  f = fixture();
  hl_instruction_t *big = param(f.c, "big", 2, S(HL_F32, 2, D(4611686018427387905LL), D(4)));
  add(f.c, "neg_big", HL_OP_NEGATE, big->shape, 1, big);
  expect_problem(&f, "big", "parameter", "result shape f32[4611686018427387905,4] is too large");
  // The overflow counts whatever zero dimension follows (strides still multiply).
  f = fixture();
  param(f.c, "big0", 2, S(HL_S64, 3, D(1LL << 40), D(1LL << 30), D(0)));
  expect_problem(&f, "big0", "parameter", "is too large (its byte size overflows int64)");

  f = fixture();
  add(f.c, "rid", HL_OP_REPLICA_ID, SCALAR(HL_S32), 0);
  expect_problem(&f, "rid", "replica-id", "result shape s32[] must be u32[]");

  // A valid fft (RFFT of f32[2,3] over its last dimension) passes.
  f = fixture();
  hl_instruction_t *fft = add(f.c, "fft", HL_OP_FFT, S(HL_C64, 2, D(2), D(2)), 1, f.a);
  int64_t fft_len = 3;
  fft->attrs.fft_type = 2;
  HL_ASSERT_OK(hl_i64_list_set(&fft->attrs.fft_length, &fft_len, 1));
  expect_ok(&f);
  f = fixture();
  add(f.c, "fft", HL_OP_FFT, S(HL_C64, 1, D(4)), 2, f.a, f.a);
  expect_problem(&f, "fft", "fft", "expects 1 operand, has 2");
}

static void test_text_location_and_many_problems(void) {
  fixture_t f = fixture();
  f.m->source_path = hl_strdup("prog.hlo");
  hl_instruction_t *x = add(f.c, "x", HL_OP_ADD, SCALAR(HL_F32), 2, f.a, f.s);
  x->line = 3;
  x->column = 7;
  hl_instruction_t *y = add(f.c, "y", HL_OP_RESHAPE, S(HL_F32, 1, D(5)), 1, f.a);
  y->line = 4;
  y->column = 3;
  hl_status_t st = hl_verify_module(f.m);
  CU_ASSERT_PTR_NOT_NULL_FATAL(st);
  const char *msg = hl_status_message(st);
  CU_ASSERT_PTR_NOT_NULL(strstr(msg, "prog.hlo:3:7: instruction 'x' (add): operand shapes"));
  CU_ASSERT_PTR_NOT_NULL(strstr(msg, "\nprog.hlo:4:3: instruction 'y' (reshape): element count"));
  CU_ASSERT_EQUAL(hl_status_code(st), HL_INVALID_ARGUMENT);
  hl_status_free(st);
  hl_module_destroy(f.m);
  HL_ASSERT_ERROR_CONTAINS(hl_verify_module(NULL), "no module");
}

// A text-loaded module: problems are located by file:line:col.
static void test_parsed_module(void) {
  static const char text[] =
      "HloModule bad\n"
      "\n"
      "ENTRY main {\n"
      "  a = f32[2,3]{1,0} parameter(0)\n"
      "  b = f32[2,3]{1,0} broadcast(a), dimensions={0,5}\n"
      "  ROOT r = f32[7]{0} reshape(b)\n"
      "}\n";
  hl_module_t *m = NULL;
  HL_ASSERT_OK(hl_parse_hlo_module(text, strlen(text), "bad.hlo", &m));
  hl_status_t st = hl_verify_module(m);
  CU_ASSERT_PTR_NOT_NULL_FATAL(st);
  const char *msg = hl_status_message(st);
  if (!strstr(msg, "bad.hlo:5:") ||
      !strstr(msg, ": instruction 'b' (broadcast): attribute dimensions[1] = 5 out of range "
                   "for rank 2") ||
      !strstr(msg, "bad.hlo:6:") ||
      !strstr(msg, ": instruction 'r' (reshape): element count changes from 6")) {
    fprintf(stderr, "\n  message: %s\n", msg);
    CU_FAIL("text locations");
  }
  hl_status_free(st);
  hl_module_destroy(m);
}

// Allocation failure while collecting problems gives an error, never a crash.
static void test_out_of_memory(void) {
  for (long n = 0; n < 16; n++) {
    fixture_t f = fixture();
    add(f.c, "x", HL_OP_ADD, SCALAR(HL_F32), 2, f.a, f.s);
    add(f.c, "y", HL_OP_ADD, SCALAR(HL_F32), 2, f.a, f.s);
    hl_alloc_fail_after(n);
    hl_status_t st = hl_verify_module(f.m);
    hl_alloc_fail_after(-1);
    CU_ASSERT_PTR_NOT_NULL(st);
    if (st) {
      hl_status_code_t code = hl_status_code(st);
      CU_ASSERT(code == HL_OUT_OF_MEMORY || code == HL_INVALID_ARGUMENT);
      hl_status_free(st);
    }
    hl_module_destroy(f.m);
  }
}

static CU_TestInfo tests[] = {
    {"good_module", test_good_module},
    {"control_flow", test_control_flow_ok_and_bad},
    {"parameter_and_tuple", test_parameter_and_tuple},
    {"elementwise", test_elementwise},
    {"shape_ops", test_shape_ops},
    {"reduce_and_dot", test_reduce_and_dot},
    {"generic_checks", test_generic_checks},
    {"text_location_and_many_problems", test_text_location_and_many_problems},
    {"parsed_module", test_parsed_module},
    {"out_of_memory", test_out_of_memory},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN("verifier", tests)
