#include "runtime/base/npy.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "runtime/base/alloc.h"
#include "runtime/base/strbuf.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "npy.c assumes a little-endian host (literals are stored in host order)"
#endif

static const uint8_t kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
// numpy pads the header so the data starts at a multiple of 64 bytes.
enum { kAlign = 64, kMaxHeader = 1 << 24 };

//===----------------------------------------------------------------------===//
// Element types
//===----------------------------------------------------------------------===//

// ml_dtypes' names, accepted as a descr for files written by tools that keep
// the type name (np.save itself writes a void descr for these).
static const struct {
  const char *name;
  hl_dtype_t dtype;
} kMlDtypesNames[] = {
    {"bfloat16", HL_BF16},
    {"float8_e4m3fn", HL_F8E4M3FN},
    {"float8_e5m2", HL_F8E5M2},
    {"float8_e4m3b11fnuz", HL_F8E4M3B11FNUZ},
    {"float8_e5m2fnuz", HL_F8E5M2FNUZ},
    {"float8_e4m3fnuz", HL_F8E4M3FNUZ},
    {"float8_e4m3", HL_F8E4M3},
    {"float8_e3m4", HL_F8E3M4},
    {"float8_e8m0fnu", HL_F8E8M0FNU},
    {"float4_e2m1fn", HL_F4E2M1FN},
    {"float6_e2m3fn", HL_F6E2M3FN},
    {"float6_e3m2fn", HL_F6E3M2FN},
    {"int4", HL_S4},
    {"uint4", HL_U4},
    {"int2", HL_S2},
    {"uint2", HL_U2},
};

bool hl_npy_dtype_is_native(hl_dtype_t dtype) {
  switch (dtype) {
    case HL_PRED: case HL_S8: case HL_S16: case HL_S32: case HL_S64:
    case HL_U8: case HL_U16: case HL_U32: case HL_U64:
    case HL_F16: case HL_F32: case HL_F64: case HL_C64: case HL_C128:
      return true;
    default:
      return false;
  }
}

const char *hl_npy_descr(hl_dtype_t dtype) {
  switch (dtype) {
    case HL_PRED: return "|b1";
    case HL_S8: return "|i1";
    case HL_S16: return "<i2";
    case HL_S32: return "<i4";
    case HL_S64: return "<i8";
    case HL_U8: return "|u1";
    case HL_U16: return "<u2";
    case HL_U32: return "<u4";
    case HL_U64: return "<u8";
    case HL_F16: return "<f2";
    case HL_F32: return "<f4";
    case HL_F64: return "<f8";
    case HL_C64: return "<c8";
    case HL_C128: return "<c16";
    default: break;
  }
  if (!hl_dtype_is_array(dtype)) return NULL;
  // What np.save writes for an ml_dtypes array: the type is lost, only the
  // item size remains.
  return hl_dtype_size(dtype) == 2 ? "<V2" : "<V1";
}

static hl_dtype_t dtype_of_kind(char kind, size_t size) {
  switch (kind) {
    case 'b': return size == 1 ? HL_PRED : HL_INVALID;
    case 'i':
      switch (size) {
        case 1: return HL_S8;
        case 2: return HL_S16;
        case 4: return HL_S32;
        case 8: return HL_S64;
      }
      return HL_INVALID;
    case 'u':
      switch (size) {
        case 1: return HL_U8;
        case 2: return HL_U16;
        case 4: return HL_U32;
        case 8: return HL_U64;
      }
      return HL_INVALID;
    case 'f':
      switch (size) {
        case 2: return HL_F16;
        case 4: return HL_F32;
        case 8: return HL_F64;
      }
      return HL_INVALID;
    case 'c':
      switch (size) {
        case 8: return HL_C64;
        case 16: return HL_C128;
      }
      return HL_INVALID;
    default:
      return HL_INVALID;
  }
}

// A descr that says only how big an element is: np.save of an ml_dtypes
// array ('<V2'), and float8_e5m2, which ml_dtypes gives the kind 'f' ('<f1').
static bool header_is_untyped(const hl_npy_header_t *h) {
  return h->dtype == HL_INVALID && (h->kind == 'V' || (h->kind == 'f' && h->item_size == 1));
}

