// Tests of runtime/kernels/data_movement.c, run through hl_execute on
// one-instruction modules built with the module API.
//
// Expected values: small cases from numpy (python3 with numpy; the command is
// quoted next to each), larger ones against a naive index-by-index reference
// written here (independent of the kernels' strided engine).
#include <stdarg.h>

#include "runtime/base/alloc.h"
#include "runtime/base/layout.h"
#include "runtime/base/literal.h"
#include "runtime/exec/executor.h"
#include "runtime/ir/module.h"
#include "tests/unit/test_util.h"

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

static hl_shape_t shp(hl_dtype_t t, int rank, ...) {
  int64_t dims[HL_MAX_RANK] = {0};
  va_list ap;
  va_start(ap, rank);
  for (int i = 0; i < rank; i++) dims[i] = va_arg(ap, int);
  va_end(ap);
  return hl_shape_array(t, rank, dims);
}

// Literal of `shape` whose element i holds the number i (converted to the dtype).
static hl_literal_t *arange(hl_shape_t shape) {
  hl_literal_t *l;
  HL_ASSERT_OK(hl_literal_create(&shape, &l));
  int64_t n = hl_literal_element_count(l);
  for (int64_t i = 0; i < n; i++) hl_literal_set_f64(l, i, (double)i);
  return l;
}

// Literal whose bytes are 0, 1, 2, ... (wrapping): distinct bit patterns for
// every element of any size, NaN payloads included.
static hl_literal_t *byte_pattern(hl_shape_t shape) {
  hl_literal_t *l;
  HL_ASSERT_OK(hl_literal_create(&shape, &l));
  for (size_t i = 0; i < l->byte_size; i++) ((uint8_t *)l->data)[i] = (uint8_t)(i * 7 + 3);
  return l;
}

// One instruction applied to parameters holding `args`.
typedef struct {
  hl_module_t *m;
  hl_instruction_t *inst;
  hl_literal_t *args[8];
  int n;
} case_t;

// Takes ownership of the args.
static hl_instruction_t *make_case(case_t *k, hl_opcode_t op, hl_shape_t result, int n, ...) {
  memset(k, 0, sizeof(*k));
  HL_ASSERT_OK(hl_module_create("dm", &k->m));
  hl_computation_t *c;
  HL_ASSERT_OK(hl_module_add_computation(k->m, "main", &c));
  hl_instruction_t *params[8];
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) {
    k->args[i] = va_arg(ap, hl_literal_t *);
    char name[16];
    snprintf(name, sizeof(name), "p%d", i);
    HL_ASSERT_OK(hl_computation_add_instruction(c, name, HL_OP_PARAMETER, &params[i]));
    HL_ASSERT_OK(hl_shape_copy(&k->args[i]->shape, &params[i]->shape));
    params[i]->attrs.parameter_number = i;
  }
  va_end(ap);
  k->n = n;
  HL_ASSERT_OK(hl_computation_add_instruction(c, "op", op, &k->inst));
  k->inst->shape = result;
  HL_ASSERT_OK(hl_instruction_set_operands(k->inst, params, n));
  c->root = k->inst;
  HL_ASSERT_OK(hl_computation_index_parameters(c));
  k->m->entry = c;
  return k->inst;
}

static hl_status_t run_case(case_t *k, hl_literal_t **out) {
  return hl_execute(k->m, NULL, k->args, k->n, out);
}

static void end_case(case_t *k) {
  for (int i = 0; i < k->n; i++) hl_literal_release(k->args[i]);
  hl_module_destroy(k->m);
}

static void set_dims(hl_instruction_t *inst, int n, ...) {
  int64_t v[HL_MAX_RANK];
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) v[i] = va_arg(ap, int);
  va_end(ap);
  HL_ASSERT_OK(hl_i64_list_set(&inst->attrs.dimensions, v, n));
}

static void set_slice(hl_instruction_t *inst, int rank, const int64_t (*sls)[3]) {
  inst->attrs.slice_dimensions = hl_calloc((size_t)(rank ? rank : 1), sizeof(hl_slice_dim_t));
  CU_ASSERT_PTR_NOT_NULL_FATAL(inst->attrs.slice_dimensions);
  inst->attrs.slice_count = rank;
  for (int d = 0; d < rank; d++) {
    inst->attrs.slice_dimensions[d].start = sls[d][0];
    inst->attrs.slice_dimensions[d].limit = sls[d][1];
    inst->attrs.slice_dimensions[d].stride = sls[d][2];
  }
}

