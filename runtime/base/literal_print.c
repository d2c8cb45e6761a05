// Literal printing in XLA's text form (xla/literal.cc PrintHelper and
// xla/util.cc RoundTripFpToString), so constants we print read back with the
// same bits in our parser and in XLA's.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/literal.h"
#include "runtime/base/minifloat.h"

//===----------------------------------------------------------------------===//
// Floating point elements
//===----------------------------------------------------------------------===//

// Narrow float formats that have no C type: values come from the shared
// decoders (hl_f16_to_f32 / hl_bf16_to_f32 in dtype.h, minifloat.h); only
// how XLA prints them lives here.
typedef struct narrow_print {
  int max_digits10;  // std::numeric_limits<T>::max_digits10 of the ml_dtypes type
  int payload_bits;  // mantissa bits of a NaN payload XLA prints; 0: never printed
} narrow_print_t;

static bool narrow_print_of(hl_dtype_t t, narrow_print_t *out) {
  int digits;
  switch (t) {
    case HL_F16: *out = (narrow_print_t){5, 10}; return true;
    case HL_BF16: *out = (narrow_print_t){4, 7}; return true;
    case HL_F8E5M2: case HL_F8E5M2FNUZ: case HL_F4E2M1FN: case HL_F8E8M0FNU:
    case HL_F6E3M2FN: digits = 2; break;
    case HL_F8E4M3: case HL_F8E3M4: case HL_F8E4M3FN: case HL_F8E4M3B11FNUZ:
    case HL_F8E4M3FNUZ: case HL_F6E2M3FN: digits = 3; break;
    default: return false;
  }
  // Only the IEEE-like formats have NaN payloads (fn/fnuz have one NaN).
  *out = (narrow_print_t){digits, hl_minifloat_ieee_mantissa_bits(t)};
  return true;
}

// The element's value as XLA prints it: through float, whose NaN takes the
// format's sign bit. minifloat.h gives the fnuz NaN (0x80) no sign, but
// ml_dtypes' conversion reads bit 7, so XLA prints it as "-nan".
static double narrow_value(hl_dtype_t t, uint32_t bits) {
  if (t == HL_F16) return hl_f16_to_f32((uint16_t)bits);
  if (t == HL_BF16) return hl_bf16_to_f32((uint16_t)bits);
  double v = hl_minifloat_to_f64(t, (uint8_t)bits);
  bool sign = t != HL_F8E8M0FNU && ((bits >> (hl_dtype_bit_width(t) - 1)) & 1u);
  return isnan(v) ? (sign ? -NAN : NAN) : v;
}

// XLA's RoundTripNanPayload: a NaN whose payload is not the plain quiet bit
// gets "(0x<payload>)" so it can be rebuilt exactly.
static void append_nan_payload(uint64_t payload, int mantissa_bits, hl_strbuf_t *out) {
  if (mantissa_bits <= 0) return;
  uint64_t quiet = 1ull << (mantissa_bits - 1);
  if (payload != quiet) hl_strbuf_appendf(out, "(0x%llx)", (unsigned long long)payload);
}

static void append_f32(float v, hl_strbuf_t *out) {
  char buf[64];
  snprintf(buf, sizeof(buf), "%.6g", (double)v);
  // The short form is kept only if it reads back as the same float.
  if (!isnan(v) && strtof(buf, NULL) != v) snprintf(buf, sizeof(buf), "%.9g", (double)v);
  hl_strbuf_append(out, buf);
  if (isnan(v)) {
    uint32_t bits;
    memcpy(&bits, &v, sizeof(bits));
    append_nan_payload(bits & 0x7fffffu, 23, out);
  }
}

static void append_f64(double v, hl_strbuf_t *out) {
  char buf[64];
  snprintf(buf, sizeof(buf), "%.15g", v);
  if (!isnan(v) && strtod(buf, NULL) != v) snprintf(buf, sizeof(buf), "%.17g", v);
  hl_strbuf_append(out, buf);
  if (isnan(v)) {
    uint64_t bits;
    memcpy(&bits, &v, sizeof(bits));
    append_nan_payload(bits & 0xfffffffffffffull, 52, out);
  }
}

