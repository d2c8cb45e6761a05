// Literal values in HLO text (HLO_FORMAT_FACTS.md §3.6): nested braces in
// logical row-major order, one level per dimension, checked against the
// shape; scalars bare; tuples "(a, b)"; complex "(re, im)".
//
// Out-of-range values are errors as in XLA's parser: an integer outside its
// type, and a finite float that rounds to infinity in its type (so
// f16 65520 and bf16 1e100 are rejected; inf/nan themselves are fine).
#include <float.h>
#include <math.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/base/minifloat.h"
#include "runtime/text/hlo_parser.h"
#include "runtime/text/hlo_parser_internal.h"

//===----------------------------------------------------------------------===//
// One element
//===----------------------------------------------------------------------===//

// Reads a real number token; `is_special` tells inf/nan spelled in the text
// apart from a decimal that overflowed while being read.
static hl_status_t read_real(hl_lexer_t *lx, double *out, bool *out_overflowed) {
  hl_token_t *t = &lx->tok;
  *out_overflowed = false;
  if (t->kind == HL_TOK_INT) {
    *out = (double)t->int_magnitude;
    // "-0" is a negative zero for float types (int_negative is false for it).
    if (t->int_negative || (t->length > 0 && t->text[0] == '-')) *out = -*out;
    return NULL;
  }
  if (t->kind == HL_TOK_DECIMAL) {
    *out = t->decimal;
    bool spelled = memchr(t->text, 'i', t->length) || memchr(t->text, 'n', t->length);
    if (isinf(t->decimal) && !spelled) *out_overflowed = true;
    return NULL;
  }
  return hl_lexer_error(lx, NULL, "expected a number");
}

static hl_status_t out_of_range(hl_lexer_t *lx, hl_dtype_t t) {
  return hl_lexer_error(lx, NULL, "value is out of range for literal's primitive type %s",
                        hl_dtype_name(t));
}

static uint64_t float_nan_bits(hl_lexer_t *lx, int man_bits, uint64_t sign_exp) {
  uint64_t payload = lx->tok.has_nan_payload ? lx->tok.nan_payload : 0;
  if (payload == 0) payload = (uint64_t)1 << (man_bits - 1);
  return sign_exp | payload;
}

static hl_status_t store_float(hl_lexer_t *lx, hl_dtype_t t, void *dst) {
  double d = 0;
  bool overflowed = false;
  HL_RETURN_IF_ERROR(read_real(lx, &d, &overflowed));
  if (overflowed) return out_of_range(lx, t);
  bool neg = signbit(d);
  bool is_mini = hl_minifloat_is(t);
  int mini_man = hl_minifloat_ieee_mantissa_bits(t);
  if (isnan(d) && lx->tok.has_nan_payload) {
    // Only IEEE-style NaNs (all-ones exponent, any non-zero mantissa) carry a payload.
    int man = t == HL_F64 ? 52 : t == HL_F32 ? 23 : t == HL_F16 ? 10 : t == HL_BF16 ? 7
              : mini_man;
    if (man == 0 || lx->tok.nan_payload >> man)
      return hl_lexer_error(lx, NULL, "NaN payload does not fit in %s", hl_dtype_name(t));
  }
  switch (t) {
    case HL_F64: {
      if (isnan(d)) {
        uint64_t b = float_nan_bits(lx, 52, (neg ? 1ull << 63 : 0) | 0x7ff0000000000000ull);
        memcpy(dst, &b, 8);
      } else {
        memcpy(dst, &d, 8);
      }
      return NULL;
    }
    case HL_F32: {
      if (isnan(d)) {
        uint32_t b = (uint32_t)float_nan_bits(lx, 23, (neg ? 0x80000000u : 0) | 0x7f800000u);
        memcpy(dst, &b, 4);
        return NULL;
      }
      float f = (float)d;
      if (isinf(f) && !isinf(d)) return out_of_range(lx, t);
      memcpy(dst, &f, 4);
      return NULL;
    }
    case HL_F16:
    case HL_BF16: {
      uint16_t h;
      if (isnan(d)) {
        int man = t == HL_F16 ? 10 : 7;
        uint16_t exp_all = t == HL_F16 ? 0x7c00 : 0x7f80;
        h = (uint16_t)float_nan_bits(lx, man, (neg ? 0x8000u : 0) | exp_all);
      } else {
        h = t == HL_F16 ? hl_f64_to_f16(d) : hl_f64_to_bf16(d);
        bool is_inf = t == HL_F16 ? (h & 0x7fff) == 0x7c00 : (h & 0x7fff) == 0x7f80;
        if (is_inf && !isinf(d)) return out_of_range(lx, t);
      }
      memcpy(dst, &h, 2);
      return NULL;
    }
    default: {
      if (!is_mini) return hl_lexer_error(lx, NULL, "unsupported float type");
      if (isnan(d) && mini_man) {
        uint8_t sign_exp = (uint8_t)((neg ? 0x80u : 0) | (0x7fu & ~((1u << mini_man) - 1)));
        *(uint8_t *)dst = (uint8_t)float_nan_bits(lx, mini_man, sign_exp);
        return NULL;
      }
      if (!hl_minifloat_from_f64_checked(t, d, (uint8_t *)dst)) return out_of_range(lx, t);
      return NULL;
    }
  }
}

