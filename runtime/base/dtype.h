// Element types. Values equal XLA's PrimitiveType enum (xla_data.proto), so
// the proto loader converts with a cast and the text spelling is the name.
#ifndef HL_RUNTIME_BASE_DTYPE_H_
#define HL_RUNTIME_BASE_DTYPE_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// X(ENUM, value, "text name", bytes per element in memory, kind)
// Sub-byte types take one byte per element in memory, as in XLA literals.
// f6e2m3fn / f6e3m2fn (MLIR's and ml_dtypes' OCP MX FP6 types, which StableHLO
// allows) have no XLA PrimitiveType: their values lie past XLA's range, and
// the HloProto reader and writer reject them.
#define HL_DTYPE_LIST(X)                                  \
  X(PRED, 1, "pred", 1, HL_KIND_PRED)                     \
  X(S8, 2, "s8", 1, HL_KIND_SIGNED)                       \
  X(S16, 3, "s16", 2, HL_KIND_SIGNED)                     \
  X(S32, 4, "s32", 4, HL_KIND_SIGNED)                     \
  X(S64, 5, "s64", 8, HL_KIND_SIGNED)                     \
  X(U8, 6, "u8", 1, HL_KIND_UNSIGNED)                     \
  X(U16, 7, "u16", 2, HL_KIND_UNSIGNED)                   \
  X(U32, 8, "u32", 4, HL_KIND_UNSIGNED)                   \
  X(U64, 9, "u64", 8, HL_KIND_UNSIGNED)                   \
  X(F16, 10, "f16", 2, HL_KIND_FLOAT)                     \
  X(F32, 11, "f32", 4, HL_KIND_FLOAT)                     \
  X(F64, 12, "f64", 8, HL_KIND_FLOAT)                     \
  X(TUPLE, 13, "tuple", 0, HL_KIND_OTHER)                 \
  X(OPAQUE, 14, "opaque", 0, HL_KIND_OTHER)               \
  X(C64, 15, "c64", 8, HL_KIND_COMPLEX)                   \
  X(BF16, 16, "bf16", 2, HL_KIND_FLOAT)                   \
  X(TOKEN, 17, "token", 0, HL_KIND_OTHER)                 \
  X(C128, 18, "c128", 16, HL_KIND_COMPLEX)                \
  X(F8E5M2, 19, "f8e5m2", 1, HL_KIND_FLOAT)               \
  X(F8E4M3FN, 20, "f8e4m3fn", 1, HL_KIND_FLOAT)           \
  X(S4, 21, "s4", 1, HL_KIND_SIGNED)                      \
  X(U4, 22, "u4", 1, HL_KIND_UNSIGNED)                    \
  X(F8E4M3B11FNUZ, 23, "f8e4m3b11fnuz", 1, HL_KIND_FLOAT) \
  X(F8E5M2FNUZ, 24, "f8e5m2fnuz", 1, HL_KIND_FLOAT)       \
  X(F8E4M3FNUZ, 25, "f8e4m3fnuz", 1, HL_KIND_FLOAT)       \
  X(S2, 26, "s2", 1, HL_KIND_SIGNED)                      \
  X(U2, 27, "u2", 1, HL_KIND_UNSIGNED)                    \
  X(F8E4M3, 28, "f8e4m3", 1, HL_KIND_FLOAT)               \
  X(F8E3M4, 29, "f8e3m4", 1, HL_KIND_FLOAT)               \
  X(S1, 30, "s1", 1, HL_KIND_SIGNED)                      \
  X(U1, 31, "u1", 1, HL_KIND_UNSIGNED)                    \
  X(F4E2M1FN, 32, "f4e2m1fn", 1, HL_KIND_FLOAT)           \
  X(F8E8M0FNU, 33, "f8e8m0fnu", 1, HL_KIND_FLOAT)         \
  X(F6E2M3FN, 64, "f6e2m3fn", 1, HL_KIND_FLOAT)           \
  X(F6E3M2FN, 65, "f6e3m2fn", 1, HL_KIND_FLOAT)

typedef enum hl_dtype_kind {
  HL_KIND_PRED,
  HL_KIND_SIGNED,
  HL_KIND_UNSIGNED,
  HL_KIND_FLOAT,
  HL_KIND_COMPLEX,
  HL_KIND_OTHER,  // tuple, token, opaque: no element data
} hl_dtype_kind_t;

typedef enum hl_dtype {
  HL_INVALID = 0,
#define HL_DTYPE_ENUM_(name, value, text, bytes, kind) HL_##name = value,
  HL_DTYPE_LIST(HL_DTYPE_ENUM_)
#undef HL_DTYPE_ENUM_
  HL_DTYPE_COUNT_
} hl_dtype_t;

bool hl_dtype_is_valid(int value);        // a value of the list above
const char *hl_dtype_name(hl_dtype_t t);  // "f32"; "invalid" when unknown
// Looks up a text name ("bf16", "opaque_type" too); HL_INVALID if unknown.
hl_dtype_t hl_dtype_from_name(const char *name, size_t length);
size_t hl_dtype_size(hl_dtype_t t);       // bytes per element in memory; 0 for tuple/token/opaque
hl_dtype_kind_t hl_dtype_kind(hl_dtype_t t);
bool hl_dtype_is_array(hl_dtype_t t);     // has element data (not tuple/token/opaque)
bool hl_dtype_is_float(hl_dtype_t t);     // any real floating type incl. f16/bf16/f8/f4
bool hl_dtype_is_integer(hl_dtype_t t);   // signed or unsigned int (not pred)
bool hl_dtype_is_signed_int(hl_dtype_t t);
bool hl_dtype_is_unsigned_int(hl_dtype_t t);
bool hl_dtype_is_complex(hl_dtype_t t);
int hl_dtype_bit_width(hl_dtype_t t);     // 4 for s4, 16 for bf16, 64 for c64, ...

// IEEE half and bfloat16 conversions; float -> narrow rounds to nearest even
// and keeps NaN a NaN.
float hl_f16_to_f32(uint16_t h);
uint16_t hl_f32_to_f16(float f);
float hl_bf16_to_f32(uint16_t b);
uint16_t hl_f32_to_bf16(float f);
// f64 -> f16 directly (not via f32), so double rounding is avoided.
uint16_t hl_f64_to_f16(double d);
uint16_t hl_f64_to_bf16(double d);

#endif  // HL_RUNTIME_BASE_DTYPE_H_
