// convert and bitcast-convert (XLA ConvertElementType / BitcastConvertType;
// StableHLO convert / bitcast_convert).
//
// convert, where StableHLO leaves the result open (TBD #180), follows XLA's
// CPU backend:
//   float -> int: truncate toward zero, saturate to the destination range,
//                 NaN -> 0 (LLVM fptosi.sat / fptoui.sat).
//   int -> int:   keep the low bits (two's complement wrap-around).
//   any -> pred:  x != 0 (NaN -> true); pred -> any: 0 or 1.
//   to float:     round to nearest even, once (s64/u64 beyond 2^53 are first
//                 narrowed with a sticky bit so no double rounding happens).
//   complex:      real <-> complex drops / zeroes the imaginary part.
// bitcast-convert reinterprets the bytes: row-major buffers make the
// StableHLO rules for a width change (an added or removed minor dimension)
// a plain copy on this little-endian runtime.
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/base/half_arrays.h"
#include "runtime/kernels/element_access.h"
#include "runtime/kernels/elementwise_arrays.h"
#include "runtime/kernels/kernel.h"

// An integer magnitude as a double holding at most 53 significant bits, the
// dropped bits folded into the lowest kept one (round to odd). Rounding that
// double to any narrower float format then equals rounding the integer once.
static double u64_to_f64_sticky(uint64_t u) {
  if (u < (UINT64_C(1) << 53)) return (double)u;
  int shift = 64 - __builtin_clzll(u) - 53;
  uint64_t kept = u >> shift;
  if (u & ((UINT64_C(1) << shift) - 1)) kept |= 1;
  return ldexp((double)kept, shift);
}

// An integer as a double for a destination of type dt: rounded once to
// nearest for f64/c128, else kept round-to-odd for the final narrowing.
static double int_to_f64(int64_t v, bool is_signed, hl_dtype_t dt) {
  if (dt == HL_F64 || dt == HL_C128) return is_signed ? (double)v : (double)(uint64_t)v;
  if (!is_signed || v >= 0) return u64_to_f64_sticky((uint64_t)v);
  return -u64_to_f64_sticky(0 - (uint64_t)v);
}

// Saturating float -> integer of `bits` width; NaN -> 0.
static int64_t f64_to_int(double d, bool is_signed, int bits) {
  if (isnan(d)) return 0;
  d = trunc(d);
  if (is_signed) {
    double hi = ldexp(1.0, bits - 1);  // 2^(bits-1), exact
    if (d >= hi) return (int64_t)(hl_elem_mask(bits) >> 1);
    if (d <= -hi) return -(int64_t)(hl_elem_mask(bits) >> 1) - 1;
    return (int64_t)d;
  }
  if (d <= 0) return 0;
  if (d >= ldexp(1.0, bits)) return (int64_t)hl_elem_mask(bits);
  return (int64_t)(uint64_t)d;
}

// Complex elements as (re, im) doubles.
static void load_complex(const hl_literal_t *x, hl_dtype_t dt, int64_t base, int64_t m,
                         double *re, double *im) {
  hl_dtype_t t = x->shape.dtype;
  if (t == HL_C64 || t == HL_C128) {
    for (int64_t i = 0; i < m; i++) {
      int64_t k = 2 * (base + i);
      re[i] = t == HL_C64 ? ((const float *)x->data)[k] : ((const double *)x->data)[k];
      im[i] = t == HL_C64 ? ((const float *)x->data)[k + 1] : ((const double *)x->data)[k + 1];
    }
  } else {
    hl_elem_load_f64(t, x->data, base, m, re);
    if (hl_dtype_is_integer(t)) {
      int64_t v[HL_ELEM_BLOCK];
      hl_elem_load_int(t, x->data, base, m, v);
      for (int64_t i = 0; i < m; i++) re[i] = int_to_f64(v[i], hl_dtype_is_signed_int(t), dt);
    }
    for (int64_t i = 0; i < m; i++) im[i] = 0;
  }
}