// Runs the case and compares each element (read as double) with `expected`.
static void expect_values(case_t *k, const double *expected, int64_t n) {
  hl_literal_t *out = NULL;
  HL_ASSERT_OK(run_case(k, &out));
  CU_ASSERT_TRUE_FATAL(hl_shape_equal(&out->shape, &k->inst->shape));
  CU_ASSERT_EQUAL(hl_literal_element_count(out), n);
  for (int64_t i = 0; i < n && i < hl_literal_element_count(out); i++)
    if (hl_literal_get_f64(out, i) != expected[i]) {
      fprintf(stderr, "\n  element %lld: got %g, expected %g\n", (long long)i,
              hl_literal_get_f64(out, i), expected[i]);
      CU_FAIL("element mismatch");
      break;
    }
  hl_literal_release(out);
}

static void expect_error(case_t *k, const char *needle) {
  hl_literal_t *out = NULL;
  HL_ASSERT_ERROR_CONTAINS(run_case(k, &out), needle);
  CU_ASSERT_PTR_NULL(out);
}

// Naive reference: out[idx] = in[sum idx[d] * strides[d] + offset], in es-byte units.
static void reference_gather(const hl_shape_t *out_shape, const int64_t *strides, int64_t offset,
                             const uint8_t *in, uint8_t *out, size_t es) {
  int64_t n = hl_shape_element_count(out_shape);
  for (int64_t flat = 0; flat < n; flat++) {
    int64_t rem = flat, src = offset;
    for (int d = out_shape->rank - 1; d >= 0; d--) {
      int64_t i = rem % out_shape->dims[d];
      rem /= out_shape->dims[d];
      src += i * strides[d];
    }
    memcpy(out + flat * es, in + src * es, es);
  }
}

// Runs the case and compares bytes with the naive gather from operand 0.
static void expect_gather(case_t *k, const int64_t *strides, int64_t offset) {
  hl_literal_t *out = NULL;
  HL_ASSERT_OK(run_case(k, &out));
  const hl_shape_t *rs = &k->inst->shape;
  size_t es = hl_dtype_size(rs->dtype);
  size_t bytes = (size_t)hl_shape_byte_size(rs);
  uint8_t *want = hl_malloc(bytes);
  reference_gather(rs, strides, offset, k->args[0]->data, want, es);
  CU_ASSERT_EQUAL(out->byte_size, bytes);
  CU_ASSERT(bytes == 0 || memcmp(out->data, want, bytes) == 0);
  hl_free(want);
  hl_literal_release(out);
}

//===----------------------------------------------------------------------===//
// transpose
//===----------------------------------------------------------------------===//

static void test_transpose_small(void) {
  case_t k;
  // np.arange(6).reshape(2,3).T.flatten()
  set_dims(make_case(&k, HL_OP_TRANSPOSE, shp(HL_F32, 2, 3, 2), 1, arange(shp(HL_F32, 2, 2, 3))),
           2, 1, 0);
  expect_values(&k, (double[]){0, 3, 1, 4, 2, 5}, 6);
  end_case(&k);
  // np.transpose(np.arange(24).reshape(2,3,4), (2,0,1)).flatten(), on s8
  set_dims(make_case(&k, HL_OP_TRANSPOSE, shp(HL_S8, 3, 4, 2, 3), 1,
                     arange(shp(HL_S8, 3, 2, 3, 4))),
           3, 2, 0, 1);
  expect_values(&k, (double[]){0, 4, 8, 12, 16, 20, 1, 5, 9, 13, 17, 21,
                               2, 6, 10, 14, 18, 22, 3, 7, 11, 15, 19, 23}, 24);
  end_case(&k);
  // np.transpose(np.arange(24).reshape(2,3,4), (1,2,0)).flatten(), on f16
  set_dims(make_case(&k, HL_OP_TRANSPOSE, shp(HL_F16, 3, 3, 4, 2), 1,
                     arange(shp(HL_F16, 3, 2, 3, 4))),
           3, 1, 2, 0);
  expect_values(&k, (double[]){0, 12, 1, 13, 2, 14, 3, 15, 4, 16, 5, 17,
                               6, 18, 7, 19, 8, 20, 9, 21, 10, 22, 11, 23}, 24);
  end_case(&k);
}

