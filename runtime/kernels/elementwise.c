// Element-wise unary and binary arithmetic (XLA "Element-wise unary
// functions" / "Element-wise binary arithmetic operations"; StableHLO abs ...
// xor). Every op is a one-line scalar function per type family, fed to one
// generic blocked loop per arity; f32/f64 add/subtract/multiply/divide also
// have plain restrict loops the compiler vectorises.
//
// Transcendentals (exp, log, tanh, logistic, sin, pow, ...) of f32 / f64
// run through runtime/vmath (SLEEF, <= 1 ULP measured in docs/NUMERICS.md),
// and of f16 / bf16 through it in f32; the other float ops as below.
// The loops over plain arrays are shared with the blocked fusion executor
// (elementwise_arrays.h), so both paths give the same bits.
//
// Families and their compute types:
//   float  (f16, bf16, f32, f64, the f8/f4 formats): double; f16/bf16/f32 results round to
//          nearest even from the double result (for + - * / sqrt this equals
//          computing in the narrow type, since double has >= 2p+2 bits).
//   signed / unsigned ints: int64 / uint64 holding the value, `bits` wide;
//          results keep the low bits (two's complement wrap-around).
//   pred: 0/1; add/maximum = or, multiply/minimum = and (as XLA does).
//   complex (c64, c128): double complex (C99 <complex.h>); abs gives the real
//          type; ops StableHLO leaves open for complex (maximum, remainder,
//          cbrt, erf, ...) are reported as not defined.
// Integer corner cases follow XLA's CPU backend (elemental_ir_emitter):
//   x / 0 = -1 (all ones, also for unsigned), INT_MIN / -1 = INT_MIN,
//   x % 0 = x, INT_MIN % -1 = 0; shifts by >= bits (amount read unsigned)
//   give 0, or the sign fill for shift-right-arithmetic; power with a
//   negative exponent gives 1 for base 1 and 0 otherwise; abs/negate of
//   INT_MIN wrap to INT_MIN.
// Float maximum/minimum are IEEE-754 maximum/minimum: NaN propagates and
// -0 < +0.
#include <complex.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "runtime/base/alloc.h"
#include "runtime/base/float_minmax.h"
#include "runtime/base/half_arrays.h"
#include "runtime/base/simd_clones.h"
#include "runtime/kernels/element_access.h"
#include "runtime/kernels/elementwise_arrays.h"
#include "runtime/kernels/kernel.h"
#include "runtime/threads/thread_pool.h"
#include "runtime/vmath/vmath.h"

// glibc's <complex.h> defines CMPLX only for GCC; clang has the same builtin.
#ifndef CMPLX
#define CMPLX(x, y) __builtin_complex((double)(x), (double)(y))
#endif

typedef double (*f_unary_fn)(double);
typedef int64_t (*s_unary_fn)(int64_t, int);
typedef uint64_t (*u_unary_fn)(uint64_t, int);
typedef double (*f_binary_fn)(double, double);
typedef int64_t (*s_binary_fn)(int64_t, int64_t, int);
typedef uint64_t (*u_binary_fn)(uint64_t, uint64_t, int);
typedef double complex (*c_unary_fn)(double complex);
typedef double complex (*c_binary_fn)(double complex, double complex);

//===----------------------------------------------------------------------===//
// Scalar functions
//===----------------------------------------------------------------------===//

static double f_abs(double x) { return fabs(x); }
static double f_acos(double x) { return acos(x); }
static double f_acosh(double x) { return acosh(x); }
static double f_asin(double x) { return asin(x); }
static double f_asinh(double x) { return asinh(x); }
static double f_atan(double x) { return atan(x); }
static double f_atanh(double x) { return atanh(x); }
static double f_cbrt(double x) { return cbrt(x); }
static double f_ceil(double x) { return ceil(x); }
static double f_cos(double x) { return cos(x); }
static double f_cosh(double x) { return cosh(x); }
static double f_erf(double x) { return erf(x); }
static double f_exp(double x) { return exp(x); }
static double f_expm1(double x) { return expm1(x); }
static double f_floor(double x) { return floor(x); }
static double f_is_finite(double x) { return isfinite(x) ? 1.0 : 0.0; }
static double f_log(double x) { return log(x); }
static double f_log1p(double x) { return log1p(x); }
static double f_logistic(double x) { return 1.0 / (1.0 + exp(-x)); }
static double f_negate(double x) { return -x; }
static double f_round_afz(double x) { return round(x); }
// rint rounds in the current mode; the runtime never changes it from
// round-to-nearest-even.
static double f_round_even(double x) { return rint(x); }
static double f_rsqrt(double x) { return 1.0 / sqrt(x); }
static double f_sign(double x) { return isnan(x) ? x : x == 0 ? x : copysign(1.0, x); }
static double f_sin(double x) { return sin(x); }
static double f_sinh(double x) { return sinh(x); }
static double f_sqrt(double x) { return sqrt(x); }
static double f_tan(double x) { return tan(x); }
static double f_tanh(double x) { return tanh(x); }

static int64_t s_abs(int64_t x, int bits) { return x < 0 ? (int64_t)(0 - (uint64_t)x) : x; }
static int64_t s_negate(int64_t x, int bits) { return (int64_t)(0 - (uint64_t)x); }
static int64_t s_not(int64_t x, int bits) { return ~x; }
static int64_t s_sign(int64_t x, int bits) { return (x > 0) - (x < 0); }
static int64_t s_popcnt(int64_t x, int bits) {
  return __builtin_popcountll((uint64_t)x & hl_elem_mask(bits));
}
static int64_t s_clz(int64_t x, int bits) {
  uint64_t v = (uint64_t)x & hl_elem_mask(bits);
  return v ? __builtin_clzll(v) - (64 - bits) : bits;
}

static uint64_t u_abs(uint64_t x, int bits) { return x; }
static uint64_t u_negate(uint64_t x, int bits) { return 0 - x; }
static uint64_t u_not(uint64_t x, int bits) { return ~x; }
static uint64_t u_sign(uint64_t x, int bits) { return x != 0; }
static uint64_t u_popcnt(uint64_t x, int bits) { return (uint64_t)__builtin_popcountll(x); }
static uint64_t u_clz(uint64_t x, int bits) {
  return x ? (uint64_t)(__builtin_clzll(x) - (64 - bits)) : (uint64_t)bits;
}

