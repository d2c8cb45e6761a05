// VHLO bytecode -> the StableHLO syntax tree (vhlo.h). Attribute and type
// codes are those of stablehlo/dialect/VhloBytecode.cpp (stable: VHLO never
// renumbers them); op attribute names and their order come from VhloOps.td
// (vhlo_ops.inc). The conversion gives each VHLO attribute the form the
// text parser gives its StableHLO spelling, so the lowering cannot tell
// them apart.
#include "runtime/bytecode/vhlo.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/base/strbuf.h"
#include "runtime/bytecode/sdy_attrs.h"
#include "runtime/stablehlo/mlir_generic.h"
#include "runtime/stablehlo/mlir_parser.h"
#include "runtime/stablehlo/stablehlo.h"

typedef struct vhlo_op_info {
  const char *vhlo;       // "compare_v1"
  const char *stablehlo;  // "stablehlo.compare"
  int major, minor, patch;
  const char *attrs[24];  // NULL-terminated, declaration order
} vhlo_op_info_t;

#define VHLO_OP(v, s, a, b, c, ...) {v, s, a, b, c, __VA_ARGS__},
static const vhlo_op_info_t kOps[] = {
#include "runtime/bytecode/vhlo_ops.inc"
};
#undef VHLO_OP

// Attribute nesting limit (a hostile file cannot exhaust the stack).
enum { kMaxAttrDepth = 64 };

typedef struct vctx {
  const hl_bc_module_t *bc;
  hl_mlir_file_t *file;
  uint32_t vhlo, builtin, sdy;  // dialect indices (UINT32_MAX when absent)
  uint64_t *value_type;    // type index of each value number
  uint32_t *value_alias;   // the value each value number stands for (itself, or a cast's operand)
  int major, minor, patch; // the producer's StableHLO version
  int *last_quant;         // quantization id of the tensor type decoded last (0: none)
} vctx_t;

static hl_status_t verr(const vctx_t *v, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  return HL_INVALID("%s: portable artifact (%s): %s", v->bc->path, v->bc->producer, msg);
}

static hl_status_t version_note(const vctx_t *v, hl_status_t st) {
  // Names both versions when the artifact is newer than this reader.
  if (!st || v->major < HL_VHLO_MAX_MAJOR ||
      (v->major == HL_VHLO_MAX_MAJOR && v->minor <= HL_VHLO_MAX_MINOR))
    return st;
  hl_status_t w = HL_INVALID("%s (the artifact was written by StableHLO %d.%d.%d, newer than "
                             "%d.%d, the newest this reader knows)", hl_status_message(st),
                             v->major, v->minor, v->patch, HL_VHLO_MAX_MAJOR, HL_VHLO_MAX_MINOR);
  hl_status_free(st);
  return w;
}

static const char *bc_string(const vctx_t *v, uint64_t idx) {
  return idx < v->bc->string_count ? v->bc->strings[idx] : NULL;
}

// ---- types ----

static hl_dtype_t element_dtype(uint64_t code, hl_dtype_t complex_of) {
  static const struct { uint64_t code; const char *name; } kElems[] = {
      {0, "i1"},   {2, "bf16"}, {3, "f16"},  {4, "f32"},  {5, "f64"},  {6, "f8E4M3FN"},
      {7, "f8E5M2"}, {9, "index"}, {10, "i4"}, {11, "i8"}, {12, "i16"}, {13, "i32"},
      {14, "i64"}, {15, "ui4"}, {16, "ui8"}, {17, "ui16"}, {18, "ui32"}, {19, "ui64"},
      {27, "f8E4M3FNUZ"}, {28, "f8E5M2FNUZ"}, {29, "f8E4M3B11FNUZ"}, {31, "i2"}, {32, "ui2"},
      {35, "f8E4M3"}, {36, "f8E3M4"}, {37, "f4E2M1FN"}, {38, "f6E2M3FN"}, {39, "f6E3M2FN"},
      {40, "f8E8M0FNU"},
  };
  if (code == 1) return complex_of == HL_F32 ? HL_C64 : complex_of == HL_F64 ? HL_C128 : HL_INVALID;
  for (size_t i = 0; i < sizeof(kElems) / sizeof(kElems[0]); i++)
    if (kElems[i].code == code) return hl_mlir_element_type(kElems[i].name, strlen(kElems[i].name));
  return HL_INVALID;
}

static hl_status_t entry_reader(const vctx_t *v, const hl_bc_entry_t *e, const char *what,
                                uint64_t idx, hl_bc_reader_t *r, uint64_t *code) {
  if (!e->custom) {
    const char *text = (const char *)e->bytes.data;
    size_t n = e->bytes.size;
    return verr(v, "%s %llu is written in the text form '%.*s' of dialect '%s', which this "
                "reader does not parse", what, (unsigned long long)idx,
                (int)(n > 80 ? 80 : (n ? n - 1 : 0)), text, v->bc->dialects[e->dialect]);
  }
  r->p = e->bytes.data;
  r->end = e->bytes.data + e->bytes.size;
  if (!hl_bc_read_varint(r, code)) return verr(v, "%s %llu is empty", what, (unsigned long long)idx);
  return NULL;
}

static hl_status_t decode_element(const vctx_t *v, uint64_t idx, hl_dtype_t *out, int depth);

// A builtin element type (BuiltinDialectBytecode.td): mixed artifacts
// (StableHLO 1.11+) keep attributes of other dialects in builtin form.
static hl_status_t builtin_element(const vctx_t *v, uint64_t code, hl_bc_reader_t *r,
                                   hl_dtype_t *out, int depth) {
  static const char *const kFloats[] = {"bf16", "f16", "f32", "f64"};  // codes 3..6
  char name[32];
  uint64_t ws, el;
  hl_dtype_t inner;
  switch (code) {
    case 0:  // IntegerType { width << 2 | signedness (0 signless, 1 signed, 2 unsigned) }
      if (!hl_bc_read_varint(r, &ws) || (ws >> 2) > 64) return verr(v, "bad builtin integer type");
      snprintf(name, sizeof(name), "%s%llu", (ws & 3) == 2 ? "ui" : (ws & 3) == 1 ? "si" : "i",
               (unsigned long long)(ws >> 2));
      break;
    case 1: snprintf(name, sizeof(name), "index"); break;
    case 3: case 4: case 5: case 6: snprintf(name, sizeof(name), "%s", kFloats[code - 3]); break;
    case 9:  // ComplexType { element }
      if (!hl_bc_read_varint(r, &el)) return verr(v, "truncated complex type");
      HL_RETURN_IF_ERROR(decode_element(v, el, &inner, depth + 1));
      *out = inner == HL_F32 ? HL_C64 : inner == HL_F64 ? HL_C128 : HL_INVALID;
      if (*out == HL_INVALID) return verr(v, "complex of %s is not supported", hl_dtype_name(inner));
      return NULL;
    default:
      return verr(v, "builtin type code %llu is not an element type this reader supports",
                  (unsigned long long)code);
  }
  *out = hl_mlir_element_type(name, strlen(name));
  if (*out == HL_INVALID) return verr(v, "builtin element type %s is not supported", name);
  return NULL;
}

static hl_status_t read_f64(const vctx_t *v, hl_bc_reader_t *r, double *out) {
  int64_t s;
  if (!hl_bc_read_svarint(r, &s)) return verr(v, "truncated float");
  union { uint64_t u; double d; } bits = {(uint64_t)s};
  *out = bits.d;
  return NULL;
}

// UniformQuantized(PerAxis)V1Type -> an entry of the file's quantization table
// (as the text parser fills it for `!quant.uniform<...>`); *out = its storage type.
static hl_status_t quant_element(const vctx_t *v, uint64_t code, hl_bc_reader_t *r,
                                 hl_dtype_t *out, int depth) {
  uint64_t flags, storage, expressed, dim = 0, n = 1;
  hl_mlir_quant_type_t q;
  memset(&q, 0, sizeof(q));
  q.axis = -1;
  hl_dtype_t st_type, ex_type;
  if (!hl_bc_read_varint(r, &flags) || !hl_bc_read_varint(r, &storage) ||
      !hl_bc_read_varint(r, &expressed))
    return verr(v, "truncated quantized type");
  HL_RETURN_IF_ERROR(decode_element(v, storage, &st_type, depth + 1));
  HL_RETURN_IF_ERROR(decode_element(v, expressed, &ex_type, depth + 1));
  int bits = hl_dtype_bit_width(st_type);
  char name[16];
  snprintf(name, sizeof(name), "%s%d", (flags & 1) ? "i" : "ui", bits);
  q.storage = hl_dtype_is_integer(st_type) ? hl_mlir_element_type(name, strlen(name)) : HL_INVALID;
  q.expressed = ex_type;
  if (q.storage == HL_INVALID || !hl_dtype_is_float(ex_type))
    return verr(v, "quantized type with storage %s / expressed %s is not supported",
                hl_dtype_name(st_type), hl_dtype_name(ex_type));
  double scale = 0;
  int64_t zp = 0;
  if (code == 24) {  // { flags, storage, expressed, scale, zero_point, min, max }
    HL_RETURN_IF_ERROR(read_f64(v, r, &scale));
    if (!hl_bc_read_svarint(r, &zp)) return verr(v, "truncated quantized type");
  } else {           // { flags, storage, expressed, dim, min, max, scales[], zero_points[] }
    if (!hl_bc_read_varint(r, &dim) || dim > 64) return verr(v, "bad quantization dimension");
    q.axis = (int)dim;
  }
  if (!hl_bc_read_svarint(r, &q.storage_min) || !hl_bc_read_svarint(r, &q.storage_max))
    return verr(v, "truncated quantized type");
  if (code == 30 && (!hl_bc_read_varint(r, &n) || n == 0 || n > (uint64_t)(r->end - r->p)))
    return verr(v, "bad quantization scales");
  q.scales = hl_calloc(n, sizeof(double));
  q.zero_points = hl_calloc(n, sizeof(int64_t));
  if (!q.scales || !q.zero_points) {
    hl_free(q.scales);
    hl_free(q.zero_points);
    return HL_OOM();
  }
  q.count = (int)n;
  hl_status_t st = NULL;
  if (code == 24) {
    q.scales[0] = scale;
    q.zero_points[0] = zp;
  } else {
    for (uint64_t k = 0; !st && k < n; k++) st = read_f64(v, r, &q.scales[k]);
    uint64_t nz;
    if (!st && (!hl_bc_read_varint(r, &nz) || nz != n)) st = verr(v, "zero points and scales differ in count");
    for (uint64_t k = 0; !st && k < n; k++)
      if (!hl_bc_read_svarint(r, &q.zero_points[k])) st = verr(v, "truncated zero points");
  }
  int64_t lo = hl_dtype_is_signed_int(q.storage) ? -((int64_t)1 << (bits - 1)) : 0;
  int64_t hi = hl_dtype_is_signed_int(q.storage) ? ((int64_t)1 << (bits - 1)) - 1
                                                 : (int64_t)((UINT64_C(1) << bits) - 1);
  if (!st && (q.storage_min < lo || q.storage_max > hi || q.storage_min > q.storage_max))
    st = verr(v, "quantized storage range outside its storage type");
  for (int k = 0; !st && k < q.count; k++)
    if (q.zero_points[k] < q.storage_min || q.zero_points[k] > q.storage_max)
      st = verr(v, "zero point outside [storage_min, storage_max]");
  hl_mlir_file_t *f = v->file;
  hl_mlir_quant_type_t *grown = st ? NULL : hl_realloc(f->quant_types,
                                                       ((size_t)f->quant_type_count + 1) * sizeof(q));
  if (!st && !grown) st = HL_OOM();
  if (st) {
    hl_free(q.scales);
    hl_free(q.zero_points);
    return st;
  }
  f->quant_types = grown;
  f->quant_types[f->quant_type_count++] = q;
  *v->last_quant = f->quant_type_count;
  *out = q.storage;
  return NULL;
}

