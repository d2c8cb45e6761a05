// hl_kernel_convert / hl_kernel_bitcast_convert. Expected values: numpy
// casts where numpy rounds once (noted), otherwise worked by hand.
#include <float.h>
#include <limits.h>
#include <math.h>

#include "tests/unit/kernel_test_util.h"

static hl_literal_t *convert(const hl_literal_t *x, hl_dtype_t to) {
  hl_instruction_t *inst = kt_inst(HL_OP_CONVERT, to, x->shape.rank, x->shape.dims);
  hl_literal_t *ops[1] = {(hl_literal_t *)x}, *y = NULL;
  HL_ASSERT_OK(hl_kernel_convert(NULL, inst, ops, &y));
  CU_ASSERT_EQUAL_FATAL(y->shape.dtype, to);
  return y;
}

static void check_f2i(hl_dtype_t from, hl_dtype_t to, int n, const double *v, const int64_t *want) {
  int64_t dims[1] = {n};
  hl_literal_t *x = kt_lit_f64(from, 1, dims, v), *y = convert(x, to);
  for (int i = 0; i < n; i++) {
    if (hl_literal_get_s64(y, i) != want[i])
      fprintf(stderr, "\n  %s->%s [%d]: got %lld want %lld\n", hl_dtype_name(from),
              hl_dtype_name(to), i, (long long)hl_literal_get_s64(y, i), (long long)want[i]);
    CU_ASSERT_EQUAL(hl_literal_get_s64(y, i), want[i]);
  }
  hl_literal_release(x);
  hl_literal_release(y);
}

static void check_i2x(hl_dtype_t from, hl_dtype_t to, int n, const int64_t *v, const double *want) {
  int64_t dims[1] = {n};
  hl_literal_t *x = kt_lit_int(from, 1, dims, v), *y = convert(x, to);
  for (int i = 0; i < n; i++) {
    double got =
        hl_dtype_is_integer(to) ? (double)hl_literal_get_s64(y, i) : hl_literal_get_f64(y, i);
    if (!kt_same(got, want[i]))
      fprintf(stderr, "\n  %s->%s [%d]: got %.17g want %.17g\n", hl_dtype_name(from),
              hl_dtype_name(to), i, got, want[i]);
    CU_ASSERT(kt_same(got, want[i]));
  }
  hl_literal_release(x);
  hl_literal_release(y);
}

static void check_f2f(hl_dtype_t from, hl_dtype_t to, int n, const double *v, const double *want) {
  int64_t dims[1] = {n};
  hl_literal_t *x = kt_lit_f64(from, 1, dims, v), *y = convert(x, to);
  for (int i = 0; i < n; i++) {
    double got = hl_literal_get_f64(y, i);
    if (!kt_same(got, want[i]))
      fprintf(stderr, "\n  %s->%s [%d]: got %.17g want %.17g\n", hl_dtype_name(from),
              hl_dtype_name(to), i, got, want[i]);
    CU_ASSERT(kt_same(got, want[i]));
  }
  hl_literal_release(x);
  hl_literal_release(y);
}