static uint64_t p_not(uint64_t x, int bits) { return !x; }

static double f_add(double a, double b) { return a + b; }
static double f_sub(double a, double b) { return a - b; }
static double f_mul(double a, double b) { return a * b; }
static double f_div(double a, double b) { return a / b; }
static double f_rem(double a, double b) { return fmod(a, b); }
static double f_pow(double a, double b) { return pow(a, b); }
static double f_atan2(double a, double b) { return atan2(a, b); }

static uint64_t ipow(uint64_t base, uint64_t e) {
  uint64_t r = 1;
  for (; e; e >>= 1, base *= base)
    if (e & 1) r *= base;
  return r;
}

// Wrapping arithmetic goes through uint64 (signed overflow is undefined in C).
static int64_t s_add(int64_t a, int64_t b, int bits) { return (int64_t)((uint64_t)a + b); }
static int64_t s_sub(int64_t a, int64_t b, int bits) { return (int64_t)((uint64_t)a - b); }
static int64_t s_mul(int64_t a, int64_t b, int bits) { return (int64_t)((uint64_t)a * b); }
static int64_t s_div(int64_t a, int64_t b, int bits) {
  if (b == 0) return -1;
  if (b == -1) return (int64_t)(0 - (uint64_t)a);  // INT_MIN / -1 wraps to INT_MIN
  return a / b;
}
static int64_t s_rem(int64_t a, int64_t b, int bits) {
  if (b == 0) return a;
  if (b == -1) return 0;
  return a % b;
}
static int64_t s_pow(int64_t a, int64_t b, int bits) {
  if (b < 0) return a == 1;
  return (int64_t)ipow((uint64_t)a, (uint64_t)b);
}
static int64_t s_max(int64_t a, int64_t b, int bits) { return a > b ? a : b; }
static int64_t s_min(int64_t a, int64_t b, int bits) { return a < b ? a : b; }
static int64_t s_and(int64_t a, int64_t b, int bits) { return a & b; }
static int64_t s_or(int64_t a, int64_t b, int bits) { return a | b; }
static int64_t s_xor(int64_t a, int64_t b, int bits) { return a ^ b; }
static int64_t s_shl(int64_t a, int64_t b, int bits) {
  return (uint64_t)b >= (uint64_t)bits ? 0 : (int64_t)((uint64_t)a << b);
}
static int64_t s_sra(int64_t a, int64_t b, int bits) {
  return (uint64_t)b >= (uint64_t)bits ? (a < 0 ? -1 : 0) : a >> b;
}
static int64_t s_srl(int64_t a, int64_t b, int bits) {
  return (uint64_t)b >= (uint64_t)bits ? 0 : (int64_t)(((uint64_t)a & hl_elem_mask(bits)) >> b);
}

// mulhi: the high `bits` bits of the 2*bits-wide product (signed: of the
// signed product).
static int64_t s_mulhi(int64_t a, int64_t b, int bits) {
  __int128 p = (__int128)hl_elem_sext((uint64_t)a, bits) * hl_elem_sext((uint64_t)b, bits);
  return (int64_t)(p >> bits);
}
static uint64_t u_mulhi(uint64_t a, uint64_t b, int bits) {
  uint64_t m = hl_elem_mask(bits);
  unsigned __int128 p = (unsigned __int128)(a & m) * (b & m);
  return (uint64_t)(p >> bits);
}

static uint64_t u_add(uint64_t a, uint64_t b, int bits) { return a + b; }
static uint64_t u_sub(uint64_t a, uint64_t b, int bits) { return a - b; }
static uint64_t u_mul(uint64_t a, uint64_t b, int bits) { return a * b; }
static uint64_t u_div(uint64_t a, uint64_t b, int bits) { return b == 0 ? ~UINT64_C(0) : a / b; }
static uint64_t u_rem(uint64_t a, uint64_t b, int bits) { return b == 0 ? a : a % b; }
static uint64_t u_pow(uint64_t a, uint64_t b, int bits) { return ipow(a, b); }
static uint64_t u_max(uint64_t a, uint64_t b, int bits) { return a > b ? a : b; }
static uint64_t u_min(uint64_t a, uint64_t b, int bits) { return a < b ? a : b; }
static uint64_t u_and(uint64_t a, uint64_t b, int bits) { return a & b; }
static uint64_t u_or(uint64_t a, uint64_t b, int bits) { return a | b; }
static uint64_t u_xor(uint64_t a, uint64_t b, int bits) { return a ^ b; }
static uint64_t u_shl(uint64_t a, uint64_t b, int bits) { return b >= (uint64_t)bits ? 0 : a << b; }
static uint64_t u_sra(uint64_t a, uint64_t b, int bits) {
  int64_t s = hl_elem_sext(a, bits);
  return (uint64_t)(b >= (uint64_t)bits ? (s < 0 ? -1 : 0) : s >> b);
}
static uint64_t u_srl(uint64_t a, uint64_t b, int bits) { return b >= (uint64_t)bits ? 0 : a >> b; }

