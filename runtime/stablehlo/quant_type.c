// `!quant.uniform<...>` element types (StableHLO spec, "Quantized element
// types"): scanned from the raw text after the `!quant.uniform` token, since
// MLIR's spelling (`i8<-127:127>:f32:1, {0.1:-30,0.5:-20}`) does not lex
// like the rest of the file.
#include "runtime/stablehlo/quant_type.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/alloc.h"

static void skip_ws(const char *s, size_t n, size_t *i) {
  while (*i < n && isspace((unsigned char)s[*i])) (*i)++;
}

static bool take(const char *s, size_t n, size_t *i, char c) {
  skip_ws(s, n, i);
  if (*i < n && s[*i] == c) {
    (*i)++;
    return true;
  }
  return false;
}

static bool scan_int(const char *s, size_t n, size_t *i, int64_t *out) {
  skip_ws(s, n, i);
  char buf[32];
  size_t k = 0;
  while (*i + k < n && k + 1 < sizeof(buf) && (isdigit((unsigned char)s[*i + k]) ||
                                              (k == 0 && (s[*i] == '-' || s[*i] == '+'))))
    buf[k] = s[*i + k], k++;
  buf[k] = 0;
  if (k == 0 || (k == 1 && !isdigit((unsigned char)buf[0]))) return false;
  errno = 0;
  long long v = strtoll(buf, NULL, 10);
  if (errno) return false;
  *out = v;
  *i += k;
  return true;
}

static bool scan_double(const char *s, size_t n, size_t *i, double *out) {
  skip_ws(s, n, i);
  char buf[64];
  size_t k = 0;
  while (*i + k < n && k + 1 < sizeof(buf) &&
         (isalnum((unsigned char)s[*i + k]) || strchr("+-.", s[*i + k]))) {
    // A ':' ends the scale; 'e' / 'E' exponents keep their sign.
    buf[k] = s[*i + k];
    k++;
  }
  buf[k] = 0;
  if (k == 0) return false;
  char *end;
  *out = strtod(buf, &end);
  if (end == buf) return false;
  *i += (size_t)(end - buf);
  return true;
}

// An identifier: letters and digits (i8, u8, f32, bf16).
static size_t scan_word(const char *s, size_t n, size_t *i, const char **w) {
  skip_ws(s, n, i);
  *w = s + *i;
  size_t k = 0;
  while (*i + k < n && isalnum((unsigned char)s[*i + k])) k++;
  *i += k;
  return k;
}

static hl_dtype_t storage_dtype(const char *w, size_t k) {
  static const struct {
    const char *name;
    hl_dtype_t t;
  } kTypes[] = {{"i2", HL_S2},   {"i4", HL_S4},   {"i8", HL_S8},   {"i16", HL_S16},
                {"i32", HL_S32}, {"u2", HL_U2},   {"u4", HL_U4},   {"u8", HL_U8},
                {"u16", HL_U16}, {"u32", HL_U32}, {"ui2", HL_U2},  {"ui4", HL_U4},
                {"ui8", HL_U8},  {"ui16", HL_U16}, {"ui32", HL_U32}};
  for (size_t j = 0; j < sizeof(kTypes) / sizeof(kTypes[0]); j++)
    if (strlen(kTypes[j].name) == k && memcmp(kTypes[j].name, w, k) == 0) return kTypes[j].t;
  return HL_INVALID;
}

static hl_dtype_t expressed_dtype(const char *w, size_t k) {
  if (k == 3 && memcmp(w, "f16", 3) == 0) return HL_F16;
  if (k == 4 && memcmp(w, "bf16", 4) == 0) return HL_BF16;
  if (k == 3 && memcmp(w, "f32", 3) == 0) return HL_F32;
  if (k == 3 && memcmp(w, "f64", 3) == 0) return HL_F64;
  return HL_INVALID;
}

static int storage_bits(hl_dtype_t t) {
  switch (t) {
    case HL_S2: case HL_U2: return 2;
    case HL_S4: case HL_U4: return 4;
    case HL_S8: case HL_U8: return 8;
    case HL_S16: case HL_U16: return 16;
    default: return 32;
  }
}