// The element type a type index names (for IntegerV1 / FloatV1 attributes and tensors).
static hl_status_t decode_element(const vctx_t *v, uint64_t idx, hl_dtype_t *out, int depth) {
  if (idx >= v->bc->type_count || depth > 4) return verr(v, "bad element type %llu", (unsigned long long)idx);
  const hl_bc_entry_t *e = &v->bc->types[idx];
  if (e->dialect != v->vhlo && e->dialect != v->builtin)
    return verr(v, "type %llu is neither a VHLO nor a builtin type", (unsigned long long)idx);
  hl_bc_reader_t r;
  uint64_t code;
  HL_RETURN_IF_ERROR(entry_reader(v, e, "type", idx, &r, &code));
  if (e->dialect == v->builtin) return builtin_element(v, code, &r, out, depth);
  if (code == 24 || code == 30) return quant_element(v, code, &r, out, depth);
  hl_dtype_t inner = HL_INVALID;
  if (code == 1) {  // complex<elem>
    uint64_t el;
    if (!hl_bc_read_varint(&r, &el)) return verr(v, "truncated complex type");
    HL_RETURN_IF_ERROR(decode_element(v, el, &inner, depth + 1));
  }
  *out = element_dtype(code, inner);
  if (*out == HL_INVALID)
    return verr(v, "VHLO type code %llu is not an element type this reader supports",
                (unsigned long long)code);
  return NULL;
}

static hl_status_t decode_type(const vctx_t *v, uint64_t idx, hl_shape_t *out, int depth);

// quant (optional): each type's quantization id, allocated like *out.
static hl_status_t decode_type_list(const vctx_t *v, hl_bc_reader_t *r, hl_shape_t **out,
                                    int *count, int **quant, int depth) {
  *out = NULL;
  *count = 0;
  if (quant) *quant = NULL;
  uint64_t n;
  if (!hl_bc_read_varint(r, &n) || n > (uint64_t)(r->end - r->p)) return verr(v, "bad type list");
  *out = hl_calloc(n + 1, sizeof(hl_shape_t));
  if (!*out || (quant && !(*quant = hl_calloc(n + 1, sizeof(int))))) return HL_OOM();
  *count = 0;
  for (uint64_t k = 0; k < n; k++) {
    uint64_t t;
    if (!hl_bc_read_varint(r, &t)) return verr(v, "truncated type list");
    HL_RETURN_IF_ERROR(decode_type(v, t, &(*out)[k], depth + 1));
    if (quant) (*quant)[k] = *v->last_quant;
    *count = (int)k + 1;
  }
  return NULL;
}

static void free_types(hl_shape_t *t, int n) {
  for (int i = 0; i < n; i++) hl_shape_deinit(&t[i]);
  hl_free(t);
}

// A tensor type's encoding: VHLO's TypeExtensionsV1Attr { bounds: svarint[] }
// (`#stablehlo.type_extensions<bounds = [16, ?]>`, a bounded dynamic shape).
// Its dimensions stay dynamic, holding their bounds, and are refined from the
// arguments, as the text parser reads them; other encodings are refused.
static hl_status_t read_bounds(const vctx_t *v, uint64_t idx, int64_t *bounds, uint64_t *count) {
  if (idx >= v->bc->attr_count) return verr(v, "bad tensor type encoding");
  const hl_bc_entry_t *e = &v->bc->attrs[idx];
  hl_bc_reader_t r;
  uint64_t code;
  if (e->dialect != v->vhlo) return verr(v, "tensor types with a non-VHLO encoding are not supported");
  HL_RETURN_IF_ERROR(entry_reader(v, e, "attribute", idx, &r, &code));
  if (code != 18)
    return verr(v, "tensor types with an encoding other than type_extensions (VHLO attribute code "
                "%llu) are not supported", (unsigned long long)code);
  if (!hl_bc_read_varint(&r, count) || *count > HL_MAX_RANK) return verr(v, "bad bounds");
  for (uint64_t k = 0; k < *count; k++)
    if (!hl_bc_read_svarint(&r, &bounds[k]) || (bounds[k] < 0 && bounds[k] != INT64_MIN))
      return verr(v, "bad bound");
  if (r.p != r.end) return verr(v, "trailing bytes after the bounds");
  return NULL;
}

// A value type: tensor, token or tuple.
static hl_status_t decode_type(const vctx_t *v, uint64_t idx, hl_shape_t *out, int depth) {
  memset(out, 0, sizeof(*out));
  *v->last_quant = 0;
  if (idx >= v->bc->type_count) return verr(v, "type index %llu out of range", (unsigned long long)idx);
  if (depth > kMaxAttrDepth) return verr(v, "types nest too deeply");
  const hl_bc_entry_t *e = &v->bc->types[idx];
  if (e->dialect != v->vhlo && e->dialect != v->builtin)
    return verr(v, "type %llu of dialect '%s' is not a VHLO type", (unsigned long long)idx,
                v->bc->dialects[e->dialect]);
  hl_bc_reader_t r;
  uint64_t code;
  HL_RETURN_IF_ERROR(entry_reader(v, e, "type", idx, &r, &code));
  if (e->dialect == v->builtin) {  // builtin RankedTensorType (13) / TupleType (15)
    if (code == 13) code = 20;
    else if (code == 15) code = 23;
    else return verr(v, "builtin type code %llu is not a value type this reader supports",
                     (unsigned long long)code);
  }
  switch (code) {
    case 20:    // RankedTensorV1Type { shape: svarint[], element: Type }
    case 21: {  // ... with a leading encoding attribute
      uint64_t enc, n, el;
      uint32_t dynamic = 0;
      int64_t bounds[HL_MAX_RANK];
      uint64_t bound_count = 0;
      if (code == 21) {
        if (!hl_bc_read_varint(&r, &enc)) return verr(v, "truncated tensor type");
        HL_RETURN_IF_ERROR(read_bounds(v, enc, bounds, &bound_count));
      }
      if (!hl_bc_read_varint(&r, &n)) return verr(v, "truncated tensor type");
      // (hl_shape_t holds HL_MAX_RANK dimensions.)
      if (n > HL_MAX_RANK)
        return verr(v, "tensor rank %llu is over %d, the most supported", (unsigned long long)n,
                    HL_MAX_RANK);
      int64_t dims[HL_MAX_RANK];
      for (uint64_t k = 0; k < n; k++) {
        if (!hl_bc_read_svarint(&r, &dims[k])) return verr(v, "truncated tensor type");
        // MLIR writes a dynamic dimension ('?') as ShapedType::kDynamic.
        if (dims[k] == INT64_MIN) {
          dims[k] = -1;
          dynamic |= 1u << k;
        } else if (dims[k] < 0) {
          return verr(v, "bad tensor dimension %lld", (long long)dims[k]);
        }
      }
      if (code == 21 && bound_count != n)
        return verr(v, "%llu bounds for a tensor of rank %llu", (unsigned long long)bound_count,
                    (unsigned long long)n);
      for (uint64_t k = 0; code == 21 && k < n; k++) {
        if (bounds[k] == INT64_MIN) continue;
        if (!(dynamic >> k & 1u))
          return verr(v, "a bound on the static dimension %llu", (unsigned long long)k);
        dims[k] = bounds[k];  // a bounded '?' holds its bound, as the text parser keeps it
      }
      if (!hl_bc_read_varint(&r, &el)) return verr(v, "truncated tensor type");
      hl_dtype_t dt;
      *v->last_quant = 0;
      HL_RETURN_IF_ERROR(decode_element(v, el, &dt, depth + 1));
      *out = hl_shape_array(dt, (int)n, dims);
      out->dynamic_mask = dynamic;
      if (dynamic) v->file->has_dynamic_shapes = true;  // refined from the arguments
      if (!hl_shape_size_fits(out)) return verr(v, "tensor type too large");
      return NULL;
    }
    case 22:  // TokenV1Type
      *out = hl_shape_token();
      return NULL;
    case 23: {  // TupleV1Type { elements: Type[] }
      hl_shape_t *el;
      int n, *q;
      hl_status_t st = decode_type_list(v, &r, &el, &n, &q, depth);
      for (int k = 0; !st && k < n; k++)
        if (q[k]) st = verr(v, "tuples of quantized tensors are not supported");
      if (!st) st = hl_shape_tuple(el, n, out);
      free_types(el, n);
      hl_free(q);
      *v->last_quant = 0;
      return st;
    }
    case 25: return verr(v, "unranked tensor types are not supported");
    default:
      return verr(v, "VHLO type code %llu is not a value type this reader supports",
                  (unsigned long long)code);
  }
}

// ---- attributes ----

static hl_status_t decode_attr(const vctx_t *v, uint64_t idx, hl_mlir_attr_t *out, int depth);

static hl_status_t set_string(hl_mlir_attr_t *a, hl_mlir_attr_kind_t kind, const char *s) {
  a->kind = kind;
  a->s = hl_strdup(s);
  if (!a->s) return HL_OOM();
  a->s_len = strlen(s);
  return NULL;
}

