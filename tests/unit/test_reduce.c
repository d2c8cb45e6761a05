// hl_kernel_reduce. The fast path (reducer = one binary op of its two
// parameters) is called directly; custom reducers run through hl_execute on a
// hand-built module, since they call back into the executor. Expected values
// are hand sums of small integers / dyadic fractions (exact in any order).
#include <math.h>

#include "runtime/exec/executor.h"
#include "tests/unit/kernel_test_util.h"

// A reducer computation root = op(p0, p1) (or op(p1, p0) when swapped) on t scalars.
static hl_computation_t *simple_reducer(hl_opcode_t op, hl_dtype_t t, int swapped) {
  char name[32];
  snprintf(name, sizeof(name), "red.%d", ++kt_counter_);
  hl_computation_t *c;
  HL_ASSERT_OK(hl_module_add_computation(kt_module_, name, &c));
  hl_instruction_t *p[2], *r;
  for (int i = 0; i < 2; i++) {
    HL_ASSERT_OK(hl_computation_add_instruction(c, i ? "y" : "x", HL_OP_PARAMETER, &p[i]));
    p[i]->shape = hl_shape_scalar(t);
    p[i]->attrs.parameter_number = i;
  }
  HL_ASSERT_OK(hl_computation_add_instruction(c, "r", op, &r));
  r->shape = hl_shape_scalar(t);
  hl_instruction_t *ops[2] = {p[swapped], p[!swapped]};
  HL_ASSERT_OK(hl_instruction_set_operands(r, ops, 2));
  c->root = r;
  HL_ASSERT_OK(hl_computation_index_parameters(c));
  return c;
}

// reduce(x, init) over dims with a simple reducer, called directly.
static hl_literal_t *reduce1(const hl_literal_t *x, const hl_literal_t *init, int nd,
                             const int64_t *dims, hl_opcode_t op, int rrank,
                             const int64_t *rdims) {
  hl_computation_t *red = simple_reducer(op, x->shape.dtype, 0);
  hl_instruction_t *inst = kt_inst(HL_OP_REDUCE, x->shape.dtype, rrank, rdims);
  kt_set_operand_count(inst, 2);
  HL_ASSERT_OK(hl_instruction_set_called(inst, &red, 1));
  HL_ASSERT_OK(hl_i64_list_set(&inst->attrs.dimensions, dims, nd));
  hl_literal_t *ops[2] = {(hl_literal_t *)x, (hl_literal_t *)init}, *y = NULL;
  HL_ASSERT_OK(hl_kernel_reduce(NULL, inst, ops, &y));
  CU_ASSERT_TRUE_FATAL(hl_shape_equal(&y->shape, &inst->shape));
  return y;
}

static void test_sum_minor_and_major(void) {
  kt_reset();
  // x[i][j] = i * 100 + j * 0.25, 3 x 50: long enough for the 16-lane fold.
  enum { R = 3, C = 50 };
  double v[R * C];
  for (int i = 0; i < R; i++)
    for (int j = 0; j < C; j++) v[i * C + j] = i * 100 + j * 0.25;
  int64_t dims[2] = {R, C}, d1[1] = {1}, d0[1] = {0}, rr[1] = {R}, rc[1] = {C};
  double ten = 10;
  hl_dtype_t types[2] = {HL_F32, HL_F64};
  for (int t = 0; t < 2; t++) {
    hl_literal_t *x = kt_lit_f64(types[t], 2, dims, v), *init = kt_lit_f64(types[t], 0, NULL, &ten);
    hl_literal_t *rows = reduce1(x, init, 1, d1, HL_OP_ADD, 1, rr);
    // row i: 10 + 50 * 100 i + 0.25 * (0 + ... + 49) = 10 + 5000 i + 306.25
    for (int i = 0; i < R; i++) CU_ASSERT_EQUAL(hl_literal_get_f64(rows, i), 316.25 + 5000 * i);
    hl_literal_t *cols = reduce1(x, init, 1, d0, HL_OP_ADD, 1, rc);
    // column j: 10 + (0 + 100 + 200) + 3 * 0.25 j
    for (int j = 0; j < C; j++) CU_ASSERT_EQUAL(hl_literal_get_f64(cols, j), 310 + 0.75 * j);
    hl_literal_release(rows);
    hl_literal_release(cols);
    hl_literal_release(x);
    hl_literal_release(init);
  }
}