// Sizes that hit the tiled path (both dims >= 8, not multiples of the tile)
// for every element size 1, 2, 4, 8, 16 against the naive reference.
static void test_transpose_large_all_element_sizes(void) {
  const hl_dtype_t types[] = {HL_U8, HL_BF16, HL_S32, HL_F64, HL_C128, HL_PRED};
  for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
    case_t k;
    // [3, 37, 70] perm {2, 0, 1} -> [70, 3, 37]; operand strides (2590, 70, 1)
    set_dims(make_case(&k, HL_OP_TRANSPOSE, shp(types[t], 3, 70, 3, 37), 1,
                       byte_pattern(shp(types[t], 3, 3, 37, 70))),
             3, 2, 0, 1);
    expect_gather(&k, (int64_t[]){1, 37 * 70, 70}, 0);
    end_case(&k);
    // [65, 33] perm {1, 0}
    set_dims(make_case(&k, HL_OP_TRANSPOSE, shp(types[t], 2, 33, 65), 1,
                       byte_pattern(shp(types[t], 2, 65, 33))),
             2, 1, 0);
    expect_gather(&k, (int64_t[]){1, 33}, 0);
    end_case(&k);
  }
}

// Rank 16 (the maximum), every dim 2, reversed: out[i0..i15] = in[i15..i0].
static void test_transpose_rank16(void) {
  hl_shape_t in = hl_shape_array(HL_S16, 16, (int64_t[]){2, 2, 2, 2, 2, 2, 2, 2, 3, 2, 2, 2, 2,
                                                          2, 2, 1});
  hl_shape_t out_s;
  int64_t perm[16], strides_in[16], strides[16];
  hl_shape_strides(&in, strides_in);
  out_s = in;
  for (int i = 0; i < 16; i++) {
    perm[i] = 15 - i;
    out_s.dims[i] = in.dims[perm[i]];
    strides[i] = strides_in[perm[i]];
  }
  case_t k;
  hl_instruction_t *inst = make_case(&k, HL_OP_TRANSPOSE, out_s, 1, byte_pattern(in));
  HL_ASSERT_OK(hl_i64_list_set(&inst->attrs.dimensions, perm, 16));
  expect_gather(&k, strides, 0);
  end_case(&k);
}

static void test_transpose_edge_cases(void) {
  case_t k;
  // Zero-size: [0,5] -> [5,0]
  set_dims(make_case(&k, HL_OP_TRANSPOSE, shp(HL_F32, 2, 5, 0), 1, arange(shp(HL_F32, 2, 0, 5))),
           2, 1, 0);
  expect_values(&k, NULL, 0);
  end_case(&k);
  // Rank 0: empty permutation
  make_case(&k, HL_OP_TRANSPOSE, shp(HL_S64, 0), 1, arange(shp(HL_S64, 0)));
  expect_values(&k, (double[]){0}, 1);
  end_case(&k);
  // Not a permutation
  set_dims(make_case(&k, HL_OP_TRANSPOSE, shp(HL_F32, 2, 3, 2), 1, arange(shp(HL_F32, 2, 2, 3))),
           2, 0, 0);
  expect_error(&k, "instruction 'op' (transpose) in computation 'main': dimensions is not a "
                   "permutation");
  end_case(&k);
  // Result dims disagree with the permutation
  set_dims(make_case(&k, HL_OP_TRANSPOSE, shp(HL_F32, 2, 2, 3), 1, arange(shp(HL_F32, 2, 2, 3))),
           2, 1, 0);
  expect_error(&k, "result dimension 0 has size 2, operand dimension 1 has 3");
  end_case(&k);
  // Element type mismatch
  set_dims(make_case(&k, HL_OP_TRANSPOSE, shp(HL_S32, 2, 3, 2), 1, arange(shp(HL_F32, 2, 2, 3))),
           2, 1, 0);
  expect_error(&k, "operand element type f32 differs from result element type s32");
  end_case(&k);
}

//===----------------------------------------------------------------------===//
// broadcast
//===----------------------------------------------------------------------===//

static hl_literal_t *s_u16_7(void) {
  hl_shape_t s = hl_shape_scalar(HL_U16);
  hl_literal_t *l;
  HL_ASSERT_OK(hl_literal_create(&s, &l));
  ((uint16_t *)l->data)[0] = 7;
  return l;
}