// A string attribute of the string section: its bytes may hold NULs (opaque
// backend_configs), so the section's length counts, not strlen.
static hl_status_t set_bc_string(const vctx_t *v, hl_mlir_attr_t *a, uint64_t idx) {
  size_t n = v->bc->string_lengths[idx];
  a->kind = HL_MATTR_STRING;
  a->s = hl_malloc(n + 1);
  if (!a->s) return HL_OOM();
  memcpy(a->s, v->bc->strings[idx], n);
  a->s[n] = '\0';
  a->s_len = n;
  return NULL;
}

static hl_status_t push_item(hl_mlir_attr_t *a, const char *key, hl_mlir_attr_t **slot) {
  hl_mlir_attr_t *items = hl_realloc(a->items, ((size_t)a->n + 1) * sizeof(*items));
  if (!items) return HL_OOM();
  a->items = items;
  char **keys = hl_realloc(a->keys, ((size_t)a->n + 1) * sizeof(char *));
  if (!keys) return HL_OOM();
  a->keys = keys;
  keys[a->n] = NULL;
  if (key && !(keys[a->n] = hl_strdup(key))) return HL_OOM();
  *slot = &items[a->n];
  memset(*slot, 0, sizeof(**slot));
  a->n++;
  return NULL;
}

// #stablehlo<kind WORD>, as the text parser leaves `#stablehlo<comparison_direction EQ>`.
static hl_status_t enum_attr(const vctx_t *v, hl_bc_reader_t *r, const char *kind,
                             const char *const *names, int count, int first, hl_mlir_attr_t *a) {
  uint64_t code;
  if (!hl_bc_read_varint(r, &code) || code < (uint64_t)first || code >= (uint64_t)(first + count))
    return verr(v, "bad %s value", kind);
  HL_RETURN_IF_ERROR(set_string(a, HL_MATTR_DIALECT, "stablehlo"));
  hl_mlir_attr_t *s;
  HL_RETURN_IF_ERROR(push_item(a, NULL, &s));
  HL_RETURN_IF_ERROR(set_string(s, HL_MATTR_WORD, kind));
  HL_RETURN_IF_ERROR(push_item(a, NULL, &s));
  return set_string(s, HL_MATTR_WORD, names[code - (uint64_t)first]);
}

static hl_status_t attr_list(const vctx_t *v, hl_bc_reader_t *r, hl_mlir_attr_t *a, int depth,
                             bool pairs) {
  uint64_t n;
  if (!hl_bc_read_varint(r, &n) || n > (uint64_t)(r->end - r->p)) return verr(v, "bad attribute list");
  a->kind = pairs ? HL_MATTR_DICT : HL_MATTR_ARRAY;
  for (uint64_t k = 0; k < n; k++) {
    uint64_t key = 0, val;
    if (pairs && !hl_bc_read_varint(r, &key)) return verr(v, "truncated dictionary");
    if (!hl_bc_read_varint(r, &val)) return verr(v, "truncated attribute list");
    char *name = NULL;
    if (pairs) {
      hl_mlir_attr_t k_attr = {0};
      hl_status_t st = decode_attr(v, key, &k_attr, depth + 1);
      if (!st && k_attr.kind != HL_MATTR_STRING) st = verr(v, "dictionary key is not a string");
      if (!st) {
        name = k_attr.s;
        k_attr.s = NULL;
      }
      hl_mlir_attr_deinit(&k_attr);
      HL_RETURN_IF_ERROR(st);
    }
    hl_mlir_attr_t *slot;
    hl_status_t st = push_item(a, name, &slot);
    hl_free(name);
    HL_RETURN_IF_ERROR(st);
    HL_RETURN_IF_ERROR(decode_attr(v, val, slot, depth + 1));
  }
  if (!pairs) {  // arrays keep no keys
    hl_free(a->keys);
    a->keys = NULL;
  }
  return NULL;
}

// APInt of a known width: one byte up to 8 bits, else a signed varint.
static hl_status_t read_apint(const vctx_t *v, hl_bc_reader_t *r, int bits, uint64_t *out) {
  if (bits <= 8) {
    uint8_t b;
    if (!hl_bc_read_byte(r, &b)) return verr(v, "truncated integer");
    *out = b;
  } else if (bits <= 64) {
    int64_t s;
    if (!hl_bc_read_svarint(r, &s)) return verr(v, "truncated integer");
    *out = (uint64_t)s;
  } else {
    return verr(v, "integers wider than 64 bits are not supported");
  }
  if (bits < 64) *out &= (UINT64_C(1) << bits) - 1;
  return NULL;
}

static hl_status_t scalar_type(const vctx_t *v, hl_bc_reader_t *r, hl_mlir_attr_t *a) {
  uint64_t t;
  if (!hl_bc_read_varint(r, &t)) return verr(v, "truncated attribute type");
  hl_dtype_t dt;
  HL_RETURN_IF_ERROR(decode_element(v, t, &dt, 0));
  a->has_type = true;
  a->type = hl_shape_scalar(dt);
  return NULL;
}

static hl_status_t float_value(const vctx_t *v, hl_dtype_t dt, uint64_t bits, double *out) {
  union { uint32_t u; float f; } f32;
  union { uint64_t u; double d; } f64;
  switch (dt) {
    case HL_F64: f64.u = bits; *out = f64.d; return NULL;
    case HL_F32: f32.u = (uint32_t)bits; *out = f32.f; return NULL;
    case HL_F16: *out = hl_f16_to_f32((uint16_t)bits); return NULL;
    case HL_BF16: *out = hl_bf16_to_f32((uint16_t)bits); return NULL;
    default: return verr(v, "float attributes of type %s are not supported", hl_dtype_name(dt));
  }
}

// TensorV1Attr { type, blob }: i1 data may be bit-packed (VhloBytecode.cpp).
static hl_status_t tensor_attr(const vctx_t *v, hl_bc_reader_t *r, hl_mlir_attr_t *a) {
  uint64_t t, size;
  const uint8_t *data;
  if (!hl_bc_read_varint(r, &t)) return verr(v, "truncated tensor attribute");
  HL_RETURN_IF_ERROR(decode_type(v, t, &a->type, 1));
  a->type_quant = *v->last_quant;
  a->has_type = true;
  a->kind = HL_MATTR_DENSE;
  if (!hl_shape_is_array(&a->type)) return verr(v, "tensor attribute of a non-tensor type");
  if (!hl_bc_read_varint(r, &size) || !hl_bc_read_bytes(r, (size_t)size, &data))
    return verr(v, "tensor attribute data runs past its entry");
  int64_t count = hl_shape_element_count(&a->type);
  size_t packed = (size_t)((count + 7) / 8);
  a->blob = data;
  a->blob_len = (size_t)size;
  if (a->type.dtype == HL_PRED) {
    if (size == 1 && data[0] == 0xFF) {  // packed splat true
      static const uint8_t kOne = 1;
      a->blob = &kOne;
    } else if (size == packed && (int64_t)size != count) {
      uint8_t *u = hl_malloc((size_t)count + 1);
      if (!u) return HL_OOM();
      for (int64_t i = 0; i < count; i++) u[i] = (data[i / 8] >> (i % 8)) & 1;
      a->blob = u;
      a->blob_len = (size_t)count;
      a->blob_owned = true;
    }
  }
  return NULL;
}

static const char *const kCmpDir[] = {"EQ", "NE", "GE", "GT", "LE", "LT"};
static const char *const kCmpType[] = {"NOTYPE", "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"};
static const char *const kFft[] = {"FFT", "IFFT", "RFFT", "IRFFT"};
static const char *const kPrecision[] = {"DEFAULT", "HIGH", "HIGHEST"};
static const char *const kRngAlg[] = {"DEFAULT", "THREE_FRY", "PHILOX"};
static const char *const kRngDist[] = {"UNIFORM", "NORMAL"};
static const char *const kTranspose[] = {"TRANSPOSE_INVALID", "NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"};
static const char *const kAccuracy[] = {"DEFAULT", "HIGHEST", "TOLERANCE"};

