#include "runtime/base/minifloat.h"

#include <math.h>

// How a format spends its top encodings:
//   IEEE: all-ones exponent is inf (mantissa 0) or NaN.
//   FN:   no inf; only all-ones exponent and mantissa is NaN.
//   FNUZ: no inf, no -0; 0x80 is the only NaN.
//   NONE: every encoding is a finite number (f4e2m1fn, f6e2m3fn, f6e3m2fn).
//   E8M0: unsigned powers of two; 0xff is NaN.
typedef enum { MF_IEEE, MF_FN, MF_FNUZ, MF_NONE, MF_E8M0 } mf_style_t;

typedef struct {
  int exp_bits, man_bits, bias;
  mf_style_t style;
} mf_format_t;

static bool format_of(hl_dtype_t t, mf_format_t *f) {
  switch (t) {
    case HL_F8E5M2: *f = (mf_format_t){5, 2, 15, MF_IEEE}; return true;
    case HL_F8E4M3: *f = (mf_format_t){4, 3, 7, MF_IEEE}; return true;
    case HL_F8E3M4: *f = (mf_format_t){3, 4, 3, MF_IEEE}; return true;
    case HL_F8E4M3FN: *f = (mf_format_t){4, 3, 7, MF_FN}; return true;
    case HL_F8E4M3FNUZ: *f = (mf_format_t){4, 3, 8, MF_FNUZ}; return true;
    case HL_F8E5M2FNUZ: *f = (mf_format_t){5, 2, 16, MF_FNUZ}; return true;
    case HL_F8E4M3B11FNUZ: *f = (mf_format_t){4, 3, 11, MF_FNUZ}; return true;
    case HL_F4E2M1FN: *f = (mf_format_t){2, 1, 1, MF_NONE}; return true;
    case HL_F6E2M3FN: *f = (mf_format_t){2, 3, 1, MF_NONE}; return true;
    case HL_F6E3M2FN: *f = (mf_format_t){3, 2, 3, MF_NONE}; return true;
    case HL_F8E8M0FNU: *f = (mf_format_t){8, 0, 127, MF_E8M0}; return true;
    default: return false;
  }
}

bool hl_minifloat_is(hl_dtype_t t) {
  mf_format_t f;
  return format_of(t, &f);
}

int hl_minifloat_ieee_mantissa_bits(hl_dtype_t t) {
  mf_format_t f;
  return format_of(t, &f) && f.style == MF_IEEE ? f.man_bits : 0;
}

static double format_max(const mf_format_t *f) {
  int top = (1 << f->exp_bits) - 1;  // largest exponent field
  double man_max = 2.0 - ldexp(1.0, -f->man_bits);
  switch (f->style) {
    case MF_IEEE: return ldexp(man_max, top - 1 - f->bias);
    case MF_FN: return ldexp(man_max - ldexp(1.0, -f->man_bits), top - f->bias);
    case MF_E8M0: return ldexp(1.0, top - 1 - f->bias);
    default: return ldexp(man_max, top - f->bias);  // FNUZ, NONE use every exponent
  }
}

double hl_minifloat_max(hl_dtype_t t) {
  mf_format_t f;
  return format_of(t, &f) ? format_max(&f) : 0;
}

double hl_minifloat_to_f64(hl_dtype_t t, uint8_t bits) {
  mf_format_t f;
  if (!format_of(t, &f)) return 0;
  if (f.style == MF_E8M0) return bits == 0xff ? NAN : ldexp(1.0, bits - 127);
  int width = 1 + f.exp_bits + f.man_bits;
  bits &= (uint8_t)((1u << width) - 1);
  unsigned sign_bit = 1u << (width - 1);
  bool neg = bits & sign_bit;
  unsigned mag = bits & (sign_bit - 1);
  unsigned exp = mag >> f.man_bits, man = mag & ((1u << f.man_bits) - 1);
  unsigned top = (1u << f.exp_bits) - 1;
  double v;
  if (f.style == MF_FNUZ && bits == 0x80) return NAN;
  if (f.style == MF_FN && mag == sign_bit - 1) return neg ? -NAN : NAN;
  if (f.style == MF_IEEE && exp == top) {
    v = man ? NAN : INFINITY;
  } else if (exp == 0) {
    v = ldexp((double)man, 1 - f.bias - f.man_bits);
  } else {
    v = ldexp((double)(man | (1u << f.man_bits)), (int)exp - f.bias - f.man_bits);
  }
  return neg ? -v : v;
}