static void test_float_to_int_saturates(void) {
  kt_reset();
  double f[7] = {1.9, -1.9, 3e9, -3e9, NAN, INFINITY, -INFINITY};
  int64_t s32[7] = {1, -1, INT32_MAX, INT32_MIN, 0, INT32_MAX, INT32_MIN};
  check_f2i(HL_F32, HL_S32, 7, f, s32);
  double g[5] = {-1.5, 255.9, 256, NAN, 3.7};
  int64_t u8[5] = {0, 255, 255, 0, 3};
  check_f2i(HL_F64, HL_U8, 5, g, u8);
  // numpy: int(np.float32(9.2e18)) = 9200000267938955264.
  double h[3] = {1e19, -1e19, 9.2e18};
  int64_t s64[3] = {INT64_MAX, INT64_MIN, INT64_C(9200000267938955264)};
  check_f2i(HL_F32, HL_S64, 3, h, s64);
  // numpy: int(np.float32(1.8e19)) = 18000000404716257280; 2e19 saturates.
  double u[3] = {1.8e19, 2e19, -0.5};
  int64_t u64[3] = {(int64_t)UINT64_C(18000000404716257280), -1, 0};
  check_f2i(HL_F32, HL_U64, 3, u, u64);
  double b[3] = {-32768.5, 40000, 1.5};
  int64_t s16[3] = {-32768, 32767, 1};
  check_f2i(HL_BF16, HL_S16, 3, b, s16);  // bf16(-32768.5) = -32768, bf16(40000) = 39936
  double p[4] = {0, -0.0, NAN, 0.1};
  int64_t pred[4] = {0, 0, 1, 1};
  check_f2i(HL_F32, HL_PRED, 4, p, pred);
}

static void test_int_to_int_wraps(void) {
  kt_reset();
  // numpy astype: int32 [300,-129,127] -> int8 [44,127,127]; uint8 200 -> int8 -56;
  // int8 -1 -> uint16 65535 and -> uint64 2^64-1.
  int64_t a[3] = {300, -129, 127};
  double a8[3] = {44, 127, 127};
  check_i2x(HL_S32, HL_S8, 3, a, a8);
  int64_t b[1] = {200};
  double b8[1] = {-56};
  check_i2x(HL_U8, HL_S8, 1, b, b8);
  int64_t c[1] = {-1};
  double c16[1] = {65535};
  check_i2x(HL_S8, HL_U16, 1, c, c16);
  int64_t dims[1] = {1};
  hl_literal_t *x = kt_lit_int(HL_S8, 1, dims, c), *y = convert(x, HL_U64);
  CU_ASSERT_EQUAL(hl_literal_get_u64(y, 0), UINT64_MAX);
  hl_literal_release(x);
  hl_literal_release(y);
  int64_t d[1] = {0xFFFFFFFF};
  double d64[1] = {4294967295.0};
  check_i2x(HL_U32, HL_S64, 1, d, d64);
  int64_t e[3] = {0, 5, -1};
  double ep[3] = {0, 1, 1};
  check_i2x(HL_S16, HL_PRED, 3, e, ep);
  int64_t p[2] = {0, 1};
  double pf[2] = {0, 1};
  check_i2x(HL_PRED, HL_F32, 2, p, pf);
  check_i2x(HL_PRED, HL_S32, 2, p, pf);
  check_i2x(HL_PRED, HL_BF16, 2, p, pf);
}

static void test_int_to_float_rounds_once(void) {
  kt_reset();
  // 2^60 + 2^36 + 1 -> f32: 2^36 is half an ulp (2^37), the +1 breaks the
  // tie upwards: 2^60 + 2^37. (Rounding through double first would tie to 2^60.)
  int64_t a[1] = {(INT64_C(1) << 60) + (INT64_C(1) << 36) + 1};
  double af[1] = {ldexp(1, 60) + ldexp(1, 37)};
  check_i2x(HL_S64, HL_F32, 1, a, af);
  // Same for bf16 (ulp 2^53 at 2^60) and for a negative value.
  int64_t b[2] = {(INT64_C(1) << 60) + (INT64_C(1) << 52) + 1,
                  -((INT64_C(1) << 60) + (INT64_C(1) << 52) + 1)};
  double bf[2] = {ldexp(1, 60) + ldexp(1, 53), -(ldexp(1, 60) + ldexp(1, 53))};
  check_i2x(HL_S64, HL_BF16, 2, b, bf);
  int64_t c[1] = {-1};
  double cf[1] = {18446744073709551616.0};  // numpy: float(np.uint64(2**64-1))
  check_i2x(HL_U64, HL_F64, 1, c, cf);
  // numpy float16: 65519 -> 65504, 2049 -> 2048 (tie to even), 2051 -> 2052, 70000 -> inf.
  int64_t h[4] = {65519, 2049, 2051, 70000};
  double hf[4] = {65504, 2048, 2052, INFINITY};
  check_i2x(HL_S32, HL_F16, 4, h, hf);
}