static hl_status_t decode_vhlo_attr(const vctx_t *v, uint64_t code, hl_bc_reader_t *r,
                                    hl_mlir_attr_t *a, int depth) {
  uint64_t u;
  switch (code) {
    case 1: return attr_list(v, r, a, depth, false);  // ArrayV1Attr
    case 2:                                          // BooleanV1Attr
      if (!hl_bc_read_varint(r, &u) || u > 1) return verr(v, "bad boolean");
      a->kind = HL_MATTR_BOOL;
      a->b = u == 1;
      return NULL;
    case 3: return enum_attr(v, r, "comparison_direction", kCmpDir, 6, 0, a);
    case 4: return enum_attr(v, r, "comparison_type", kCmpType, 5, 0, a);
    case 5:  // CustomCallApiVersionV1Attr: StableHLO spells it `api_version = N : i32`
      if (!hl_bc_read_varint(r, &u) || u > 4) return verr(v, "bad custom_call api_version");
      a->kind = HL_MATTR_INT;
      a->i = (int64_t)u;
      a->u = u;
      a->has_type = true;
      a->type = hl_shape_scalar(HL_S32);
      return NULL;
    case 6: return attr_list(v, r, a, depth, true);  // DictionaryV1Attr
    case 7: return enum_attr(v, r, "fft_type", kFft, 4, 0, a);
    case 8: {  // FloatV1Attr { type, APFloat }
      HL_RETURN_IF_ERROR(scalar_type(v, r, a));
      uint64_t bits;
      HL_RETURN_IF_ERROR(read_apint(v, r, hl_dtype_bit_width(a->type.dtype), &bits));
      a->kind = HL_MATTR_FLOAT;
      a->u = bits;
      return float_value(v, a->type.dtype, bits, &a->f);
    }
    case 9: {  // IntegerV1Attr { type, APInt }
      HL_RETURN_IF_ERROR(scalar_type(v, r, a));
      hl_dtype_t dt = a->type.dtype;
      int bits = dt == HL_PRED ? 1 : hl_dtype_bit_width(dt);
      HL_RETURN_IF_ERROR(read_apint(v, r, bits, &a->u));
      a->kind = HL_MATTR_INT;
      a->i = (int64_t)a->u;
      if (bits < 64 && !hl_dtype_is_unsigned_int(dt) && (a->u >> (bits - 1)) & 1)
        a->i = (int64_t)(a->u | ~((UINT64_C(1) << bits) - 1));  // sign-extend
      return NULL;
    }
    case 10: {  // OutputOperandAliasV1Attr
      HL_RETURN_IF_ERROR(set_string(a, HL_MATTR_DIALECT, "stablehlo.output_operand_alias"));
      static const char *const kKeys[] = {"output_tuple_indices", "operand_index",
                                          "operand_tuple_indices"};
      for (int part = 0; part < 3; part++) {
        hl_mlir_attr_t *slot;
        HL_RETURN_IF_ERROR(push_item(a, kKeys[part], &slot));
        uint64_t n = 1;
        if (part != 1) {
          slot->kind = HL_MATTR_ARRAY;
          if (!hl_bc_read_varint(r, &n) || n > (uint64_t)(r->end - r->p)) return verr(v, "bad alias");
        }
        for (uint64_t k = 0; k < n; k++) {
          int64_t x;
          if (!hl_bc_read_svarint(r, &x)) return verr(v, "truncated alias");
          hl_mlir_attr_t *item = slot;
          if (part != 1) {
            hl_mlir_attr_t *grown = hl_realloc(slot->items, (size_t)(slot->n + 1) * sizeof(*grown));
            if (!grown) return HL_OOM();
            slot->items = grown;
            item = &grown[slot->n++];
            memset(item, 0, sizeof(*item));
          }
          item->kind = HL_MATTR_INT;
          item->i = x;
          item->u = (uint64_t)x;
        }
      }
      return NULL;
    }
    case 11: return enum_attr(v, r, "precision", kPrecision, 3, 0, a);
    case 12: return enum_attr(v, r, "rng_algorithm", kRngAlg, 3, 0, a);
    case 13: return enum_attr(v, r, "rng_distribution", kRngDist, 2, 1, a);
    case 14:  // StringV1Attr
      if (!hl_bc_read_varint(r, &u) || !bc_string(v, u)) return verr(v, "bad string attribute");
      HL_RETURN_IF_ERROR(set_bc_string(v, a, u));
      a->s_len = v->bc->string_lengths[u];
      return NULL;
    case 15: return tensor_attr(v, r, a);
    case 16: return enum_attr(v, r, "transpose", kTranspose, 4, 0, a);
    case 17: {  // TypeV1Attr
      if (!hl_bc_read_varint(r, &u) || u >= v->bc->type_count) return verr(v, "bad type attribute");
      hl_bc_reader_t tr;
      uint64_t tcode;
      HL_RETURN_IF_ERROR(entry_reader(v, &v->bc->types[u], "type", u, &tr, &tcode));
      if (tcode == 33) {  // NoneV1Type: an absent optional type (dot algorithm fields)
        a->kind = HL_MATTR_UNIT;
        return NULL;
      }
      if (tcode == 8) {  // FunctionV1Type { inputs, outputs }
        a->kind = HL_MATTR_FUNCTION_TYPE;
        a->items = hl_calloc(2, sizeof(hl_mlir_attr_t));
        if (!a->items) return HL_OOM();
        a->n = 2;
        for (int k = 0; k < 2; k++) {
          hl_shape_t *types;
          int n, *q;
          hl_status_t st = decode_type_list(v, &tr, &types, &n, &q, depth);
          hl_mlir_attr_t *list = &a->items[k];
          list->kind = HL_MATTR_ARRAY;
          list->items = hl_calloc((size_t)n + 1, sizeof(hl_mlir_attr_t));
          if (!list->items && !st) st = HL_OOM();
          for (int i = 0; i < n; i++) {
            if (list->items) {
              list->items[i].kind = HL_MATTR_TYPE;
              list->items[i].has_type = true;
              list->items[i].type = types[i];
              list->items[i].type_quant = q[i];
              list->n = i + 1;
            } else {
              hl_shape_deinit(&types[i]);
            }
          }
          hl_free(types);
          hl_free(q);
          HL_RETURN_IF_ERROR(st);
        }
        return NULL;
      }
      // An element type as a value (dot algorithms' precision and accumulation
      // types): the text's `f32` is a TYPE of that scalar; TF32 has no dtype
      // here and stays the word `tf32`, as the text parser keeps it.
      bool builtin = v->bc->types[u].dialect == v->builtin;
      bool value = builtin ? tcode == 13 || tcode == 15
                           : (tcode >= 20 && tcode <= 23) || tcode == 25 || tcode >= 41;
      if (!builtin && tcode == 34) return set_string(a, HL_MATTR_WORD, "tf32");
      a->kind = HL_MATTR_TYPE;
      a->has_type = true;
      if (value) return decode_type(v, u, &a->type, depth + 1);
      hl_dtype_t el;
      *v->last_quant = 0;
      HL_RETURN_IF_ERROR(decode_element(v, u, &el, depth + 1));
      a->type = hl_shape_scalar(el);
      a->type_quant = *v->last_quant;
      return NULL;
    }
    case 18: return verr(v, "type_extensions outside a tensor type");
    case 19:  // ResultAccuracyModeV1Attr: #stablehlo.result_accuracy_mode<X>
      if (!hl_bc_read_varint(r, &u) || u > 2) return verr(v, "bad result accuracy mode");
      HL_RETURN_IF_ERROR(set_string(a, HL_MATTR_DIALECT, "stablehlo.result_accuracy_mode"));
      hl_mlir_attr_t *w;
      HL_RETURN_IF_ERROR(push_item(a, NULL, &w));
      return set_string(w, HL_MATTR_WORD, kAccuracy[u]);
    case 20: {  // ResultAccuracyV1Attr { atol: f64, rtol: f64, ulps: svarint, mode }
      HL_RETURN_IF_ERROR(set_string(a, HL_MATTR_DIALECT, "stablehlo.result_accuracy"));
      static const char *const kKeys[] = {"atol", "rtol", "ulps", "mode"};
      for (int k = 0; k < 4; k++) {
        hl_mlir_attr_t *slot;
        HL_RETURN_IF_ERROR(push_item(a, kKeys[k], &slot));
        if (k < 2) {
          HL_RETURN_IF_ERROR(read_apint(v, r, 64, &slot->u));
          slot->kind = HL_MATTR_FLOAT;
          HL_RETURN_IF_ERROR(float_value(v, HL_F64, slot->u, &slot->f));
        } else if (k == 2) {
          if (!hl_bc_read_svarint(r, &slot->i)) return verr(v, "truncated result accuracy");
          slot->kind = HL_MATTR_INT;
        } else {
          if (!hl_bc_read_varint(r, &u)) return verr(v, "truncated result accuracy");
          HL_RETURN_IF_ERROR(decode_attr(v, u, slot, depth + 1));
        }
      }
      return NULL;
    }
    default:
      return verr(v, "VHLO attribute code %llu (mesh / sharding attributes and newer) is not "
                  "supported", (unsigned long long)code);
  }
}

static hl_status_t decode_builtin_attr(const vctx_t *v, uint64_t code, hl_bc_reader_t *r,
                                       hl_mlir_attr_t *a, int depth) {
  uint64_t u;
  switch (code) {
    case 0: return attr_list(v, r, a, depth, false);  // ArrayAttr
    case 1: return attr_list(v, r, a, depth, true);   // DictionaryAttr
    case 2:                                           // StringAttr
      if (!hl_bc_read_varint(r, &u) || !bc_string(v, u)) return verr(v, "bad string attribute");
      HL_RETURN_IF_ERROR(set_bc_string(v, a, u));
      a->s_len = v->bc->string_lengths[u];
      return NULL;
    case 3: return verr(v, "typed builtin string attributes are not supported");
    case 4:  // FlatSymbolRefAttr { StringAttr }
      if (!hl_bc_read_varint(r, &u)) return verr(v, "truncated symbol reference");
      HL_RETURN_IF_ERROR(decode_attr(v, u, a, depth + 1));
      if (a->kind != HL_MATTR_STRING) return verr(v, "symbol reference without a name");
      a->kind = HL_MATTR_SYMBOL;
      return NULL;
    case 6:  // TypeAttr
      if (!hl_bc_read_varint(r, &u)) return verr(v, "truncated type attribute");
      a->kind = HL_MATTR_TYPE;
      a->has_type = true;
      return decode_type(v, u, &a->type, depth + 1);
    case 7: a->kind = HL_MATTR_UNIT; return NULL;  // UnitAttr
    case 8: case 9: {  // IntegerAttr / FloatAttr { type, value }: as VHLO's
      HL_RETURN_IF_ERROR(scalar_type(v, r, a));
      hl_dtype_t dt = a->type.dtype;
      int bits = dt == HL_PRED ? 1 : hl_dtype_bit_width(dt);
      HL_RETURN_IF_ERROR(read_apint(v, r, bits, &a->u));
      if (code == 9) {
        a->kind = HL_MATTR_FLOAT;
        return float_value(v, dt, a->u, &a->f);
      }
      a->kind = HL_MATTR_INT;
      a->i = (int64_t)a->u;
      if (bits < 64 && !hl_dtype_is_unsigned_int(dt) && (a->u >> (bits - 1)) & 1)
        a->i = (int64_t)(a->u | ~((UINT64_C(1) << bits) - 1));
      return NULL;
    }
    case 18:  // DenseIntOrFPElementsAttr { type, blob }: as VHLO's tensor
      return tensor_attr(v, r, a);
    default:
      return verr(v, "builtin attribute code %llu is not supported here", (unsigned long long)code);
  }
}

// A Shardy attribute in its text form ("#sdy.sharding_rule<...>", NUL-
// terminated): kept raw, as the text parser keeps sdy.* syntax.
static hl_status_t shardy_text(const vctx_t *v, const hl_bc_entry_t *e, hl_mlir_attr_t *a) {
  const char *t = (const char *)e->bytes.data;
  size_t n = e->bytes.size;
  const char *lt = n ? memchr(t, '<', n) : NULL;
  if (!n || t[n - 1] != 0 || t[0] != '#' || !lt || n < 3 || t[n - 2] != '>')
    return verr(v, "malformed Shardy attribute text");
  a->kind = HL_MATTR_RAW;
  a->s = hl_strndup(t + 1, (size_t)(lt - t - 1));
  if (!a->s) return HL_OOM();
  a->raw = lt + 1;
  a->raw_len = (size_t)(t + n - 2 - (lt + 1));
  return NULL;
}