static void test_broadcast(void) {
  case_t k;
  // f32[3] -> [2,3] along dim 1: rows repeat
  set_dims(make_case(&k, HL_OP_BROADCAST, shp(HL_F32, 2, 2, 3), 1, arange(shp(HL_F32, 1, 3))), 1,
           1);
  expect_values(&k, (double[]){0, 1, 2, 0, 1, 2}, 6);
  end_case(&k);
  // f32[3] -> [3,2] along dim 0: elements repeat
  set_dims(make_case(&k, HL_OP_BROADCAST, shp(HL_F32, 2, 3, 2), 1, arange(shp(HL_F32, 1, 3))), 1,
           0);
  expect_values(&k, (double[]){0, 0, 1, 1, 2, 2}, 6);
  end_case(&k);
  // Scalar with empty dimensions, u16
  make_case(&k, HL_OP_BROADCAST, shp(HL_U16, 2, 2, 2), 1, s_u16_7());
  expect_values(&k, (double[]){7, 7, 7, 7}, 4);
  end_case(&k);
  // np.broadcast_to(np.arange(3).reshape(3,1,1), (3,2,2)), bf16
  set_dims(make_case(&k, HL_OP_BROADCAST, shp(HL_BF16, 3, 3, 2, 2), 1,
                     arange(shp(HL_BF16, 1, 3))),
           1, 0);
  expect_values(&k, (double[]){0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2}, 12);
  end_case(&k);
}

static void test_broadcast_large_and_edges(void) {
  case_t k;
  // c128[5,7] -> [4,5,6,7] with dims {1,3}: strides (0,7,0,1)
  set_dims(make_case(&k, HL_OP_BROADCAST, shp(HL_C128, 4, 4, 5, 6, 7), 1,
                     byte_pattern(shp(HL_C128, 2, 5, 7))),
           2, 1, 3);
  expect_gather(&k, (int64_t[]){0, 7, 0, 1}, 0);
  end_case(&k);
  // s8[40] -> [40, 33] dims {0}: each element repeated 33 times
  set_dims(make_case(&k, HL_OP_BROADCAST, shp(HL_S8, 2, 40, 33), 1,
                     byte_pattern(shp(HL_S8, 1, 40))),
           1, 0);
  expect_gather(&k, (int64_t[]){1, 0}, 0);
  end_case(&k);
  // Zero-size result
  set_dims(make_case(&k, HL_OP_BROADCAST, shp(HL_F32, 2, 0, 3), 1, arange(shp(HL_F32, 1, 3))), 1,
           1);
  expect_values(&k, NULL, 0);
  end_case(&k);
  // Size mismatch
  set_dims(make_case(&k, HL_OP_BROADCAST, shp(HL_F32, 2, 2, 4), 1, arange(shp(HL_F32, 1, 3))), 1,
           1);
  expect_error(&k, "operand dimension 0 (size 3) does not match result dimension 1 (size 4)");
  end_case(&k);
  // Wrong number of dimensions / out of range
  set_dims(make_case(&k, HL_OP_BROADCAST, shp(HL_F32, 2, 2, 3), 1, arange(shp(HL_F32, 1, 3))), 0);
  expect_error(&k, "dimensions has 0 entries for an operand of rank 1");
  end_case(&k);
  set_dims(make_case(&k, HL_OP_BROADCAST, shp(HL_F32, 2, 2, 3), 1, arange(shp(HL_F32, 1, 3))), 1,
           2);
  expect_error(&k, "dimensions[0] = 2 is out of range");
  end_case(&k);
}

//===----------------------------------------------------------------------===//
// reshape, copy, bitcast
//===----------------------------------------------------------------------===//

static void test_reshape(void) {
  case_t k;
  make_case(&k, HL_OP_RESHAPE, shp(HL_S64, 3, 3, 1, 2), 1, arange(shp(HL_S64, 2, 2, 3)));
  expect_values(&k, (double[]){0, 1, 2, 3, 4, 5}, 6);
  end_case(&k);
  make_case(&k, HL_OP_RESHAPE, shp(HL_F32, 3, 1, 1, 1), 1, arange(shp(HL_F32, 0)));  // rank 0
  expect_values(&k, (double[]){0}, 1);
  end_case(&k);
  make_case(&k, HL_OP_RESHAPE, shp(HL_F32, 2, 0, 7), 1, arange(shp(HL_F32, 1, 0)));  // empty
  expect_values(&k, NULL, 0);
  end_case(&k);
  make_case(&k, HL_OP_RESHAPE, shp(HL_F32, 1, 5), 1, arange(shp(HL_F32, 2, 2, 3)));
  expect_error(&k, "instruction 'op' (reshape) in computation 'main': cannot reshape 6 elements "
                   "into 5");
  end_case(&k);
}

