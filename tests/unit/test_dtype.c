// Element types: the table, names, sizes, and f16/bf16 rounding.
// Expected f16 bit patterns come from NumPy (np.float16(v).view(np.uint16)).
// hl-test-libs: hl_base
#include "runtime/base/dtype.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tests/unit/test_util.h"

// Nearest 16-bit value by search, independent of the bit arithmetic in
// dtype.c: positive patterns 0 .. inf_bits are ordered by value (infinity
// standing for 2^(bias+1), where IEEE rounding overflows); the largest
// pattern not above |d| and the next are the candidates, ties to the even
// pattern.
static uint16_t nearest16(double d, bool bf16) {
  uint16_t inf_bits = bf16 ? 0x7F80 : 0x7C00;
  double inf_value = bf16 ? ldexp(1.0, 128) : ldexp(1.0, 16);
  double a = fabs(d);
  uint16_t lo = 0, hi = inf_bits;  // value(lo) <= a; find the largest such
  while (lo < hi) {
    uint16_t mid = (uint16_t)((lo + hi + 1) / 2);
    double v = mid == inf_bits ? inf_value
                               : (double)(bf16 ? hl_bf16_to_f32(mid) : hl_f16_to_f32(mid));
    if (v <= a) lo = mid;
    else hi = (uint16_t)(mid - 1);
  }
  uint16_t best = lo;
  if (lo < inf_bits) {
    uint16_t up = (uint16_t)(lo + 1);
    double vl = (double)(bf16 ? hl_bf16_to_f32(lo) : hl_f16_to_f32(lo));
    double vu = up == inf_bits ? inf_value
                               : (double)(bf16 ? hl_bf16_to_f32(up) : hl_f16_to_f32(up));
    double dl = a - vl, du = vu - a;  // exact: neighbours within a factor 2
    if (du < dl || (du == dl && (up & 1) == 0)) best = up;
  }
  return (uint16_t)(best | (signbit(d) ? 0x8000 : 0));
}

// hl_f64_to_bf16 / hl_f64_to_f16 against the search on random doubles over
// the whole range (normal, subnormal and overflowing results), exact ties
// and the launcher's uniform [-1, 1) inputs.
static void test_half_rounding_matches_search(void) {
  uint64_t state = 12345;
  int bad = 0;
  for (int i = 0; i < 200000 && bad < 5; i++) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t r = state;
    double d;
    switch (i % 4) {
      case 0: {  // any exponent from 2^-160 to 2^140
        int e = (int)((r >> 40) % 300) - 160;
        d = ldexp(1.0 + (double)(r & ((1ull << 40) - 1)) * 0x1p-40, e);
        break;
      }
      case 1:  // uniform in [-1, 1), as launcher/inputs.c draws
        d = 2.0 * ((double)(r >> 11) * 0x1p-53) - 1.0;
        break;
      case 2: {  // a tie between two bf16 / f16 neighbours, or one ulp beside it
        int e = (int)((r >> 50) % 60) - 30;
        double base = ldexp(1.0 + (double)((r >> 20) & 0x3FF) * 0x1p-10, e);
        double half_ulp = ldexp(1.0, e - (i % 8 < 4 ? 8 : 11));
        d = base + half_ulp + (double)((int)(r % 3) - 1) * ldexp(1.0, e - 40);
        break;
      }
      default: {  // near the overflow thresholds and the smallest normals
        static const double kEdges[] = {65504.0, 65520.0, 3.3895313892515355e38,
                                        3.402823466385289e38, 6.103515625e-05,
                                        1.1754943508222875e-38};
        d = kEdges[r % 6] * (1.0 + ((double)(int)(r % 7) - 3) * 0x1p-12);
        break;
      }
    }
    if (r & (1ull << 63)) d = -d;
    uint16_t got_b = hl_f64_to_bf16(d), want_b = nearest16(d, true);
    uint16_t got_h = hl_f64_to_f16(d), want_h = nearest16(d, false);
    if (got_b != want_b || got_h != want_h) {
      bad++;
      printf("\n  %.17g: bf16 %04x want %04x, f16 %04x want %04x", d, got_b, want_b, got_h,
             want_h);
    }
  }
  CU_ASSERT_EQUAL(bad, 0);
  CU_ASSERT_EQUAL(hl_f64_to_bf16(NAN) & 0x7FC0, 0x7FC0);
  CU_ASSERT_EQUAL(hl_f64_to_bf16(-INFINITY), 0xFF80);
  CU_ASSERT_EQUAL(hl_f64_to_f16(INFINITY), 0x7C00);
  CU_ASSERT_EQUAL(hl_f64_to_f16(-0.0), 0x8000);
}