static void test_float_to_float(void) {
  kt_reset();
  // f32 -> bf16: 1 + 2^-8 ties to even (1.0); a bit above the tie rounds up.
  double a[4] = {1.00390625, 1.00390625 + ldexp(1, -20), NAN, -INFINITY};
  double abf[4] = {1.0, 1.0078125, NAN, -INFINITY};
  check_f2f(HL_F32, HL_BF16, 4, a, abf);
  double b[3] = {1.0078125, -3.5, NAN};
  check_f2f(HL_BF16, HL_F32, 3, b, b);
  // numpy float16: 65519 -> 65504, 65520 -> inf, 1e-8 -> 0, 3e-8 -> 2^-24.
  double c[4] = {65519, 65520, 1e-8, 3e-8};
  double cf[4] = {65504, INFINITY, 0, ldexp(1, -24)};
  check_f2f(HL_F32, HL_F16, 4, c, cf);
  // f64 -> f16 directly: 1 + 2^-11 + 2^-40 is above the tie: 1 + 2^-10
  // (numpy float16 agrees); through f32 it would tie down to 1.
  double d[1] = {1 + ldexp(1, -11) + ldexp(1, -40)}, df[1] = {1 + ldexp(1, -10)};
  check_f2f(HL_F64, HL_F16, 1, d, df);
  double e[2] = {0.1, 1e300}, ef[2] = {(float)0.1, INFINITY};
  check_f2f(HL_F64, HL_F32, 2, e, ef);
  double g[2] = {65504, -0.5};
  check_f2f(HL_F16, HL_F64, 2, g, g);
  check_f2f(HL_F16, HL_BF16, 2, g, (double[]){65536, -0.5});  // bf16(65504) = 65536
}

static void test_complex(void) {
  kt_reset();
  int64_t dims[1] = {2};
  double v[2] = {1.5, -2};
  hl_literal_t *x = kt_lit_f64(HL_F32, 1, dims, v), *y = convert(x, HL_C64);
  float *c = y->data;
  CU_ASSERT(c[0] == 1.5f && c[1] == 0 && c[2] == -2 && c[3] == 0);
  hl_literal_t *z = convert(y, HL_C128);
  double *d = z->data;
  CU_ASSERT(d[0] == 1.5 && d[1] == 0 && d[2] == -2 && d[3] == 0);
  c[1] = 7;  // y is ours (refcount 1): give it an imaginary part
  hl_literal_t *r = convert(y, HL_F64);
  CU_ASSERT_EQUAL(hl_literal_get_f64(r, 0), 1.5);
  CU_ASSERT_EQUAL(hl_literal_get_f64(r, 1), -2);
  int64_t iv[2] = {3, -4};
  hl_literal_t *i = kt_lit_int(HL_S32, 1, dims, iv), *ic = convert(i, HL_C128);
  CU_ASSERT(((double *)ic->data)[0] == 3 && ((double *)ic->data)[2] == -4);
  hl_literal_release(x);
  hl_literal_release(y);
  hl_literal_release(z);
  hl_literal_release(r);
  hl_literal_release(i);
  hl_literal_release(ic);
}