static void test_long_rows_pairwise(void) {
  kt_reset();
  // 2 rows of 10007 (prime: uneven halves and tails): row 0 all 0.5, row 1 = j % 3.
  // Sums (exact in f32): 5003.5 and 3 * 3335 + 1 (j % 3 over 0..10006: 3335 full
  // cycles of 0+1+2 plus the trailing 0, 1) = 10006.
  enum { C = 10007 };
  static double v[2 * C];
  static int64_t w[2 * C];
  for (int j = 0; j < C; j++) v[j] = 0.5, v[C + j] = j % 3, w[j] = j, w[C + j] = -j;
  int64_t dims[2] = {2, C}, d1[1] = {1}, r2[1] = {2};
  double zero = 0;
  hl_literal_t *x = kt_lit_f64(HL_F32, 2, dims, v), *init = kt_lit_f64(HL_F32, 0, NULL, &zero);
  hl_literal_t *y = reduce1(x, init, 1, d1, HL_OP_ADD, 1, r2);
  CU_ASSERT_EQUAL(hl_literal_get_f64(y, 0), 5003.5);
  CU_ASSERT_EQUAL(hl_literal_get_f64(y, 1), 10006);
  hl_literal_release(y);
  hl_literal_release(x);
  hl_literal_release(init);
  // s64 max / min over the same length: max of 0..10006 is 10006, min of -j is -10006.
  int64_t lo = INT64_MIN, hi = INT64_MAX;
  hl_literal_t *xi = kt_lit_int(HL_S64, 2, dims, w), *ilo = kt_lit_int(HL_S64, 0, NULL, &lo);
  hl_literal_t *ihi = kt_lit_int(HL_S64, 0, NULL, &hi);
  y = reduce1(xi, ilo, 1, d1, HL_OP_MAXIMUM, 1, r2);
  CU_ASSERT_EQUAL(hl_literal_get_s64(y, 0), C - 1);
  CU_ASSERT_EQUAL(hl_literal_get_s64(y, 1), 0);
  hl_literal_release(y);
  y = reduce1(xi, ihi, 1, d1, HL_OP_MINIMUM, 1, r2);
  CU_ASSERT_EQUAL(hl_literal_get_s64(y, 0), 0);
  CU_ASSERT_EQUAL(hl_literal_get_s64(y, 1), -(C - 1));
  hl_literal_release(y);
  hl_literal_release(xi);
  hl_literal_release(ilo);
  hl_literal_release(ihi);
}