// Complex (c64 computed in double complex, then rounded per part).
static double complex c_abs(double complex z) { return cabs(z); }
static double complex c_negate(double complex z) { return -z; }
static double complex c_sign(double complex z) {
  if (isnan(creal(z)) || isnan(cimag(z))) return CMPLX(NAN, NAN);
  return z == 0 ? 0 : z / cabs(z);
}
static double complex c_sqrt(double complex z) { return csqrt(z); }
static double complex c_rsqrt(double complex z) { return 1.0 / csqrt(z); }
static double complex c_exp(double complex z) { return cexp(z); }
static double complex c_expm1(double complex z) { return cexp(z) - 1.0; }
static double complex c_log(double complex z) { return clog(z); }
static double complex c_log1p(double complex z) { return clog(1.0 + z); }
static double complex c_logistic(double complex z) { return 1.0 / (1.0 + cexp(-z)); }
static double complex c_sin(double complex z) { return csin(z); }
static double complex c_cos(double complex z) { return ccos(z); }
static double complex c_tan(double complex z) { return ctan(z); }
static double complex c_tanh(double complex z) { return ctanh(z); }
static double complex c_acos(double complex z) { return cacos(z); }
static double complex c_acosh(double complex z) { return cacosh(z); }
static double complex c_asin(double complex z) { return casin(z); }
static double complex c_asinh(double complex z) { return casinh(z); }
static double complex c_atan(double complex z) { return catan(z); }
static double complex c_atanh(double complex z) { return catanh(z); }
static double complex c_cosh(double complex z) { return ccosh(z); }
static double complex c_sinh(double complex z) { return csinh(z); }
// The principal cube root: |z|^(1/3) * (cos(t/3) + i sin(t/3)), t = arg z
// (XLA's and StableHLO's interpreter's definition).
static double complex c_cbrt(double complex z) {
  double t = atan2(cimag(z), creal(z)) / 3.0;
  return pow(creal(z) * creal(z) + cimag(z) * cimag(z), 1.0 / 6.0) * CMPLX(cos(t), sin(t));
}
// atan2(y, x) on complex, as XLA and StableHLO's interpreter define it:
// -i * log((x + i * y) / sqrt(x^2 + y^2)), with y = lhs and x = rhs.
static double complex c_atan2(double complex y, double complex x) {
  return -I * clog((x + I * y) / csqrt(x * x + y * y));
}
// maximum / minimum on complex: lexicographic on (real, imaginary), as
// StableHLO's interpreter (equal real parts, -0 == +0, compare the imaginary
// parts; an unordered comparison picks rhs).
static double complex c_max(double complex a, double complex b) {
  bool a_wins = creal(a) == creal(b) ? cimag(a) > cimag(b) : creal(a) > creal(b);
  return a_wins ? a : b;
}
static double complex c_min(double complex a, double complex b) {
  bool a_wins = creal(a) == creal(b) ? cimag(a) < cimag(b) : creal(a) < creal(b);
  return a_wins ? a : b;
}
static double complex c_add(double complex a, double complex b) { return a + b; }
static double complex c_sub(double complex a, double complex b) { return a - b; }
static double complex c_mul(double complex a, double complex b) { return a * b; }
static double complex c_div(double complex a, double complex b) { return a / b; }
static double complex c_pow(double complex a, double complex b) {
  return b == 0 ? 1 : cpow(a, b);  // x^0 = 1, as XLA
}

//===----------------------------------------------------------------------===//
// Op tables: one row per opcode, one column per type family (NULL: the op is
// not defined for that family).
//===----------------------------------------------------------------------===//

typedef struct unary_row {
  f_unary_fn f;
  s_unary_fn s;
  u_unary_fn u;
  u_unary_fn p;
  c_unary_fn c;
} unary_row_t;

static const unary_row_t kUnary[HL_OP_COUNT_] = {
    [HL_OP_ABS] = {f_abs, s_abs, u_abs, NULL, c_abs},
    [HL_OP_ACOS] = {f_acos, NULL, NULL, NULL, c_acos},
    [HL_OP_ACOSH] = {f_acosh, NULL, NULL, NULL, c_acosh},
    [HL_OP_ASIN] = {f_asin, NULL, NULL, NULL, c_asin},
    [HL_OP_ASINH] = {f_asinh, NULL, NULL, NULL, c_asinh},
    [HL_OP_ATAN] = {f_atan, NULL, NULL, NULL, c_atan},
    [HL_OP_ATANH] = {f_atanh, NULL, NULL, NULL, c_atanh},
    [HL_OP_CBRT] = {f_cbrt, NULL, NULL, NULL, c_cbrt},
    [HL_OP_CEIL] = {f_ceil, NULL, NULL, NULL, NULL},
    [HL_OP_CLZ] = {NULL, s_clz, u_clz, NULL, NULL},
    [HL_OP_COS] = {f_cos, NULL, NULL, NULL, c_cos},
    [HL_OP_COSH] = {f_cosh, NULL, NULL, NULL, c_cosh},
    [HL_OP_ERF] = {f_erf, NULL, NULL, NULL, NULL},
    [HL_OP_EXP] = {f_exp, NULL, NULL, NULL, c_exp},
    [HL_OP_EXPM1] = {f_expm1, NULL, NULL, NULL, c_expm1},
    [HL_OP_FLOOR] = {f_floor, NULL, NULL, NULL, NULL},
    [HL_OP_IS_FINITE] = {f_is_finite, NULL, NULL, NULL, NULL},
    [HL_OP_LOG] = {f_log, NULL, NULL, NULL, c_log},
    [HL_OP_LOG1P] = {f_log1p, NULL, NULL, NULL, c_log1p},
    [HL_OP_LOGISTIC] = {f_logistic, NULL, NULL, NULL, c_logistic},
    [HL_OP_NEGATE] = {f_negate, s_negate, u_negate, NULL, c_negate},
    [HL_OP_NOT] = {NULL, s_not, u_not, p_not, NULL},
    [HL_OP_POPCNT] = {NULL, s_popcnt, u_popcnt, NULL, NULL},
    [HL_OP_ROUND_NEAREST_AFZ] = {f_round_afz, NULL, NULL, NULL, NULL},
    [HL_OP_ROUND_NEAREST_EVEN] = {f_round_even, NULL, NULL, NULL, NULL},
    [HL_OP_RSQRT] = {f_rsqrt, NULL, NULL, NULL, c_rsqrt},
    [HL_OP_SIGN] = {f_sign, s_sign, u_sign, NULL, c_sign},
    [HL_OP_SIN] = {f_sin, NULL, NULL, NULL, c_sin},
    [HL_OP_SINH] = {f_sinh, NULL, NULL, NULL, c_sinh},
    [HL_OP_SQRT] = {f_sqrt, NULL, NULL, NULL, c_sqrt},
    [HL_OP_TAN] = {f_tan, NULL, NULL, NULL, c_tan},
    [HL_OP_TANH] = {f_tanh, NULL, NULL, NULL, c_tanh},
};

typedef struct binary_row {
  f_binary_fn f;
  s_binary_fn s;
  u_binary_fn u;
  u_binary_fn p;
  c_binary_fn c;
} binary_row_t;