static void test_names_round_trip(void) {
  for (int v = 1; v < HL_DTYPE_COUNT_; v++) {
    if (!hl_dtype_is_valid(v) || v == HL_TUPLE) continue;
    const char *name = hl_dtype_name((hl_dtype_t)v);
    CU_ASSERT_EQUAL(hl_dtype_from_name(name, strlen(name)), v);
  }
  CU_ASSERT_EQUAL(hl_dtype_from_name("tuple", 5), HL_INVALID);
  CU_ASSERT_EQUAL(hl_dtype_from_name("opaque_type", 11), HL_OPAQUE);
  CU_ASSERT_EQUAL(hl_dtype_from_name("f32x", 4), HL_INVALID);
  CU_ASSERT_STRING_EQUAL(hl_dtype_name(HL_F8E4M3FN), "f8e4m3fn");
  CU_ASSERT_STRING_EQUAL(hl_dtype_name((hl_dtype_t)99), "invalid");
}

static void test_sizes_and_kinds(void) {
  CU_ASSERT_EQUAL(hl_dtype_size(HL_PRED), 1);
  CU_ASSERT_EQUAL(hl_dtype_size(HL_BF16), 2);
  CU_ASSERT_EQUAL(hl_dtype_size(HL_C64), 8);
  CU_ASSERT_EQUAL(hl_dtype_size(HL_C128), 16);
  CU_ASSERT_EQUAL(hl_dtype_size(HL_S4), 1);  // one byte per element in memory
  CU_ASSERT_EQUAL(hl_dtype_size(HL_TOKEN), 0);
  CU_ASSERT_EQUAL(hl_dtype_bit_width(HL_S4), 4);
  CU_ASSERT_EQUAL(hl_dtype_bit_width(HL_C64), 64);
  CU_ASSERT_TRUE(hl_dtype_is_float(HL_BF16));
  CU_ASSERT_TRUE(hl_dtype_is_float(HL_F8E5M2));
  CU_ASSERT_TRUE(hl_dtype_is_signed_int(HL_S2));
  CU_ASSERT_TRUE(hl_dtype_is_unsigned_int(HL_U64));
  CU_ASSERT_FALSE(hl_dtype_is_integer(HL_PRED));
  CU_ASSERT_TRUE(hl_dtype_is_complex(HL_C128));
  CU_ASSERT_FALSE(hl_dtype_is_array(HL_TUPLE));
  CU_ASSERT_FALSE(hl_dtype_is_array(HL_TOKEN));
  CU_ASSERT_TRUE(hl_dtype_is_array(HL_PRED));
}