static void test_mixed_dims_and_all(void) {
  kt_reset();
  // s32[2,3,4], x = i*12 + j*4 + k; max over {0,2} keeps j: max = 12 + 4j + 3.
  int64_t v[24];
  for (int i = 0; i < 24; i++) v[i] = i;
  int64_t dims[3] = {2, 3, 4}, red[2] = {0, 2}, out[1] = {3}, minus = -1000;
  hl_literal_t *x = kt_lit_int(HL_S32, 3, dims, v), *init = kt_lit_int(HL_S32, 0, NULL, &minus);
  hl_literal_t *y = reduce1(x, init, 2, red, HL_OP_MAXIMUM, 1, out);
  for (int j = 0; j < 3; j++) CU_ASSERT_EQUAL(hl_literal_get_s64(y, j), 15 + 4 * j);
  hl_literal_release(y);
  // sum over {0,2}: for j: sum_i sum_k (12 i + 4 j + k) = 8*4j + 4*12 + 2*6 = 32 j + 60 (+ init)
  int64_t zero = 0;
  hl_literal_t *z = kt_lit_int(HL_S32, 0, NULL, &zero);
  y = reduce1(x, z, 2, red, HL_OP_ADD, 1, out);
  for (int j = 0; j < 3; j++) CU_ASSERT_EQUAL(hl_literal_get_s64(y, j), 32 * j + 60);
  hl_literal_release(y);
  // All dimensions: 0 + ... + 23 = 276. Middle only: [2,4] with x[i][k] summed over j.
  int64_t all[3] = {0, 1, 2}, mid[1] = {1}, out24[2] = {2, 4};
  y = reduce1(x, z, 3, all, HL_OP_ADD, 0, NULL);
  CU_ASSERT_EQUAL(hl_literal_get_s64(y, 0), 276);
  hl_literal_release(y);
  y = reduce1(x, z, 1, mid, HL_OP_ADD, 2, out24);
  for (int i = 0; i < 2; i++)
    for (int k = 0; k < 4; k++)
      CU_ASSERT_EQUAL(hl_literal_get_s64(y, i * 4 + k), 36 * i + 12 + 3 * k);
  hl_literal_release(y);
  // No dimensions: op(init, x) element-wise.
  y = reduce1(x, init, 0, NULL, HL_OP_MAXIMUM, 3, dims);
  for (int i = 0; i < 24; i++) CU_ASSERT_EQUAL(hl_literal_get_s64(y, i), i);
  hl_literal_release(y);
  // Size-1 dimensions around the reduced one: [1,5,1] over {1} -> [1,1].
  int64_t d151[3] = {1, 5, 1}, one[1] = {1}, r11[2] = {1, 1};
  hl_literal_t *w = kt_lit_int(HL_S32, 3, d151, v);
  y = reduce1(w, z, 1, one, HL_OP_ADD, 2, r11);
  CU_ASSERT_EQUAL(hl_literal_get_s64(y, 0), 10);
  hl_literal_release(y);
  hl_literal_release(w);
  hl_literal_release(x);
  hl_literal_release(init);
  hl_literal_release(z);
}