static const binary_row_t kBinary[HL_OP_COUNT_] = {
    [HL_OP_ADD] = {f_add, s_add, u_add, u_or, c_add},
    [HL_OP_SUBTRACT] = {f_sub, s_sub, u_sub, NULL, c_sub},
    [HL_OP_MULTIPLY] = {f_mul, s_mul, u_mul, u_and, c_mul},
    [HL_OP_DIVIDE] = {f_div, s_div, u_div, NULL, c_div},
    [HL_OP_REMAINDER] = {f_rem, s_rem, u_rem, NULL, NULL},
    [HL_OP_POWER] = {f_pow, s_pow, u_pow, NULL, c_pow},
    [HL_OP_MAXIMUM] = {hl_maximum_f64, s_max, u_max, u_or, c_max},
    [HL_OP_MINIMUM] = {hl_minimum_f64, s_min, u_min, u_and, c_min},
    [HL_OP_ATAN2] = {f_atan2, NULL, NULL, NULL, c_atan2},
    [HL_OP_MULHI] = {NULL, s_mulhi, u_mulhi, NULL, NULL},
    [HL_OP_AND] = {NULL, s_and, u_and, u_and, NULL},
    [HL_OP_OR] = {NULL, s_or, u_or, u_or, NULL},
    [HL_OP_XOR] = {NULL, s_xor, u_xor, u_xor, NULL},
    [HL_OP_SHIFT_LEFT] = {NULL, s_shl, u_shl, NULL, NULL},
    [HL_OP_SHIFT_RIGHT_ARITHMETIC] = {NULL, s_sra, u_sra, NULL, NULL},
    [HL_OP_SHIFT_RIGHT_LOGICAL] = {NULL, s_srl, u_srl, NULL, NULL},
};

//===----------------------------------------------------------------------===//
// Generic loops
//===----------------------------------------------------------------------===//

typedef enum family {
  FAM_NONE, FAM_FLOAT, FAM_SIGNED, FAM_UNSIGNED, FAM_PRED, FAM_COMPLEX
} family_t;

static family_t family_of(hl_dtype_t t) {
  switch (t) {
    case HL_F16: case HL_BF16: case HL_F32: case HL_F64: return FAM_FLOAT;
    case HL_S8: case HL_S16: case HL_S32: case HL_S64: return FAM_SIGNED;
    case HL_S1: case HL_S2: case HL_S4: return FAM_SIGNED;
    case HL_U8: case HL_U16: case HL_U32: case HL_U64: return FAM_UNSIGNED;
    case HL_U1: case HL_U2: case HL_U4: return FAM_UNSIGNED;
    case HL_PRED: return FAM_PRED;
    case HL_C64: case HL_C128: return FAM_COMPLEX;
    default: return hl_minifloat_is(t) ? FAM_FLOAT : FAM_NONE;
  }
}

static hl_status_t undefined_for(const hl_instruction_t *inst, hl_dtype_t t) {
  if (family_of(t) == FAM_NONE)
    return HL_UNIMPL("%s: %s on element type %s is not supported", hl_instruction_location(inst),
                     hl_opcode_name(inst->opcode), hl_dtype_name(t));
  return HL_INVALID("%s: %s is not defined for element type %s", hl_instruction_location(inst),
                    hl_opcode_name(inst->opcode), hl_dtype_name(t));
}

static void unary_loop(const unary_row_t *row, family_t fam, hl_dtype_t it, hl_dtype_t ot,
                       const void *x, void *y, int64_t n) {
  int bits = hl_dtype_bit_width(it);
  for (int64_t base = 0; base < n; base += HL_ELEM_BLOCK) {
    int64_t m = n - base < HL_ELEM_BLOCK ? n - base : HL_ELEM_BLOCK;
    if (fam == FAM_FLOAT) {
      double v[HL_ELEM_BLOCK];
      hl_elem_load_f64(it, x, base, m, v);
      for (int64_t i = 0; i < m; i++) v[i] = row->f(v[i]);
      hl_elem_store_f64(ot, y, base, m, v);
    } else {
      int64_t v[HL_ELEM_BLOCK];
      hl_elem_load_int(it, x, base, m, v);
      if (fam == FAM_SIGNED)
        for (int64_t i = 0; i < m; i++) v[i] = row->s(v[i], bits);
      else
        for (int64_t i = 0; i < m; i++)
          v[i] = (int64_t)(fam == FAM_PRED ? row->p : row->u)((uint64_t)v[i], bits);
      hl_elem_store_int(ot, y, base, m, v);
    }
  }
}

static void binary_loop(const binary_row_t *row, family_t fam, hl_dtype_t it, hl_dtype_t ot,
                        const void *a, const void *b, void *y, int64_t n) {
  int bits = hl_dtype_bit_width(it);
  for (int64_t base = 0; base < n; base += HL_ELEM_BLOCK) {
    int64_t m = n - base < HL_ELEM_BLOCK ? n - base : HL_ELEM_BLOCK;
    if (fam == FAM_FLOAT) {
      double u[HL_ELEM_BLOCK], v[HL_ELEM_BLOCK];
      hl_elem_load_f64(it, a, base, m, u);
      hl_elem_load_f64(it, b, base, m, v);
      for (int64_t i = 0; i < m; i++) u[i] = row->f(u[i], v[i]);
      hl_elem_store_f64(ot, y, base, m, u);
    } else {
      int64_t u[HL_ELEM_BLOCK], v[HL_ELEM_BLOCK];
      hl_elem_load_int(it, a, base, m, u);
      hl_elem_load_int(it, b, base, m, v);
      if (fam == FAM_SIGNED) {
        for (int64_t i = 0; i < m; i++) u[i] = row->s(u[i], v[i], bits);
      } else {
        u_binary_fn fn = fam == FAM_PRED ? row->p : row->u;
        for (int64_t i = 0; i < m; i++) u[i] = (int64_t)fn((uint64_t)u[i], (uint64_t)v[i], bits);
      }
      hl_elem_store_int(ot, y, base, m, u);
    }
  }
}