static void test_copy(void) {
  case_t k;
  hl_literal_t *a = arange(shp(HL_F32, 1, 3)), *b = arange(shp(HL_S32, 0)), *t, *out = NULL;
  hl_literal_t *ab[2] = {a, b};
  HL_ASSERT_OK(hl_literal_create_tuple(ab, 2, &t));
  hl_shape_t ts;
  HL_ASSERT_OK(hl_shape_copy(&t->shape, &ts));
  make_case(&k, HL_OP_COPY, ts, 1, t);
  HL_ASSERT_OK(run_case(&k, &out));
  CU_ASSERT_TRUE(hl_literal_equal(out, t));
  hl_literal_release(out);
  end_case(&k);
  hl_literal_release(a);
  hl_literal_release(b);
  make_case(&k, HL_OP_COPY, shp(HL_F16, 2, 2, 2), 1, arange(shp(HL_F16, 2, 2, 2)));
  expect_values(&k, (double[]){0, 1, 2, 3}, 4);
  end_case(&k);
}

static void test_bitcast(void) {
  case_t k;
  hl_shape_t fs = shp(HL_F32, 1, 2);
  hl_literal_t *f;
  HL_ASSERT_OK(hl_literal_create(&fs, &f));
  ((float *)f->data)[0] = 1.0f;
  ((float *)f->data)[1] = 2.0f;
  // np.array([1.0, 2.0], np.float32).view(np.int32) -> [1065353216, 1073741824]
  make_case(&k, HL_OP_BITCAST, shp(HL_S32, 2, 2, 1), 1, f);
  expect_values(&k, (double[]){1065353216, 1073741824}, 2);
  end_case(&k);
  // Same bytes, new dims: u8[2,6] -> u8[3,4]
  make_case(&k, HL_OP_BITCAST, shp(HL_U8, 2, 3, 4), 1, arange(shp(HL_U8, 2, 2, 6)));
  expect_values(&k, (double[]){0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 12);
  end_case(&k);
  make_case(&k, HL_OP_BITCAST, shp(HL_F32, 1, 3), 1, arange(shp(HL_F32, 1, 2)));
  expect_error(&k, "operand f32[2] has 8 bytes, result f32[3] has 12");
  end_case(&k);
}

static void set_layout(hl_shape_t *s, int n, ...) {
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) s->minor_to_major[i] = va_arg(ap, int);
  va_end(ap);
  s->has_layout = true;
}

