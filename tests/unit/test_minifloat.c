// runtime/base/minifloat.c. Expected bits are worked by hand from each
// format's definition (sign / exponent / mantissa widths, bias, which
// encodings are inf or NaN) and ml_dtypes' conversion rules.
// hl-test-libs: hl_base
#include <math.h>

#include "runtime/base/minifloat.h"
#include "tests/unit/test_util.h"

static void expect_enc(hl_dtype_t t, double d, unsigned want) {
  unsigned got = hl_minifloat_from_f64(t, d);
  if (got != want)
    fprintf(stderr, "\n  %s(%g): got 0x%02x want 0x%02x\n", hl_dtype_name(t), d, got, want);
  CU_ASSERT_EQUAL(got, want);
}

static void expect_dec(hl_dtype_t t, unsigned bits, double want) {
  double got = hl_minifloat_to_f64(t, (uint8_t)bits);
  bool same = (isnan(got) && isnan(want)) || (got == want && signbit(got) == signbit(want));
  if (!same)
    fprintf(stderr, "\n  %s(0x%02x): got %g want %g\n", hl_dtype_name(t), bits, got, want);
  CU_ASSERT(same);
}

static void test_decode(void) {
  // e4m3fn: 0x7e = 0 1111 110 = 1.75 * 2^8 = 448; 0x7f NaN; 0x01 = 2^-9.
  expect_dec(HL_F8E4M3FN, 0x7e, 448);
  expect_dec(HL_F8E4M3FN, 0x7f, NAN);
  expect_dec(HL_F8E4M3FN, 0xff, NAN);
  expect_dec(HL_F8E4M3FN, 0x01, ldexp(1, -9));
  expect_dec(HL_F8E4M3FN, 0x80, -0.0);
  expect_dec(HL_F8E4M3FN, 0x38, 1);  // 0 0111 000
  // e5m2: 0x7b = 0 11110 11 = 1.75 * 2^15 = 57344; 0x7c inf; 0x7d NaN.
  expect_dec(HL_F8E5M2, 0x7b, 57344);
  expect_dec(HL_F8E5M2, 0x7c, INFINITY);
  expect_dec(HL_F8E5M2, 0xfc, -INFINITY);
  expect_dec(HL_F8E5M2, 0x7d, NAN);
  // e4m3 (IEEE-like, bias 7): 0x77 = 1.875 * 2^7 = 240; 0x78 inf.
  expect_dec(HL_F8E4M3, 0x77, 240);
  expect_dec(HL_F8E4M3, 0x78, INFINITY);
  // e3m4 (bias 3): 0x6f = 1.9375 * 2^3 = 15.5; 0x70 inf.
  expect_dec(HL_F8E3M4, 0x6f, 15.5);
  expect_dec(HL_F8E3M4, 0x70, INFINITY);
  // fnuz: 0x80 is NaN, 0x7f the max: e4m3fnuz 1.875*2^7 = 240,
  // e5m2fnuz 1.75*2^15 = 57344, e4m3b11fnuz 1.875*2^4 = 30.
  expect_dec(HL_F8E4M3FNUZ, 0x80, NAN);
  expect_dec(HL_F8E4M3FNUZ, 0x7f, 240);
  expect_dec(HL_F8E4M3FNUZ, 0x08, ldexp(1, -7));
  expect_dec(HL_F8E5M2FNUZ, 0x7f, 57344);
  expect_dec(HL_F8E5M2FNUZ, 0x01, ldexp(1, -17));
  expect_dec(HL_F8E4M3B11FNUZ, 0x7f, 30);
  expect_dec(HL_F8E4M3B11FNUZ, 0x01, ldexp(1, -13));
  // f4e2m1fn: 0x7 = 1.5 * 2^2 = 6, 0x1 = 0.5, 0xf = -6.
  expect_dec(HL_F4E2M1FN, 0x7, 6);
  expect_dec(HL_F4E2M1FN, 0x1, 0.5);
  expect_dec(HL_F4E2M1FN, 0xf, -6);
  expect_dec(HL_F4E2M1FN, 0x8, -0.0);
  // e8m0fnu: 2^(bits - 127); 0xff NaN.
  expect_dec(HL_F8E8M0FNU, 0x7f, 1);
  expect_dec(HL_F8E8M0FNU, 0x00, ldexp(1, -127));
  expect_dec(HL_F8E8M0FNU, 0xfe, ldexp(1, 127));
  expect_dec(HL_F8E8M0FNU, 0xff, NAN);
  CU_ASSERT_EQUAL(hl_minifloat_max(HL_F8E4M3FN), 448);
  CU_ASSERT_EQUAL(hl_minifloat_max(HL_F8E5M2), 57344);
  CU_ASSERT_EQUAL(hl_minifloat_max(HL_F4E2M1FN), 6);
}