static hl_status_t store_int(hl_lexer_t *lx, hl_dtype_t t, void *dst) {
  hl_token_t *tok = &lx->tok;
  if (tok->kind != HL_TOK_INT) return hl_lexer_error(lx, NULL, "expected an integer");
  uint64_t m = tok->int_magnitude;
  bool neg = tok->int_negative;
  int bits = hl_dtype_bit_width(t);
  if (hl_dtype_is_signed_int(t)) {
    uint64_t max_pos = ((uint64_t)1 << (bits - 1)) - 1;
    if (neg ? m > max_pos + 1 : m > max_pos) return out_of_range(lx, t);
    int64_t v = neg ? (int64_t)(0 - m) : (int64_t)m;
    switch (hl_dtype_size(t)) {
      case 1: *(int8_t *)dst = (int8_t)v; break;
      case 2: { int16_t x = (int16_t)v; memcpy(dst, &x, 2); break; }
      case 4: { int32_t x = (int32_t)v; memcpy(dst, &x, 4); break; }
      default: memcpy(dst, &v, 8); break;
    }
    return NULL;
  }
  // XLA reads u64 constants through int64 as well, so u64[] constant(-1) is
  // accepted (as 2^64-1); narrower unsigned types reject negatives.
  uint64_t v;
  if (neg) {
    if (t != HL_U64 || m > (uint64_t)INT64_MAX + 1) return out_of_range(lx, t);
    v = 0 - m;
  } else {
    if (bits < 64 && m > (((uint64_t)1 << bits) - 1)) return out_of_range(lx, t);
    v = m;
  }
  switch (hl_dtype_size(t)) {
    case 1: *(uint8_t *)dst = (uint8_t)v; break;
    case 2: { uint16_t x = (uint16_t)v; memcpy(dst, &x, 2); break; }
    case 4: { uint32_t x = (uint32_t)v; memcpy(dst, &x, 4); break; }
    default: memcpy(dst, &v, 8); break;
  }
  return NULL;
}

// Each part is stored as a real of the component type, so NaN payloads and
// range checks behave exactly as for f32 / f64 literals.
static hl_status_t store_complex(hl_lexer_t *lx, hl_dtype_t t, void *dst) {
  hl_dtype_t part = t == HL_C64 ? HL_F32 : HL_F64;
  size_t part_size = hl_dtype_size(part);
  memset(dst, 0, 2 * part_size);
  if (lx->tok.kind != HL_TOK_LPAREN) return store_float(lx, part, dst);
  hl_lexer_next(lx);
  HL_RETURN_IF_ERROR(store_float(lx, part, dst));
  hl_lexer_next(lx);
  HL_RETURN_IF_ERROR(hl_expect(lx, HL_TOK_COMMA, "',' between the real and imaginary parts"));
  HL_RETURN_IF_ERROR(store_float(lx, part, (char *)dst + part_size));
  hl_lexer_next(lx);
  if (lx->tok.kind != HL_TOK_RPAREN)
    return hl_lexer_error(lx, NULL, "expected ')' to close the complex value");
  return NULL;
}