// The physical reinterpretation of XLA's bitcast (docs/LAYOUTS.md). Expected
// values from NumPy: the operand's elements in its physical order,
// x.transpose(major_to_minor).ravel(), laid into the result's physical
// order and transposed back.
static void test_bitcast_layouts(void) {
  case_t k;
  // The example: f32[2,3]{1,0} [[0,1,2],[3,4,5]] -> f32[3,2]{0,1}
  // = np.arange(6).reshape(2,3).ravel().reshape(2,3).T
  hl_instruction_t *b = make_case(&k, HL_OP_BITCAST, shp(HL_F32, 2, 3, 2), 1,
                                  arange(shp(HL_F32, 2, 2, 3)));
  set_layout(&b->shape, 2, 0, 1);
  expect_values(&k, (double[]){0, 3, 1, 4, 2, 5}, 6);
  end_case(&k);
  // s16[2,3,4]{0,2,1} -> s16[4,6]{1,0}: physical order is x.transpose(1,2,0).ravel()
  // = np.arange(24).reshape(2,3,4).transpose(1,2,0).ravel()
  b = make_case(&k, HL_OP_BITCAST, shp(HL_S16, 2, 4, 6), 1, arange(shp(HL_S16, 3, 2, 3, 4)));
  set_layout(&k.m->computations[0]->parameters[0]->shape, 3, 0, 2, 1);
  expect_values(&k, (double[]){0, 12, 1, 13, 2, 14, 3, 15, 4, 16, 5, 17,
                               6, 18, 7, 19, 8, 20, 9, 21, 10, 22, 11, 23}, 24);
  end_case(&k);
  // Width change with layouts: f32[2]{0} [1.0, 2.0] -> u16[2,2]{0,1}:
  // physical u16 stream [0, 16256, 0, 16384], laid out column-major.
  b = make_case(&k, HL_OP_BITCAST, shp(HL_U16, 2, 2, 2), 1, arange(shp(HL_F32, 1, 2)));
  ((float *)k.args[0]->data)[0] = 1.0f;
  ((float *)k.args[0]->data)[1] = 2.0f;
  set_layout(&b->shape, 2, 0, 1);
  expect_values(&k, (double[]){0, 0, 16256, 16384}, 4);
  end_case(&k);
  // Same physical order (size-1 dimensions moved) is a reshape.
  b = make_case(&k, HL_OP_BITCAST, shp(HL_S8, 3, 1, 2, 3), 1, arange(shp(HL_S8, 2, 2, 3)));
  set_layout(&b->shape, 3, 2, 0, 1);
  expect_values(&k, (double[]){0, 1, 2, 3, 4, 5}, 6);
  end_case(&k);
  // Tiles have no implemented meaning: an error, never a guess.
  b = make_case(&k, HL_OP_BITCAST, shp(HL_F32, 2, 3, 2), 1, arange(shp(HL_F32, 2, 2, 3)));
  hl_layout_ext_t *e;
  HL_ASSERT_OK(hl_layout_ext_ensure(&b->shape, &e));
  e->tile_count = 1;
  e->tiles[0].rank = 1;
  e->tiles[0].dims[0] = 128;
  set_layout(&b->shape, 2, 1, 0);
  expect_error(&k, "bitcast with a tiled layout (T(...)) on its result");
  end_case(&k);
  // s4 -> u4 keeps each element's low 4 bits, here through a column-major
  // result: s4[2,2]{1,0} [[-1,7],[-8,3]] -> u4[2,2]{0,1} = [[15,8],[7,3]]
  // (low nibbles 15,7,8,3 in physical order, laid out column-major).
  b = make_case(&k, HL_OP_BITCAST, shp(HL_U4, 2, 2, 2), 1, arange(shp(HL_S4, 2, 2, 2)));
  {
    int8_t *v = k.args[0]->data;
    v[0] = -1, v[1] = 7, v[2] = -8, v[3] = 3;
  }
  set_layout(&b->shape, 2, 0, 1);
  expect_values(&k, (double[]){15, 8, 7, 3}, 4);
  end_case(&k);
  // and back: u4 [15, 8] -> s4 [-1, -8]
  b = make_case(&k, HL_OP_BITCAST, shp(HL_S4, 1, 2), 1, arange(shp(HL_U4, 1, 2)));
  ((uint8_t *)k.args[0]->data)[0] = 15;
  ((uint8_t *)k.args[0]->data)[1] = 8;
  expect_values(&k, (double[]){-1, -8}, 2);
  end_case(&k);
  // Packed s4 only to a type of its own width.
  b = make_case(&k, HL_OP_BITCAST, shp(HL_U8, 1, 2), 1, arange(shp(HL_S4, 1, 4)));
  k.m->computations[0]->parameters[0]->shape.element_size_in_bits = 4;
  expect_error(&k, "packed sub-byte storage");
  end_case(&k);
}

//===----------------------------------------------------------------------===//
// slice
//===----------------------------------------------------------------------===//

static void test_slice(void) {
  case_t k;
  // np.arange(12).reshape(3,4)[1:3, 0:4:3] -> [4, 7, 8, 11]
  set_slice(make_case(&k, HL_OP_SLICE, shp(HL_S32, 2, 2, 2), 1, arange(shp(HL_S32, 2, 3, 4))), 2,
            (const int64_t[][3]){{1, 3, 1}, {0, 4, 3}});
  expect_values(&k, (double[]){4, 7, 8, 11}, 4);
  end_case(&k);
  // np.arange(12).reshape(3,4)[0:3:2, 1:4:2] -> [1, 3, 9, 11], f64
  set_slice(make_case(&k, HL_OP_SLICE, shp(HL_F64, 2, 2, 2), 1, arange(shp(HL_F64, 2, 3, 4))), 2,
            (const int64_t[][3]){{0, 3, 2}, {1, 4, 2}});
  expect_values(&k, (double[]){1, 3, 9, 11}, 4);
  end_case(&k);
  // Larger, f16, against the reference: [9,40,17][2:9:3, 5:38:1, 1:17:4] -> [3,33,4]
  set_slice(make_case(&k, HL_OP_SLICE, shp(HL_F16, 3, 3, 33, 4), 1,
                      byte_pattern(shp(HL_F16, 3, 9, 40, 17))),
            3, (const int64_t[][3]){{2, 9, 3}, {5, 38, 1}, {1, 17, 4}});
  expect_gather(&k, (int64_t[]){3 * 40 * 17, 17, 4}, 2 * 40 * 17 + 5 * 17 + 1);
  end_case(&k);
  // Empty slice and rank 0
  set_slice(make_case(&k, HL_OP_SLICE, shp(HL_F32, 1, 0), 1, arange(shp(HL_F32, 1, 4))), 1,
            (const int64_t[][3]){{4, 4, 1}});
  expect_values(&k, NULL, 0);
  end_case(&k);
  set_slice(make_case(&k, HL_OP_SLICE, shp(HL_F32, 0), 1, arange(shp(HL_F32, 0))), 0, NULL);
  expect_values(&k, (double[]){0}, 1);
  end_case(&k);
}

