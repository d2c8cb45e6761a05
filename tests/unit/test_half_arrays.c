// The vectorised 16-bit float array conversions (runtime/base/half_arrays.c)
// against the scalar conversions of dtype.c, a different algorithm
// (frexp / ldexp / nearbyint on the double value, test_dtype checks it
// against NumPy's values): every 16-bit pattern widened, and f32 patterns
// narrowed: an odd stride through all 2^32 (hitting every exponent with
// varied low bits) plus every rounding boundary's neighbourhood. Each array
// call spans a ragged length so the vector body and the scalar tail run.
// (The full 2^32 narrowing was compared once by hand: no difference.)
// hl-test-libs: hl_base
#include "runtime/base/half_arrays.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "runtime/base/dtype.h"
#include "tests/unit/test_util.h"

#define CHUNK 1027  // not a multiple of any vector width

static uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

static float f32_of(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static bool is_nan_bits(uint32_t u) { return (u & 0x7fffffffu) > 0x7f800000u; }

static void test_widen_every_pattern(void) {
  static uint16_t h[65536];
  static float b[65536], f[65536];
  for (uint32_t i = 0; i < 65536; i++) h[i] = (uint16_t)i;
  for (int64_t at = 0; at < 65536; at += CHUNK) {
    int64_t n = 65536 - at < CHUNK ? 65536 - at : CHUNK;
    hl_bf16_to_f32_array(h + at, b + at, n);
    hl_f16_to_f32_array(h + at, f + at, n);
  }
  int bad_b = 0, bad_f = 0;
  for (uint32_t i = 0; i < 65536; i++) {
    bad_b += f32_bits(b[i]) != f32_bits(hl_bf16_to_f32((uint16_t)i));
    bad_f += f32_bits(f[i]) != f32_bits(hl_f16_to_f32((uint16_t)i));
  }
  CU_ASSERT_EQUAL(bad_b, 0);
  CU_ASSERT_EQUAL(bad_f, 0);
  // Spot values from the definitions: f16 smallest subnormal, max, -inf, NaN.
  CU_ASSERT_EQUAL(f[0x0001], 0x1p-24f);
  CU_ASSERT_EQUAL(f[0x7bff], 65504.0f);
  CU_ASSERT_EQUAL(f32_bits(f[0xfc00]), 0xff800000u);
  CU_ASSERT_EQUAL(f32_bits(f[0x7e01]), 0x7fc02000u);  // payload kept
  CU_ASSERT_EQUAL(b[0x3f80], 1.0f);
}

// Checks the three narrowing functions over x[0..n) against the scalars.
static int narrow_mismatches(const float *x, int64_t n) {
  static uint16_t keep[CHUNK], canon[CHUNK], half[CHUNK];
  hl_f32_to_bf16_array_keep(x, keep, n);
  hl_f32_to_bf16_array_canon(x, canon, n);
  hl_f32_to_f16_array_canon(x, half, n);
  int bad = 0;
  for (int64_t i = 0; i < n; i++) {
    uint32_t u = f32_bits(x[i]);
    uint16_t want_keep = hl_f32_to_bf16(x[i]);
    // The canonical NaN is the quiet NaN with the sign (hl_f64_to_bf16 /
    // hl_f32_to_f16 give it for every NaN).
    uint16_t want_canon = hl_f64_to_bf16(x[i]), want_half = hl_f32_to_f16(x[i]);
    if (is_nan_bits(u)) {
      CU_ASSERT_EQUAL(want_canon, (uint16_t)(((u >> 16) & 0x8000u) | 0x7fc0u));
      CU_ASSERT_EQUAL(want_half, (uint16_t)(((u >> 16) & 0x8000u) | 0x7e00u));
    }
    bad += keep[i] != want_keep || canon[i] != want_canon || half[i] != want_half;
  }
  return bad;
}

static void test_narrow_strided_sample(void) {
  static float x[CHUNK];
  int bad = 0;
  uint64_t u = 0;
  // 2^32 / 7919 ~ 542 000 patterns, every sign and exponent.
  while (u < (UINT64_C(1) << 32)) {
    int64_t n = 0;
    for (; n < CHUNK && u < (UINT64_C(1) << 32); n++, u += 7919) x[n] = f32_of((uint32_t)u);
    bad += narrow_mismatches(x, n);
  }
  CU_ASSERT_EQUAL(bad, 0);
}

static void test_narrow_boundaries(void) {
  // +-512 patterns around each place where the rounding changes regime:
  // zero, the f16 subnormal / normal edge and its smallest subnormal, the
  // f16 overflow threshold 65520, bf16's max finite / overflow, inf, NaN,
  // and ties at 1.0 for both types.
  const float centers[] = {0.0f,      0x1p-14f,  0x1p-24f,  0x1p-25f, 65504.0f,
                           65520.0f,  0x1p-126f, 0x1p-133f, 1.0f + 0x1p-8f,
                           1.0f + 0x1p-11f, 0x1.fep127f, INFINITY,  NAN};
  static float x[CHUNK];
  int bad = 0;
  for (size_t c = 0; c < sizeof(centers) / sizeof(centers[0]); c++) {
    for (int sign = 0; sign < 2; sign++) {
      uint32_t mid = f32_bits(centers[c]) | (sign ? 0x80000000u : 0);
      int64_t n = 0;
      for (int d = -512; d < 512; d++) x[n++] = f32_of(mid + (uint32_t)d);
      bad += narrow_mismatches(x, n);
    }
  }
  CU_ASSERT_EQUAL(bad, 0);
  // A few values from the definitions.
  float v[6] = {1.0f + 0x1p-8f, 1.0f + 0x1p-8f + 0x1p-16f, 65519.0f, 65520.0f, 0x1p-25f,
                0x1.8p-25f};
  uint16_t bf[6], hf[6];
  hl_f32_to_bf16_array_canon(v, bf, 6);
  hl_f32_to_f16_array_canon(v, hf, 6);
  CU_ASSERT_EQUAL(bf[0], 0x3f80);  // tie to even
  CU_ASSERT_EQUAL(bf[1], 0x3f81);
  CU_ASSERT_EQUAL(hf[2], 0x7bff);  // below the overflow threshold: max finite
  CU_ASSERT_EQUAL(hf[3], 0x7c00);  // the threshold ties to even: inf
  CU_ASSERT_EQUAL(hf[4], 0x0000);  // half the smallest subnormal: tie to even 0
  CU_ASSERT_EQUAL(hf[5], 0x0001);  // above the tie
}

static CU_TestInfo tests[] = {
    {"widen_every_pattern", test_widen_every_pattern},
    {"narrow_strided_sample", test_narrow_strided_sample},
    {"narrow_boundaries", test_narrow_boundaries},
    CU_TEST_INFO_NULL,
};
HL_TEST_MAIN("half_arrays", tests)