static hl_status_t decode_descr(hl_npy_header_t *h) {
  for (size_t i = 0; i < sizeof(kMlDtypesNames) / sizeof(kMlDtypesNames[0]); i++) {
    if (strcmp(h->descr, kMlDtypesNames[i].name) == 0) {
      h->dtype = kMlDtypesNames[i].dtype;
      h->byte_order = '|';
      h->kind = 'V';
      h->item_size = hl_dtype_size(h->dtype);
      return NULL;
    }
  }
  const char *p = h->descr;
  h->byte_order = '=';
  if (*p && strchr("<>|=", *p)) h->byte_order = *p++;
  if (!*p) return HL_INVALID("bad descr '%s'", h->descr);
  h->kind = *p++;
  size_t size = 0;
  if (!(*p >= '0' && *p <= '9')) {
    return HL_UNIMPL("element type '%s' is not supported (only bool, ints, floats, complex)",
                     h->descr);
  }
  while (*p >= '0' && *p <= '9') {
    size = size * 10 + (size_t)(*p++ - '0');
    if (size > (1u << 20)) return HL_INVALID("bad descr '%s'", h->descr);
  }
  if (*p) {
    return HL_UNIMPL("element type '%s' is not supported (only bool, ints, floats, complex)",
                     h->descr);
  }
  h->item_size = size;
  h->dtype = dtype_of_kind(h->kind, size);
  return NULL;
}

const char *hl_npy_header_describe(const hl_npy_header_t *h) {
  static _Thread_local char buf[256];
  char type[96];
  size_t bits = h->item_size * 8;
  switch (h->dtype != HL_INVALID && !hl_npy_dtype_is_native(h->dtype) ? 0 : h->kind) {
    case 'b': snprintf(type, sizeof(type), "bool"); break;
    case 'i': snprintf(type, sizeof(type), "int%zu", bits); break;
    case 'u': snprintf(type, sizeof(type), "uint%zu", bits); break;
    case 'f': snprintf(type, sizeof(type), "float%zu", bits); break;
    case 'c': snprintf(type, sizeof(type), "complex%zu", bits); break;
    case 'V': snprintf(type, sizeof(type), "void%zu", bits); break;
    default: snprintf(type, sizeof(type), "'%s'", h->descr); break;
  }
  int n = snprintf(buf, sizeof(buf), "%s (", type);
  for (int i = 0; i < h->rank && n < (int)sizeof(buf); i++)
    n += snprintf(buf + n, sizeof(buf) - (size_t)n, i ? ", %lld" : "%lld",
                  (long long)h->dims[i]);
  if (n < (int)sizeof(buf))
    snprintf(buf + n, sizeof(buf) - (size_t)n, h->rank == 1 ? ",)" : ")");
  return buf;
}

//===----------------------------------------------------------------------===//
// Header dict: a Python literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
//===----------------------------------------------------------------------===//

typedef struct dict_parser {
  const char *p, *end;
} dict_parser_t;

static void skip_space(dict_parser_t *d) {
  while (d->p < d->end && (*d->p == ' ' || *d->p == '\t' || *d->p == '\n' || *d->p == '\r'))
    d->p++;
}

static bool accept(dict_parser_t *d, char c) {
  skip_space(d);
  if (d->p < d->end && *d->p == c) {
    d->p++;
    return true;
  }
  return false;
}

static hl_status_t expect_char(dict_parser_t *d, char c) {
  if (accept(d, c)) return NULL;
  return HL_INVALID("bad header: expected '%c'", c);
}

static hl_status_t parse_string(dict_parser_t *d, char *out, size_t cap) {
  skip_space(d);
  if (d->p >= d->end || (*d->p != '\'' && *d->p != '"'))
    return HL_INVALID("bad header: expected a string");
  char quote = *d->p++;
  size_t n = 0;
  while (d->p < d->end && *d->p != quote) {
    if (*d->p == '\\') return HL_INVALID("bad header: escapes in strings are not supported");
    if (n + 1 >= cap) return HL_INVALID("bad header: string too long");
    out[n++] = *d->p++;
  }
  if (d->p >= d->end) return HL_INVALID("bad header: unterminated string");
  d->p++;
  out[n] = '\0';
  return NULL;
}

