// dense<...> decoding (see mlir_dense.h).
#include "runtime/stablehlo/mlir_dense.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/base/minifloat.h"
#include "runtime/stablehlo/mlir_lexer.h"

typedef struct cursor {
  const char *s;
  size_t i, n;
  const hl_mlir_file_t *file;
  const hl_mlir_attr_t *attr;
} cursor_t;

static hl_status_t dense_error(const cursor_t *c, const char *what) {
  // Line/column of the position inside the body.
  int line = c->attr->line, col = c->attr->column;
  const char *base = c->attr->raw;
  for (size_t k = 0; base && k < c->i && k < c->n; k++) {
    if (base[k] == '\n') {
      line++;
      col = 1;
    } else {
      col++;
    }
  }
  return hl_mlir_error_pos(c->file ? c->file->path : "<mlir>", line, col, "dense literal: %s",
                           what);
}

static void skip_ws(cursor_t *c) {
  while (c->i < c->n && (c->s[c->i] == ' ' || c->s[c->i] == '\n' || c->s[c->i] == '\t' ||
                         c->s[c->i] == '\r'))
    c->i++;
}

static int hex_value(char ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
  return -1;
}

// Integer bits stored with the literal's wrap rules (sub-byte kept sign-extended).
static void store_int(hl_literal_t *lit, int64_t i, uint64_t v) {
  hl_dtype_t t = lit->shape.dtype;
  uint8_t *d = lit->data;
  int bits = hl_dtype_bit_width(t);
  if (t == HL_PRED) {
    d[i] = v != 0;
    return;
  }
  if (bits < 8) {
    uint64_t u = v & ((UINT64_C(1) << bits) - 1);
    if (hl_dtype_is_signed_int(t)) {
      uint64_t m = UINT64_C(1) << (bits - 1);
      d[i] = (uint8_t)(int8_t)(int64_t)((u ^ m) - m);
    } else {
      d[i] = (uint8_t)u;
    }
    return;
  }
  size_t size = hl_dtype_size(t);
  memcpy(d + (size_t)i * size, &v, size);  // little-endian truncation
}

// Raw float bits of the element's width.
static void store_float_bits(hl_literal_t *lit, int64_t i, uint64_t v, int part) {
  hl_dtype_t t = lit->shape.dtype;
  size_t size = hl_dtype_is_complex(t) ? hl_dtype_size(t) / 2 : hl_dtype_size(t);
  memcpy((uint8_t *)lit->data + ((size_t)i * (hl_dtype_is_complex(t) ? 2 : 1) + (size_t)part) * size,
         &v, size);
}

static void store_float(hl_literal_t *lit, int64_t i, double v, int part) {
  hl_dtype_t t = lit->shape.dtype;
  if (t == HL_C64) {
    ((float *)lit->data)[2 * i + part] = (float)v;
  } else if (t == HL_C128) {
    ((double *)lit->data)[2 * i + part] = v;
  } else {
    hl_literal_set_f64(lit, i, v);
  }
}

// One scalar token: number, hex, true/false, inf/nan. Sets *is_hex for 0x forms.
static hl_status_t scalar_token(cursor_t *c, const char **tok, size_t *len) {
  skip_ws(c);
  size_t start = c->i;
  while (c->i < c->n && !strchr(" \n\t\r,[]()", c->s[c->i])) c->i++;
  if (c->i == start) return dense_error(c, "expected an element");
  *tok = c->s + start;
  *len = c->i - start;
  return NULL;
}

static hl_status_t store_scalar(cursor_t *c, hl_literal_t *lit, int64_t i, int part) {
  const char *t = NULL;
  size_t n = 0;
  HL_RETURN_IF_ERROR(scalar_token(c, &t, &n));
  char buf[80];
  if (n >= sizeof(buf)) return dense_error(c, "element too long");
  memcpy(buf, t, n);
  buf[n] = 0;
  hl_dtype_t dt = lit->shape.dtype;
  if (strcmp(buf, "true") == 0 || strcmp(buf, "false") == 0) {
    if (dt != HL_PRED) return dense_error(c, "true/false for a non-i1 element type");
    store_int(lit, i, buf[0] == 't');
    return NULL;
  }
  bool neg = buf[0] == '-';
  const char *digits = neg || buf[0] == '+' ? buf + 1 : buf;
  bool hex = digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X');
  bool is_float_kind = hl_dtype_is_float(dt) || hl_dtype_is_complex(dt);
  errno = 0;
  if (hex) {
    char *end;
    uint64_t v = strtoull(digits, &end, 16);
    if (*end || errno) return dense_error(c, "bad hex element");
    if (is_float_kind) {
      if (neg) return dense_error(c, "negative hex float bit pattern");
      store_float_bits(lit, i, v, part);
    } else {
      store_int(lit, i, neg ? 0 - v : v);
    }
    return NULL;
  }
  if (is_float_kind) {
    double v;
    if (strcmp(digits, "inf") == 0) v = INFINITY;
    else if (strcmp(digits, "nan") == 0) v = NAN;
    else {
      char *end;
      v = strtod(digits, &end);
      if (*end) return dense_error(c, "bad float element");
    }
    store_float(lit, i, neg ? -v : v, part);
    return NULL;
  }
  char *end;
  if (strchr(digits, '.') || strchr(digits, 'e') || strchr(digits, 'E'))
    return dense_error(c, "a float value for an integer element type");
  uint64_t v = strtoull(digits, &end, 10);
  if (*end || errno) return dense_error(c, "bad integer element");
  store_int(lit, i, neg ? 0 - v : v);
  return NULL;
}

