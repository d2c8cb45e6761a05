// The 8-, 6- and 4-bit float formats (f8e5m2, f8e4m3, f8e3m4, f8e4m3fn,
// f8e4m3fnuz, f8e5m2fnuz, f8e4m3b11fnuz, f8e8m0fnu, f6e2m3fn, f6e3m2fn,
// f4e2m1fn), one byte per element, decoded to and encoded from double.
//
// Conversion semantics are ml_dtypes' non-saturating static_cast (which XLA's
// literals and evaluator use): round to nearest even; a finite value above
// the largest finite one becomes the format's "infinity", which is +-inf
// for the IEEE-like formats (e5m2, e4m3, e3m4), NaN for the fn/fnuz/fnu
// formats (0x7f|sign for e4m3fn, 0x80 for fnuz, 0xff for e8m0fnu) and the
// largest magnitude for the MX formats f4e2m1fn (+-6), f6e2m3fn (+-7.5) and
// f6e3m2fn (+-28), which have neither inf nor NaN.
// NaN becomes the format's quiet NaN (the MX formats: ml_dtypes' stand-in,
// the sign bit alone (-0, 0x8 / 0x20) for +NaN, 0x0 for -NaN). fnuz formats have no -0 (it becomes +0). e8m0fnu is
// unsigned and has no zero: 0 and negative values become its NaN 0xff, and
// values below 2^-127 round to 0x00 (2^-127).
#ifndef HL_RUNTIME_BASE_MINIFLOAT_H_
#define HL_RUNTIME_BASE_MINIFLOAT_H_

#include <stdbool.h>
#include <stdint.h>

#include "runtime/base/dtype.h"

// True for the types listed above.
bool hl_minifloat_is(hl_dtype_t t);
// The value of `bits` (low 4 / 6 bits for f4e2m1fn / f6*) as a double; NaN
// keeps its sign.
double hl_minifloat_to_f64(hl_dtype_t t, uint8_t bits);
// Rounds d into the format (conversion semantics above).
uint8_t hl_minifloat_from_f64(hl_dtype_t t, double d);
// As hl_minifloat_from_f64, but false when d's class does not survive: a
// finite value that overflows, inf without an inf encoding, NaN without a
// NaN encoding, or 0 / a negative value for e8m0fnu (the text parser's rule).
bool hl_minifloat_from_f64_checked(hl_dtype_t t, double d, uint8_t *out_bits);
// Explicit mantissa bits of the IEEE-style formats (e5m2: 2, e4m3: 3,
// e3m4: 4), whose NaNs carry a payload; 0 for every other type.
int hl_minifloat_ieee_mantissa_bits(hl_dtype_t t);
// Largest finite value of the format.
double hl_minifloat_max(hl_dtype_t t);

#endif  // HL_RUNTIME_BASE_MINIFLOAT_H_