static void store_complex(hl_literal_t *y, int64_t base, int64_t m, const double *re,
                          const double *im) {
  for (int64_t i = 0; i < m; i++) {
    int64_t k = 2 * (base + i);
    if (y->shape.dtype == HL_C64) {
      ((float *)y->data)[k] = (float)re[i];
      ((float *)y->data)[k + 1] = (float)im[i];
    } else {
      ((double *)y->data)[k] = re[i];
      ((double *)y->data)[k + 1] = im[i];
    }
  }
}

static bool convertible(hl_dtype_t t) {
  return hl_elem_is_real_or_int(t) || hl_dtype_is_complex(t);
}

static void convert_block(const hl_literal_t *x, hl_literal_t *y, int64_t base, int64_t m) {
  hl_dtype_t st = x->shape.dtype, dt = y->shape.dtype;
  bool src_int = hl_dtype_is_integer(st) || st == HL_PRED;
  bool dst_int = hl_dtype_is_integer(dt);
  double d[HL_ELEM_BLOCK], im[HL_ELEM_BLOCK];
  int64_t v[HL_ELEM_BLOCK];
  if (hl_dtype_is_complex(dt)) {
    load_complex(x, dt, base, m, d, im);
    store_complex(y, base, m, d, im);
    return;
  }
  if (hl_dtype_is_complex(st)) {  // the real part converts like a float
    load_complex(x, dt, base, m, d, im);
    src_int = false;
  } else if (!src_int) {
    hl_elem_load_f64(st, x->data, base, m, d);
  }
  if (src_int) {
    hl_elem_load_int(st, x->data, base, m, v);
    if (dst_int || dt == HL_PRED) {
      hl_elem_store_int(dt, y->data, base, m, v);
    } else {
      bool is_signed = hl_dtype_is_signed_int(st);
      for (int64_t i = 0; i < m; i++) d[i] = int_to_f64(v[i], is_signed, dt);
      hl_elem_store_f64(dt, y->data, base, m, d);
    }
    return;
  }
  if (dst_int) {
    bool is_signed = hl_dtype_is_signed_int(dt);
    int bits = hl_dtype_bit_width(dt);
    for (int64_t i = 0; i < m; i++) v[i] = f64_to_int(d[i], is_signed, bits);
    hl_elem_store_int(dt, y->data, base, m, v);
  } else {
    hl_elem_store_f64(dt, y->data, base, m, d);  // pred: != 0, NaN -> true
  }
}

// One block of a real / integer conversion (no complex side).
static void convert_real_block(hl_dtype_t st, hl_dtype_t dt, const void *x, void *y,
                               int64_t base, int64_t m) {
  bool src_int = hl_dtype_is_integer(st) || st == HL_PRED;
  bool dst_int = hl_dtype_is_integer(dt);
  double d[HL_ELEM_BLOCK];
  int64_t v[HL_ELEM_BLOCK];
  if (src_int) {
    hl_elem_load_int(st, x, base, m, v);
    if (dst_int || dt == HL_PRED) {
      hl_elem_store_int(dt, y, base, m, v);
    } else {
      bool is_signed = hl_dtype_is_signed_int(st);
      for (int64_t i = 0; i < m; i++) d[i] = int_to_f64(v[i], is_signed, dt);
      hl_elem_store_f64(dt, y, base, m, d);
    }
    return;
  }
  hl_elem_load_f64(st, x, base, m, d);
  if (dst_int) {
    bool is_signed = hl_dtype_is_signed_int(dt);
    int bits = hl_dtype_bit_width(dt);
    for (int64_t i = 0; i < m; i++) v[i] = f64_to_int(d[i], is_signed, bits);
    hl_elem_store_int(dt, y, base, m, v);
  } else {
    hl_elem_store_f64(dt, y, base, m, d);  // pred: != 0, NaN -> true
  }
}

bool hl_convert_supported(hl_dtype_t st, hl_dtype_t dt) {
  return hl_elem_is_real_or_int(st) && hl_elem_is_real_or_int(dt);
}