static hl_status_t store_element(cursor_t *c, hl_literal_t *lit, int64_t i) {
  skip_ws(c);
  if (c->i < c->n && c->s[c->i] == '(') {  // complex (re, im)
    if (!hl_dtype_is_complex(lit->shape.dtype))
      return dense_error(c, "a complex pair for a non-complex element type");
    c->i++;
    HL_RETURN_IF_ERROR(store_scalar(c, lit, i, 0));
    skip_ws(c);
    if (c->i >= c->n || c->s[c->i] != ',') return dense_error(c, "expected ',' in complex pair");
    c->i++;
    HL_RETURN_IF_ERROR(store_scalar(c, lit, i, 1));
    skip_ws(c);
    if (c->i >= c->n || c->s[c->i] != ')') return dense_error(c, "expected ')' in complex pair");
    c->i++;
    return NULL;
  }
  return store_scalar(c, lit, i, 0);
}

// Nested lists in row-major order; *count is the number of leaves seen.
static hl_status_t parse_list(cursor_t *c, hl_literal_t *lit, int64_t total, int64_t *count,
                              int depth) {
  skip_ws(c);
  if (c->i < c->n && c->s[c->i] == '[') {
    if (depth >= lit->shape.rank && !(lit->shape.rank == 0 && depth == 0))
      return dense_error(c, "more nesting than the tensor's rank");
    c->i++;
    skip_ws(c);
    int64_t items = 0;
    if (c->i < c->n && c->s[c->i] == ']') {
      c->i++;
    } else {
      for (;;) {
        HL_RETURN_IF_ERROR(parse_list(c, lit, total, count, depth + 1));
        items++;
        skip_ws(c);
        if (c->i < c->n && c->s[c->i] == ',') {
          c->i++;
          continue;
        }
        if (c->i < c->n && c->s[c->i] == ']') {
          c->i++;
          break;
        }
        return dense_error(c, "expected ',' or ']'");
      }
    }
    if (depth < lit->shape.rank && items != lit->shape.dims[depth])
      return dense_error(c, "list length does not match the tensor shape");
    return NULL;
  }
  if (*count >= total) return dense_error(c, "more elements than the tensor shape holds");
  if (*count < hl_literal_element_count(lit)) {
    HL_RETURN_IF_ERROR(store_element(c, lit, *count));
  } else {  // an empty tensor's splat value: parsed (and checked) into a scratch element
    hl_shape_t one = hl_shape_scalar(lit->shape.dtype);
    hl_literal_t *scratch;
    HL_RETURN_IF_ERROR(hl_literal_create(&one, &scratch));
    hl_status_t st = store_element(c, scratch, 0);
    hl_literal_release(scratch);
    HL_RETURN_IF_ERROR(st);
  }
  (*count)++;
  return NULL;
}

// i1 hex data, decoded into d[0, bytes): MLIR writes one byte (0 / 1) per
// element, and one byte for a splat; MLIR before 2026 (llvm-project
// c6964b1b) kept i1 packed, eight elements to a byte from the lowest bit,
// a splat as 0x00 / 0xFF. One byte for 2..8 elements other than 0x00 /
// 0xFF could be either (a splat of true, or packed bits): an error.
static hl_status_t pred_bytes(cursor_t *c, uint8_t *d, size_t bytes, int64_t count) {
  if (bytes == (size_t)count && count > 1) {  // a byte per element
    for (int64_t i = 0; i < count; i++)
      if (d[i] > 1) return dense_error(c, "i1 hex data: a byte per element must be 0 or 1");
    return NULL;
  }
  if (bytes == 1) {  // a splat, or (old MLIR) up to 8 packed elements
    uint8_t v = d[0];
    if (v != 0 && v != 0xFF && (v != 1 || (count >= 2 && count <= 8)))
      return dense_error(c, count >= 2 && count <= 8
                                ? "one i1 hex byte for 2 to 8 elements other than 0x00 / 0xFF is "
                                  "ambiguous (a splat, or bits packed as MLIR wrote before 2026)"
                                : "i1 hex splat byte must be 0x00, 0x01 or 0xFF");
    memset(d, v != 0, (size_t)count);
    return NULL;
  }
  for (int64_t i = count - 1; i >= 0; i--) d[i] = (d[i / 8] >> (i % 8)) & 1;  // packed
  return NULL;
}