// The bandwidth-bound cases, as loops over restrict parameters the compiler
// vectorises (one function per (op, type), out of line: HL_SIMD_CLONES). Each gives the bits the
// double-computing generic loop gives: + - * / and sqrt of two floats are
// exact in double, so rounding the double result equals the float op, and
// maximum/minimum only pick an operand.
#define HL_FAST_LOOP_(name, T, EXPR)                                                    \
  HL_SIMD_CLONES static void name(const T *restrict p,             \
                                                            const T *restrict q,             \
                                             T *restrict r, int64_t n) {           \
    for (int64_t i = 0; i < n; i++) r[i] = (EXPR);                                      \
  }
HL_FAST_LOOP_(add_f32, float, p[i] + q[i])
HL_FAST_LOOP_(sub_f32, float, p[i] - q[i])
HL_FAST_LOOP_(mul_f32, float, p[i] * q[i])
HL_FAST_LOOP_(div_f32, float, p[i] / q[i])
HL_FAST_LOOP_(max_f32, float, hl_maximum_f32(p[i], q[i]))
HL_FAST_LOOP_(min_f32, float, hl_minimum_f32(p[i], q[i]))
HL_FAST_LOOP_(add_f64, double, p[i] + q[i])
HL_FAST_LOOP_(sub_f64, double, p[i] - q[i])
HL_FAST_LOOP_(mul_f64, double, p[i] * q[i])
HL_FAST_LOOP_(div_f64, double, p[i] / q[i])
HL_FAST_LOOP_(max_f64, double, hl_maximum_f64(p[i], q[i]))
HL_FAST_LOOP_(min_f64, double, hl_minimum_f64(p[i], q[i]))
#undef HL_FAST_LOOP_

#define HL_FAST_UNARY_(name, T, EXPR)                                                   \
  HL_SIMD_CLONES static void name(const T *restrict p, T *restrict r, \
                                             int64_t n) {                               \
    for (int64_t i = 0; i < n; i++) r[i] = (EXPR);                                      \
  }
HL_FAST_UNARY_(neg_f32, float, -p[i])
HL_FAST_UNARY_(abs_f32, float, fabsf(p[i]))
HL_FAST_UNARY_(sqrt_f32, float, sqrtf(p[i]))
HL_FAST_UNARY_(rsqrt_f32, float, (float)(1.0 / sqrt((double)p[i])))
HL_FAST_UNARY_(floor_f32, float, floorf(p[i]))
HL_FAST_UNARY_(ceil_f32, float, ceilf(p[i]))
HL_FAST_UNARY_(neg_f64, double, -p[i])
HL_FAST_UNARY_(abs_f64, double, fabs(p[i]))
HL_FAST_UNARY_(sqrt_f64, double, sqrt(p[i]))
#undef HL_FAST_UNARY_

// One operand a scalar (a broadcast constant in a fusion): the same
// arithmetic as the array loops with that operand read once.
#define HL_SCALAR_LOOP_(name, T, EXPR)                                                 \
  HL_SIMD_CLONES static void name(const T *restrict p, T q,  \
                                                            T *restrict r, int64_t n) { \
    for (int64_t i = 0; i < n; i++) r[i] = (EXPR);                                     \
  }
HL_SCALAR_LOOP_(add_vs_f32, float, p[i] + q)
HL_SCALAR_LOOP_(sub_vs_f32, float, p[i] - q)
HL_SCALAR_LOOP_(rsub_vs_f32, float, q - p[i])
HL_SCALAR_LOOP_(mul_vs_f32, float, p[i] * q)
HL_SCALAR_LOOP_(div_vs_f32, float, p[i] / q)
HL_SCALAR_LOOP_(rdiv_vs_f32, float, q / p[i])
HL_SCALAR_LOOP_(add_vs_f64, double, p[i] + q)
HL_SCALAR_LOOP_(sub_vs_f64, double, p[i] - q)
HL_SCALAR_LOOP_(rsub_vs_f64, double, q - p[i])
HL_SCALAR_LOOP_(mul_vs_f64, double, p[i] * q)
HL_SCALAR_LOOP_(div_vs_f64, double, p[i] / q)
HL_SCALAR_LOOP_(rdiv_vs_f64, double, q / p[i])
#undef HL_SCALAR_LOOP_

// The transcendental ops that run through vmath (SLEEF) for f32 / f64, and
// for f16 / bf16 in f32: see docs/NUMERICS.md for their measured errors.
hl_vmath_fn_t hl_ew_vmath_fn(hl_opcode_t op) {
  switch (op) {
    case HL_OP_EXP: return HL_VM_EXP;
    case HL_OP_EXPM1: return HL_VM_EXPM1;
    case HL_OP_LOG: return HL_VM_LOG;
    case HL_OP_LOG1P: return HL_VM_LOG1P;
    case HL_OP_TANH: return HL_VM_TANH;
    case HL_OP_LOGISTIC: return HL_VM_LOGISTIC;
    case HL_OP_SIN: return HL_VM_SIN;
    case HL_OP_COS: return HL_VM_COS;
    case HL_OP_TAN: return HL_VM_TAN;
    case HL_OP_ERF: return HL_VM_ERF;
    case HL_OP_CBRT: return HL_VM_CBRT;
    case HL_OP_POWER: return HL_VM_POW;
    case HL_OP_ATAN2: return HL_VM_ATAN2;
    default: return HL_VM_NONE;
  }
}

static bool is_half(hl_dtype_t t) { return t == HL_F16 || t == HL_BF16; }

// Vectorised (half_arrays.h); the bits of hl_f16_to_f32 / hl_bf16_to_f32
// and of hl_elem_f64_to_f16 / hl_elem_f64_to_bf16 (canonical quiet NaN).
static void half_to_f32(hl_dtype_t t, const uint16_t *x, float *v, int64_t m) {
  if (t == HL_F16) hl_f16_to_f32_array(x, v, m);
  else hl_bf16_to_f32_array(x, v, m);
}

static void f32_to_half(hl_dtype_t t, const float *v, uint16_t *y, int64_t m) {
  if (t == HL_F16) hl_f32_to_f16_array_canon(v, y, m);
  else hl_f32_to_bf16_array_canon(v, y, m);
}