// Parses one element at the current token into dst and consumes it.
static hl_status_t parse_element(hl_lexer_t *lx, hl_dtype_t t, void *dst) {
  switch (hl_dtype_kind(t)) {
    case HL_KIND_PRED:
      if (hl_tok_is_word(&lx->tok, "true") || hl_tok_is_word(&lx->tok, "false")) {
        *(uint8_t *)dst = hl_tok_is_word(&lx->tok, "true");
      } else if (lx->tok.kind == HL_TOK_INT && !lx->tok.int_negative &&
                 lx->tok.int_magnitude <= 1) {
        *(uint8_t *)dst = (uint8_t)lx->tok.int_magnitude;
      } else {
        return hl_lexer_error(lx, NULL, "expected true or false");
      }
      break;
    case HL_KIND_SIGNED:
    case HL_KIND_UNSIGNED: HL_RETURN_IF_ERROR(store_int(lx, t, dst)); break;
    case HL_KIND_FLOAT: HL_RETURN_IF_ERROR(store_float(lx, t, dst)); break;
    case HL_KIND_COMPLEX: HL_RETURN_IF_ERROR(store_complex(lx, t, dst)); break;
    default: return hl_lexer_error(lx, NULL, "%s has no literal values", hl_dtype_name(t));
  }
  hl_lexer_next(lx);
  return NULL;
}

//===----------------------------------------------------------------------===//
// Arrays and tuples
//===----------------------------------------------------------------------===//

typedef struct {
  hl_lexer_t *lx;
  const hl_shape_t *shape;
  hl_literal_t *lit;  // NULL in a counting pass: elements go to `scratch`
  size_t elem_size;
  int64_t strides[HL_MAX_RANK];
  uint8_t scratch[16];
} array_ctx_t;

// Declared sizes above this are counted before they are allocated.
#define HL_LITERAL_COUNT_FIRST_BYTES (1 << 20)

// One brace level of dimension `d`, whose first element is at row-major `base`.
static hl_status_t parse_level(array_ctx_t *c, int d, int64_t base) {
  hl_lexer_t *lx = c->lx;
  const hl_shape_t *s = c->shape;
  if (lx->tok.kind != HL_TOK_LBRACE)
    return hl_lexer_error(lx, NULL, "expected '{' for dimension %d of %s (a rank-%d literal "
                          "nests %d levels of braces)", d, hl_shape_debug_string(s), s->rank,
                          s->rank);
  hl_token_t open = lx->tok;
  hl_lexer_next(lx);
  int64_t n = 0;
  while (lx->tok.kind != HL_TOK_RBRACE) {
    if (n >= s->dims[d])
      return hl_lexer_error(lx, NULL, "too many elements in dimension %d: expected %lld", d,
                            (long long)s->dims[d]);
    if (d + 1 < s->rank) {
      HL_RETURN_IF_ERROR(parse_level(c, d + 1, base + n * c->strides[d]));
    } else {
      if (lx->tok.kind == HL_TOK_LBRACE)
        return hl_lexer_error(lx, NULL, "braces nested deeper than the rank %d of %s", s->rank,
                              hl_shape_debug_string(s));
      void *dst = c->lit ? (char *)c->lit->data + (size_t)(base + n) * c->elem_size
                         : (void *)c->scratch;
      HL_RETURN_IF_ERROR(parse_element(lx, s->dtype, dst));
    }
    n++;
    if (lx->tok.kind != HL_TOK_COMMA) break;
    hl_lexer_next(lx);
  }
  if (lx->tok.kind != HL_TOK_RBRACE) return hl_lexer_error(lx, NULL, "expected ',' or '}'");
  // A zero-size array may be written as a single "{}" whatever its rank.
  bool zero_size = hl_shape_element_count(s) == 0;
  if (n != s->dims[d] && !(zero_size && n == 0))
    return hl_lexer_error(lx, &open, "expected %lld element%s in dimension %d of %s but found "
                          "%lld", (long long)s->dims[d], hl_plural(s->dims[d]), d,
                          hl_shape_debug_string(s), (long long)n);
  hl_lexer_next(lx);
  return NULL;
}