static hl_status_t decode_hex(cursor_t *c, const char *hex, size_t len, hl_literal_t *lit,
                              size_t skip_bytes) {
  if (len < 2 || hex[0] != '0' || (hex[1] != 'x' && hex[1] != 'X'))
    return dense_error(c, "hex data must start with 0x");
  hex += 2;
  len -= 2;
  if (len % 2) return dense_error(c, "odd number of hex digits");
  size_t bytes = len / 2;
  if (bytes < skip_bytes) return dense_error(c, "resource blob shorter than its header");
  bytes -= skip_bytes;
  hex += 2 * skip_bytes;
  size_t want = lit->byte_size;
  size_t elem = hl_dtype_size(lit->shape.dtype);
  int64_t count = hl_literal_element_count(lit);
  bool pred = lit->shape.dtype == HL_PRED && skip_bytes == 0;
  size_t packed = (size_t)(count + 7) / 8;
  if (bytes != want && !(bytes == elem && count > 0) && !(pred && bytes == packed))
    return dense_error(c, "hex data size does not match the tensor shape");
  // A table lookup per digit; a bad digit sets bit 8 of `bad`.
  int16_t table[256];
  for (int i = 0; i < 256; i++) table[i] = hex_value((char)i) < 0 ? 0x100 : (int16_t)hex_value((char)i);
  uint8_t *d = lit->data;
  const unsigned char *h = (const unsigned char *)hex;
  int bad = 0;
  for (size_t k = 0; k < bytes; k++) {
    int hi = table[h[2 * k]], lo = table[h[2 * k + 1]];
    bad |= hi | lo;
    d[k] = (uint8_t)(hi << 4 | lo);
  }
  if (bad & 0x100) return dense_error(c, "bad hex digit");
  if (pred) return pred_bytes(c, d, bytes, count);
  if (bytes != want) {  // splat
    for (int64_t i = 1; i < count; i++) memcpy(d + (size_t)i * elem, d, elem);
  }
  return NULL;
}

hl_status_t hl_mlir_dense_literal(const hl_mlir_file_t *file, const hl_mlir_attr_t *a,
                                  const hl_shape_t *shape, hl_literal_t **out) {
  *out = NULL;
  cursor_t c = {a->raw, 0, a->raw_len, file, a};
  if (!hl_shape_is_array(shape)) return dense_error(&c, "needs a tensor type");
  hl_literal_t *lit;
  HL_RETURN_IF_ERROR(hl_literal_create(shape, &lit));
  hl_status_t st = NULL;
  if (a->kind == HL_MATTR_RESOURCE) {
    const hl_mlir_resource_t *r = NULL;
    for (int i = 0; file && i < file->resource_count; i++)
      if (strcmp(file->resources[i].name, a->s) == 0) r = &file->resources[i];
    if (!r) {
      st = dense_error(&c, "dense_resource names a blob not in the file's dialect_resources");
    } else {
      // Blobs start with a 4-byte alignment word.
      st = decode_hex(&c, r->hex, r->hex_len, lit, 4);
    }
  } else if (a->blob) {
    size_t elem = hl_dtype_size(shape->dtype);
    int64_t count = hl_literal_element_count(lit);
    if (a->blob_len == lit->byte_size) {
      memcpy(lit->data, a->blob, a->blob_len);
    } else if (a->blob_len == elem && count > 0) {  // splat
      for (int64_t i = 0; i < count; i++) memcpy((uint8_t *)lit->data + (size_t)i * elem, a->blob, elem);
    } else {
      st = dense_error(&c, "element data size does not match the tensor shape");
    }
  } else {
    skip_ws(&c);
    if (c.i < c.n && c.s[c.i] == '"') {
      const char *q = memchr(c.s + c.i + 1, '"', c.n - c.i - 1);
      if (!q) st = dense_error(&c, "unterminated hex string");
      else st = decode_hex(&c, c.s + c.i + 1, (size_t)(q - (c.s + c.i + 1)), lit, 0);
    } else if (c.i == c.n) {
      if (hl_literal_element_count(lit) != 0) st = dense_error(&c, "empty dense for a non-empty tensor");
    } else {
      int64_t total = hl_literal_element_count(lit), count = 0;
      bool bracketed = c.s[c.i] == '[';
      st = parse_list(&c, lit, total > 0 ? total : 1, &count, 0);
      if (!st) {
        skip_ws(&c);
        if (c.i != c.n) st = dense_error(&c, "trailing text");
      }
      if (!st && count == 1 && total != 1 && !bracketed) {
        size_t es = hl_dtype_size(shape->dtype);  // splat
        for (int64_t i = 1; i < total; i++)
          memcpy((uint8_t *)lit->data + (size_t)i * es, lit->data, es);
      } else if (!st && count != total) {
        st = dense_error(&c, "fewer elements than the tensor shape holds");
      }
    }
  }
  if (st) {
    hl_literal_release(lit);
    return st;
  }
  *out = lit;
  return NULL;
}