static hl_status_t decode_attr(const vctx_t *v, uint64_t idx, hl_mlir_attr_t *out, int depth) {
  memset(out, 0, sizeof(*out));
  if (idx >= v->bc->attr_count) return verr(v, "attribute index %llu out of range", (unsigned long long)idx);
  if (depth > kMaxAttrDepth) return verr(v, "attributes nest too deeply");
  const hl_bc_entry_t *e = &v->bc->attrs[idx];
  if (strcmp(v->bc->dialects[e->dialect], "sdy") == 0)
    return e->custom ? hl_sdy_attr_text(v->bc, idx, out) : shardy_text(v, e, out);
  hl_bc_reader_t r;
  uint64_t code;
  hl_status_t st = entry_reader(v, e, "attribute", idx, &r, &code);
  if (!st && e->dialect == v->vhlo) st = decode_vhlo_attr(v, code, &r, out, depth);
  else if (!st && e->dialect == v->builtin) st = decode_builtin_attr(v, code, &r, out, depth);
  else if (!st) st = verr(v, "attribute %llu of dialect '%s' is not supported",
                          (unsigned long long)idx, v->bc->dialects[e->dialect]);
  if (!st && r.p != r.end) st = verr(v, "trailing bytes after attribute %llu", (unsigned long long)idx);
  if (st) hl_mlir_attr_deinit(out);
  return st;
}

// ---- ops ----

static const vhlo_op_info_t *find_op(const char *name) {
  for (size_t i = 0; i < sizeof(kOps) / sizeof(kOps[0]); i++)
    if (strcmp(kOps[i].vhlo, name) == 0) return &kOps[i];
  return NULL;
}

static hl_status_t add_attr(hl_mlir_op_t *op, const char *name, hl_mlir_attr_t *value) {
  char **names = hl_realloc(op->attr_names, ((size_t)op->attr_count + 1) * sizeof(char *));
  if (!names) return HL_OOM();
  op->attr_names = names;
  hl_mlir_attr_t *vals = hl_realloc(op->attrs, ((size_t)op->attr_count + 1) * sizeof(*vals));
  if (!vals) return HL_OOM();
  op->attrs = vals;
  if (!(names[op->attr_count] = hl_strdup(name))) return HL_OOM();
  vals[op->attr_count++] = *value;
  memset(value, 0, sizeof(*value));
  return NULL;
}

static hl_mlir_attr_t *op_attr(hl_mlir_op_t *op, const char *name) {
  for (int i = 0; i < op->attr_count; i++)
    if (strcmp(op->attr_names[i], name) == 0) return &op->attrs[i];
  return NULL;
}

// Removes attribute `name` from op into *out (zeroed when absent).
static bool take(hl_mlir_op_t *op, const char *name, hl_mlir_attr_t *out) {
  memset(out, 0, sizeof(*out));
  for (int i = 0; i < op->attr_count; i++) {
    if (strcmp(op->attr_names[i], name) != 0) continue;
    *out = op->attrs[i];
    hl_free(op->attr_names[i]);
    memmove(&op->attr_names[i], &op->attr_names[i + 1], (size_t)(op->attr_count - i - 1) * sizeof(char *));
    memmove(&op->attrs[i], &op->attrs[i + 1], (size_t)(op->attr_count - i - 1) * sizeof(*out));
    op->attr_count--;
    return true;
  }
  return false;
}

// StableHLO keeps 1-D i64 / i1 dimension lists as `array<i64: ...>` (dense
// arrays); VHLO stores them as tensors.
static hl_status_t tensor_to_array(const vctx_t *v, hl_mlir_attr_t *a) {
  if (a->kind != HL_MATTR_DENSE || a->type.rank != 1 ||
      (a->type.dtype != HL_S64 && a->type.dtype != HL_PRED))
    return NULL;
  int64_t n = a->type.dims[0];
  bool pred = a->type.dtype == HL_PRED;
  size_t es = pred ? 1 : 8;
  if (a->blob_len != (size_t)n * es && !(a->blob_len == es && n > 0))
    return verr(v, "dimension list data does not match its type");
  hl_mlir_attr_t arr = {0};
  arr.kind = HL_MATTR_ARRAY;
  arr.has_type = true;
  arr.type = hl_shape_scalar(a->type.dtype);
  arr.items = hl_calloc((size_t)n + 1, sizeof(hl_mlir_attr_t));
  if (!arr.items) return HL_OOM();
  arr.n = (int)n;
  for (int64_t i = 0; i < n; i++) {
    const uint8_t *p = a->blob + (a->blob_len == es ? 0 : (size_t)i * es);
    hl_mlir_attr_t *it = &arr.items[i];
    if (pred) {
      it->kind = HL_MATTR_BOOL;
      it->b = *p != 0;
    } else {
      uint64_t x = 0;
      for (int k = 7; k >= 0; k--) x = x << 8 | p[k];
      it->kind = HL_MATTR_INT;
      it->u = x;
      it->i = (int64_t)x;
    }
  }
  hl_mlir_attr_deinit(a);
  *a = arr;
  return NULL;
}

// Moves the named attributes (those present) into one #dialect<key = value, ...>.
static hl_status_t group(hl_mlir_op_t *op, const char *into, const char *dialect,
                         const char *const *keys) {
  hl_mlir_attr_t g = {0};
  HL_RETURN_IF_ERROR(set_string(&g, HL_MATTR_DIALECT, dialect));
  hl_status_t st = NULL;
  bool any = false;
  for (int k = 0; keys[k] && !st; k++) {
    hl_mlir_attr_t a;
    if (!take(op, keys[k], &a)) continue;
    any = true;
    if (a.kind == HL_MATTR_ARRAY && a.n == 0) {  // MLIR prints empty lists not at all
      hl_mlir_attr_deinit(&a);
      continue;
    }
    hl_mlir_attr_t *slot;
    st = push_item(&g, keys[k], &slot);
    if (!st) *slot = a;
    else hl_mlir_attr_deinit(&a);
  }
  if (!st && any) st = add_attr(op, into, &g);
  hl_mlir_attr_deinit(&g);
  return st;
}

static void strings_to_symbols(hl_mlir_attr_t *a) {
  if (!a) return;
  if (a->kind == HL_MATTR_STRING) a->kind = HL_MATTR_SYMBOL;
  if (a->kind == HL_MATTR_ARRAY)
    for (int i = 0; i < a->n; i++) strings_to_symbols(&a->items[i]);
}

// The StableHLO spelling of a VHLO op's attributes.
static hl_status_t stablehlo_attrs(const vctx_t *v, const char *vname, hl_mlir_op_t *op) {
  for (int i = 0; i < op->attr_count; i++)
    if (strcmp(op->attr_names[i], "value") != 0 && strncmp(op->attr_names[i], "mhlo.", 5) != 0)
      HL_RETURN_IF_ERROR(tensor_to_array(v, &op->attrs[i]));
  strings_to_symbols(op_attr(op, "callee"));
  strings_to_symbols(op_attr(op, "decomposition"));
  strings_to_symbols(op_attr(op, "called_computations"));
  if (strncmp(vname, "dot_general", 11) == 0) {
    static const char *const k[] = {"lhs_batching_dimensions", "rhs_batching_dimensions",
                                    "lhs_contracting_dimensions", "rhs_contracting_dimensions", NULL};
    HL_RETURN_IF_ERROR(group(op, "dot_dimension_numbers", "stablehlo.dot", k));
    static const char *const alg[] = {"lhs_precision_type", "rhs_precision_type", "accumulation_type",
                                      "lhs_component_count", "rhs_component_count",
                                      "num_primitive_operations", "allow_imprecise_accumulation", NULL};
    const hl_mlir_attr_t *lp = op_attr(op, "lhs_precision_type");
    if (lp && lp->kind != HL_MATTR_UNIT)  // a dot algorithm, as the text writes it
      return group(op, "algorithm", "stablehlo.dot_algorithm", alg);
    for (int i = 0; alg[i]; i++) {  // none: VHLO's NoneV1Type placeholders
      hl_mlir_attr_t a;
      take(op, alg[i], &a);
      hl_mlir_attr_deinit(&a);
    }
  } else if (strncmp(vname, "custom_call_v", 13) == 0) {
    // VHLO writes these always; empty means "not given" in StableHLO (upstream's
    // VhloToStablehlo drops them), and an empty operand_layouts beside operands
    // would read as a count mismatch. Kept where empty is the right count (no
    // operands; a `tuple<>` result), as the text form writes them.
    bool no_results = op->result_type_count == 0 ||
                      (op->result_type_count == 1 && op->result_types[0].dtype == HL_TUPLE &&
                       op->result_types[0].tuple_count == 0);
    const char *optional[] = {op->operand_count ? "operand_layouts" : "",
                              no_results ? "" : "result_layouts", "output_operand_aliases", NULL};
    for (int i = 0; optional[i]; i++) {
      const hl_mlir_attr_t *a = *optional[i] ? op_attr(op, optional[i]) : NULL;
      if (a && a->kind == HL_MATTR_ARRAY && a->n == 0) {
        hl_mlir_attr_t gone;
        take(op, optional[i], &gone);
        hl_mlir_attr_deinit(&gone);
      }
    }
    // backend_config likewise: an empty string or dictionary is no config.
    const hl_mlir_attr_t *bc = op_attr(op, "backend_config");
    if (bc && ((bc->kind == HL_MATTR_STRING && bc->s_len == 0) ||
               (bc->kind == HL_MATTR_DICT && bc->n == 0))) {
      hl_mlir_attr_t gone;
      take(op, "backend_config", &gone);
      hl_mlir_attr_deinit(&gone);
    }
  } else if (strstr(vname, "gather_v")) {
    static const char *const k[] = {"offset_dims", "collapsed_slice_dims", "operand_batching_dims",
                                    "start_indices_batching_dims", "start_index_map",
                                    "index_vector_dim", NULL};
    HL_RETURN_IF_ERROR(group(op, "dimension_numbers", "stablehlo.gather", k));
  } else if (strncmp(vname, "scatter_v", 9) == 0) {
    static const char *const k[] = {"update_window_dims", "inserted_window_dims", "input_batching_dims",
                                    "scatter_indices_batching_dims", "scatter_dims_to_operand_dims",
                                    "index_vector_dim", NULL};
    HL_RETURN_IF_ERROR(group(op, "scatter_dimension_numbers", "stablehlo.scatter", k));
  } else if (strncmp(vname, "convolution_v", 13) == 0 || strncmp(vname, "dynamic_conv_v", 14) == 0) {
    static const char *const k[] = {"input_batch_dimension", "input_feature_dimension",
                                    "input_spatial_dimensions", "kernel_input_feature_dimension",
                                    "kernel_output_feature_dimension", "kernel_spatial_dimensions",
                                    "output_batch_dimension", "output_feature_dimension",
                                    "output_spatial_dimensions", NULL};
    HL_RETURN_IF_ERROR(group(op, "dimension_numbers", "stablehlo.conv", k));
  }
  hl_mlir_attr_t id, type;
  if (take(op, "channel_id", &id)) {  // channel_id (+ channel_type) -> channel_handle
    bool has_type = take(op, "channel_type", &type);
    hl_status_t st = NULL;
    if (id.kind == HL_MATTR_INT && (id.i != 0 || has_type)) {
      hl_mlir_attr_t h = {0};
      hl_mlir_attr_t *slot;
      st = set_string(&h, HL_MATTR_DIALECT, "stablehlo.channel_handle");
      if (!st) st = push_item(&h, "handle", &slot);
      if (!st) {
        slot->kind = HL_MATTR_INT;
        slot->i = id.i;
        slot->u = id.u;
        st = push_item(&h, "type", &slot);
      }
      if (!st) {
        slot->kind = HL_MATTR_INT;
        slot->i = has_type && type.kind == HL_MATTR_INT ? type.i : 0;
        slot->u = (uint64_t)slot->i;
        st = add_attr(op, "channel_handle", &h);
      }
      hl_mlir_attr_deinit(&h);
    }
    hl_mlir_attr_deinit(&id);
    if (has_type) hl_mlir_attr_deinit(&type);
    HL_RETURN_IF_ERROR(st);
  }
  return NULL;
}

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