static void test_slice_errors(void) {
  case_t k;
  set_slice(make_case(&k, HL_OP_SLICE, shp(HL_F32, 1, 3), 1, arange(shp(HL_F32, 1, 4))), 1,
            (const int64_t[][3]){{2, 5, 1}});
  expect_error(&k, "instruction 'op' (slice) in computation 'main': slice [2:5:1] out of bounds "
                   "for dimension 0 of size 4");
  end_case(&k);
  set_slice(make_case(&k, HL_OP_SLICE, shp(HL_F32, 1, 3), 1, arange(shp(HL_F32, 1, 4))), 1,
            (const int64_t[][3]){{0, 4, 2}});
  expect_error(&k, "slice [0:4:2] of dimension 0 has 2 elements, result has 3");
  end_case(&k);
  set_slice(make_case(&k, HL_OP_SLICE, shp(HL_F32, 1, 1), 1, arange(shp(HL_F32, 1, 4))), 1,
            (const int64_t[][3]){{3, 2, 1}});
  expect_error(&k, "out of bounds");
  end_case(&k);
  make_case(&k, HL_OP_SLICE, shp(HL_F32, 1, 4), 1, arange(shp(HL_F32, 1, 4)));  // no slice attr
  expect_error(&k, "slice has 0 dimensions for operand rank 1");
  end_case(&k);
}

//===----------------------------------------------------------------------===//
// concatenate
//===----------------------------------------------------------------------===//

static hl_literal_t *offset_arange(hl_shape_t s, double base) {
  hl_literal_t *l = arange(s);
  for (int64_t i = 0; i < hl_literal_element_count(l); i++)
    hl_literal_set_f64(l, i, base + (double)i);
  return l;
}

static void test_concatenate(void) {
  case_t k;
  // np.concatenate([np.arange(6).reshape(2,3), 100 + np.arange(4).reshape(2,2)], axis=1)
  set_dims(make_case(&k, HL_OP_CONCATENATE, shp(HL_S16, 2, 2, 5), 2,
                     arange(shp(HL_S16, 2, 2, 3)), offset_arange(shp(HL_S16, 2, 2, 2), 100)),
           1, 1);
  expect_values(&k, (double[]){0, 1, 2, 100, 101, 3, 4, 5, 102, 103}, 10);
  end_case(&k);
  // axis 0, with an empty operand in the middle, c64
  set_dims(make_case(&k, HL_OP_CONCATENATE, shp(HL_C64, 2, 4, 3), 3, arange(shp(HL_C64, 2, 2, 3)),
                     arange(shp(HL_C64, 2, 0, 3)), offset_arange(shp(HL_C64, 2, 2, 3), 10)),
           1, 0);
  expect_values(&k, (double[]){0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15}, 12);
  end_case(&k);
  // Errors
  set_dims(make_case(&k, HL_OP_CONCATENATE, shp(HL_S16, 2, 2, 6), 2,
                     arange(shp(HL_S16, 2, 2, 3)), arange(shp(HL_S16, 2, 2, 2))),
           1, 1);
  expect_error(&k, "operands add up to 5 along dimension 1, result has 6");
  end_case(&k);
  set_dims(make_case(&k, HL_OP_CONCATENATE, shp(HL_S16, 2, 2, 5), 2,
                     arange(shp(HL_S16, 2, 2, 3)), arange(shp(HL_S16, 2, 3, 2))),
           1, 1);
  expect_error(&k, "operand 1 dimension 0 has size 3, result has 2");
  end_case(&k);
  set_dims(make_case(&k, HL_OP_CONCATENATE, shp(HL_S16, 2, 2, 5), 2,
                     arange(shp(HL_S16, 2, 2, 3)), arange(shp(HL_S32, 2, 2, 2))),
           1, 1);
  expect_error(&k, "operand 1 is s32[2,2]");
  end_case(&k);
  set_dims(make_case(&k, HL_OP_CONCATENATE, shp(HL_S16, 2, 2, 5), 2,
                     arange(shp(HL_S16, 2, 2, 3)), arange(shp(HL_S16, 2, 2, 2))),
           1, 2);
  expect_error(&k, "concatenate dimension 2 out of range for rank 2");
  end_case(&k);
}