static void append_narrow(hl_dtype_t t, const narrow_print_t *f, uint32_t bits,
                          hl_strbuf_t *out) {
  double v = narrow_value(t, bits);
  hl_strbuf_appendf(out, "%.*g", f->max_digits10, v);
  if (isnan(v) && f->payload_bits > 0)
    append_nan_payload(bits & ((1u << f->payload_bits) - 1), f->payload_bits, out);
}

//===----------------------------------------------------------------------===//
// Elements
//===----------------------------------------------------------------------===//

#define LOAD(T, i) (((const T *)lit->data)[i])

void hl_literal_print_element(const hl_literal_t *lit, int64_t i, hl_strbuf_t *out) {
  hl_dtype_t t = lit->shape.dtype;
  narrow_print_t np;
  if (!lit->data || i < 0 || i >= hl_shape_element_count(&lit->shape)) {
    hl_strbuf_append(out, "?");
    return;
  }
  switch (t) {
    case HL_PRED: hl_strbuf_append(out, LOAD(uint8_t, i) ? "true" : "false"); return;
    case HL_S8: case HL_S4: case HL_S2: case HL_S1:
      hl_strbuf_appendf(out, "%d", (int)LOAD(int8_t, i));
      return;
    case HL_S16: hl_strbuf_appendf(out, "%d", (int)LOAD(int16_t, i)); return;
    case HL_S32: hl_strbuf_appendf(out, "%ld", (long)LOAD(int32_t, i)); return;
    case HL_S64: hl_strbuf_appendf(out, "%lld", (long long)LOAD(int64_t, i)); return;
    case HL_U8: case HL_U4: case HL_U2: case HL_U1:
      hl_strbuf_appendf(out, "%u", (unsigned)LOAD(uint8_t, i));
      return;
    case HL_U16: hl_strbuf_appendf(out, "%u", (unsigned)LOAD(uint16_t, i)); return;
    case HL_U32: hl_strbuf_appendf(out, "%lu", (unsigned long)LOAD(uint32_t, i)); return;
    case HL_U64: hl_strbuf_appendf(out, "%llu", (unsigned long long)LOAD(uint64_t, i)); return;
    case HL_F32: append_f32(LOAD(float, i), out); return;
    case HL_F64: append_f64(LOAD(double, i), out); return;
    case HL_C64:
      hl_strbuf_append_char(out, '(');
      append_f32(LOAD(float, 2 * i), out);
      hl_strbuf_append(out, ", ");
      append_f32(LOAD(float, 2 * i + 1), out);
      hl_strbuf_append_char(out, ')');
      return;
    case HL_C128:
      hl_strbuf_append_char(out, '(');
      append_f64(LOAD(double, 2 * i), out);
      hl_strbuf_append(out, ", ");
      append_f64(LOAD(double, 2 * i + 1), out);
      hl_strbuf_append_char(out, ')');
      return;
    default:
      break;
  }
  if (narrow_print_of(t, &np)) {
    uint32_t bits = hl_dtype_size(t) == 2 ? LOAD(uint16_t, i) : LOAD(uint8_t, i);
    append_narrow(t, &np, bits, out);
    return;
  }
  hl_strbuf_append(out, "?");
}

#undef LOAD

//===----------------------------------------------------------------------===//
// Arrays and tuples (PrintHelper / DenseArrayPrintHelper)
//===----------------------------------------------------------------------===//

typedef struct print_ctx {
  const hl_literal_t *lit;
  int rank;
  const int64_t *dims;
  bool oneline;
  int64_t next;  // row-major index of the next element printed
  hl_strbuf_t *out;
} print_ctx_t;

static void append_open_brace(print_ctx_t *c, int depth, int64_t last_index) {
  const char *linebreak = c->oneline ? " " : "\n";
  int remaining = c->rank - depth;
  if (c->rank == 1) {
    hl_strbuf_append_char(c->out, '{');
  } else if (remaining == 1) {
    hl_strbuf_append(c->out, c->oneline ? "{" : "  {");
    if (c->dims[depth] > 1) hl_strbuf_append_char(c->out, ' ');
  } else if (c->rank > 3 && depth > 0) {
    // XLA labels each sub-block of a rank>3 array with its index.
    hl_strbuf_appendf(c->out, "{ /*i%d=%lld*/", depth - 1, (long long)last_index);
    if (c->dims[depth] > 0) hl_strbuf_append(c->out, linebreak);
  } else {
    hl_strbuf_append_char(c->out, '{');
    hl_strbuf_append(c->out, linebreak);
  }
}