// A registered VHLO op's properties: its attributes, one attribute index
// each, in the order of ODS's Properties struct (sorted by name).
static hl_status_t read_properties(const vctx_t *v, const hl_bc_op_t *bop,
                                   const vhlo_op_info_t *info, hl_mlir_op_t *op) {
  const char *names[24];
  int n = 0;
  while (info->attrs[n]) names[n] = info->attrs[n], n++;
  qsort(names, (size_t)n, sizeof(names[0]), cmp_names);
  hl_bc_reader_t r = {bop->properties.data, bop->properties.data + bop->properties.size};
  for (int k = 0; k < n; k++) {
    uint64_t idx;
    if (!hl_bc_read_varint(&r, &idx))
      return verr(v, "vhlo.%s: properties end before attribute '%s'", info->vhlo, names[k]);
    hl_mlir_attr_t a;
    HL_RETURN_IF_ERROR(decode_attr(v, idx, &a, 0));
    hl_status_t st = add_attr(op, names[k], &a);
    hl_mlir_attr_deinit(&a);
    HL_RETURN_IF_ERROR(st);
  }
  if (r.p != r.end) return verr(v, "vhlo.%s: properties hold more attributes than the op has", info->vhlo);
  return NULL;
}

// The attribute dictionary of an op (all attributes before bytecode version
// 5; the discardable ones after).
static hl_status_t read_attr_dict(const vctx_t *v, const hl_bc_op_t *bop, hl_mlir_op_t *op) {
  if (bop->attr_dict < 0) return NULL;
  hl_mlir_attr_t d;
  HL_RETURN_IF_ERROR(decode_attr(v, (uint64_t)bop->attr_dict, &d, 0));
  hl_status_t st = d.kind == HL_MATTR_DICT ? NULL : verr(v, "op attributes are not a dictionary");
  for (int i = 0; !st && i < d.n; i++) st = add_attr(op, d.keys[i], &d.items[i]);
  hl_mlir_attr_deinit(&d);
  return st;
}

// Quantization id `id` of entry k of a list of n types (ids allocated on the first one).
static hl_status_t note_quant(hl_mlir_quant_ids_t *q, int k, int n, int id) {
  if (!id) return NULL;
  if (!q->ids) {
    q->ids = hl_calloc((size_t)n + 1, sizeof(int));
    if (!q->ids) return HL_OOM();
    q->n = n;
  }
  if (k < q->n) q->ids[k] = id;
  return NULL;
}

// The text of location attribute `idx` (BuiltinDialectBytecode.td): the
// first file:line:col found, with the innermost name before it; "" when the
// location holds neither.
static void location_text(const vctx_t *v, uint64_t idx, hl_strbuf_t *out, int depth) {
  if (depth > 16 || idx >= v->bc->attr_count) return;
  const hl_bc_entry_t *e = &v->bc->attrs[idx];
  if (e->dialect != v->builtin || !e->custom) return;
  hl_bc_reader_t r = {e->bytes.data, e->bytes.data + e->bytes.size};
  uint64_t code, a, b, c;
  if (!hl_bc_read_varint(&r, &code)) return;
  switch (code) {
    case 10:  // CallSiteLoc { callee, caller }: the callee's
      if (hl_bc_read_varint(&r, &a)) location_text(v, a, out, depth + 1);
      return;
    case 11: {  // FileLineColLoc { filename: StringAttr, line, column }
      hl_mlir_attr_t name;
      if (!hl_bc_read_varint(&r, &a) || !hl_bc_read_varint(&r, &b) || !hl_bc_read_varint(&r, &c))
        return;
      hl_status_t st = decode_attr(v, a, &name, depth + 1);
      if (!st && name.kind == HL_MATTR_STRING)
        hl_strbuf_appendf(out, "%s:%llu:%llu", name.s, (unsigned long long)b, (unsigned long long)c);
      hl_status_free(st);
      hl_mlir_attr_deinit(&name);
      return;
    }
    case 12: case 13: {  // FusedLoc(WithMetadata) { Array<Location> }: the first that says something
      uint64_t n;
      if (!hl_bc_read_varint(&r, &n)) return;
      for (uint64_t k = 0; k < n && k < 64 && !out->length; k++)
        if (hl_bc_read_varint(&r, &a)) location_text(v, a, out, depth + 1);
      return;
    }
    case 14: {  // NameLoc { name: StringAttr, child }
      hl_mlir_attr_t name;
      if (!hl_bc_read_varint(&r, &a) || !hl_bc_read_varint(&r, &b)) return;
      hl_status_t st = decode_attr(v, a, &name, depth + 1);
      if (!st && name.kind == HL_MATTR_STRING) hl_strbuf_appendf(out, "\"%s\"", name.s);
      hl_status_free(st);
      hl_mlir_attr_deinit(&name);
      hl_strbuf_t child;
      hl_strbuf_init(&child);
      location_text(v, b, &child, depth + 1);
      if (child.length) hl_strbuf_appendf(out, " %s", hl_strbuf_cstr(&child));
      hl_strbuf_deinit(&child);
      return;
    }
    default: return;  // UnknownLoc and kinds that name no place
  }
}

static char *value_name(uint32_t group) {
  char buf[24];
  snprintf(buf, sizeof(buf), "v%u", group);
  return hl_strdup(buf);
}

static hl_status_t convert_block(const vctx_t *v, const hl_bc_block_t *b, bool func_body,
                                 hl_mlir_block_t *out);
static bool is_cast(const vctx_t *v, const hl_bc_op_t *op);

// The text between the outer brackets of a RAW attribute's text (`[a, b]`
// -> `a, b`), as the text parser keeps `key=[...]` / `key={...}`.
static hl_status_t strip_brackets(const vctx_t *v, hl_mlir_attr_t *a, char open, char close) {
  if (a->kind != HL_MATTR_RAW || a->raw_len < 2 || a->raw[0] != open ||
      a->raw[a->raw_len - 1] != close)
    return verr(v, "unexpected form of the Shardy attribute %s", a->s ? a->s : "?");
  a->raw++;
  a->raw_len -= 2;
  return NULL;
}

// Shardy's ops in a function (sdy.manual_computation, sdy.return,
// sdy.sharding_constraint, sdy.reshard) in the form the text parser gives
// them (sharding_attrs.c lowers them).
static hl_status_t convert_non_vhlo(const vctx_t *v, const hl_bc_op_t *bop,
                                    const hl_bc_op_name_t *on, const char *full,
                                    hl_mlir_op_t *op) {
  char name[96];
  if (on->dialect == v->builtin)  // the 1:1 casts were dropped (note_aliases)
    return verr(v, "'%s' with %d operands and %d results (expected one each)", full,
                bop->operand_count, bop->result_count);
  snprintf(name, sizeof(name), "sdy.%s", on->name);
  static const char *const kKnown[] = {"sdy.manual_computation", "sdy.return",
                                       "sdy.sharding_constraint", "sdy.reshard"};
  bool known = false;
  for (size_t i = 0; i < sizeof(kKnown) / sizeof(kKnown[0]); i++) known |= strcmp(name, kKnown[i]) == 0;
  if (!known)
    return verr(v, "Shardy op '%s' is not supported (read: manual_computation, return, "
                "sharding_constraint, reshard)", full);
  if (!(op->name = hl_strdup(name))) return HL_OOM();
  // Properties: one attribute index each (ODS order); Shardy's attributes
  // say what they are, the two per-value shardings come in and then out.
  hl_mlir_attr_t props[4];
  int n = 0;
  hl_status_t st = NULL;
  if (bop->has_properties && !bop->properties_are_attr) {
    hl_bc_reader_t r = {bop->properties.data, bop->properties.data + bop->properties.size};
    while (!st && r.p != r.end) {
      uint64_t idx;
      if (n == 4 || !hl_bc_read_varint(&r, &idx)) {
        st = verr(v, "'%s': malformed properties", full);
        break;
      }
      st = decode_attr(v, idx, &props[n], 0);
      if (!st) n++;
    }
  } else if (bop->has_properties) {
    st = verr(v, "'%s' was written as an unregistered op", full);
  }
  int per_value = 0;
  for (int k = 0; k < n && !st; k++) {
    hl_mlir_attr_t *a = &props[k];
    const char *kind = a->kind == HL_MATTR_RAW && a->s ? a->s : "";
    if (strcmp(name, "sdy.manual_computation") == 0 && strcmp(kind, "sdy.sharding_per_value") == 0 &&
        per_value < 2) {
      st = strip_brackets(v, a, '[', ']');
      if (!st) st = add_attr(op, per_value++ ? "out_shardings" : "in_shardings", a);
    } else if (strcmp(name, "sdy.manual_computation") == 0 && strcmp(kind, "sdy.manual_axes") == 0) {
      st = strip_brackets(v, a, '{', '}');
      if (!st) st = add_attr(op, "manual_axes", a);
    } else if (strcmp(kind, "sdy.sharding") == 0 && op->item_count == 0) {
      // sharding_constraint / reshard: the sharding as the pretty form's item
      op->items = hl_calloc(1, sizeof(hl_mlir_attr_t));
      if (!op->items) {
        st = HL_OOM();
        break;
      }
      op->items[0] = *a;
      memset(a, 0, sizeof(*a));
      op->item_count = 1;
    } else {
      st = verr(v, "'%s': unexpected property %s", full, kind[0] ? kind : "(not a Shardy attribute)");
    }
  }
  for (int k = 0; k < n; k++) hl_mlir_attr_deinit(&props[k]);
  if (!st) st = read_attr_dict(v, bop, op);
  return st;
}