static void test_types_and_ops(void) {
  kt_reset();
  // f32 maximum / minimum propagate NaN.
  double f[40];
  for (int i = 0; i < 40; i++) f[i] = i;
  f[33] = NAN;
  int64_t d40[1] = {40}, d0[1] = {0};
  double ninf = -INFINITY, pinf = INFINITY;
  hl_literal_t *x = kt_lit_f64(HL_F32, 1, d40, f), *lo = kt_lit_f64(HL_F32, 0, NULL, &ninf);
  hl_literal_t *hi = kt_lit_f64(HL_F32, 0, NULL, &pinf);
  hl_literal_t *y = reduce1(x, lo, 1, d0, HL_OP_MAXIMUM, 0, NULL);
  CU_ASSERT(isnan(hl_literal_get_f64(y, 0)));
  hl_literal_release(y);
  y = reduce1(x, hi, 1, d0, HL_OP_MINIMUM, 0, NULL);
  CU_ASSERT(isnan(hl_literal_get_f64(y, 0)));
  hl_literal_release(y);
  hl_literal_release(x);
  f[33] = 33;
  x = kt_lit_f64(HL_F64, 1, d40, f);
  hl_literal_release(lo);
  lo = kt_lit_f64(HL_F64, 0, NULL, &ninf);
  y = reduce1(x, lo, 1, d0, HL_OP_MAXIMUM, 0, NULL);
  CU_ASSERT_EQUAL(hl_literal_get_f64(y, 0), 39);
  hl_literal_release(y);
  hl_literal_release(x);
  hl_literal_release(lo);
  hl_literal_release(hi);
  // u8 sum wraps: 300 ones = 300 mod 256 = 44.
  int64_t ones[300], d300[1] = {300}, zero = 0, onev = 1;
  for (int i = 0; i < 300; i++) ones[i] = 1;
  hl_literal_t *u = kt_lit_int(HL_U8, 1, d300, ones), *z = kt_lit_int(HL_U8, 0, NULL, &zero);
  y = reduce1(u, z, 1, d0, HL_OP_ADD, 0, NULL);
  CU_ASSERT_EQUAL(hl_literal_get_s64(y, 0), 44);
  hl_literal_release(y);
  hl_literal_release(u);
  hl_literal_release(z);
  // s64 product of 1..20 = 2432902008176640000; u16 min; s8 max of negatives.
  int64_t r[20];
  for (int i = 0; i < 20; i++) r[i] = i + 1;
  int64_t d20[1] = {20};
  hl_literal_t *s = kt_lit_int(HL_S64, 1, d20, r), *o = kt_lit_int(HL_S64, 0, NULL, &onev);
  y = reduce1(s, o, 1, d0, HL_OP_MULTIPLY, 0, NULL);
  CU_ASSERT_EQUAL(hl_literal_get_s64(y, 0), INT64_C(2432902008176640000));
  hl_literal_release(y);
  hl_literal_release(s);
  hl_literal_release(o);
  int64_t big = 65535, neg[3] = {-5, -2, -9}, d3[1] = {3}, m128 = -128;
  hl_literal_t *w = kt_lit_int(HL_U16, 1, d20, r), *wb = kt_lit_int(HL_U16, 0, NULL, &big);
  y = reduce1(w, wb, 1, d0, HL_OP_MINIMUM, 0, NULL);
  CU_ASSERT_EQUAL(hl_literal_get_s64(y, 0), 1);
  hl_literal_release(y);
  hl_literal_release(w);
  hl_literal_release(wb);
  hl_literal_t *n8 = kt_lit_int(HL_S8, 1, d3, neg), *m = kt_lit_int(HL_S8, 0, NULL, &m128);
  y = reduce1(n8, m, 1, d0, HL_OP_MAXIMUM, 0, NULL);
  CU_ASSERT_EQUAL(hl_literal_get_s64(y, 0), -2);
  hl_literal_release(y);
  hl_literal_release(n8);
  hl_literal_release(m);
  // pred: add is or, multiply is and.
  int64_t p[3] = {0, 1, 0}, f0 = 0, t1 = 1;
  hl_literal_t *pr = kt_lit_int(HL_PRED, 1, d3, p), *pf = kt_lit_int(HL_PRED, 0, NULL, &f0);
  hl_literal_t *pt = kt_lit_int(HL_PRED, 0, NULL, &t1);
  y = reduce1(pr, pf, 1, d0, HL_OP_ADD, 0, NULL);
  CU_ASSERT_EQUAL(hl_literal_get_s64(y, 0), 1);
  hl_literal_release(y);
  y = reduce1(pr, pt, 1, d0, HL_OP_MULTIPLY, 0, NULL);
  CU_ASSERT_EQUAL(hl_literal_get_s64(y, 0), 0);
  hl_literal_release(y);
  y = reduce1(pr, pt, 1, d0, HL_OP_XOR, 0, NULL);  // 1 ^ 0 ^ 1 ^ 0 = 0
  CU_ASSERT_EQUAL(hl_literal_get_s64(y, 0), 0);
  hl_literal_release(y);
  hl_literal_release(pr);
  hl_literal_release(pf);
  hl_literal_release(pt);
}