static bool accept_word(dict_parser_t *d, const char *word) {
  skip_space(d);
  size_t n = strlen(word);
  if ((size_t)(d->end - d->p) >= n && memcmp(d->p, word, n) == 0) {
    d->p += n;
    return true;
  }
  return false;
}

static hl_status_t parse_shape_tuple(dict_parser_t *d, hl_npy_header_t *h) {
  if (!accept(d, '(')) return HL_INVALID("bad header: 'shape' is not a tuple");
  h->rank = 0;
  while (!accept(d, ')')) {
    skip_space(d);
    if (d->p >= d->end || !(*d->p >= '0' && *d->p <= '9'))
      return HL_INVALID("bad header: 'shape' holds something other than non-negative integers");
    int64_t v = 0;
    while (d->p < d->end && *d->p >= '0' && *d->p <= '9') {
      if (v > (INT64_MAX - 9) / 10) return HL_INVALID("bad header: dimension too large");
      v = v * 10 + (*d->p++ - '0');
    }
    if (d->p < d->end && (*d->p == 'L' || *d->p == 'l')) d->p++;  // Python 2 longs
    if (h->rank == HL_MAX_RANK)
      return HL_UNIMPL("arrays of more than %d dimensions are not supported", HL_MAX_RANK);
    h->dims[h->rank++] = v;
    if (!accept(d, ',')) {
      HL_RETURN_IF_ERROR(expect_char(d, ')'));
      break;
    }
  }
  return NULL;
}

static hl_status_t parse_dict(const char *text, size_t length, hl_npy_header_t *h) {
  dict_parser_t d = {text, text + length};
  bool have_descr = false, have_order = false, have_shape = false;
  if (!accept(&d, '{')) return HL_INVALID("bad header: not a dict");
  while (!accept(&d, '}')) {
    char key[32];
    HL_RETURN_IF_ERROR(parse_string(&d, key, sizeof(key)));
    HL_RETURN_IF_ERROR(expect_char(&d, ':'));
    if (strcmp(key, "descr") == 0) {
      skip_space(&d);
      if (d.p < d.end && *d.p == '[')
        return HL_UNIMPL("structured arrays (a list descr) are not supported");
      HL_RETURN_IF_ERROR(parse_string(&d, h->descr, sizeof(h->descr)));
      have_descr = true;
    } else if (strcmp(key, "fortran_order") == 0) {
      if (accept_word(&d, "True"))
        h->fortran_order = true;
      else if (accept_word(&d, "False"))
        h->fortran_order = false;
      else
        return HL_INVALID("bad header: 'fortran_order' is not True or False");
      have_order = true;
    } else if (strcmp(key, "shape") == 0) {
      HL_RETURN_IF_ERROR(parse_shape_tuple(&d, h));
      have_shape = true;
    } else {
      return HL_INVALID("bad header: unexpected key '%s'", key);
    }
    if (!accept(&d, ',')) {
      HL_RETURN_IF_ERROR(expect_char(&d, '}'));
      break;
    }
  }
  if (!have_descr || !have_order || !have_shape)
    return HL_INVALID("bad header: it lacks '%s'",
                      !have_descr ? "descr" : !have_order ? "fortran_order" : "shape");
  return decode_descr(h);
}