static hl_status_t convert_op(const vctx_t *v, const hl_bc_op_t *bop, bool func_body,
                              hl_mlir_op_t *op) {
  const hl_bc_module_t *bc = v->bc;
  const hl_bc_op_name_t *on = &bc->op_names[bop->name];
  char full[160];
  hl_bc_op_full_name(bc, bop, full, sizeof(full));
  const vhlo_op_info_t *info = NULL;
  const char *name;
  if (on->dialect == v->sdy || (on->dialect == v->builtin &&
                                strcmp(on->name, "unrealized_conversion_cast") == 0)) {
    name = NULL;  // Shardy's ops and the casts between VHLO and builtin types around them
  } else if (on->dialect != v->vhlo) {
    return verr(v, "op '%s' is not a VHLO op", full);
  } else if (!(info = find_op(on->name))) {
    return verr(v, "unregistered operation '%s' (this reader knows the VHLO ops of StableHLO "
                "up to %d.%d)", full, HL_VHLO_MAX_MAJOR, HL_VHLO_MAX_MINOR);
  } else {
    name = info->stablehlo;
    if (strcmp(info->vhlo, "return_v1") == 0 && func_body) name = "func.return";
  }
  hl_strbuf_t loc;
  hl_strbuf_init(&loc);
  location_text(v, bop->location, &loc, 0);
  if (loc.length && !(op->location = hl_strbuf_take(&loc))) return HL_OOM();
  hl_strbuf_deinit(&loc);
  if (info) {
    if (!(op->name = hl_strdup(name))) return HL_OOM();
    op->generic = true;
    op->has_function_type = true;
    if (bop->has_properties) {
      if (bop->properties_are_attr) return verr(v, "'%s' was written as an unregistered op", full);
      HL_RETURN_IF_ERROR(read_properties(v, bop, info, op));
    }
    HL_RETURN_IF_ERROR(read_attr_dict(v, bop, op));
  } else {
    HL_RETURN_IF_ERROR(convert_non_vhlo(v, bop, on, full, op));
  }
  // Results: one group.
  if (bop->result_count) {
    op->result_names = hl_calloc(1, sizeof(char *));
    op->result_counts = hl_calloc(1, sizeof(int));
    if (!op->result_names || !op->result_counts || !(op->result_names[0] = value_name(bop->first_result)))
      return HL_OOM();
    op->result_counts[0] = bop->result_count;
    op->result_group_count = 1;
    op->result_count = bop->result_count;
    op->result_types = hl_calloc((size_t)bop->result_count, sizeof(hl_shape_t));
    if (!op->result_types) return HL_OOM();
    for (int k = 0; k < bop->result_count; k++) {
      op->result_type_count = k + 1;
      HL_RETURN_IF_ERROR(decode_type(v, bop->result_types[k], &op->result_types[k], 0));
      HL_RETURN_IF_ERROR(note_quant(&op->result_type_quant, k, bop->result_count, *v->last_quant));
    }
  }
  if (bop->operand_count) {
    op->operands = hl_calloc((size_t)bop->operand_count, sizeof(hl_mlir_value_ref_t));
    op->operand_types = hl_calloc((size_t)bop->operand_count, sizeof(hl_shape_t));
    if (!op->operands || !op->operand_types) return HL_OOM();
    for (int k = 0; k < bop->operand_count; k++) {
      const hl_bc_value_t *val = &bc->values[v->value_alias[bop->operands[k]]];
      op->operand_count = op->operand_type_count = k + 1;
      if (!(op->operands[k].name = value_name(val->group))) return HL_OOM();
      op->operands[k].index = (int)val->index;
      HL_RETURN_IF_ERROR(decode_type(v, v->value_type[bop->operands[k]], &op->operand_types[k], 0));
      HL_RETURN_IF_ERROR(note_quant(&op->operand_type_quant, k, bop->operand_count, *v->last_quant));
    }
  }
  // After the operands and results: some spellings depend on their counts.
  if (info) HL_RETURN_IF_ERROR(stablehlo_attrs(v, info->vhlo, op));
  if (bop->successor_count) return verr(v, "'%s' has block successors (unsupported)", full);
  if (bop->region_count) {
    op->regions = hl_calloc((size_t)bop->region_count, sizeof(hl_mlir_region_t));
    if (!op->regions) return HL_OOM();
    op->region_count = bop->region_count;
    bool is_func = info && strcmp(info->vhlo, "func_v1") == 0;
    for (int i = 0; i < bop->region_count; i++) {
      const hl_bc_region_t *br = &bop->regions[i];
      op->regions[i].blocks = hl_calloc((size_t)br->block_count + 1, sizeof(hl_mlir_block_t));
      if (!op->regions[i].blocks) return HL_OOM();
      for (int k = 0; k < br->block_count; k++) {
        op->regions[i].block_count = k + 1;
        HL_RETURN_IF_ERROR(convert_block(v, &br->blocks[k], is_func, &op->regions[i].blocks[k]));
      }
    }
  }
  if (info && strcmp(info->vhlo, "func_v1") == 0) {
    // The signature's quantization ids (the generic func keeps only the types).
    const hl_mlir_attr_t *ft = op_attr(op, "function_type");
    for (int side = 0; ft && ft->kind == HL_MATTR_FUNCTION_TYPE && side < 2; side++) {
      const hl_mlir_attr_t *list = &ft->items[side];
      hl_mlir_quant_ids_t *q = side ? &op->result_type_quant : &op->operand_type_quant;
      for (int i = 0; i < list->n; i++)
        HL_RETURN_IF_ERROR(note_quant(q, i, list->n, list->items[i].type_quant));
    }
    HL_RETURN_IF_ERROR(hl_mlir_generic_func(bc->path, op));
  }
  return NULL;
}

static hl_status_t convert_block(const vctx_t *v, const hl_bc_block_t *b, bool func_body,
                                 hl_mlir_block_t *out) {
  if (b->arg_count) {
    out->arg_names = hl_calloc((size_t)b->arg_count, sizeof(char *));
    out->arg_types = hl_calloc((size_t)b->arg_count, sizeof(hl_shape_t));
    if (!out->arg_names || !out->arg_types) return HL_OOM();
    for (int k = 0; k < b->arg_count; k++) {
      out->arg_count = k + 1;
      if (!(out->arg_names[k] = value_name(b->first_arg + (uint32_t)k))) return HL_OOM();
      HL_RETURN_IF_ERROR(decode_type(v, b->arg_types[k], &out->arg_types[k], 0));
      HL_RETURN_IF_ERROR(note_quant(&out->arg_quant, k, b->arg_count, *v->last_quant));
    }
  }
  out->ops = hl_calloc((size_t)b->op_count + 1, sizeof(hl_mlir_op_t));
  if (!out->ops) return HL_OOM();
  for (int i = 0; i < b->op_count; i++) {
    if (is_cast(v, &b->ops[i])) continue;
    HL_RETURN_IF_ERROR(convert_op(v, &b->ops[i], func_body, &out->ops[out->op_count++]));
  }
  return NULL;
}

static void note_types(const hl_bc_block_t *b, uint64_t *types) {
  for (int k = 0; k < b->arg_count; k++) types[b->first_arg + (uint32_t)k] = b->arg_types[k];
  for (int i = 0; i < b->op_count; i++) {
    const hl_bc_op_t *op = &b->ops[i];
    for (int k = 0; k < op->result_count; k++)
      types[op->first_result + (uint32_t)k] = op->result_types[k];
    for (int r = 0; r < op->region_count; r++)
      for (int k = 0; k < op->regions[r].block_count; k++) note_types(&op->regions[r].blocks[k], types);
  }
}

// A module-level `sdy.mesh @name = <[...]>` (Shardy's MeshOp: a symbol name
// and a MeshAttr, as properties or, unregistered or before bytecode v5, in
// the attribute dictionary) into f->meshes as the text parser keeps it:
// items {SYMBOL name, RAW mesh text}.
static hl_status_t convert_sdy_mesh(const vctx_t *v, const hl_bc_op_t *bop, hl_mlir_file_t *f) {
  hl_mlir_attr_t found[2];  // [0] the name, [1] the mesh
  memset(found, 0, sizeof(found));
  hl_status_t st = NULL;
  hl_mlir_op_t holder = {0};
  if (bop->has_properties && bop->properties_are_attr) {
    hl_mlir_attr_t d;
    st = decode_attr(v, (uint64_t)bop->properties_attr, &d, 0);
    for (int i = 0; !st && d.kind == HL_MATTR_DICT && i < d.n; i++)
      st = add_attr(&holder, d.keys[i], &d.items[i]);
    hl_mlir_attr_deinit(&d);
  } else if (bop->has_properties) {  // one attribute index each; told apart by their kind
    hl_bc_reader_t r = {bop->properties.data, bop->properties.data + bop->properties.size};
    for (int k = 0; !st && r.p != r.end; k++) {
      uint64_t idx;
      hl_mlir_attr_t a;
      if (k == 2 || !hl_bc_read_varint(&r, &idx)) {
        st = verr(v, "sdy.mesh: properties are not a name and a mesh");
        break;
      }
      st = decode_attr(v, idx, &a, 0);
      if (!st) st = add_attr(&holder, a.kind == HL_MATTR_STRING ? "sym_name" : "mesh", &a);
      hl_mlir_attr_deinit(&a);
    }
  }
  if (!st) st = read_attr_dict(v, bop, &holder);
  if (!st && (!take(&holder, "sym_name", &found[0]) || found[0].kind != HL_MATTR_STRING))
    st = verr(v, "sdy.mesh without a symbol name");
  if (!st && (!take(&holder, "mesh", &found[1]) || found[1].kind != HL_MATTR_RAW ||
              !found[1].s || strcmp(found[1].s, "sdy.mesh") != 0))
    st = verr(v, "sdy.mesh @%s without a Shardy mesh attribute", found[0].s ? found[0].s : "?");
  hl_mlir_op_deinit(&holder);
  hl_mlir_op_t *ops = st ? NULL : hl_realloc(f->meshes, ((size_t)f->mesh_count + 1) * sizeof(*ops));
  if (!st && !ops) st = HL_OOM();
  if (!st) {
    f->meshes = ops;
    hl_mlir_op_t *op = &ops[f->mesh_count];
    memset(op, 0, sizeof(*op));
    op->name = hl_strdup("sdy.mesh");
    op->items = hl_calloc(2, sizeof(hl_mlir_attr_t));
    if (!op->name || !op->items) {
      hl_free(op->name);
      hl_free(op->items);
      st = HL_OOM();
    } else {
      f->mesh_count++;
      op->item_count = 2;
      op->items[0] = found[0];
      op->items[0].kind = HL_MATTR_SYMBOL;
      op->items[1] = found[1];
      memset(found, 0, sizeof(found));
    }
  }
  hl_mlir_attr_deinit(&found[0]);
  hl_mlir_attr_deinit(&found[1]);
  return st;
}