// Float maximum / minimum folds (branch-free lanes in reduce.c) against the
// spec's rules, on rows long enough for the 16-lane path, with answers that
// do not depend on the order: one NaN (its payload comes back), +0 / -0
// mixes (maximum +0, minimum -0; all -0 stays -0), infinities, negatives.
static void test_float_max_min_bits(void) {
  kt_reset();
  enum { C = 77 };
  int64_t dims[1] = {C}, d0[1] = {0};
  hl_dtype_t types[2] = {HL_F32, HL_F64};
  for (int t = 0; t < 2; t++) {
    bool f32 = types[t] == HL_F32;
    for (int where = 0; where < C; where += 19) {
      for (int op = 0; op < 2; op++) {
        double v[C];
        for (int i = 0; i < C; i++) v[i] = (i % 7) - 3.5;
        double init = op ? INFINITY : -INFINITY;
        hl_literal_t *x = kt_lit_f64(types[t], 1, dims, v);
        hl_literal_t *in = kt_lit_f64(types[t], 0, NULL, &init);
        // A quiet NaN with a payload, written as bits.
        if (f32) {
          ((uint32_t *)x->data)[where] = 0xffc12345u;
        } else {
          ((uint64_t *)x->data)[where] = UINT64_C(0x7ff8000000abcdef);
        }
        hl_literal_t *y = reduce1(x, in, 1, d0, op ? HL_OP_MINIMUM : HL_OP_MAXIMUM, 0, NULL);
        if (f32) {
          CU_ASSERT_EQUAL(((uint32_t *)y->data)[0], 0xffc12345u);
        } else {
          CU_ASSERT_EQUAL(((uint64_t *)y->data)[0], UINT64_C(0x7ff8000000abcdef));
        }
        hl_literal_release(y);
        hl_literal_release(x);
        // Signed zeros around position `where`, the rest negative (max) /
        // positive (min): maximum = +0, minimum = -0.
        for (int i = 0; i < C; i++) v[i] = op ? 1 + i % 5 : -1 - i % 5;
        for (int i = 0; i < C; i += 3) v[i] = (i / 3) % 2 ? 0.0 : -0.0;
        x = kt_lit_f64(types[t], 1, dims, v);
        y = reduce1(x, in, 1, d0, op ? HL_OP_MINIMUM : HL_OP_MAXIMUM, 0, NULL);
        double r = hl_literal_get_f64(y, 0);
        CU_ASSERT(r == 0 && (signbit(r) != 0) == (op == 1));
        hl_literal_release(y);
        hl_literal_release(x);
        // All -0: both give -0; with an infinity: it wins where it should.
        for (int i = 0; i < C; i++) v[i] = -0.0;
        x = kt_lit_f64(types[t], 1, dims, v);
        y = reduce1(x, in, 1, d0, op ? HL_OP_MINIMUM : HL_OP_MAXIMUM, 0, NULL);
        r = hl_literal_get_f64(y, 0);
        CU_ASSERT(r == 0 && signbit(r));
        hl_literal_release(y);
        hl_literal_release(x);
        for (int i = 0; i < C; i++) v[i] = -1e30 * (i % 3) + i;
        v[where] = op ? -INFINITY : INFINITY;
        x = kt_lit_f64(types[t], 1, dims, v);
        y = reduce1(x, in, 1, d0, op ? HL_OP_MINIMUM : HL_OP_MAXIMUM, 0, NULL);
        CU_ASSERT_EQUAL(hl_literal_get_f64(y, 0), op ? -INFINITY : INFINITY);
        hl_literal_release(y);
        hl_literal_release(x);
        // Negatives only: maximum is the one closest to zero.
        for (int i = 0; i < C; i++) v[i] = -1000 + ((i * 37) % C);
        x = kt_lit_f64(types[t], 1, dims, v);
        y = reduce1(x, in, 1, d0, op ? HL_OP_MINIMUM : HL_OP_MAXIMUM, 0, NULL);
        CU_ASSERT_EQUAL(hl_literal_get_f64(y, 0), op ? -1000 : -1000 + C - 1);
        hl_literal_release(y);
        hl_literal_release(x);
        hl_literal_release(in);
      }
    }
  }
}