static void test_convert_errors_and_empty(void) {
  kt_reset();
  int64_t dims[1] = {2}, other[1] = {3}, v[2] = {1, 2};
  hl_literal_t *x = kt_lit_int(HL_S32, 1, dims, v), *ops[1] = {x}, *y = NULL;
  hl_instruction_t *bad = kt_inst(HL_OP_CONVERT, HL_F32, 1, other);
  HL_ASSERT_ERROR_CONTAINS(hl_kernel_convert(NULL, bad, ops, &y), "dimensions");
  // s32 -> f8e5m2: 1 = 0x3c, 2 = 0x40 (0 01111 00, 0 10000 00).
  hl_instruction_t *f8 = kt_inst(HL_OP_CONVERT, HL_F8E5M2, 1, dims);
  HL_ASSERT_OK(hl_kernel_convert(NULL, f8, ops, &y));
  CU_ASSERT_EQUAL(((const uint8_t *)y->data)[0], 0x3c);
  CU_ASSERT_EQUAL(((const uint8_t *)y->data)[1], 0x40);
  hl_literal_release(y);
  y = NULL;
  int64_t zero[2] = {0, 4};
  hl_literal_t *e = kt_lit_f64(HL_F32, 2, zero, NULL), *eops[1] = {e};
  hl_instruction_t *ce = kt_inst(HL_OP_CONVERT, HL_S8, 2, zero);
  HL_ASSERT_OK(hl_kernel_convert(NULL, ce, eops, &y));
  CU_ASSERT_EQUAL(hl_literal_element_count(y), 0);
  CU_ASSERT_EQUAL(y->shape.dtype, HL_S8);
  hl_literal_release(y);
  hl_literal_release(e);
  hl_literal_release(x);
}

static void test_bitcast_convert(void) {
  kt_reset();
  double one = 1.0;
  hl_literal_t *f = kt_lit_f64(HL_F32, 0, NULL, &one), *ops[1] = {f}, *y = NULL;
  hl_instruction_t *same = kt_inst(HL_OP_BITCAST_CONVERT, HL_U32, 0, NULL);
  HL_ASSERT_OK(hl_kernel_bitcast_convert(NULL, same, ops, &y));
  CU_ASSERT_EQUAL(kt_bits(y, 0), 0x3F800000u);
  hl_literal_release(y);
  // f64 -> f16[4]: the StableHLO example 0x0123456789ABCDEF; element 0 holds
  // the lowest-addressed (on little-endian, least significant) bits.
  uint64_t bits = UINT64_C(0x0123456789ABCDEF);
  hl_literal_t *d = kt_lit_bits(HL_F64, 0, NULL, &bits), *dops[1] = {d};
  int64_t four[1] = {4};
  hl_instruction_t *split = kt_inst(HL_OP_BITCAST_CONVERT, HL_F16, 1, four);
  HL_ASSERT_OK(hl_kernel_bitcast_convert(NULL, split, dops, &y));
  uint64_t want[4] = {0xCDEF, 0x89AB, 0x4567, 0x0123};
  for (int i = 0; i < 4; i++) CU_ASSERT_EQUAL(kt_bits(y, i), want[i]);
  // ... and back: f16[4] -> f64[] (the minor dimension folds away).
  hl_literal_t *back = NULL, *bops[1] = {y};
  hl_instruction_t *join = kt_inst(HL_OP_BITCAST_CONVERT, HL_F64, 0, NULL);
  HL_ASSERT_OK(hl_kernel_bitcast_convert(NULL, join, bops, &back));
  CU_ASSERT_EQUAL(kt_bits(back, 0), bits);
  hl_literal_release(back);
  hl_literal_release(y);
  // u8[2,4] -> u32[2]; a wrong minor size is an error.
  int64_t d24[2] = {2, 4}, d2[1] = {2}, d23[2] = {2, 3};
  int64_t bytes[8] = {1, 0, 0, 0, 0, 1, 0, 0};
  hl_literal_t *u = kt_lit_int(HL_U8, 2, d24, bytes), *uops[1] = {u};
  hl_instruction_t *pack = kt_inst(HL_OP_BITCAST_CONVERT, HL_U32, 1, d2);
  HL_ASSERT_OK(hl_kernel_bitcast_convert(NULL, pack, uops, &y));
  CU_ASSERT_EQUAL(kt_bits(y, 0), 1);
  CU_ASSERT_EQUAL(kt_bits(y, 1), 256);
  hl_literal_release(y);
  hl_instruction_t *bad = kt_inst(HL_OP_BITCAST_CONVERT, HL_U16, 2, d23);
  HL_ASSERT_ERROR_CONTAINS(hl_kernel_bitcast_convert(NULL, bad, uops, &y), "cannot bitcast");
  hl_literal_release(u);
  hl_literal_release(d);
  hl_literal_release(f);
}