static void append_close_brace(print_ctx_t *c, int depth) {
  int remaining = c->rank - depth;
  if (c->rank == 1) {
    hl_strbuf_append_char(c->out, '}');
  } else if (remaining == 1) {
    if (c->dims[depth] > 1) hl_strbuf_append_char(c->out, ' ');
    hl_strbuf_append_char(c->out, '}');
  } else {
    hl_strbuf_append(c->out, c->oneline ? " " : "\n");
    hl_strbuf_append_char(c->out, '}');
  }
}

static void print_dims(print_ctx_t *c, int depth, int64_t last_index) {
  if (depth == c->rank) {
    // Pred arrays print as 1/0 (denser), scalars as true/false, as XLA does.
    if (c->lit->shape.dtype == HL_PRED && c->rank > 0)
      hl_strbuf_append_char(c->out, ((const uint8_t *)c->lit->data)[c->next] ? '1' : '0');
    else
      hl_literal_print_element(c->lit, c->next, c->out);
    c->next++;
    return;
  }
  append_open_brace(c, depth, last_index);
  for (int64_t i = 0; i < c->dims[depth]; i++) {
    print_dims(c, depth + 1, i);
    if (i < c->dims[depth] - 1) {
      hl_strbuf_append_char(c->out, ',');
      hl_strbuf_append(c->out, (c->rank - depth > 1) ? (c->oneline ? " " : "\n") : " ");
    }
  }
  append_close_brace(c, depth);
}

// XLA prints a zero-size array with one "{}" per block of its leading non-zero
// dimensions ("{ {}, {} }" for f32[2,0]); its parser, and ours, also read the
// single "{}". Past this many blocks (f32[1000000000000,0] would be terabytes
// of braces) that single "{}" is printed instead.
#define HL_MAX_EMPTY_BLOCKS_PRINTED 65536

static bool empty_blocks_too_many(const hl_shape_t *s) {
  if (hl_shape_element_count(s) != 0) return false;
  int64_t blocks = 1;
  for (int i = 0; i < s->rank && s->dims[i] != 0; i++) {
    if (s->dims[i] > HL_MAX_EMPTY_BLOCKS_PRINTED / blocks) return true;
    blocks *= s->dims[i];
  }
  return false;
}

static void print_literal(const hl_literal_t *lit, bool print_shape, bool oneline,
                          hl_strbuf_t *out) {
  if (!lit) {
    hl_strbuf_append(out, "?");
    return;
  }
  if (lit->shape.dtype == HL_TUPLE) {
    hl_strbuf_append(out, oneline ? "( " : "(\n");
    for (int i = 0; i < lit->shape.tuple_count; i++) {
      if (i > 0) hl_strbuf_append(out, oneline ? ", " : ",\n");
      print_literal(lit->elements ? lit->elements[i] : NULL, print_shape, oneline, out);
    }
    hl_strbuf_append(out, oneline ? " )" : "\n)");
    return;
  }
  if (lit->shape.dtype == HL_TOKEN) {
    hl_strbuf_append(out, "token");
    return;
  }
  if (print_shape) {
    hl_shape_print(&lit->shape, false, out);
    hl_strbuf_append_char(out, ' ');
  }
  if (!hl_dtype_is_array(lit->shape.dtype)) {
    hl_strbuf_append(out, "?");
    return;
  }
  if (empty_blocks_too_many(&lit->shape)) {
    hl_strbuf_append(out, "{}");
    return;
  }
  print_ctx_t c = {lit, lit->shape.rank, lit->shape.dims, oneline, 0, out};
  print_dims(&c, 0, 0);
}

void hl_literal_print(const hl_literal_t *lit, hl_strbuf_t *out) {
  print_literal(lit, true, false, out);
}

// The form XLA's HloConstantInstruction prints: ToStringWithoutShapeOneline.
void hl_literal_print_value(const hl_literal_t *lit, hl_strbuf_t *out) {
  print_literal(lit, false, true, out);
}