static void test_encode_rounding_and_overflow(void) {
  // e4m3fn: 464 is the tie between 448 (man 110) and 480 (man 111, NaN
  // pattern): even -> 448; 465 rounds past -> overflow -> NaN 0x7f.
  expect_enc(HL_F8E4M3FN, 464, 0x7e);
  expect_enc(HL_F8E4M3FN, 465, 0x7f);
  expect_enc(HL_F8E4M3FN, -1e9, 0xff);
  expect_enc(HL_F8E4M3FN, INFINITY, 0x7f);
  expect_enc(HL_F8E4M3FN, NAN, 0x7f);
  expect_enc(HL_F8E4M3FN, -0.0, 0x80);
  // subnormals: 2^-10 is half of the smallest (2^-9): tie -> 0; 3*2^-10 -> 2*2^-9 (even).
  expect_enc(HL_F8E4M3FN, ldexp(1, -10), 0x00);
  expect_enc(HL_F8E4M3FN, 3 * ldexp(1, -10), 0x02);
  expect_enc(HL_F8E4M3FN, 1.0625, 0x38);  // tie between 1 and 1.125 -> 1
  // e5m2: IEEE-like: max + half ulp (61440) ties to even -> inf (max's mantissa is odd).
  expect_enc(HL_F8E5M2, 61439, 0x7b);
  expect_enc(HL_F8E5M2, 61440, 0x7c);
  expect_enc(HL_F8E5M2, -INFINITY, 0xfc);
  expect_enc(HL_F8E5M2, NAN, 0x7e);  // quiet NaN: top mantissa bit
  // fnuz: no -0, NaN and overflow are 0x80.
  expect_enc(HL_F8E4M3FNUZ, -0.0, 0x00);
  expect_enc(HL_F8E4M3FNUZ, -ldexp(1, -12), 0x00);  // underflows to +0
  expect_enc(HL_F8E4M3FNUZ, 248, 0x80);
  expect_enc(HL_F8E4M3FNUZ, -INFINITY, 0x80);
  expect_enc(HL_F8E5M2FNUZ, NAN, 0x80);
  expect_enc(HL_F8E4M3B11FNUZ, 30, 0x7f);
  expect_enc(HL_F8E4M3B11FNUZ, 31, 0x80);
  // f4e2m1fn saturates (no inf, no NaN): 7 -> 6, -inf -> -6; 0.25 ties to 0, 0.75 to 1.
  expect_enc(HL_F4E2M1FN, 7, 0x7);
  expect_enc(HL_F4E2M1FN, -INFINITY, 0xf);
  expect_enc(HL_F4E2M1FN, 0.25, 0x0);
  expect_enc(HL_F4E2M1FN, 0.75, 0x2);
  expect_enc(HL_F4E2M1FN, 5, 0x6);  // tie between 4 (0x6) and 6 (0x7) -> even
  // e8m0fnu: powers of two; ties (1.5 * 2^k) go up; 0 and negatives are NaN.
  expect_enc(HL_F8E8M0FNU, 3, 0x81);
  expect_enc(HL_F8E8M0FNU, 1.4, 0x7f);
  expect_enc(HL_F8E8M0FNU, 0, 0xff);
  expect_enc(HL_F8E8M0FNU, -2, 0xff);
  expect_enc(HL_F8E8M0FNU, ldexp(1, -140), 0x00);
  // e3m4 (bias 3): 15.75 is max + half ulp -> tie, max odd -> inf.
  expect_enc(HL_F8E3M4, 15.75, 0x70);
  expect_enc(HL_F8E3M4, 0.1, 0x06);  // 0.1 / 2^-6 = 6.4 -> subnormal 6 * 2^-6
}