// Result of encoding: the bits and whether d's class survived.
static bool encode(const mf_format_t *f, double d, uint8_t *out) {
  if (f->style == MF_E8M0) {
    if (isnan(d) || d <= 0 || isinf(d)) {
      *out = 0xff;
      return isnan(d);
    }
    int e;
    frexp(d, &e);
    int exp = e - 1;
    int q = exp < -127 ? -127 : exp;  // field 0 is 2^-127; nothing below
    // In [0, 2]: a tie 1.5 goes to 2, which is how ml_dtypes rounds too
    // (the implicit bit is the kept one and it is odd).
    double r = nearbyint(ldexp(d, -q));
    int ve = r == 0 ? -127 : q + (r == 2 ? 1 : 0);
    if (ve > 127) {
      *out = 0xff;
      return false;
    }
    *out = (uint8_t)(ve + 127);
    return true;
  }
  int width = 1 + f->exp_bits + f->man_bits;
  uint8_t sign_bit = (uint8_t)(1u << (width - 1));
  uint8_t sign = signbit(d) ? sign_bit : 0;
  uint8_t exp_all = (uint8_t)(((1u << f->exp_bits) - 1) << f->man_bits);
  uint8_t fn_nan = (uint8_t)(sign | (sign_bit - 1));
  if (isnan(d)) {
    switch (f->style) {
      case MF_IEEE: *out = (uint8_t)(sign | exp_all | (1u << (f->man_bits - 1))); return true;
      case MF_FN: *out = fn_nan; return true;
      case MF_FNUZ: *out = 0x80; return true;
      default: *out = sign ? 0 : sign_bit; return false;  // NONE: ml_dtypes' stand-in
    }
  }
  double a = fabs(d);
  uint8_t overflow;  // the format's "infinity"
  switch (f->style) {
    case MF_IEEE: overflow = (uint8_t)(sign | exp_all); break;
    case MF_FN: overflow = fn_nan; break;
    case MF_FNUZ: overflow = 0x80; break;
    default: overflow = (uint8_t)(sign | (sign_bit - 1)); break;  // NONE: largest magnitude
  }
  if (isinf(a)) {
    *out = overflow;
    return f->style == MF_IEEE;
  }
  uint8_t zero = f->style == MF_FNUZ ? 0 : sign;
  if (a == 0) {
    *out = zero;
    return true;
  }
  int e;
  frexp(a, &e);
  int exp = e - 1;  // a = 1.x * 2^exp
  int min_exp = 1 - f->bias;
  int q_exp = (exp < min_exp ? min_exp : exp) - f->man_bits;  // spacing of values near a
  double v = ldexp(nearbyint(ldexp(a, -q_exp)), q_exp);     // ties to even (default mode)
  if (v > format_max(f)) {
    *out = overflow;
    return false;
  }
  if (v == 0) {
    *out = zero;
    return true;
  }
  frexp(v, &e);
  exp = e - 1;
  if (exp < min_exp) {
    *out = (uint8_t)(sign | (uint8_t)ldexp(v, f->man_bits - min_exp));
    return true;
  }
  uint8_t man = (uint8_t)(ldexp(v, f->man_bits - exp) - ldexp(1.0, f->man_bits));
  *out = (uint8_t)(sign | ((uint8_t)(exp + f->bias) << f->man_bits) | man);
  return true;
}

uint8_t hl_minifloat_from_f64(hl_dtype_t t, double d) {
  mf_format_t f;
  uint8_t bits = 0;
  if (format_of(t, &f)) encode(&f, d, &bits);
  return bits;
}

bool hl_minifloat_from_f64_checked(hl_dtype_t t, double d, uint8_t *out_bits) {
  mf_format_t f;
  *out_bits = 0;
  return format_of(t, &f) && encode(&f, d, out_bits);
}