static void test_half_steps_round(void) {
  kt_reset();
  // bf16 steps round: 256 + 1 = 257 is a tie between 256 and 258 -> 256, so
  // adding four ones to 256 stays 256 (an f32 accumulator would give 260).
  double ones[4] = {1, 1, 1, 1}, start = 256;
  int64_t d4[1] = {4}, d0[1] = {0};
  hl_literal_t *x = kt_lit_f64(HL_BF16, 1, d4, ones), *init = kt_lit_f64(HL_BF16, 0, NULL, &start);
  hl_literal_t *y = reduce1(x, init, 1, d0, HL_OP_ADD, 0, NULL);
  CU_ASSERT_EQUAL(hl_literal_get_f64(y, 0), 256);
  hl_literal_release(y);
  hl_literal_release(x);
  hl_literal_release(init);
  double h[3] = {0.5, -3, 2.5}, ninf = -INFINITY;
  int64_t d3[1] = {3};
  x = kt_lit_f64(HL_F16, 1, d3, h);
  init = kt_lit_f64(HL_F16, 0, NULL, &ninf);
  y = reduce1(x, init, 1, d0, HL_OP_MAXIMUM, 0, NULL);
  CU_ASSERT_EQUAL(hl_literal_get_f64(y, 0), 2.5);
  hl_literal_release(y);
  hl_literal_release(x);
  hl_literal_release(init);
}

static void test_empty_and_errors(void) {
  kt_reset();
  int64_t d03[2] = {0, 3}, d0[1] = {0}, r3[1] = {3};
  double seven = 7;
  hl_literal_t *x = kt_lit_f64(HL_F32, 2, d03, NULL), *init = kt_lit_f64(HL_F32, 0, NULL, &seven);
  hl_literal_t *y = reduce1(x, init, 1, d0, HL_OP_ADD, 1, r3);
  for (int i = 0; i < 3; i++) CU_ASSERT_EQUAL(hl_literal_get_f64(y, i), 7);
  hl_literal_release(y);
  // Bad dimension, wrong result shape, init of another type.
  hl_computation_t *red = simple_reducer(HL_OP_ADD, HL_F32, 0);
  hl_instruction_t *bad = kt_inst(HL_OP_REDUCE, HL_F32, 1, r3);
  kt_set_operand_count(bad, 2);
  HL_ASSERT_OK(hl_instruction_set_called(bad, &red, 1));
  int64_t d5[1] = {5};
  HL_ASSERT_OK(hl_i64_list_set(&bad->attrs.dimensions, d5, 1));
  hl_literal_t *ops[2] = {x, init};
  HL_ASSERT_ERROR_CONTAINS(hl_kernel_reduce(NULL, bad, ops, &y), "reduced dimension 5");
  HL_ASSERT_OK(hl_i64_list_set(&bad->attrs.dimensions, d0, 1));
  bad->shape.dims[0] = 4;
  HL_ASSERT_ERROR_CONTAINS(hl_kernel_reduce(NULL, bad, ops, &y), "result shape");
  bad->shape.dims[0] = 3;
  int64_t one = 1;
  hl_literal_t *iinit = kt_lit_int(HL_S32, 0, NULL, &one), *ops2[2] = {x, iinit};
  HL_ASSERT_ERROR_CONTAINS(hl_kernel_reduce(NULL, bad, ops2, &y), "init value 0");
  // A custom reducer needs the executor: without a context it is an error, not a crash.
  hl_computation_t *sub = simple_reducer(HL_OP_SUBTRACT, HL_F32, 0);
  HL_ASSERT_OK(hl_instruction_set_called(bad, &sub, 1));
  hl_literal_t *x2 = kt_lit_f64(HL_F32, 1, r3, (double[]){1, 2, 3}), *ops3[2] = {x2, init};
  hl_instruction_t *bad2 = kt_inst(HL_OP_REDUCE, HL_F32, 0, NULL);
  kt_set_operand_count(bad2, 2);
  HL_ASSERT_OK(hl_instruction_set_called(bad2, &sub, 1));
  HL_ASSERT_OK(hl_i64_list_set(&bad2->attrs.dimensions, d0, 1));
  HL_ASSERT_ERROR_CONTAINS(hl_kernel_reduce(NULL, bad2, ops3, &y), "context");
  CU_ASSERT_PTR_NULL(y);
  hl_literal_release(x2);
  hl_literal_release(iinit);
  hl_literal_release(x);
  hl_literal_release(init);
}

//===----------------------------------------------------------------------===//
// Custom reducers through the executor
//===----------------------------------------------------------------------===//

