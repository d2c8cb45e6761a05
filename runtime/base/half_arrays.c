// Vectorisable 16-bit float <-> f32 array conversions (half_arrays.h).
// Each loop body is branch-free (both sides of a case computed, then
// selected), so GCC and clang turn it into AVX2 blends in the avx2 clone.
#include "runtime/base/half_arrays.h"

#include <stdbool.h>
#include <string.h>

#include "runtime/base/simd_clones.h"

static inline uint32_t bits_of(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

static inline float float_of(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static HL_SIMD_CLONES void bf16_to_f32_array_loop(const uint16_t *restrict x, float *restrict y,
                                                  int64_t n) {
  for (int64_t i = 0; i < n; i++) y[i] = float_of((uint32_t)x[i] << 16);
}

// f16: exponent 31 is inf / NaN (payload moved up 13 bits), 0 is zero or
// subnormal (m * 2^-24, exact in f32), otherwise rebias 15 -> 127.
static HL_SIMD_CLONES void f16_to_f32_array_loop(const uint16_t *restrict x, float *restrict y,
                                                 int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    uint32_t h = x[i];
    uint32_t sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    uint32_t normal = sign | ((e + 112u) << 23) | (m << 13);
    uint32_t special = sign | 0x7f800000u | (m << 13);
    uint32_t sub = sign | bits_of((float)(int32_t)m * 5.9604644775390625e-08f);
    y[i] = float_of(e == 0x1fu ? special : e == 0 ? sub : normal);
  }
}

// Round to nearest even keeping the upper 16 bits: adding 0x7fff plus the
// kept part's lowest bit carries exactly when the dropped half is above
// 0x8000, or equal to it with an odd kept part; a carry out of the
// mantissa moves into the exponent (up to inf), and subnormals round the
// same way since both formats share the exponent field.
static inline uint32_t bf16_rne(uint32_t u) { return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16; }

static HL_SIMD_CLONES void f32_to_bf16_array_keep_loop(const float *restrict x,
                                                       uint16_t *restrict y, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    uint32_t u = bits_of(x[i]);
    bool nan = (u & 0x7fffffffu) > 0x7f800000u;
    y[i] = (uint16_t)(nan ? (u >> 16) | 0x40u : bf16_rne(u));
  }
}

static HL_SIMD_CLONES void f32_to_bf16_array_canon_loop(const float *restrict x,
                                                        uint16_t *restrict y, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    uint32_t u = bits_of(x[i]);
    bool nan = (u & 0x7fffffffu) > 0x7f800000u;
    y[i] = (uint16_t)(nan ? ((u >> 16) & 0x8000u) | 0x7fc0u : bf16_rne(u));
  }
}

// f32 -> f16: magnitudes from 65520 (halfway to the next power of two past
// the largest f16, 65504) round to inf; below 2^-14 the result is
// subnormal: adding 0.5f puts the f16 quantum 2^-24 at the sum's last
// place, so the float add itself rounds to nearest even and the low bits of
// the sum are the f16 pattern (0x400 when it rounds up to the smallest
// normal); in between, rebias and round on the bit pattern as for bf16.
static HL_SIMD_CLONES void f32_to_f16_array_canon_loop(const float *restrict x,
                                                       uint16_t *restrict y, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    uint32_t u = bits_of(x[i]);
    uint32_t a = u & 0x7fffffffu, sign = (u >> 16) & 0x8000u;
    uint32_t normal = (a - 0x38000000u + 0xfffu + ((a >> 13) & 1u)) >> 13;
    uint32_t sub = bits_of(float_of(a) + 0.5f) - 0x3f000000u;
    uint32_t r = a > 0x7f800000u ? 0x7e00u : a >= 0x477ff000u ? 0x7c00u
                 : a < 0x38800000u ? sub : normal;
    y[i] = (uint16_t)(sign | r);
  }
}

// The clones are static and the exported functions plain calls: clang 14
// emits no ifunc for a target_clones function that other files call
// through a declaration without the attribute (undefined at link time).
void hl_bf16_to_f32_array(const uint16_t *x, float *y, int64_t n) {
  bf16_to_f32_array_loop(x, y, n);
}
void hl_f16_to_f32_array(const uint16_t *x, float *y, int64_t n) {
  f16_to_f32_array_loop(x, y, n);
}
void hl_f32_to_bf16_array_keep(const float *x, uint16_t *y, int64_t n) {
  f32_to_bf16_array_keep_loop(x, y, n);
}
void hl_f32_to_bf16_array_canon(const float *x, uint16_t *y, int64_t n) {
  f32_to_bf16_array_canon_loop(x, y, n);
}
void hl_f32_to_f16_array_canon(const float *x, uint16_t *y, int64_t n) {
  f32_to_f16_array_canon_loop(x, y, n);
}