static bool push_param(hl_mlir_quant_type_t *q, double scale, int64_t zp) {
  double *ns = hl_realloc(q->scales, (size_t)(q->count + 1) * sizeof(double));
  if (ns) q->scales = ns;
  int64_t *nz = hl_realloc(q->zero_points, (size_t)(q->count + 1) * sizeof(int64_t));
  if (nz) q->zero_points = nz;
  if (!ns || !nz) return false;
  q->scales[q->count] = scale;
  q->zero_points[q->count] = zp;
  q->count++;
  return true;
}

static const char *scan_param(const char *s, size_t n, size_t *i, hl_mlir_quant_type_t *q) {
  double scale;
  int64_t zp = 0;
  if (!scan_double(s, n, i, &scale)) return "expected a quantization scale";
  if (take(s, n, i, ':') && !scan_int(s, n, i, &zp)) return "expected a zero point after ':'";
  if (!(scale > 0) || scale > 3.4028234663852886e38)
    return "quantization scale must be positive and finite";
  if (zp < q->storage_min || zp > q->storage_max)
    return "zero point outside [storage_min, storage_max]";
  return push_param(q, scale, zp) ? NULL : "out of memory";
}

const char *hl_mlir_scan_quant_uniform(const char *s, size_t n, size_t *pos,
                                       hl_mlir_quant_type_t *q) {
  memset(q, 0, sizeof(*q));
  q->axis = -1;
  size_t i = *pos;
  const char *msg = NULL;
  const char *w;
  size_t k;
  if (!take(s, n, &i, '<')) {
    msg = "expected '<' after !quant.uniform";
    goto done;
  }
  k = scan_word(s, n, &i, &w);
  q->storage = storage_dtype(w, k);
  if (q->storage == HL_INVALID) {
    msg = "quantization storage type must be i2..i32 or u2..u32 (64-bit storage is not "
          "supported)";
    goto done;
  }
  int bits = storage_bits(q->storage);
  if (hl_dtype_is_signed_int(q->storage)) {
    q->storage_min = -((int64_t)1 << (bits - 1));
    q->storage_max = ((int64_t)1 << (bits - 1)) - 1;
  } else {
    q->storage_min = 0;
    q->storage_max = ((int64_t)1 << bits) - 1;
  }
  if (take(s, n, &i, '<')) {  // i8<-127:127>
    int64_t lo, hi;
    if (!scan_int(s, n, &i, &lo) || !take(s, n, &i, ':') || !scan_int(s, n, &i, &hi) ||
        !take(s, n, &i, '>')) {
      msg = "expected <storage_min:storage_max>";
      goto done;
    }
    if (lo < q->storage_min || hi > q->storage_max || lo > hi) {
      msg = "storage_min / storage_max outside the storage type's range";
      goto done;
    }
    q->storage_min = lo;
    q->storage_max = hi;
  }
  if (!take(s, n, &i, ':')) {
    msg = "expected ':' and the expressed type";
    goto done;
  }
  k = scan_word(s, n, &i, &w);
  q->expressed = expressed_dtype(w, k);
  if (q->expressed == HL_INVALID) {
    msg = "quantization expressed type must be f16, bf16, f32 or f64";
    goto done;
  }
  if (take(s, n, &i, ':')) {
    int64_t axis;
    if (!scan_int(s, n, &i, &axis) || axis < 0 || axis >= HL_MAX_RANK) {
      msg = "expected a quantization dimension in [0, 16)";
      goto done;
    }
    q->axis = (int)axis;
  }
  if (!take(s, n, &i, ',')) {
    msg = "expected ',' and the quantization parameters";
    goto done;
  }
  if (take(s, n, &i, '{')) {
    do {
      if ((msg = scan_param(s, n, &i, q))) goto done;
    } while (take(s, n, &i, ','));
    if (!take(s, n, &i, '}')) {
      msg = "expected '}' after the quantization parameters";
      goto done;
    }
  } else if ((msg = scan_param(s, n, &i, q))) {
    goto done;
  }
  if (q->axis < 0 && q->count != 1) {
    msg = "a per-tensor quantized type has exactly one scale:zero_point";
    goto done;
  }
  if (!take(s, n, &i, '>')) msg = "expected '>' to end !quant.uniform";
done:
  skip_ws(s, n, &i);
  *pos = i;
  if (msg) {
    hl_free(q->scales);
    hl_free(q->zero_points);
    q->scales = NULL;
    q->zero_points = NULL;
    q->count = 0;
  }
  return msg;
}