static hl_instruction_t *add(hl_computation_t *c, const char *name, hl_opcode_t op,
                             hl_shape_t shape, hl_instruction_t **ops, int n) {
  hl_instruction_t *inst;
  HL_ASSERT_OK(hl_computation_add_instruction(c, name, op, &inst));
  inst->shape = shape;
  if (n) HL_ASSERT_OK(hl_instruction_set_operands(inst, ops, n));
  return inst;
}

static hl_instruction_t *param(hl_computation_t *c, const char *name, int number, hl_shape_t s) {
  hl_instruction_t *p = add(c, name, HL_OP_PARAMETER, s, NULL, 0);
  p->attrs.parameter_number = number;
  return p;
}

static void test_custom_sum_of_squares(void) {
  kt_reset();
  // reducer(acc, x) = acc + x * x, over f32[2,3] rows: [1,2,3] -> 14, [4,5,6] -> 77.
  hl_computation_t *red, *entry;
  HL_ASSERT_OK(hl_module_add_computation(kt_module_, "sumsq", &red));
  hl_shape_t f = hl_shape_scalar(HL_F32);
  hl_instruction_t *acc = param(red, "acc", 0, f), *x = param(red, "x", 1, f);
  hl_instruction_t *sq = add(red, "sq", HL_OP_MULTIPLY, f, (hl_instruction_t *[]){x, x}, 2);
  red->root = add(red, "sum", HL_OP_ADD, f, (hl_instruction_t *[]){acc, sq}, 2);
  HL_ASSERT_OK(hl_computation_index_parameters(red));
  HL_ASSERT_OK(hl_module_add_computation(kt_module_, "main", &entry));
  int64_t d23[2] = {2, 3}, d2[1] = {2}, one[1] = {1};
  hl_instruction_t *in = param(entry, "in", 0, hl_shape_array(HL_F32, 2, d23));
  hl_instruction_t *init = param(entry, "init", 1, f);
  hl_instruction_t *r = add(entry, "r", HL_OP_REDUCE, hl_shape_array(HL_F32, 1, d2),
                            (hl_instruction_t *[]){in, init}, 2);
  HL_ASSERT_OK(hl_instruction_set_called(r, &red, 1));
  HL_ASSERT_OK(hl_i64_list_set(&r->attrs.dimensions, one, 1));
  entry->root = r;
  HL_ASSERT_OK(hl_computation_index_parameters(entry));
  kt_module_->entry = entry;
  double v[6] = {1, 2, 3, 4, 5, 6}, zero = 0;
  hl_literal_t *args[2] = {kt_lit_f64(HL_F32, 2, d23, v), kt_lit_f64(HL_F32, 0, NULL, &zero)};
  hl_literal_t *y = NULL;
  HL_ASSERT_OK(hl_execute(kt_module_, NULL, args, 2, &y));
  CU_ASSERT_EQUAL(hl_literal_get_f64(y, 0), 14);
  CU_ASSERT_EQUAL(hl_literal_get_f64(y, 1), 77);
  hl_literal_release(y);
  hl_literal_release(args[0]);
  hl_literal_release(args[1]);
}