// builtin.unrealized_conversion_cast (between VHLO and builtin tensor types,
// around Shardy's ops) is the identity here: its result stands for its
// operand, and the cast itself is dropped (is_cast).
static bool is_cast(const vctx_t *v, const hl_bc_op_t *op) {
  const hl_bc_op_name_t *on = &v->bc->op_names[op->name];
  return on->dialect == v->builtin && strcmp(on->name, "unrealized_conversion_cast") == 0 &&
         op->operand_count == 1 && op->result_count == 1 && op->region_count == 0;
}

static void note_aliases(const vctx_t *v, const hl_bc_block_t *b) {
  for (int i = 0; i < b->op_count; i++) {
    const hl_bc_op_t *op = &b->ops[i];
    if (is_cast(v, op) && op->operands[0] < v->bc->value_count)
      v->value_alias[op->first_result] = v->value_alias[op->operands[0]];
    for (int r = 0; r < op->region_count; r++)
      for (int k = 0; k < op->regions[r].block_count; k++) note_aliases(v, &op->regions[r].blocks[k]);
  }
}

static hl_status_t convert_module(vctx_t *v, hl_mlir_file_t *f, hl_vhlo_skipped_t *skipped) {
  const hl_bc_module_t *bc = v->bc;
  const hl_bc_block_t *top = &bc->top;
  if (top->op_count != 1 || bc->op_names[top->ops[0].name].dialect != v->builtin ||
      strcmp(bc->op_names[top->ops[0].name].name, "module") != 0)
    return verr(v, "the top level is not one builtin.module");
  const hl_bc_op_t *m = &top->ops[0];
  if (m->region_count != 1 || m->regions[0].block_count != 1)
    return verr(v, "builtin.module needs one region of one block");
  if (m->has_properties && !m->properties_are_attr) {
    // ModuleOp's properties: optional sym_name, sym_visibility.
    hl_bc_reader_t r = {m->properties.data, m->properties.data + m->properties.size};
    uint64_t x;
    if (hl_bc_read_varint(&r, &x) && (x & 1)) {
      hl_mlir_attr_t name;
      HL_RETURN_IF_ERROR(decode_attr(v, x >> 1, &name, 0));
      if (name.kind == HL_MATTR_STRING) {
        f->module_name = name.s;
        name.s = NULL;
      }
      hl_mlir_attr_deinit(&name);
    }
  }
  hl_mlir_op_t holder = {0};
  HL_RETURN_IF_ERROR(read_attr_dict(v, m, &holder));
  hl_mlir_attr_t name;
  if (take(&holder, "sym_name", &name)) {  // the module's name, when kept as an attribute
    if (name.kind == HL_MATTR_STRING && !f->module_name) {
      f->module_name = name.s;
      name.s = NULL;
    }
    hl_mlir_attr_deinit(&name);
  }
  f->module_attr_names = holder.attr_names;
  f->module_attrs = holder.attrs;
  f->module_attr_count = holder.attr_count;
  const hl_bc_block_t *body = &m->regions[0].blocks[0];
  f->ops = hl_calloc((size_t)body->op_count + 1, sizeof(hl_mlir_op_t));
  if (!f->ops) return HL_OOM();
  for (int i = 0; i < body->op_count; i++) {
    const hl_bc_op_name_t *on = &bc->op_names[body->ops[i].name];
    if (on->dialect == v->sdy && strcmp(on->name, "mesh") == 0) {
      HL_RETURN_IF_ERROR(convert_sdy_mesh(v, &body->ops[i], f));
      continue;
    }
    hl_mlir_op_t *op = &f->ops[f->op_count++];
    hl_status_t st = convert_op(v, &body->ops[i], false, op);
    if (!st && strcmp(op->name, "func.func") != 0)
      st = verr(v, "'%s' at module level (expected vhlo.func_v1)", op->name);
    if (st && skipped) {  // leave the function out, note why
      hl_mlir_op_deinit(op);
      f->op_count--;
      char **msgs = hl_realloc(skipped->messages, ((size_t)skipped->count + 1) * sizeof(char *));
      if (!msgs) {
        hl_status_free(st);
        return HL_OOM();
      }
      skipped->messages = msgs;
      msgs[skipped->count++] = hl_strdup(hl_status_message(st));
      hl_status_free(st);
      continue;
    }
    HL_RETURN_IF_ERROR(st);
  }
  return NULL;
}

void hl_vhlo_skipped_deinit(hl_vhlo_skipped_t *s) {
  for (int i = 0; s && i < s->count; i++) hl_free(s->messages[i]);
  if (s) hl_free(s->messages);
}

hl_status_t hl_vhlo_to_mlir(const hl_bc_module_t *bc, hl_mlir_file_t *out) {
  return hl_vhlo_to_mlir_partial(bc, out, NULL);
}

hl_status_t hl_vhlo_to_mlir_partial(const hl_bc_module_t *bc, hl_mlir_file_t *out,
                                    hl_vhlo_skipped_t *skipped) {
  if (skipped) memset(skipped, 0, sizeof(*skipped));
  memset(out, 0, sizeof(*out));
  out->path = bc->path;
  int last_quant = 0;
  vctx_t v = {bc, out, UINT32_MAX, UINT32_MAX, UINT32_MAX, NULL, NULL, 0, 0, 0, &last_quant};
  for (uint32_t i = 0; i < bc->dialect_count; i++) {
    if (strcmp(bc->dialects[i], "vhlo") == 0) v.vhlo = i;
    if (strcmp(bc->dialects[i], "builtin") == 0) v.builtin = i;
    if (strcmp(bc->dialects[i], "sdy") == 0) v.sdy = i;
  }
  // Before StableHLO named itself in the producer (JAX's early exports say
  // "MLIRxxx-trunk"), the VHLO dialect alone identifies the artifact.
  bool named = sscanf(bc->producer, "StableHLO_v%d.%d.%d", &v.major, &v.minor, &v.patch) == 3;
  if (!named && v.vhlo == UINT32_MAX)
    return HL_INVALID("%s: MLIR bytecode from '%s' is not a StableHLO portable artifact (no "
                      "VHLO dialect, producer not StableHLO_vX.Y.Z)", bc->path, bc->producer);
  if (named && v.major == 0 && v.minor < 9)
    return HL_INVALID("%s: portable artifact of StableHLO %d.%d.%d is older than 0.9.0, the "
                      "oldest with compatibility guarantees", bc->path, v.major, v.minor, v.patch);
  if (v.vhlo == UINT32_MAX) return verr(&v, "holds no VHLO dialect");
  v.value_type = hl_calloc((size_t)bc->value_count + 1, sizeof(uint64_t));
  if (!v.value_type) return HL_OOM();
  note_types(&bc->top, v.value_type);
  v.value_alias = hl_calloc((size_t)bc->value_count + 1, sizeof(uint32_t));
  if (!v.value_alias) {
    hl_free(v.value_type);
    return HL_OOM();
  }
  for (uint32_t i = 0; i < bc->value_count; i++) v.value_alias[i] = i;
  note_aliases(&v, &bc->top);
  hl_status_t st = convert_module(&v, out, skipped);
  hl_free(v.value_type);
  hl_free(v.value_alias);
  if (st) hl_mlir_file_deinit(out);
  return version_note(&v, st);
}

hl_status_t hl_bytecode_load_with_args(const uint8_t *data, size_t size, const char *path,
                                       hl_literal_t *const *args, int arg_count,
                                       hl_module_t **out_module, bool *out_needs_args) {
  *out_module = NULL;
  if (out_needs_args) *out_needs_args = false;
  hl_bc_module_t bc;
  HL_RETURN_IF_ERROR(hl_bc_read(data, size, path, &bc));
  hl_mlir_file_t file;
  hl_status_t st = hl_vhlo_to_mlir(&bc, &file);
  if (!st) {
    if (file.has_dynamic_shapes && arg_count < 0 && out_needs_args) *out_needs_args = true;
    st = hl_stablehlo_lower_file_with_args(&file, path, args, arg_count, out_module);
    hl_mlir_file_deinit(&file);
  }
  hl_bc_module_deinit(&bc);
  return st;
}

hl_status_t hl_bytecode_load(const uint8_t *data, size_t size, const char *path,
                             hl_module_t **out_module) {
  return hl_bytecode_load_with_args(data, size, path, NULL, -1, out_module, NULL);
}

hl_status_t hl_bytecode_entry_types(const uint8_t *data, size_t size, const char *path,
                                    hl_shape_t **out_types, int *out_count) {
  *out_types = NULL;
  *out_count = 0;
  hl_bc_module_t bc;
  HL_RETURN_IF_ERROR(hl_bc_read(data, size, path, &bc));
  hl_mlir_file_t file;
  hl_status_t st = hl_vhlo_to_mlir(&bc, &file);
  if (!st) {
    st = hl_stablehlo_file_entry_types(&file, path, out_types, out_count);
    hl_mlir_file_deinit(&file);
  }
  hl_bc_module_deinit(&bc);
  return st;
}