// Returns false when (op, type) has no such loop.
static bool unary_fast(hl_opcode_t op, hl_dtype_t t, const void *x, void *y, int64_t n) {
  hl_vmath_fn_t vf = hl_ew_vmath_fn(op);
  if (t == HL_F32) {
    if (vf) return hl_vmath_unary_f32(vf, x, y, n);
    switch (op) {
      case HL_OP_NEGATE: neg_f32(x, y, n); return true;
      case HL_OP_ABS: abs_f32(x, y, n); return true;
      case HL_OP_SQRT: sqrt_f32(x, y, n); return true;
      case HL_OP_RSQRT: rsqrt_f32(x, y, n); return true;
      case HL_OP_FLOOR: floor_f32(x, y, n); return true;
      case HL_OP_CEIL: ceil_f32(x, y, n); return true;
      default: return false;
    }
  }
  if (t == HL_F64) {
    if (vf) return hl_vmath_unary_f64(vf, x, y, n);
    switch (op) {
      case HL_OP_NEGATE: neg_f64(x, y, n); return true;
      case HL_OP_ABS: abs_f64(x, y, n); return true;
      case HL_OP_SQRT: sqrt_f64(x, y, n); return true;
      default: return false;
    }
  }
  // f16 / bf16 negate, abs, floor, ceil (exact in f32) and sqrt (f32 has
  // 2p + 2 bits, as for half_arith below) in f32, rounded to the 16-bit type.
  if (is_half(t) && (op == HL_OP_NEGATE || op == HL_OP_ABS || op == HL_OP_SQRT ||
                     op == HL_OP_FLOOR || op == HL_OP_CEIL)) {
    float v[HL_ELEM_BLOCK], w[HL_ELEM_BLOCK];  // restrict loops: no in place
    for (int64_t base = 0; base < n; base += HL_ELEM_BLOCK) {
      int64_t m = n - base < HL_ELEM_BLOCK ? n - base : HL_ELEM_BLOCK;
      half_to_f32(t, (const uint16_t *)x + base, v, m);
      switch (op) {
        case HL_OP_NEGATE: neg_f32(v, w, m); break;
        case HL_OP_ABS: abs_f32(v, w, m); break;
        case HL_OP_SQRT: sqrt_f32(v, w, m); break;
        case HL_OP_FLOOR: floor_f32(v, w, m); break;
        default: ceil_f32(v, w, m); break;
      }
      f32_to_half(t, w, (uint16_t *)y + base, m);
    }
    return true;
  }
  if (is_half(t) && vf) {  // computed in f32, rounded once to the 16-bit type
    float v[HL_ELEM_BLOCK];
    for (int64_t base = 0; base < n; base += HL_ELEM_BLOCK) {
      int64_t m = n - base < HL_ELEM_BLOCK ? n - base : HL_ELEM_BLOCK;
      half_to_f32(t, (const uint16_t *)x + base, v, m);
      if (!hl_vmath_unary_f32(vf, v, v, m)) return false;
      f32_to_half(t, v, (uint16_t *)y + base, m);
    }
    return true;
  }
  return false;
}

// f16 / bf16 + - * / maximum minimum in f32: f32 has at least 2p + 2
// significant bits for both (p = 11, 8), so rounding the f32 result to the
// 16-bit type gives the bits rounding the exact (or the double) result does,
// as the generic double loop computes it.
static bool half_arith(hl_opcode_t op, hl_dtype_t t, const void *p, const void *q, void *r,
                       int64_t n) {
  if (op != HL_OP_ADD && op != HL_OP_SUBTRACT && op != HL_OP_MULTIPLY && op != HL_OP_DIVIDE &&
      op != HL_OP_MAXIMUM && op != HL_OP_MINIMUM)
    return false;
  float u[HL_ELEM_BLOCK], v[HL_ELEM_BLOCK], w[HL_ELEM_BLOCK];
  for (int64_t base = 0; base < n; base += HL_ELEM_BLOCK) {
    int64_t m = n - base < HL_ELEM_BLOCK ? n - base : HL_ELEM_BLOCK;
    half_to_f32(t, (const uint16_t *)p + base, u, m);
    half_to_f32(t, (const uint16_t *)q + base, v, m);
    switch (op) {
      case HL_OP_ADD: add_f32(u, v, w, m); break;
      case HL_OP_SUBTRACT: sub_f32(u, v, w, m); break;
      case HL_OP_MULTIPLY: mul_f32(u, v, w, m); break;
      case HL_OP_DIVIDE: div_f32(u, v, w, m); break;
      case HL_OP_MAXIMUM: max_f32(u, v, w, m); break;
      default: min_f32(u, v, w, m); break;
    }
    f32_to_half(t, w, (uint16_t *)r + base, m);
  }
  return true;
}

static bool binary_fast(hl_opcode_t op, hl_dtype_t t, const void *p, const void *q, void *r,
                        int64_t n) {
  hl_vmath_fn_t vf = hl_ew_vmath_fn(op);
  if (t == HL_F32) {
    if (vf) return hl_vmath_binary_f32(vf, p, q, r, n);
    switch (op) {
      case HL_OP_ADD: add_f32(p, q, r, n); return true;
      case HL_OP_SUBTRACT: sub_f32(p, q, r, n); return true;
      case HL_OP_MULTIPLY: mul_f32(p, q, r, n); return true;
      case HL_OP_DIVIDE: div_f32(p, q, r, n); return true;
      case HL_OP_MAXIMUM: max_f32(p, q, r, n); return true;
      case HL_OP_MINIMUM: min_f32(p, q, r, n); return true;
      default: return false;
    }
  }
  if (t == HL_F64) {
    if (vf) return hl_vmath_binary_f64(vf, p, q, r, n);
    switch (op) {
      case HL_OP_ADD: add_f64(p, q, r, n); return true;
      case HL_OP_SUBTRACT: sub_f64(p, q, r, n); return true;
      case HL_OP_MULTIPLY: mul_f64(p, q, r, n); return true;
      case HL_OP_DIVIDE: div_f64(p, q, r, n); return true;
      case HL_OP_MAXIMUM: max_f64(p, q, r, n); return true;
      case HL_OP_MINIMUM: min_f64(p, q, r, n); return true;
      default: return false;
    }
  }
  if (is_half(t) && !vf) return half_arith(op, t, p, q, r, n);
  if (is_half(t) && vf) {
    float u[HL_ELEM_BLOCK], v[HL_ELEM_BLOCK];
    for (int64_t base = 0; base < n; base += HL_ELEM_BLOCK) {
      int64_t m = n - base < HL_ELEM_BLOCK ? n - base : HL_ELEM_BLOCK;
      half_to_f32(t, (const uint16_t *)p + base, u, m);
      half_to_f32(t, (const uint16_t *)q + base, v, m);
      if (!hl_vmath_binary_f32(vf, u, v, u, m)) return false;
      f32_to_half(t, u, (uint16_t *)r + base, m);
    }
    return true;
  }
  return false;
}