static uint32_t read_le(const uint8_t *p, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

// How many bytes the magic, version, length field and header take, from the
// first 12 bytes of a file (0 with an error when they are not a .npy prefix).
static hl_status_t prefix_size(const uint8_t *data, size_t size, size_t *out) {
  if (size < 10 || memcmp(data, kMagic, sizeof(kMagic)) != 0)
    return HL_INVALID("not a .npy file (no \\x93NUMPY magic)");
  int major = data[6], minor = data[7];
  if (major == 1) {
    *out = 10 + read_le(data + 8, 2);
  } else if (major == 2 || major == 3) {
    if (size < 12) return HL_INVALID("truncated .npy header");
    *out = 12 + (size_t)read_le(data + 8, 4);
  } else {
    return HL_UNIMPL(".npy format version %d.%d is not supported (1.0, 2.0, 3.0 are)", major,
                     minor);
  }
  return NULL;
}

hl_status_t hl_npy_parse_header(const uint8_t *data, size_t size, hl_npy_header_t *out) {
  memset(out, 0, sizeof(*out));
  size_t total = 0;
  HL_RETURN_IF_ERROR(prefix_size(data, size, &total));
  size_t start = data[6] == 1 ? 10 : 12;
  if (total > size) return HL_INVALID("truncated .npy header");
  out->major = data[6];
  out->minor = data[7];
  out->data_offset = total;
  return parse_dict((const char *)data + start, total - start, out);
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

typedef struct source {
  FILE *file;
  const uint8_t *mem;
  size_t size, pos;
} source_t;

static size_t source_read(source_t *s, void *buf, size_t n) {
  if (s->file) return fread(buf, 1, n, s->file);
  size_t left = s->size - s->pos;
  if (n > left) n = left;
  memcpy(buf, s->mem + s->pos, n);
  s->pos += n;
  return n;
}

// Bytes left to read, or SIZE_MAX when a stream (a pipe) cannot tell.
static size_t source_remaining(source_t *s) {
  if (!s->file) return s->size - s->pos;
  struct stat st;
  long pos = ftell(s->file);
  if (pos < 0 || fstat(fileno(s->file), &st) != 0 || !S_ISREG(st.st_mode)) return SIZE_MAX;
  return st.st_size > pos ? (size_t)(st.st_size - pos) : 0;
}

static void swap_bytes(uint8_t *data, int64_t count, size_t width) {
  for (int64_t i = 0; i < count; i++) {
    uint8_t *e = data + (size_t)i * width;
    for (size_t a = 0, b = width - 1; a < b; a++, b--) {
      uint8_t t = e[a];
      e[a] = e[b];
      e[b] = t;
    }
  }
}

// Column-major `src` -> row-major `dst`.
static void fortran_to_c(const uint8_t *src, uint8_t *dst, int rank, const int64_t *dims,
                         size_t item, int64_t count) {
  int64_t index[HL_MAX_RANK] = {0};
  int64_t col_stride[HL_MAX_RANK];
  int64_t s = 1;
  for (int k = 0; k < rank; k++) {
    col_stride[k] = s;
    s *= dims[k];
  }
  for (int64_t r = 0; r < count; r++) {
    int64_t off = 0;
    for (int k = 0; k < rank; k++) off += index[k] * col_stride[k];
    memcpy(dst + (size_t)r * item, src + (size_t)off * item, item);
    for (int k = rank - 1; k >= 0; k--) {
      if (++index[k] < dims[k]) break;
      index[k] = 0;
    }
  }
}

static hl_status_t type_mismatch(const hl_npy_header_t *h, const hl_shape_t *expected,
                                 const char *expected_for) {
  return HL_INVALID("expected %s%s%s, file has %s", hl_shape_debug_string(expected),
                    expected_for ? " for " : "", expected_for ? expected_for : "",
                    hl_npy_header_describe(h));
}

static hl_status_t read_npy(source_t *src, const hl_shape_t *expected, const char *expected_for,
                            hl_literal_t **out) {
  uint8_t prefix[12];
  size_t got = source_read(src, prefix, sizeof(prefix));
  if (got == 0) return HL_INVALID("empty file, not a .npy file");
  size_t total = 0;
  HL_RETURN_IF_ERROR(prefix_size(prefix, got, &total));
  if (total > kMaxHeader) return HL_INVALID("bad .npy header length %zu", total);
  if (total < got) return HL_INVALID("bad .npy header length %zu", total);
  uint8_t *head = hl_malloc(total);
  if (!head) return HL_OOM();
  memcpy(head, prefix, got);
  size_t rest = source_read(src, head + got, total - got);
  hl_npy_header_t h;
  hl_status_t st = rest == total - got ? hl_npy_parse_header(head, total, &h)
                                       : HL_INVALID("truncated .npy header");
  hl_free(head);
  HL_RETURN_IF_ERROR(st);

  hl_dtype_t dtype = h.dtype;
  if (expected) {
    if (!hl_shape_is_array(expected))
      return HL_INVALID("expected %s%s%s, which a .npy file cannot hold",
                        hl_shape_debug_string(expected), expected_for ? " for " : "",
                        expected_for ? expected_for : "");
    bool type_ok = dtype == expected->dtype ||
                   (header_is_untyped(&h) && !hl_npy_dtype_is_native(expected->dtype) &&
                    h.item_size == hl_dtype_size(expected->dtype));
    bool dims_ok = h.rank == expected->rank;
    for (int i = 0; dims_ok && i < h.rank; i++) dims_ok = h.dims[i] == expected->dims[i];
    if (!type_ok || !dims_ok) return type_mismatch(&h, expected, expected_for);
    dtype = expected->dtype;
  } else if (dtype == HL_INVALID) {
    if (header_is_untyped(&h))
      return HL_INVALID("element type %s ('%s') does not say what it holds (np.save of an "
                        "ml_dtypes array such as bfloat16?); it can be read only where the "
                        "expected type is known",
                        hl_npy_header_describe(&h), h.descr);
    return HL_UNIMPL("element type '%s' is not supported (only bool, ints, floats, complex)",
                     h.descr);
  }
  if (h.item_size != hl_dtype_size(dtype))
    return HL_INVALID("item size %zu of '%s' does not match %s", h.item_size, h.descr,
                      hl_dtype_name(dtype));

  int64_t count = 1;
  for (int i = 0; i < h.rank; i++) {
    if (h.dims[i] != 0 && count > INT64_MAX / 16 / h.dims[i])
      return HL_INVALID("array %s is too large", hl_npy_header_describe(&h));
    count *= h.dims[i];
  }
  size_t bytes = (size_t)count * h.item_size;
  // Checked before allocating, so a short file that declares a huge shape is
  // "truncated data", not an attempt to allocate that shape.
  size_t available = source_remaining(src);
  if (available < bytes)
    return HL_INVALID("truncated data: %s needs %zu bytes after the header, the file has %zu",
                      hl_npy_header_describe(&h), bytes, available);
  hl_shape_t shape = hl_shape_array(dtype, h.rank, h.dims);
  hl_literal_t *lit;
  HL_RETURN_IF_ERROR(hl_literal_create_uninitialized(&shape, &lit));
  bool transpose = h.fortran_order && h.rank > 1 && count > 0;
  uint8_t *buf = transpose ? hl_malloc(bytes) : lit->data;
  if (!buf) {
    hl_literal_release(lit);
    return HL_OOM();
  }
  size_t n = bytes ? source_read(src, buf, bytes) : 0;
  if (n != bytes) {
    if (transpose) hl_free(buf);
    hl_literal_release(lit);
    return HL_INVALID("truncated data: %s needs %zu bytes after the header, the file has %zu",
                      hl_npy_header_describe(&h), bytes, n);
  }
  if (h.byte_order == '>' && h.kind != 'V') {
    size_t width = h.kind == 'c' ? h.item_size / 2 : h.item_size;
    if (width > 1) swap_bytes(buf, count * (int64_t)(h.item_size / width), width);
  }
  if (transpose) {
    fortran_to_c(buf, lit->data, h.rank, h.dims, h.item_size, count);
    hl_free(buf);
  }
  if (dtype == HL_PRED) {
    uint8_t *p = lit->data;
    for (int64_t i = 0; i < count; i++) p[i] = p[i] != 0;
  }
  *out = lit;
  return NULL;
}

hl_status_t hl_npy_read_bytes(const uint8_t *data, size_t size, const char *name,
                              const hl_shape_t *expected, const char *expected_for,
                              hl_literal_t **out_literal) {
  *out_literal = NULL;
  source_t src = {.mem = data, .size = size};
  HL_RETURN_IF_ERROR_CTX(read_npy(&src, expected, expected_for, out_literal), "%s", name);
  return NULL;
}

hl_status_t hl_npy_read_file(const char *path, const hl_shape_t *expected,
                             const char *expected_for, hl_literal_t **out_literal) {
  *out_literal = NULL;
  FILE *f = fopen(path, "rb");
  if (!f) return HL_ERROR(HL_IO_ERROR, "%s: cannot open: %s", path, strerror(errno));
  source_t src = {.file = f};
  hl_status_t st = read_npy(&src, expected, expected_for, out_literal);
  if (!st && ferror(f)) st = HL_ERROR(HL_IO_ERROR, "read error");
  fclose(f);
  if (st) {
    hl_literal_release(*out_literal);
    *out_literal = NULL;
    return hl_status_annotate(st, "%s", path);
  }
  return NULL;
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

// The magic, version, length and padded dict for `lit` (hl_free the result).
static hl_status_t make_header(const hl_literal_t *lit, uint8_t **out, size_t *out_size) {
  const char *descr = hl_npy_descr(lit->shape.dtype);
  if (!descr || !hl_shape_is_array(&lit->shape))
    return HL_INVALID("a %s value cannot be written as .npy (only arrays can)",
                      hl_shape_debug_string(&lit->shape));
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  hl_strbuf_appendf(&sb, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  for (int i = 0; i < lit->shape.rank; i++)
    hl_strbuf_appendf(&sb, i ? ", %lld" : "%lld", (long long)lit->shape.dims[i]);
  hl_strbuf_append(&sb, lit->shape.rank == 1 ? ",), }" : "), }");
  if (sb.failed) {
    hl_strbuf_deinit(&sb);
    return HL_OOM();
  }
  size_t dict_len = sb.length;
  size_t prefix = 10;
  size_t padded = dict_len + 1;  // + '\n'
  padded += (kAlign - (prefix + padded) % kAlign) % kAlign;
  if (padded > 0xffff) {  // version 2.0: 32-bit length
    prefix = 12;
    padded = dict_len + 1;
    padded += (kAlign - (prefix + padded) % kAlign) % kAlign;
  }
  uint8_t *buf = hl_malloc(prefix + padded);
  if (!buf) {
    hl_strbuf_deinit(&sb);
    return HL_OOM();
  }
  memcpy(buf, kMagic, sizeof(kMagic));
  buf[6] = prefix == 10 ? 1 : 2;
  buf[7] = 0;
  for (size_t i = 0; i < prefix - 8; i++) buf[8 + i] = (uint8_t)(padded >> (8 * i));
  memcpy(buf + prefix, hl_strbuf_cstr(&sb), dict_len);
  memset(buf + prefix + dict_len, ' ', padded - dict_len - 1);
  buf[prefix + padded - 1] = '\n';
  hl_strbuf_deinit(&sb);
  *out = buf;
  *out_size = prefix + padded;
  return NULL;
}

// Copies element bytes for the file: pred as 0/1 whatever the byte held.
static void copy_data(const hl_literal_t *lit, size_t offset, size_t n, uint8_t *dst) {
  memcpy(dst, (const uint8_t *)lit->data + offset, n);
  if (lit->shape.dtype == HL_PRED)
    for (size_t i = 0; i < n; i++) dst[i] = dst[i] != 0;
}

hl_status_t hl_npy_write_bytes(const hl_literal_t *lit, uint8_t **out_data, size_t *out_size) {
  *out_data = NULL;
  *out_size = 0;
  uint8_t *head;
  size_t head_size;
  HL_RETURN_IF_ERROR(make_header(lit, &head, &head_size));
  uint8_t *buf = hl_realloc(head, head_size + lit->byte_size);
  if (!buf) {
    hl_free(head);
    return HL_OOM();
  }
  if (lit->byte_size) copy_data(lit, 0, lit->byte_size, buf + head_size);
  *out_data = buf;
  *out_size = head_size + lit->byte_size;
  return NULL;
}

hl_status_t hl_npy_write_file(const char *path, const hl_literal_t *lit) {
  uint8_t *head;
  size_t head_size;
  HL_RETURN_IF_ERROR_CTX(make_header(lit, &head, &head_size), "%s", path);
  FILE *f = fopen(path, "wb");
  if (!f) {
    hl_free(head);
    return HL_ERROR(HL_IO_ERROR, "%s: cannot create: %s", path, strerror(errno));
  }
  int err = fwrite(head, 1, head_size, f) == head_size ? 0 : (errno ? errno : EIO);
  hl_free(head);
  // Chunks, so a large result is not copied whole.
  uint8_t chunk[1 << 16];
  for (size_t off = 0; !err && off < lit->byte_size; off += sizeof(chunk)) {
    size_t n = lit->byte_size - off < sizeof(chunk) ? lit->byte_size - off : sizeof(chunk);
    copy_data(lit, off, n, chunk);
    if (fwrite(chunk, 1, n, f) != n) err = errno ? errno : EIO;
  }
  if (fclose(f) != 0 && !err) err = errno ? errno : EIO;
  if (err) return HL_ERROR(HL_IO_ERROR, "%s: write failed: %s", path, strerror(err));
  return NULL;
}