// Every finite encoding decodes to a value that encodes back to itself.
static void test_round_trip_all_encodings(void) {
  const hl_dtype_t types[] = {HL_F8E5M2, HL_F8E4M3, HL_F8E3M4, HL_F8E4M3FN, HL_F8E4M3FNUZ,
                              HL_F8E5M2FNUZ, HL_F8E4M3B11FNUZ, HL_F4E2M1FN, HL_F8E8M0FNU};
  for (size_t k = 0; k < sizeof(types) / sizeof(types[0]); k++) {
    hl_dtype_t t = types[k];
    int n = t == HL_F4E2M1FN ? 16 : 256;
    for (int b = 0; b < n; b++) {
      double v = hl_minifloat_to_f64(t, (uint8_t)b);
      if (isnan(v)) continue;
      unsigned back = hl_minifloat_from_f64(t, v);
      if (back != (unsigned)b)
        fprintf(stderr, "\n  %s 0x%02x -> %g -> 0x%02x\n", hl_dtype_name(t), b, v, back);
      CU_ASSERT_EQUAL(back, (unsigned)b);
    }
  }
}

static void test_checked(void) {
  uint8_t b;
  CU_ASSERT_TRUE(hl_minifloat_from_f64_checked(HL_F8E4M3FN, 448, &b));
  CU_ASSERT_FALSE(hl_minifloat_from_f64_checked(HL_F8E4M3FN, 500, &b));
  CU_ASSERT_FALSE(hl_minifloat_from_f64_checked(HL_F8E4M3FN, INFINITY, &b));
  CU_ASSERT_TRUE(hl_minifloat_from_f64_checked(HL_F8E5M2, INFINITY, &b));
  CU_ASSERT_FALSE(hl_minifloat_from_f64_checked(HL_F4E2M1FN, NAN, &b));
  CU_ASSERT_FALSE(hl_minifloat_from_f64_checked(HL_F8E8M0FNU, 0, &b));
  CU_ASSERT_TRUE(hl_minifloat_from_f64_checked(HL_F8E8M0FNU, 0.5, &b));
  CU_ASSERT_EQUAL(b, 0x7e);
  CU_ASSERT_FALSE(hl_minifloat_from_f64_checked(HL_F32, 1, &b));
  CU_ASSERT_TRUE(hl_minifloat_is(HL_F8E4M3B11FNUZ));
  CU_ASSERT_FALSE(hl_minifloat_is(HL_BF16));
  CU_ASSERT_EQUAL(hl_minifloat_ieee_mantissa_bits(HL_F8E5M2), 2);
  CU_ASSERT_EQUAL(hl_minifloat_ieee_mantissa_bits(HL_F8E4M3FN), 0);
}

// f6e2m3fn / f6e3m2fn (OCP MX FP6; bias 1 / 3, exponent field 0 subnormal, no
// inf or NaN). The tables were printed by a Python script from that
// definition alone, not from this runtime:
//   value(code) = (-1)^s * 2^(1 - bias) * m / 2^M           (e == 0)
//               = (-1)^s * 2^(e - bias) * (1 + m / 2^M)     (e > 0)
// and the encodings of points between neighbouring codes: the midpoint goes
// to the code with an even mantissa, a quarter / three quarters of the way
// to the nearer code; values past the largest magnitude saturate (ml_dtypes'
// MX conversion), and NaN becomes the sign bit alone (0x20) for +NaN.
typedef struct {
  double in;
  unsigned bits;
} f6_case_t;
static const double kF6e2m3[64] = {
    0.0, 0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1.0, 1.125, 1.25, 1.375, 1.5, 1.625, 1.75,
    1.875, 2.0, 2.25, 2.5, 2.75, 3.0, 3.25, 3.5, 3.75, 4.0, 4.5, 5.0, 5.5, 6.0, 6.5, 7.0, 7.5,
    -0.0, -0.125, -0.25, -0.375, -0.5, -0.625, -0.75, -0.875, -1.0, -1.125, -1.25, -1.375, -1.5,
    -1.625, -1.75, -1.875, -2.0, -2.25, -2.5, -2.75, -3.0, -3.25, -3.5, -3.75, -4.0, -4.5, -5.0,
    -5.5, -6.0, -6.5, -7.0, -7.5};