void hl_convert_array(hl_dtype_t st, hl_dtype_t dt, const void *x, void *y, int64_t n) {
  if (st == dt) {
    if (x != y) memmove(y, x, (size_t)n * hl_dtype_size(st));
  } else if (st == HL_F32 && dt == HL_BF16) {  // the common mixed-precision casts, vectorised
    hl_f32_to_bf16_array_keep(x, y, n);          // (the bits of hl_f32_to_bf16)
  } else if (st == HL_BF16 && dt == HL_F32) {
    hl_bf16_to_f32_array(x, y, n);
  } else if (st == HL_F32 && dt == HL_F16) {  // the bits of hl_elem_f64_to_f16 below
    hl_f32_to_f16_array_canon(x, y, n);
  } else if (st == HL_F16 && dt == HL_F32) {
    hl_f16_to_f32_array(x, y, n);
  } else {
    for (int64_t base = 0; base < n; base += HL_ELEM_BLOCK)
      convert_real_block(st, dt, x, y, base, n - base < HL_ELEM_BLOCK ? n - base : HL_ELEM_BLOCK);
  }
}

hl_status_t hl_kernel_convert(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                              hl_literal_t *const *operands, hl_literal_t **out) {
  *out = NULL;
  hl_literal_t *x = operands[0];
  hl_dtype_t st = x->shape.dtype, dt = inst->shape.dtype;
  if (!hl_shape_is_array(&x->shape) || !hl_shape_same_dims(&x->shape, &inst->shape))
    return HL_INVALID("%s: operand %s does not have the dimensions of the result %s",
                      hl_instruction_location(inst), HL_SHAPE_STR(&x->shape),
                      HL_SHAPE_STR(&inst->shape));
  if (!convertible(st) || !convertible(dt))
    return HL_UNIMPL("%s: convert from %s to %s is not supported", hl_instruction_location(inst),
                     hl_dtype_name(st), hl_dtype_name(dt));
  if (st == dt) {
    *out = hl_literal_retain(x);
    return NULL;
  }
  hl_literal_t *y;
  HL_RETURN_IF_ERROR(hl_literal_create_uninitialized(&inst->shape, &y));
  int64_t n = hl_literal_element_count(y);
  if (hl_convert_supported(st, dt)) {
    hl_convert_array(st, dt, x->data, y->data, n);
  } else {
    for (int64_t base = 0; base < n; base += HL_ELEM_BLOCK)
      convert_block(x, y, base, n - base < HL_ELEM_BLOCK ? n - base : HL_ELEM_BLOCK);
  }
  *out = y;
  return NULL;
}

// A sub-byte element (pred, s1..s4, u1..u4, f4e2m1fn, f6*) is stored one per
// byte.
static bool is_sub_byte(hl_dtype_t t) {
  return hl_dtype_bit_width(t) < 8 * (int)hl_dtype_size(t);
}

// The low `bits` bits of a sub-byte element as stored (pred: 0 or 1).
static uint8_t sub_byte_bits(hl_dtype_t t, uint8_t stored, int bits) {
  if (t == HL_PRED) return stored != 0;
  return (uint8_t)(stored & ((1u << bits) - 1));
}

// `bits` bits stored as a sub-byte element (signed types sign-extended in
// their byte, as element_access.h reads them).
static uint8_t sub_byte_store(hl_dtype_t t, uint8_t v, int bits) {
  if (hl_dtype_is_signed_int(t)) return (uint8_t)(int8_t)hl_elem_sext(v, bits);
  return v;
}