//===----------------------------------------------------------------------===//
// iota
//===----------------------------------------------------------------------===//

static void test_iota(void) {
  case_t k;
  // np.broadcast_to(np.arange(3).reshape(1,3,1), (2,3,2)), in several dtypes
  const hl_dtype_t types[] = {HL_S32, HL_U8, HL_F32, HL_F64, HL_F16, HL_BF16, HL_S64, HL_C64};
  for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
    set_dims(make_case(&k, HL_OP_IOTA, shp(types[t], 3, 2, 3, 2), 0), 1, 1);
    expect_values(&k, (double[]){0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2}, 12);
    end_case(&k);
  }
  // f16 / bf16 bit patterns of 0..4: np.arange(5, dtype=np.float16).view(np.uint16)
  // -> [0, 15360, 16384, 16896, 17408]; bf16 is the top half of the f32 bits:
  // 0, 0x3f80, 0x4000, 0x4040, 0x4080.
  const uint16_t f16_bits[5] = {0, 15360, 16384, 16896, 17408};
  const uint16_t bf16_bits[5] = {0, 0x3f80, 0x4000, 0x4040, 0x4080};
  for (int which = 0; which < 2; which++) {
    hl_literal_t *out = NULL;
    set_dims(make_case(&k, HL_OP_IOTA, shp(which ? HL_BF16 : HL_F16, 1, 5), 0), 1, 0);
    HL_ASSERT_OK(run_case(&k, &out));
    CU_ASSERT_EQUAL(memcmp(out->data, which ? bf16_bits : f16_bits, 10), 0);
    hl_literal_release(out);
    end_case(&k);
  }
  // pred: index 0 is false, the rest true
  set_dims(make_case(&k, HL_OP_IOTA, shp(HL_PRED, 1, 3), 0), 1, 0);
  expect_values(&k, (double[]){0, 1, 1}, 3);
  end_case(&k);
  // Last dimension, and a zero-size dimension
  set_dims(make_case(&k, HL_OP_IOTA, shp(HL_S8, 2, 2, 3), 0), 1, 1);
  expect_values(&k, (double[]){0, 1, 2, 0, 1, 2}, 6);
  end_case(&k);
  set_dims(make_case(&k, HL_OP_IOTA, shp(HL_S32, 2, 3, 0), 0), 1, 0);
  expect_values(&k, NULL, 0);
  end_case(&k);
  // Errors
  set_dims(make_case(&k, HL_OP_IOTA, shp(HL_S32, 1, 3), 0), 1, 1);
  expect_error(&k, "instruction 'op' (iota) in computation 'main': iota_dimension 1 out of range "
                   "for rank 1");
  end_case(&k);
  make_case(&k, HL_OP_IOTA, shp(HL_S32, 1, 3), 0);
  expect_error(&k, "needs one iota_dimension, has 0");
  end_case(&k);
  // f8 iota rounds each index to the type (0, 1, 2 are exact in f8e5m2).
  set_dims(make_case(&k, HL_OP_IOTA, shp(HL_F8E5M2, 1, 3), 0), 1, 0);
  const double f8_iota[3] = {0, 1, 2};
  expect_values(&k, f8_iota, 3);
  end_case(&k);
}

// Tuples go only where XLA allows them.
static void test_tuple_operands_rejected(void) {
  case_t k;
  hl_literal_t *a = arange(shp(HL_F32, 1, 2)), *t;
  HL_ASSERT_OK(hl_literal_create_tuple(&a, 1, &t));
  hl_literal_release(a);
  make_case(&k, HL_OP_BROADCAST, shp(HL_F32, 2, 2, 2), 1, t);
  expect_error(&k, "operand must be an array, got (f32[2])");
  end_case(&k);
}

static CU_TestInfo tests[] = {
    {"transpose_small", test_transpose_small},
    {"transpose_large_all_element_sizes", test_transpose_large_all_element_sizes},
    {"transpose_rank16", test_transpose_rank16},
    {"transpose_edge_cases", test_transpose_edge_cases},
    {"broadcast", test_broadcast},
    {"broadcast_large_and_edges", test_broadcast_large_and_edges},
    {"reshape", test_reshape},
    {"copy", test_copy},
    {"bitcast", test_bitcast},
    {"bitcast_layouts", test_bitcast_layouts},
    {"slice", test_slice},
    {"slice_errors", test_slice_errors},
    {"concatenate", test_concatenate},
    {"iota", test_iota},
    {"tuple_operands_rejected", test_tuple_operands_rejected},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN("data_movement", tests)
