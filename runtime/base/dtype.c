#include "runtime/base/dtype.h"

#include <math.h>
#include <string.h>

typedef struct {
  const char *name;
  size_t size;
  hl_dtype_kind_t kind;
  int bits;
} dtype_info_t;

static const dtype_info_t kInfo[HL_DTYPE_COUNT_] = {
#define HL_DTYPE_INFO_(name, value, text, bytes, kind) [value] = {text, bytes, kind, 0},
    HL_DTYPE_LIST(HL_DTYPE_INFO_)
#undef HL_DTYPE_INFO_
};

bool hl_dtype_is_valid(int v) {
  return v > 0 && v < HL_DTYPE_COUNT_ && kInfo[v].name != NULL;
}

const char *hl_dtype_name(hl_dtype_t t) {
  return hl_dtype_is_valid(t) ? kInfo[t].name : "invalid";
}

hl_dtype_t hl_dtype_from_name(const char *name, size_t n) {
  for (int v = 1; v < HL_DTYPE_COUNT_; v++) {
    if (!kInfo[v].name || v == HL_TUPLE) continue;  // "tuple" is not a text type
    if (strlen(kInfo[v].name) == n && memcmp(kInfo[v].name, name, n) == 0) return (hl_dtype_t)v;
  }
  if (n == 11 && memcmp(name, "opaque_type", 11) == 0) return HL_OPAQUE;
  return HL_INVALID;
}

size_t hl_dtype_size(hl_dtype_t t) { return hl_dtype_is_valid(t) ? kInfo[t].size : 0; }
hl_dtype_kind_t hl_dtype_kind(hl_dtype_t t) {
  return hl_dtype_is_valid(t) ? kInfo[t].kind : HL_KIND_OTHER;
}
bool hl_dtype_is_array(hl_dtype_t t) { return hl_dtype_kind(t) != HL_KIND_OTHER; }
bool hl_dtype_is_float(hl_dtype_t t) { return hl_dtype_kind(t) == HL_KIND_FLOAT; }
bool hl_dtype_is_signed_int(hl_dtype_t t) { return hl_dtype_kind(t) == HL_KIND_SIGNED; }
bool hl_dtype_is_unsigned_int(hl_dtype_t t) { return hl_dtype_kind(t) == HL_KIND_UNSIGNED; }
bool hl_dtype_is_integer(hl_dtype_t t) {
  return hl_dtype_is_signed_int(t) || hl_dtype_is_unsigned_int(t);
}
bool hl_dtype_is_complex(hl_dtype_t t) { return hl_dtype_kind(t) == HL_KIND_COMPLEX; }

int hl_dtype_bit_width(hl_dtype_t t) {
  switch (t) {
    case HL_PRED: return 1;
    case HL_S1: case HL_U1: return 1;
    case HL_S2: case HL_U2: return 2;
    case HL_S4: case HL_U4: case HL_F4E2M1FN: return 4;
    case HL_F6E2M3FN: case HL_F6E3M2FN: return 6;
    default: return (int)(hl_dtype_size(t) * 8);
  }
}

static uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static float bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

float hl_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t man = h & 0x3ff;
  if (exp == 0x1f) return bits_f32(sign | 0x7f800000u | (man << 13));  // inf / nan
  if (exp == 0) {
    // zero or subnormal: value = man * 2^-24
    float v = (float)man * 5.9604644775390625e-08f;
    return sign ? -v : v;
  }
  return bits_f32(sign | ((exp + 112) << 23) | (man << 13));
}

// Round a double to the nearest value representable with `man_bits` explicit
// mantissa bits, `min_exp` smallest normal exponent and `max_exp` largest,
// ties to even, and pack it as an IEEE-like binary with the given layout.
static uint16_t pack_ieee16(double d, int man_bits, int exp_bits) {
  int bias = (1 << (exp_bits - 1)) - 1;
  uint16_t sign = signbit(d) ? (uint16_t)(1u << 15) : 0;
  uint16_t exp_all = (uint16_t)(((1u << exp_bits) - 1) << man_bits);
  if (isnan(d)) return (uint16_t)(sign | exp_all | (1u << (man_bits - 1)));
  double a = fabs(d);
  if (isinf(a)) return (uint16_t)(sign | exp_all);
  if (a == 0) return sign;
  int e;
  frexp(a, &e);  // a = f * 2^e, f in [0.5, 1)
  int exp = e - 1;  // a = 1.x * 2^exp
  int min_exp = 1 - bias;
  // quantum: spacing of representable values around a
  int q_exp = (exp < min_exp ? min_exp : exp) - man_bits;
  double scaled = ldexp(a, -q_exp);
  double r = nearbyint(scaled);  // default rounding mode: ties to even
  double v = ldexp(r, q_exp);
  if (v == 0) return sign;
  frexp(v, &e);
  exp = e - 1;
  if (exp > bias) return (uint16_t)(sign | exp_all);  // overflow to inf
  if (exp < min_exp) {  // subnormal
    uint16_t m = (uint16_t)ldexp(v, -(min_exp - man_bits));
    return (uint16_t)(sign | m);
  }
  uint16_t m = (uint16_t)(ldexp(v, man_bits - exp) - ldexp(1.0, man_bits));
  return (uint16_t)(sign | ((uint16_t)(exp + bias) << man_bits) | m);
}

// The same rounding on the double's bits for results that are normal
// numbers of the 16-bit format (the common case; input generation converts
// millions of values): round the 52-bit mantissa to `man_bits` (ties to
// even; a carry moves into the exponent), then rebias. Subnormal results,
// NaN and infinity take pack_ieee16; an overflow gives infinity.
static uint16_t pack_ieee16_fast(double d, int man_bits, int exp_bits) {
  uint64_t u;
  memcpy(&u, &d, 8);
  uint16_t sign = (uint16_t)((u >> 48) & 0x8000);
  uint64_t mag = u & ~(UINT64_C(1) << 63);
  int bias = (1 << (exp_bits - 1)) - 1;
  int64_t e = (int64_t)(mag >> 52) - 1023;  // unbiased exponent of d
  if (e < 1 - bias || e > 1023 - 1) return pack_ieee16(d, man_bits, exp_bits);
  int drop = 52 - man_bits;
  mag += (UINT64_C(1) << (drop - 1)) - 1 + ((mag >> drop) & 1);
  mag >>= drop;  // exponent and kept mantissa, possibly carried
  int64_t re = (int64_t)(mag >> man_bits) - 1023;
  if (re > bias) return (uint16_t)(sign | (((1u << exp_bits) - 1) << man_bits));
  uint64_t m = mag & ((UINT64_C(1) << man_bits) - 1);
  return (uint16_t)(sign | ((uint64_t)(re + bias) << man_bits) | m);
}

uint16_t hl_f64_to_f16(double d) { return pack_ieee16_fast(d, 10, 5); }
uint16_t hl_f32_to_f16(float f) { return pack_ieee16_fast((double)f, 10, 5); }

float hl_bf16_to_f32(uint16_t b) { return bits_f32((uint32_t)b << 16); }

uint16_t hl_f32_to_bf16(float f) {
  uint32_t u = f32_bits(f);
  if (isnan(f)) return (uint16_t)((u >> 16) | 0x40);  // quiet NaN, keep sign
  uint32_t lsb = (u >> 16) & 1;
  u += 0x7fff + lsb;  // round to nearest even
  return (uint16_t)(u >> 16);
}

uint16_t hl_f64_to_bf16(double d) { return pack_ieee16_fast(d, 7, 8); }