// bitcast-convert across a width change where a side is sub-byte: element k
// of the narrow side's minor dimension holds bits [k * nb, (k + 1) * nb) of
// the wide element (StableHLO's bitcast_convert; least significant first,
// as its interpreter and this little-endian runtime order bytes).
static void bitcast_sub_byte(const hl_literal_t *x, hl_literal_t *y, int sb, int rb) {
  bool narrowing = rb < sb;
  const hl_literal_t *wide = narrowing ? x : y, *narrow = narrowing ? y : x;
  hl_dtype_t wt = wide->shape.dtype, nt = narrow->shape.dtype;
  int wb = narrowing ? sb : rb, nb = narrowing ? rb : sb, ratio = wb / nb;
  size_t wsize = hl_dtype_size(wt);
  int64_t n = hl_literal_element_count(wide);
  uint8_t *wp = wide->data, *np = narrow->data;
  uint8_t word[16];  // one wide element's bits (at most c128)
  for (int64_t i = 0; i < n; i++) {
    uint8_t *we = wp + i * (int64_t)wsize;
    uint8_t *ne = np + i * (int64_t)ratio * (int64_t)hl_dtype_size(nt);
    if (narrowing) {
      if (is_sub_byte(wt)) word[0] = sub_byte_bits(wt, we[0], wb);
      else memcpy(word, we, wsize);
      for (int k = 0; k < ratio; k++) {
        uint8_t v = 0;
        for (int j = 0; j < nb; j++) {
          int bit = k * nb + j;
          v |= (uint8_t)(((word[bit / 8] >> (bit % 8)) & 1u) << j);
        }
        ne[k] = sub_byte_store(nt, v, nb);
      }
    } else {
      memset(word, 0, sizeof word);
      for (int k = 0; k < ratio; k++) {
        uint8_t v = sub_byte_bits(nt, ne[k], nb);
        for (int j = 0; j < nb; j++) {
          int bit = k * nb + j;
          word[bit / 8] |= (uint8_t)(((v >> j) & 1u) << (bit % 8));
        }
      }
      if (is_sub_byte(wt)) we[0] = sub_byte_store(wt, word[0], wb);
      else memcpy(we, word, wsize);
    }
  }
}

hl_status_t hl_kernel_bitcast_convert(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                      hl_literal_t *const *operands, hl_literal_t **out) {
  *out = NULL;
  hl_literal_t *x = operands[0];
  const hl_shape_t *s = &x->shape, *r = &inst->shape;
  if (!hl_shape_is_array(s) || !hl_shape_is_array(r))
    return HL_INVALID("%s: bitcast-convert needs array shapes, got %s -> %s",
                      hl_instruction_location(inst), HL_SHAPE_STR(s),
                      HL_SHAPE_STR(r));
  int sb = hl_dtype_bit_width(s->dtype), rb = hl_dtype_bit_width(r->dtype);
  bool fits;
  if (sb == rb) {
    fits = hl_shape_same_dims(s, r);
  } else if (rb < sb) {  // result gains a minor dimension of sb / rb
    fits = r->rank == s->rank + 1 && (int64_t)rb * r->dims[s->rank] == sb;
    for (int i = 0; fits && i < s->rank; i++) fits = s->dims[i] == r->dims[i];
  } else {  // operand's minor dimension of rb / sb is folded away
    fits = s->rank == r->rank + 1 && (int64_t)sb * s->dims[r->rank] == rb;
    for (int i = 0; fits && i < r->rank; i++) fits = s->dims[i] == r->dims[i];
  }
  bool sub_byte = sb != rb && (is_sub_byte(s->dtype) || is_sub_byte(r->dtype));
  if (!fits || (!sub_byte && hl_shape_byte_size(s) != hl_shape_byte_size(r)) ||
      (int64_t)x->byte_size != hl_shape_byte_size(s))
    return HL_INVALID("%s: cannot bitcast %s to %s", hl_instruction_location(inst),
                      HL_SHAPE_STR(s), HL_SHAPE_STR(r));
  hl_literal_t *y;
  HL_RETURN_IF_ERROR(hl_literal_create_uninitialized(r, &y));
  if (sub_byte)
    bitcast_sub_byte(x, y, sb, rb);
  else if (x->byte_size)
    memcpy(y->data, x->data, x->byte_size);
  *out = y;
  return NULL;
}