static const f6_case_t kF6e2m3Enc[] = {
    {0.0625, 0x00}, {0.03125, 0x00}, {-0.09375, 0x21}, {0.1875, 0x02}, {0.15625, 0x01},
    {-0.21875, 0x22}, {0.3125, 0x02}, {0.28125, 0x02}, {-0.34375, 0x23}, {0.4375, 0x04},
    {0.40625, 0x03}, {-0.46875, 0x24}, {0.5625, 0x04}, {0.53125, 0x04}, {-0.59375, 0x25},
    {0.6875, 0x06}, {0.65625, 0x05}, {-0.71875, 0x26}, {0.8125, 0x06}, {0.78125, 0x06},
    {-0.84375, 0x27}, {0.9375, 0x08}, {0.90625, 0x07}, {-0.96875, 0x28}, {1.0625, 0x08},
    {1.03125, 0x08}, {-1.09375, 0x29}, {1.1875, 0x0a}, {1.15625, 0x09}, {-1.21875, 0x2a},
    {1.3125, 0x0a}, {1.28125, 0x0a}, {-1.34375, 0x2b}, {1.4375, 0x0c}, {1.40625, 0x0b},
    {-1.46875, 0x2c}, {1.5625, 0x0c}, {1.53125, 0x0c}, {-1.59375, 0x2d}, {1.6875, 0x0e},
    {1.65625, 0x0d}, {-1.71875, 0x2e}, {1.8125, 0x0e}, {1.78125, 0x0e}, {-1.84375, 0x2f},
    {1.9375, 0x10}, {1.90625, 0x0f}, {-1.96875, 0x30}, {2.125, 0x10}, {2.0625, 0x10}, {-2.1875,
    0x31}, {2.375, 0x12}, {2.3125, 0x11}, {-2.4375, 0x32}, {2.625, 0x12}, {2.5625, 0x12},
    {-2.6875, 0x33}, {2.875, 0x14}, {2.8125, 0x13}, {-2.9375, 0x34}, {3.125, 0x14}, {3.0625,
    0x14}, {-3.1875, 0x35}, {3.375, 0x16}, {3.3125, 0x15}, {-3.4375, 0x36}, {3.625, 0x16},
    {3.5625, 0x16}, {-3.6875, 0x37}, {3.875, 0x18}, {3.8125, 0x17}, {-3.9375, 0x38}, {4.25,
    0x18}, {4.125, 0x18}, {-4.375, 0x39}, {4.75, 0x1a}, {4.625, 0x19}, {-4.875, 0x3a}, {5.25,
    0x1a}, {5.125, 0x1a}, {-5.375, 0x3b}, {5.75, 0x1c}, {5.625, 0x1b}, {-5.875, 0x3c}, {6.25,
    0x1c}, {6.125, 0x1c}, {-6.375, 0x3d}, {6.75, 0x1e}, {6.625, 0x1d}, {-6.875, 0x3e}, {7.25,
    0x1e}, {7.125, 0x1e}, {-7.375, 0x3f}, {7.575, 0x1f}, {-30.0, 0x3f}, {1e+30, 0x1f}};
static const double kF6e3m2[64] = {
    0.0, 0.0625, 0.125, 0.1875, 0.25, 0.3125, 0.375, 0.4375, 0.5, 0.625, 0.75, 0.875, 1.0, 1.25,
    1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 6.0, 7.0, 8.0, 10.0, 12.0, 14.0, 16.0, 20.0, 24.0,
    28.0, -0.0, -0.0625, -0.125, -0.1875, -0.25, -0.3125, -0.375, -0.4375, -0.5, -0.625, -0.75,
    -0.875, -1.0, -1.25, -1.5, -1.75, -2.0, -2.5, -3.0, -3.5, -4.0, -5.0, -6.0, -7.0, -8.0,
    -10.0, -12.0, -14.0, -16.0, -20.0, -24.0, -28.0};
