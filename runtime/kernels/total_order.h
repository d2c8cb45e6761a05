// XLA's TOTALORDER on the bits of a real float element, as one signed
// integer key per element: key(a) < key(b) exactly when a sorts before b.
// Shared by compare (type=TOTALORDER), sort's fast path and topk.
//
// XLA (xla/util.h ToSignMagnitude, used by comparison_util.h
// Comparison::Compare and the HLO evaluator's compare) maps a value to its
// sign-magnitude bits read as two's complement:
// -NaN < -inf < -finite < -0 < +0 < +finite < +inf < +NaN, so -0 != +0 and
// NaNs are ordered by their payload bits.
//  - fnuz types (f8e4m3fnuz, f8e5m2fnuz, f8e4m3b11fnuz) have no -0, so XLA
//    moves every negative magnitude down by one to fill the gap
//    (SignAndMagnitude's !has_negative_zero_v branch): -m keys as -m. Their
//    single NaN 0x80 keeps its bits under ml_dtypes' abs(), so it has no
//    sign in XLA's sense and keys as (int8)0x80 = -128: below every number,
//    matching its role as the "-NaN" of the documented order.
//  - f8e8m0fnu has no sign bit: every value is positive and the NaN 0xff is
//    "+NaN", so the documented order is the unsigned order of the bits.
//    (XLA's generic ToSignMagnitude would read bit 7 as part of an int8,
//    which puts 2^1..2^127 and NaN below 2^-127; that contradicts the order
//    documented in operation_semantics and ml_dtypes' own comparison, so we
//    follow the documented one.)
//  - f4e2m1fn sits in the low 4 bits of its byte; its sign is bit 3 (f6e2m3fn
//    / f6e3m2fn: the low 6 bits, sign bit 5).
#ifndef HL_RUNTIME_KERNELS_TOTAL_ORDER_H_
#define HL_RUNTIME_KERNELS_TOTAL_ORDER_H_

#include <stdint.h>
#include <string.h>

#include "runtime/base/dtype.h"
#include "runtime/kernels/element_access.h"

// Key of the element whose raw bits (little-endian, zero-extended) are raw.
static inline int64_t hl_total_order_key(hl_dtype_t t, uint64_t raw) {
  switch (t) {
    case HL_F8E4M3FNUZ: case HL_F8E5M2FNUZ: case HL_F8E4M3B11FNUZ: {
      uint8_t b = (uint8_t)raw;
      if (b == 0x80) return -128;
      return b & 0x80 ? -(int64_t)(b & 0x7f) : (int64_t)b;
    }
    case HL_F8E8M0FNU:
      return (int64_t)(uint8_t)raw;
    default: {
      int bits = hl_dtype_bit_width(t);
      int64_t s = hl_elem_sext(raw, bits);
      return s < 0 ? (int64_t)((uint64_t)s ^ (hl_elem_mask(bits) >> 1)) : s;
    }
  }
}

// keys[i] = key of element base+i of a float array of type t.
static inline void hl_total_order_keys(hl_dtype_t t, const void *data, int64_t base, int64_t m,
                                       int64_t *keys) {
  size_t es = hl_dtype_size(t);  // f4e2m1fn: 4 bits in a byte
  for (int64_t i = 0; i < m; i++) {
    uint64_t raw = 0;
    memcpy(&raw, (const char *)data + (size_t)(base + i) * es, es);  // little-endian host
    keys[i] = hl_total_order_key(t, raw);
  }
}

#endif  // HL_RUNTIME_KERNELS_TOTAL_ORDER_H_