//===----------------------------------------------------------------------===//
// Array entry points (elementwise_arrays.h)
//===----------------------------------------------------------------------===//

static hl_dtype_t result_type_of(hl_opcode_t op, hl_dtype_t in) {
  return op == HL_OP_IS_FINITE ? HL_PRED : in;
}

bool hl_ew_unary_supported(hl_opcode_t op, hl_dtype_t in, hl_dtype_t out) {
  if (op < 0 || op >= HL_OP_COUNT_ || out != result_type_of(op, in)) return false;
  const unary_row_t *row = &kUnary[op];
  switch (family_of(in)) {
    case FAM_FLOAT: return row->f != NULL;
    case FAM_SIGNED: return row->s != NULL;
    case FAM_UNSIGNED: return row->u != NULL;
    case FAM_PRED: return row->p != NULL;
    default: return false;
  }
}

void hl_ew_unary_array(hl_opcode_t op, hl_dtype_t in, hl_dtype_t out, const void *x, void *y,
                       int64_t n) {
  if (in == out && unary_fast(op, in, x, y, n)) return;
  unary_loop(&kUnary[op], family_of(in), in, out, x, y, n);
}

bool hl_ew_binary_array_scalar(hl_opcode_t op, hl_dtype_t t, const void *a, bool a_scalar,
                               const void *b, void *y, int64_t n) {
  const void *v = a_scalar ? b : a, *s = a_scalar ? a : b;
  if (t == HL_F32) {
    float q = *(const float *)s;
    switch (op) {
      // + and * commute bit for bit (IEEE), so the scalar may sit on either side.
      case HL_OP_ADD: add_vs_f32(v, q, y, n); return true;
      case HL_OP_MULTIPLY: mul_vs_f32(v, q, y, n); return true;
      case HL_OP_SUBTRACT: (a_scalar ? rsub_vs_f32 : sub_vs_f32)(v, q, y, n); return true;
      case HL_OP_DIVIDE: (a_scalar ? rdiv_vs_f32 : div_vs_f32)(v, q, y, n); return true;
      default: return false;
    }
  }
  if (t == HL_F64) {
    double q = *(const double *)s;
    switch (op) {
      case HL_OP_ADD: add_vs_f64(v, q, y, n); return true;
      case HL_OP_MULTIPLY: mul_vs_f64(v, q, y, n); return true;
      case HL_OP_SUBTRACT: (a_scalar ? rsub_vs_f64 : sub_vs_f64)(v, q, y, n); return true;
      case HL_OP_DIVIDE: (a_scalar ? rdiv_vs_f64 : div_vs_f64)(v, q, y, n); return true;
      default: return false;
    }
  }
  return false;
}

bool hl_ew_binary_supported(hl_opcode_t op, hl_dtype_t in, hl_dtype_t out) {
  if (op < 0 || op >= HL_OP_COUNT_ || out != in) return false;
  const binary_row_t *row = &kBinary[op];
  switch (family_of(in)) {
    case FAM_FLOAT: return row->f != NULL;
    case FAM_SIGNED: return row->s != NULL;
    case FAM_UNSIGNED: return row->u != NULL;
    case FAM_PRED: return row->p != NULL;
    default: return false;
  }
}

bool hl_ew_instruction_supported(const hl_instruction_t *inst) {
  int arity = hl_opcode_arity(inst->opcode);
  if (arity == 1 && inst->operand_count == 1)
    return hl_ew_unary_supported(inst->opcode, inst->operands[0]->shape.dtype,
                                 inst->shape.dtype);
  if (arity == 2 && inst->operand_count == 2)
    return hl_ew_binary_supported(inst->opcode, inst->operands[0]->shape.dtype,
                                  inst->shape.dtype);
  return false;
}

void hl_ew_binary_array(hl_opcode_t op, hl_dtype_t in, hl_dtype_t out, const void *a,
                        const void *b, void *y, int64_t n) {
  if (in == out && binary_fast(op, in, a, b, y, n)) return;
  binary_loop(&kBinary[op], family_of(in), in, out, a, b, y, n);
}

// Complex loops: c64 / c128 elements as double complex; a real result (abs)
// stores the real part.
static void load_complex(const hl_literal_t *x, int64_t base, int64_t m, double complex *v) {
  for (int64_t i = 0; i < m; i++) {
    int64_t k = 2 * (base + i);
    v[i] = x->shape.dtype == HL_C64
               ? CMPLX(((const float *)x->data)[k], ((const float *)x->data)[k + 1])
               : CMPLX(((const double *)x->data)[k], ((const double *)x->data)[k + 1]);
  }
}

static void store_complex(hl_literal_t *y, int64_t base, int64_t m, const double complex *v) {
  hl_dtype_t t = y->shape.dtype;
  for (int64_t i = 0; i < m; i++) {
    int64_t k = 2 * (base + i);
    switch (t) {
      case HL_C64:
        ((float *)y->data)[k] = (float)creal(v[i]);
        ((float *)y->data)[k + 1] = (float)cimag(v[i]);
        break;
      case HL_C128:
        ((double *)y->data)[k] = creal(v[i]);
        ((double *)y->data)[k + 1] = cimag(v[i]);
        break;
      case HL_F32: ((float *)y->data)[base + i] = (float)creal(v[i]); break;
      default: ((double *)y->data)[base + i] = creal(v[i]); break;
    }
  }
}