static hl_status_t parse_array(hl_lexer_t *lx, const hl_shape_t *shape, hl_literal_t **out) {
  for (int i = 0; i < shape->rank; i++)
    if (shape->dims[i] < 0)
      return hl_lexer_error(lx, NULL, "a literal cannot have unbounded shape %s",
                            hl_shape_debug_string(shape));
  if (!hl_shape_is_array(shape))
    return hl_lexer_error(lx, NULL, "%s has no literal values", hl_shape_debug_string(shape));
  if (lx->tok.kind == HL_TOK_LBRACE && hl_lexer_peek(lx).kind == HL_TOK_DOTS)
    return hl_lexer_error(lx, NULL, "the literal is elided as {...}");
  array_ctx_t c = {.lx = lx, .shape = shape, .elem_size = hl_dtype_size(shape->dtype)};
  hl_shape_strides(shape, c.strides);
  // A large declared shape is allocated only once a counting pass over a copy
  // of the lexer has found all its elements, so "f32[100000000000]
  // constant({1, 2})" is a positioned error, not an attempt at 400 GB.
  if (shape->rank > 0 && hl_shape_byte_size(shape) > HL_LITERAL_COUNT_FIRST_BYTES) {
    hl_lexer_t counting = *lx;
    c.lx = &counting;
    HL_RETURN_IF_ERROR(parse_level(&c, 0, 0));
    c.lx = lx;
  }
  HL_RETURN_IF_ERROR(hl_literal_create(shape, &c.lit));
  hl_status_t st;
  if (shape->rank == 0)
    st = parse_element(lx, shape->dtype, c.lit->data);
  else
    st = parse_level(&c, 0, 0);
  if (st) {
    hl_literal_release(c.lit);
    return st;
  }
  *out = c.lit;
  return NULL;
}

static hl_status_t parse_literal(hl_lexer_t *lx, const hl_shape_t *shape, hl_literal_t **out,
                                 int depth) {
  *out = NULL;
  if (depth > 64) return hl_lexer_error(lx, NULL, "literal nested too deeply");
  // Stand-alone literals put the shape first ("s32[2]{0} {1, 2}"); it must agree.
  if (lx->tok.kind == HL_TOK_TYPE) {
    hl_token_t at = lx->tok;
    hl_shape_t given;
    HL_RETURN_IF_ERROR(hl_parse_shape_tokens(lx, &given));
    bool same = hl_shape_equal(&given, shape);
    hl_shape_deinit(&given);
    if (!same)
      return hl_lexer_error(lx, &at, "literal shape does not match %s",
                            hl_shape_debug_string(shape));
  }
  if (shape->dtype == HL_TOKEN) {
    return hl_literal_create_token(out);
  }
  if (shape->dtype != HL_TUPLE) return parse_array(lx, shape, out);
  HL_RETURN_IF_ERROR(hl_expect(lx, HL_TOK_LPAREN, "'(' to open a tuple literal"));
  int n = shape->tuple_count;
  hl_literal_t **parts = hl_calloc((size_t)(n ? n : 1), sizeof(hl_literal_t *));
  if (!parts) return HL_OOM();
  hl_status_t st = NULL;
  for (int i = 0; i < n && !st; i++) {
    if (i > 0) st = hl_expect(lx, HL_TOK_COMMA, "',' between tuple elements");
    if (!st) st = parse_literal(lx, &shape->tuple[i], &parts[i], depth + 1);
  }
  if (!st) st = hl_expect(lx, HL_TOK_RPAREN, "')' to close the tuple literal");
  if (!st) st = hl_literal_create_tuple(parts, n, out);
  for (int i = 0; i < n; i++) hl_literal_release(parts[i]);
  hl_free(parts);
  if (!st) {
    // Keep the layouts of the instruction shape, not those of the parts.
    hl_shape_t copy;
    st = hl_shape_copy(shape, &copy);
    if (!st) {
      hl_shape_deinit(&(*out)->shape);
      (*out)->shape = copy;
    } else {
      hl_literal_release(*out);
      *out = NULL;
    }
  }
  return st;
}

hl_status_t hl_parse_literal_tokens(hl_lexer_t *lx, const hl_shape_t *shape,
                                    hl_literal_t **out) {
  return parse_literal(lx, shape, out, 0);
}

hl_status_t hl_parse_literal(const char *text, const hl_shape_t *shape, hl_literal_t **out) {
  *out = NULL;
  if (!text || !shape) return HL_INVALID("hl_parse_literal: no text or shape");
  hl_lexer_t lx;
  hl_lexer_init(&lx, text, strlen(text), "<literal>");
  HL_RETURN_IF_ERROR(hl_parse_literal_tokens(&lx, shape, out));
  if (lx.tok.kind != HL_TOK_EOF) {
    hl_literal_release(*out);
    *out = NULL;
    return hl_lexer_error(&lx, NULL, "unexpected text after the literal");
  }
  return NULL;
}