static void test_f16_rounding(void) {
  CU_ASSERT_EQUAL(hl_f64_to_f16(0.1), 0x2e66);
  CU_ASSERT_EQUAL(hl_f64_to_f16(65504.0), 0x7bff);
  CU_ASSERT_EQUAL(hl_f64_to_f16(65520.0), 0x7c00);  // rounds up to inf
  CU_ASSERT_EQUAL(hl_f64_to_f16(1e-8), 0x0000);     // underflows to +0
  CU_ASSERT_EQUAL(hl_f64_to_f16(6e-8), 0x0001);     // smallest subnormal
  CU_ASSERT_EQUAL(hl_f64_to_f16(3.14159), 0x4248);
  CU_ASSERT_EQUAL(hl_f64_to_f16(-2.5), 0xc100);
  CU_ASSERT_EQUAL(hl_f64_to_f16(1.0 / 3.0), 0x3555);
  CU_ASSERT_EQUAL(hl_f64_to_f16(ldexp(1.5, -24)), 0x0002);  // tie -> even
  CU_ASSERT_EQUAL(hl_f64_to_f16(ldexp(0.5, -24)), 0x0000);  // tie -> even (0)
  CU_ASSERT_EQUAL(hl_f64_to_f16(-0.0), 0x8000);
  CU_ASSERT_EQUAL(hl_f32_to_f16(INFINITY), 0x7c00);
  CU_ASSERT_EQUAL(hl_f32_to_f16(-INFINITY), 0xfc00);
  CU_ASSERT_TRUE(isnan(hl_f16_to_f32(hl_f32_to_f16(NAN))));
  CU_ASSERT_DOUBLE_EQUAL(hl_f16_to_f32(0x2e66), 0.0999755859375, 0);
  CU_ASSERT_DOUBLE_EQUAL(hl_f16_to_f32(0x0001), 5.960464477539063e-08, 1e-22);
  CU_ASSERT_TRUE(isinf(hl_f16_to_f32(0x7c00)));
  // every finite f16 survives f16 -> f32 -> f16
  for (uint32_t b = 0; b < 0x10000; b++) {
    uint16_t h = (uint16_t)b;
    if (((h >> 10) & 0x1f) == 0x1f) continue;
    if (hl_f32_to_f16(hl_f16_to_f32(h)) != h) {
      CU_FAIL("f16 round trip");
      break;
    }
  }
}

static void test_bf16_rounding(void) {
  CU_ASSERT_EQUAL(hl_f32_to_bf16(1.0f), 0x3f80);
  CU_ASSERT_EQUAL(hl_f32_to_bf16(0.15625f), 0x3e20);       // exact
  CU_ASSERT_EQUAL(hl_f32_to_bf16(1.0f / 3.0f), 0x3eab);    // 0x3eaaaaab rounds up
  CU_ASSERT_EQUAL(hl_f32_to_bf16(-2.5f), 0xc020);
  CU_ASSERT_EQUAL(hl_f64_to_bf16(1.0 / 3.0), 0x3eab);
  CU_ASSERT_EQUAL(hl_f64_to_bf16(-2.5), 0xc020);
  // 1 + 2^-8 is a tie between 1 and 1 + 2^-7: even mantissa (1.0) wins.
  CU_ASSERT_EQUAL(hl_f32_to_bf16(1.0f + 0x1p-8f), 0x3f80);
  CU_ASSERT_EQUAL(hl_f32_to_bf16(1.0f + 0x1p-8f + 0x1p-16f), 0x3f81);
  CU_ASSERT_TRUE(isnan(hl_bf16_to_f32(hl_f32_to_bf16(NAN))));
  CU_ASSERT_DOUBLE_EQUAL(hl_bf16_to_f32(0xc020), -2.5, 0);
  for (uint32_t b = 0; b < 0x10000; b++) {
    uint16_t h = (uint16_t)b;
    if (((h >> 7) & 0xff) == 0xff) continue;
    if (hl_f32_to_bf16(hl_bf16_to_f32(h)) != h || hl_f64_to_bf16(hl_bf16_to_f32(h)) != h) {
      CU_FAIL("bf16 round trip");
      break;
    }
  }
}

static CU_TestInfo tests[] = {
    {"names_round_trip", test_names_round_trip},
    {"sizes_and_kinds", test_sizes_and_kinds},
    {"f16_rounding", test_f16_rounding},
    {"bf16_rounding", test_bf16_rounding},
    {"half_rounding_matches_search", test_half_rounding_matches_search},
    CU_TEST_INFO_NULL,
};
HL_TEST_MAIN("dtype", tests)