static void complex_loop(c_unary_fn f1, c_binary_fn f2, const hl_literal_t *a,
                         const hl_literal_t *b, hl_literal_t *y) {
  int64_t n = hl_literal_element_count(y);
  for (int64_t base = 0; base < n; base += HL_ELEM_BLOCK) {
    int64_t m = n - base < HL_ELEM_BLOCK ? n - base : HL_ELEM_BLOCK;
    double complex u[HL_ELEM_BLOCK], v[HL_ELEM_BLOCK];
    load_complex(a, base, m, u);
    if (b) {
      load_complex(b, base, m, v);
      for (int64_t i = 0; i < m; i++) u[i] = f2(u[i], v[i]);
    } else {
      for (int64_t i = 0; i < m; i++) u[i] = f1(u[i]);
    }
    store_complex(y, base, m, u);
  }
}

static hl_status_t check_operand(const hl_instruction_t *inst, const hl_literal_t *x, int i) {
  if (!hl_shape_is_array(&x->shape) || !hl_shape_same_dims(&x->shape, &inst->shape))
    return HL_INVALID("%s: operand %d has shape %s, expected the dimensions of %s",
                      hl_instruction_location(inst), i, HL_SHAPE_STR(&x->shape),
                      HL_SHAPE_STR(&inst->shape));
  return NULL;
}

static hl_status_t check_result_type(const hl_instruction_t *inst, hl_dtype_t in) {
  hl_dtype_t want = inst->opcode == HL_OP_IS_FINITE ? HL_PRED : in;
  if (inst->opcode == HL_OP_ABS && hl_dtype_is_complex(in)) want = in == HL_C64 ? HL_F32 : HL_F64;
  if (inst->shape.dtype != want)
    return HL_INVALID("%s: result element type %s, expected %s", hl_instruction_location(inst),
                      hl_dtype_name(inst->shape.dtype), hl_dtype_name(want));
  return NULL;
}

// Large arrays split into chunks over the thread pool (--threads): every
// element is computed by the same loop whichever chunk it falls in.
typedef struct split_args {
  hl_opcode_t op;
  hl_dtype_t in, out;
  const char *a, *b;
  char *y;
} split_args_t;

static void split_chunk(void *arg, int64_t i0, int64_t m, int worker) {
  const split_args_t *s = arg;
  size_t ei = hl_dtype_size(s->in), eo = hl_dtype_size(s->out);
  if (s->b)
    hl_ew_binary_array(s->op, s->in, s->out, s->a + (size_t)i0 * ei, s->b + (size_t)i0 * ei,
                       s->y + (size_t)i0 * eo, m);
  else
    hl_ew_unary_array(s->op, s->in, s->out, s->a + (size_t)i0 * ei, s->y + (size_t)i0 * eo, m);
}

// hl_ew_unary_array / hl_ew_binary_array (b NULL: unary) over the pool.
static void run_split(hl_kernel_context_t *ctx, hl_opcode_t op, hl_dtype_t in, hl_dtype_t out,
                      const void *a, const void *b, void *y, int64_t n) {
  const hl_exec_options_t *o = hl_kernel_options(ctx);
  split_args_t s = {op, in, out, a, b, y};
  hl_thread_pool_run_chunks(o ? o->pool : NULL, n, split_chunk, &s);
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

hl_status_t hl_kernel_unary(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                            hl_literal_t *const *operands, hl_literal_t **out) {
  *out = NULL;
  const hl_literal_t *x = operands[0];
  HL_RETURN_IF_ERROR(check_operand(inst, x, 0));
  hl_dtype_t t = x->shape.dtype;
  HL_RETURN_IF_ERROR(check_result_type(inst, t));
  const unary_row_t *row = &kUnary[inst->opcode];
  family_t fam = family_of(t);
  bool ok = (fam == FAM_FLOAT && row->f) || (fam == FAM_SIGNED && row->s) ||
            (fam == FAM_UNSIGNED && row->u) || (fam == FAM_PRED && row->p) ||
            (fam == FAM_COMPLEX && row->c);
  if (!ok) return undefined_for(inst, t);
  hl_literal_t *y = hl_kernel_reuse_operand(ctx, inst, operands, 1);
  if (!y) HL_RETURN_IF_ERROR(hl_literal_create_uninitialized(&inst->shape, &y));
  if (fam == FAM_COMPLEX) complex_loop(row->c, NULL, x, NULL, y);
  else run_split(ctx, inst->opcode, t, inst->shape.dtype, x->data, NULL, y->data,
                 hl_literal_element_count(y));
  *out = y;
  return NULL;
}

hl_status_t hl_kernel_binary(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                             hl_literal_t *const *operands, hl_literal_t **out) {
  *out = NULL;
  const hl_literal_t *a = operands[0], *b = operands[1];
  HL_RETURN_IF_ERROR(check_operand(inst, a, 0));
  HL_RETURN_IF_ERROR(check_operand(inst, b, 1));
  hl_dtype_t t = a->shape.dtype;
  if (b->shape.dtype != t)
    return HL_INVALID("%s: operand element types differ (%s and %s)",
                      hl_instruction_location(inst), hl_dtype_name(t),
                      hl_dtype_name(b->shape.dtype));
  HL_RETURN_IF_ERROR(check_result_type(inst, t));
  const binary_row_t *row = &kBinary[inst->opcode];
  family_t fam = family_of(t);
  bool ok = (fam == FAM_FLOAT && row->f) || (fam == FAM_SIGNED && row->s) ||
            (fam == FAM_UNSIGNED && row->u) || (fam == FAM_PRED && row->p) ||
            (fam == FAM_COMPLEX && row->c);
  if (!ok) return undefined_for(inst, t);
  hl_literal_t *y = hl_kernel_reuse_operand(ctx, inst, operands, 2);
  if (!y) HL_RETURN_IF_ERROR(hl_literal_create_uninitialized(&inst->shape, &y));
  if (fam == FAM_COMPLEX) complex_loop(NULL, row->c, a, b, y);
  else run_split(ctx, inst->opcode, t, inst->shape.dtype, a->data, b->data, y->data,
                 hl_literal_element_count(y));
  *out = y;
  return NULL;
}