static const f6_case_t kF6e3m2Enc[] = {
    {0.03125, 0x00}, {0.015625, 0x00}, {-0.046875, 0x21}, {0.09375, 0x02}, {0.078125, 0x01},
    {-0.109375, 0x22}, {0.15625, 0x02}, {0.140625, 0x02}, {-0.171875, 0x23}, {0.21875, 0x04},
    {0.203125, 0x03}, {-0.234375, 0x24}, {0.28125, 0x04}, {0.265625, 0x04}, {-0.296875, 0x25},
    {0.34375, 0x06}, {0.328125, 0x05}, {-0.359375, 0x26}, {0.40625, 0x06}, {0.390625, 0x06},
    {-0.421875, 0x27}, {0.46875, 0x08}, {0.453125, 0x07}, {-0.484375, 0x28}, {0.5625, 0x08},
    {0.53125, 0x08}, {-0.59375, 0x29}, {0.6875, 0x0a}, {0.65625, 0x09}, {-0.71875, 0x2a},
    {0.8125, 0x0a}, {0.78125, 0x0a}, {-0.84375, 0x2b}, {0.9375, 0x0c}, {0.90625, 0x0b},
    {-0.96875, 0x2c}, {1.125, 0x0c}, {1.0625, 0x0c}, {-1.1875, 0x2d}, {1.375, 0x0e}, {1.3125,
    0x0d}, {-1.4375, 0x2e}, {1.625, 0x0e}, {1.5625, 0x0e}, {-1.6875, 0x2f}, {1.875, 0x10},
    {1.8125, 0x0f}, {-1.9375, 0x30}, {2.25, 0x10}, {2.125, 0x10}, {-2.375, 0x31}, {2.75, 0x12},
    {2.625, 0x11}, {-2.875, 0x32}, {3.25, 0x12}, {3.125, 0x12}, {-3.375, 0x33}, {3.75, 0x14},
    {3.625, 0x13}, {-3.875, 0x34}, {4.5, 0x14}, {4.25, 0x14}, {-4.75, 0x35}, {5.5, 0x16}, {5.25,
    0x15}, {-5.75, 0x36}, {6.5, 0x16}, {6.25, 0x16}, {-6.75, 0x37}, {7.5, 0x18}, {7.25, 0x17},
    {-7.75, 0x38}, {9.0, 0x18}, {8.5, 0x18}, {-9.5, 0x39}, {11.0, 0x1a}, {10.5, 0x19}, {-11.5,
    0x3a}, {13.0, 0x1a}, {12.5, 0x1a}, {-13.5, 0x3b}, {15.0, 0x1c}, {14.5, 0x1b}, {-15.5, 0x3c},
    {18.0, 0x1c}, {17.0, 0x1c}, {-19.0, 0x3d}, {22.0, 0x1e}, {21.0, 0x1d}, {-23.0, 0x3e}, {26.0,
    0x1e}, {25.0, 0x1e}, {-27.0, 0x3f}, {28.28, 0x1f}, {-112.0, 0x3f}, {1e+30, 0x1f}};

static void check_f6(hl_dtype_t t, const double *table, const f6_case_t *enc, size_t n_enc) {
  for (unsigned b = 0; b < 64; b++) {
    expect_dec(t, b, table[b]);
    expect_enc(t, table[b], b);
  }
  for (size_t i = 0; i < n_enc; i++) expect_enc(t, enc[i].in, enc[i].bits);
}

static void test_f6_all_codes(void) {
  check_f6(HL_F6E2M3FN, kF6e2m3, kF6e2m3Enc, sizeof(kF6e2m3Enc) / sizeof(kF6e2m3Enc[0]));
  check_f6(HL_F6E3M2FN, kF6e3m2, kF6e3m2Enc, sizeof(kF6e3m2Enc) / sizeof(kF6e3m2Enc[0]));
  CU_ASSERT_EQUAL(hl_minifloat_max(HL_F6E2M3FN), 7.5);
  CU_ASSERT_EQUAL(hl_minifloat_max(HL_F6E3M2FN), 28);
  expect_enc(HL_F6E2M3FN, INFINITY, 0x1f);
  expect_enc(HL_F6E3M2FN, -INFINITY, 0x3f);
  expect_enc(HL_F6E2M3FN, NAN, 0x20);
  expect_enc(HL_F6E3M2FN, -NAN, 0x00);
  uint8_t b;  // the text parser's rule: overflow and NaN do not survive
  CU_ASSERT_FALSE(hl_minifloat_from_f64_checked(HL_F6E2M3FN, 8, &b));
  CU_ASSERT_FALSE(hl_minifloat_from_f64_checked(HL_F6E3M2FN, NAN, &b));
  CU_ASSERT_TRUE(hl_minifloat_from_f64_checked(HL_F6E3M2FN, 28, &b));
  CU_ASSERT_EQUAL(hl_dtype_bit_width(HL_F6E2M3FN), 6);
  CU_ASSERT_EQUAL(hl_dtype_from_name("f6e3m2fn", 8), HL_F6E3M2FN);
}

static CU_TestInfo tests[] = {
    {"decode", test_decode},
    {"encode_rounding_and_overflow", test_encode_rounding_and_overflow},
    {"round_trip_all_encodings", test_round_trip_all_encodings},
    {"checked", test_checked},
    {"f6_all_codes", test_f6_all_codes},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN("minifloat", tests)