static void test_custom_variadic_argmax(void) {
  kt_reset();
  // (v, i) reducer: take x when x_v > acc_v. Rows [1,5,3] and [7,2,7] with
  // indices 0..2 and init (-inf, -1): (5, 1) and (7, 0) (the first 7 wins).
  hl_computation_t *red, *entry;
  HL_ASSERT_OK(hl_module_add_computation(kt_module_, "argmax", &red));
  hl_shape_t f = hl_shape_scalar(HL_F32), s = hl_shape_scalar(HL_S32);
  hl_shape_t b = hl_shape_scalar(HL_PRED), pair, rpair;
  hl_instruction_t *av = param(red, "av", 0, f), *ai = param(red, "ai", 1, s);
  hl_instruction_t *xv = param(red, "xv", 2, f), *xi = param(red, "xi", 3, s);
  hl_instruction_t *gt = add(red, "gt", HL_OP_COMPARE, b, (hl_instruction_t *[]){xv, av}, 2);
  gt->attrs.comparison_direction = HL_CMP_GT;
  hl_instruction_t *v = add(red, "v", HL_OP_SELECT, f, (hl_instruction_t *[]){gt, xv, av}, 3);
  hl_instruction_t *i = add(red, "i", HL_OP_SELECT, s, (hl_instruction_t *[]){gt, xi, ai}, 3);
  HL_ASSERT_OK(hl_shape_tuple((hl_shape_t[]){f, s}, 2, &pair));
  red->root = add(red, "t", HL_OP_TUPLE, pair, (hl_instruction_t *[]){v, i}, 2);
  HL_ASSERT_OK(hl_computation_index_parameters(red));
  HL_ASSERT_OK(hl_module_add_computation(kt_module_, "main", &entry));
  int64_t d23[2] = {2, 3}, d2[1] = {2}, one[1] = {1};
  hl_instruction_t *vals = param(entry, "vals", 0, hl_shape_array(HL_F32, 2, d23));
  hl_instruction_t *idx = param(entry, "idx", 1, hl_shape_array(HL_S32, 2, d23));
  hl_instruction_t *iv = param(entry, "iv", 2, f), *ii = param(entry, "ii", 3, s);
  HL_ASSERT_OK(hl_shape_tuple((hl_shape_t[]){hl_shape_array(HL_F32, 1, d2),
                                             hl_shape_array(HL_S32, 1, d2)},
                              2, &rpair));
  hl_instruction_t *r = add(entry, "r", HL_OP_REDUCE, rpair,
                            (hl_instruction_t *[]){vals, idx, iv, ii}, 4);
  HL_ASSERT_OK(hl_instruction_set_called(r, &red, 1));
  HL_ASSERT_OK(hl_i64_list_set(&r->attrs.dimensions, one, 1));
  entry->root = r;
  HL_ASSERT_OK(hl_computation_index_parameters(entry));
  kt_module_->entry = entry;
  double vv[6] = {1, 5, 3, 7, 2, 7}, ninf = -INFINITY;
  int64_t ix[6] = {0, 1, 2, 0, 1, 2}, minus1 = -1;
  hl_literal_t *args[4] = {kt_lit_f64(HL_F32, 2, d23, vv), kt_lit_int(HL_S32, 2, d23, ix),
                           kt_lit_f64(HL_F32, 0, NULL, &ninf),
                           kt_lit_int(HL_S32, 0, NULL, &minus1)};
  hl_literal_t *y = NULL;
  HL_ASSERT_OK(hl_execute(kt_module_, NULL, args, 4, &y));
  CU_ASSERT_EQUAL_FATAL(y->shape.dtype, HL_TUPLE);
  CU_ASSERT_EQUAL(hl_literal_get_f64(y->elements[0], 0), 5);
  CU_ASSERT_EQUAL(hl_literal_get_f64(y->elements[0], 1), 7);
  CU_ASSERT_EQUAL(hl_literal_get_s64(y->elements[1], 0), 1);
  CU_ASSERT_EQUAL(hl_literal_get_s64(y->elements[1], 1), 0);
  hl_literal_release(y);
  for (int k = 0; k < 4; k++) hl_literal_release(args[k]);
}

static CU_TestInfo tests[] = {
    {"sum_minor_and_major", test_sum_minor_and_major},
    {"long_rows_pairwise", test_long_rows_pairwise},
    {"mixed_dims_and_all", test_mixed_dims_and_all},
    {"types_and_ops", test_types_and_ops},
    {"half_steps_round", test_half_steps_round},
    {"float_max_min_bits", test_float_max_min_bits},
    {"empty_and_errors", test_empty_and_errors},
    {"custom_sum_of_squares", test_custom_sum_of_squares},
    {"custom_variadic_argmax", test_custom_variadic_argmax},
    CU_TEST_INFO_NULL,
};

KT_TEST_MAIN("reduce", tests)