// pred / sub-byte <-> wide bitcast-convert: element k of the minor dimension
// is bit k (StableHLO's bitcast_convert example: the 64 bits of
// 0x0123456789ABCDEF, least significant first). The expected bits are read
// off the constant; s4[2] <-> s8 checks the nibble order and sign extension.
static void test_bitcast_convert_sub_byte(void) {
  kt_reset();
  uint64_t bits = UINT64_C(0x0123456789ABCDEF);
  int64_t d64[1] = {64}, d2[1] = {2};
  int64_t pred[64];
  for (int k = 0; k < 64; k++) pred[k] = (int64_t)((bits >> k) & 1);
  hl_literal_t *p = kt_lit_int(HL_PRED, 1, d64, pred), *pops[1] = {p}, *y = NULL;
  hl_instruction_t *join = kt_inst(HL_OP_BITCAST_CONVERT, HL_S64, 0, NULL);
  HL_ASSERT_OK(hl_kernel_bitcast_convert(NULL, join, pops, &y));
  CU_ASSERT_EQUAL(kt_bits(y, 0), bits);
  hl_literal_release(y);
  hl_literal_t *f = kt_lit_bits(HL_F64, 0, NULL, &bits), *fops[1] = {f};
  hl_instruction_t *split = kt_inst(HL_OP_BITCAST_CONVERT, HL_PRED, 1, d64);
  HL_ASSERT_OK(hl_kernel_bitcast_convert(NULL, split, fops, &y));
  for (int k = 0; k < 64; k++) CU_ASSERT_EQUAL(kt_bits(y, k), (uint64_t)pred[k]);
  hl_literal_release(y);
  // s8 0xA7 -> s4[2] = {7, -6} (low nibble first; 0xA = -6 sign-extended), and back.
  int64_t byte = (int8_t)0xA7;
  hl_literal_t *b = kt_lit_int(HL_S8, 0, NULL, &byte), *bops[1] = {b};
  hl_instruction_t *nib = kt_inst(HL_OP_BITCAST_CONVERT, HL_S4, 1, d2);
  HL_ASSERT_OK(hl_kernel_bitcast_convert(NULL, nib, bops, &y));
  CU_ASSERT_EQUAL(hl_literal_get_s64(y, 0), 7);
  CU_ASSERT_EQUAL(hl_literal_get_s64(y, 1), -6);
  hl_literal_t *back = NULL, *yops[1] = {y};
  hl_instruction_t *pack = kt_inst(HL_OP_BITCAST_CONVERT, HL_S8, 0, NULL);
  HL_ASSERT_OK(hl_kernel_bitcast_convert(NULL, pack, yops, &back));
  CU_ASSERT_EQUAL(hl_literal_get_s64(back, 0), (int8_t)0xA7);
  hl_literal_release(back);
  hl_literal_release(y);
  hl_literal_release(b);
  hl_literal_release(f);
  hl_literal_release(p);
}

static CU_TestInfo tests[] = {
    {"float_to_int_saturates", test_float_to_int_saturates},
    {"int_to_int_wraps", test_int_to_int_wraps},
    {"int_to_float_rounds_once", test_int_to_float_rounds_once},
    {"float_to_float", test_float_to_float},
    {"complex", test_complex},
    {"errors_and_empty", test_convert_errors_and_empty},
    {"bitcast_convert", test_bitcast_convert},
    {"bitcast_convert_sub_byte", test_bitcast_convert_sub_byte},
    CU_TEST_INFO_NULL,
};

KT_TEST_MAIN("convert", tests)
