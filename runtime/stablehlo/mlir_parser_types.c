// MLIR text parser: types (tensor, tuple, token, quantized element types)
// and alias uses (mlir_parser_internal.h). Shapes are scanned from the raw
// text because MLIR lexes `4x2xi64` differently from the rest.
#include <string.h>

#include "runtime/stablehlo/mlir_parser.h"
#include "runtime/stablehlo/mlir_parser_internal.h"
#include "runtime/stablehlo/quant_type.h"

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

hl_dtype_t hl_mlir_element_type(const char *s, size_t n) {
  static const struct {
    const char *name;
    hl_dtype_t t;
  } kTypes[] = {
      {"i1", HL_PRED},       {"i2", HL_S2},          {"i4", HL_S4},
      {"i8", HL_S8},         {"i16", HL_S16},        {"i32", HL_S32},
      {"i64", HL_S64},       {"si2", HL_S2},         {"si4", HL_S4},
      {"si8", HL_S8},        {"si16", HL_S16},       {"si32", HL_S32},
      {"si64", HL_S64},      {"ui1", HL_U1},         {"ui2", HL_U2},
      {"ui4", HL_U4},        {"ui8", HL_U8},         {"ui16", HL_U16},
      {"ui32", HL_U32},      {"ui64", HL_U64},       {"f16", HL_F16},
      {"f32", HL_F32},       {"f64", HL_F64},        {"bf16", HL_BF16},
      {"index", HL_S64},     {"f8E5M2", HL_F8E5M2},  {"f8E4M3FN", HL_F8E4M3FN},
      {"f8E4M3B11FNUZ", HL_F8E4M3B11FNUZ},           {"f8E5M2FNUZ", HL_F8E5M2FNUZ},
      {"f8E4M3FNUZ", HL_F8E4M3FNUZ},                 {"f8E4M3", HL_F8E4M3},
      {"f8E3M4", HL_F8E3M4}, {"f4E2M1FN", HL_F4E2M1FN}, {"f8E8M0FNU", HL_F8E8M0FNU},
      {"f6E2M3FN", HL_F6E2M3FN},                     {"f6E3M2FN", HL_F6E3M2FN},
  };
  for (size_t i = 0; i < sizeof(kTypes) / sizeof(kTypes[0]); i++)
    if (strlen(kTypes[i].name) == n && memcmp(kTypes[i].name, s, n) == 0) return kTypes[i].t;
  return HL_INVALID;
}


alias_t *hl_mlirp_find_alias(parser_t *p, const hl_mlir_token_t *t) {
  for (int i = 0; i < p->alias_count; i++)
    if (strlen(p->aliases[i].name) == t->length &&
        memcmp(p->aliases[i].name, t->text, t->length) == 0)
      return &p->aliases[i];
  return NULL;
}

// Parses the value an alias stands for, then resumes after the alias use.
hl_status_t hl_mlirp_parse_alias_use(parser_t *p, hl_shape_t *type_out, hl_mlir_attr_t *attr_out) {
  alias_t *al = hl_mlirp_find_alias(p, TOK);
  if (!al) return ERR("undefined alias");
  hl_mlir_lexer_t saved = p->lx;
  hl_mlir_lex_reset(&p->lx, al->pos, al->line, al->line_start);
  hl_status_t st = type_out ? hl_mlirp_parse_type(p, type_out) : hl_mlirp_parse_attr_value(p, attr_out, true);
  p->lx = saved;
  if (st) return st;
  advance(p);
  return NULL;
}

// `!quant.uniform<...>`: the element is its storage type; the quantization
// goes into the file's table and p->last_quant.
static hl_status_t parse_quant_element(parser_t *p, hl_dtype_t *out) {
  hl_mlir_token_t at = *TOK;
  size_t i = tok_end(p);
  hl_mlir_quant_type_t q;
  const char *msg = hl_mlir_scan_quant_uniform(p->lx.src, p->lx.size, &i, &q);
  if (msg) {
    hl_mlir_lex_seek(&p->lx, i);
    return ERR("%s", msg);
  }
  q.line = at.line;
  q.column = at.column;
  hl_mlir_file_t *f = p->file;
  hl_mlir_quant_type_t *slot = push(&f->quant_types, &f->quant_type_count, sizeof(q));
  if (!slot) {
    hl_free(q.scales);
    hl_free(q.zero_points);
    return HL_OOM();
  }
  *slot = q;
  p->last_quant = f->quant_type_count;
  *out = q.storage;
  hl_mlir_lex_seek(&p->lx, i);
  return NULL;
}

static hl_status_t parse_element_type(parser_t *p, hl_dtype_t *out) {
  if (at_ident(p, "complex")) {
    advance(p);
    HL_RETURN_IF_ERROR(expect_punct(p, '<'));
    hl_dtype_t inner;
    HL_RETURN_IF_ERROR(parse_element_type(p, &inner));
    if (inner != HL_F32 && inner != HL_F64) return ERR("complex element type must be f32 or f64");
    *out = inner == HL_F32 ? HL_C64 : HL_C128;
    return expect_punct(p, '>');
  }
  if (hl_mlir_tok_is(TOK, HL_MTOK_BANG, "!quant.uniform")) return parse_quant_element(p, out);
  if (TOK->kind == HL_MTOK_BANG && hl_mlirp_find_alias(p, TOK)) {  // `!q = !quant.uniform<...>`, tensor<4x!q>
    hl_shape_t s;
    HL_RETURN_IF_ERROR(hl_mlirp_parse_alias_use(p, &s, NULL));
    bool scalar = s.dtype != HL_TUPLE && s.dtype != HL_TOKEN && s.rank == 0;
    *out = s.dtype;
    hl_shape_deinit(&s);
    return scalar ? NULL : ERR("alias is not an element type");
  }
  if (TOK->kind == HL_MTOK_BANG) {
    if (TOK->length >= 6 && memcmp(TOK->text, "!quant", 6) == 0)
      return hl_status_annotate(ERR("quantized element types (!quant.uniform) are not supported"),
                                "unimplemented");
    return ERR("unknown element type");
  }
  if (TOK->kind != HL_MTOK_IDENT) return ERR("expected an element type");
  hl_dtype_t t = hl_mlir_element_type(TOK->text, TOK->length);
  if (t == HL_INVALID) return ERR("unsupported element type");
  *out = t;
  advance(p);
  return NULL;
}

// A bounded dynamic tensor type's encoding, `#stablehlo.bounds<8, ?>` or
// `#stablehlo.type_extensions<bounds = [8, ?]>`: each bounded '?' dimension
// holds its bound, as a bounded dynamic HLO shape (f32[<=8,4]) does, so an
// argument refined past it is refused (hl_refine_compatible). Other
// encodings are left alone.
static hl_status_t apply_bounds(parser_t *p, const hl_mlir_attr_t *enc, int rank, int64_t *dims,
                                uint32_t dynamic) {
  if (enc->kind != HL_MATTR_DIALECT || !enc->s) return NULL;
  const hl_mlir_attr_t *list = NULL;
  int n = 0;
  if (strcmp(enc->s, "stablehlo.bounds") == 0) {
    list = enc->items;
    n = enc->n;
  } else if (strcmp(enc->s, "stablehlo.type_extensions") == 0) {
    const hl_mlir_attr_t *b = hl_mlir_attr_member(enc, "bounds");
    if (!b || b->kind != HL_MATTR_ARRAY) return ERR("type_extensions without bounds = [...]");
    list = b->items;
    n = b->n;
  } else {
    return NULL;
  }
  if (n != rank) return ERR("%d bounds for a tensor of rank %d", n, rank);
  for (int d = 0; d < n; d++) {
    if (list[d].kind == HL_MATTR_WORD && list[d].s && strcmp(list[d].s, "?") == 0) continue;
    if (list[d].kind != HL_MATTR_INT || list[d].i < 0) return ERR("a bound must be '?' or a size");
    if (!(dynamic >> d & 1u)) return ERR("a bound on the static dimension %d", d);
    dims[d] = list[d].i;
  }
  return NULL;
}

static hl_status_t parse_tensor_type(parser_t *p, hl_shape_t *out) {
  advance(p);  // tensor
  if (!at_punct(p, '<')) return ERR("expected '<' after tensor");
  const char *s = p->lx.src;
  size_t i = tok_end(p), n = p->lx.size;
  int64_t dims[HL_MAX_RANK];
  int rank = 0;
  uint32_t dynamic = 0;
  for (;;) {
    while (i < n && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r')) i++;
    if (i < n && s[i] == '?') {  // refined from the arguments before lowering (refine_shapes.c)
      if (i + 1 >= n || s[i + 1] != 'x') return ERR("malformed tensor shape");
      if (rank == HL_MAX_RANK) return ERR("tensor rank above %d", HL_MAX_RANK);
      dynamic |= 1u << rank;
      dims[rank++] = -1;
      i += 2;
      continue;
    }
    if (i >= n || s[i] < '0' || s[i] > '9') break;
    int64_t d = 0;
    while (i < n && s[i] >= '0' && s[i] <= '9') {
      if (d > (INT64_MAX - 9) / 10) return ERR("tensor dimension too large");
      d = d * 10 + (s[i++] - '0');
    }
    if (i >= n || s[i] != 'x') return ERR("malformed tensor shape");
    i++;
    if (rank == HL_MAX_RANK) return ERR("tensor rank above %d", HL_MAX_RANK);
    dims[rank++] = d;
  }
  // Lines did not change unless the dims spanned lines (they never do in practice).
  hl_mlir_lex_seek(&p->lx, i);
  hl_dtype_t t;
  HL_RETURN_IF_ERROR(parse_element_type(p, &t));
  if (accept_punct(p, ',')) {  // encoding: bounds are kept, the rest is not needed
    int quant = p->last_quant;
    hl_mlir_attr_t enc = {0};
    hl_status_t st = hl_mlirp_parse_attr_value(p, &enc, false);
    if (!st) st = apply_bounds(p, &enc, rank, dims, dynamic);
    hl_mlir_attr_deinit(&enc);
    HL_RETURN_IF_ERROR(st);
    p->last_quant = quant;
  }
  HL_RETURN_IF_ERROR(expect_punct(p, '>'));
  *out = hl_shape_array(t, rank, dims);
  out->dynamic_mask = dynamic;
  if (dynamic) p->file->has_dynamic_shapes = true;
  return NULL;
}

static hl_status_t parse_type_nested(parser_t *p, hl_shape_t *out);

hl_status_t hl_mlirp_parse_type(parser_t *p, hl_shape_t *out) {
  if (p->nesting >= kMaxNesting)
    return ERR("types nest more than %d deep (or an alias refers to itself)", kMaxNesting);
  p->nesting++;
  p->last_quant = 0;
  hl_status_t st = parse_type_nested(p, out);
  p->nesting--;
  return st;
}

hl_status_t hl_mlirp_parse_attr_value(parser_t *p, hl_mlir_attr_t *a, bool allow_type_suffix) {
  if (p->nesting >= kMaxNesting)
    return ERR("attributes nest more than %d deep (or an alias refers to itself)", kMaxNesting);
  p->nesting++;
  hl_status_t st = hl_mlirp_parse_attr_value_nested(p, a, allow_type_suffix);
  p->nesting--;
  return st;
}

static hl_status_t parse_type_nested(parser_t *p, hl_shape_t *out) {
  memset(out, 0, sizeof(*out));
  if (at_ident(p, "tensor")) return parse_tensor_type(p, out);
  if (at_ident(p, "tuple")) {
    advance(p);
    HL_RETURN_IF_ERROR(expect_punct(p, '<'));
    hl_shape_t *el = NULL;
    int count = 0;
    hl_status_t st = NULL;
    while (!st && !at_punct(p, '>')) {
      hl_shape_t *slot = push(&el, &count, sizeof(hl_shape_t));
      if (!slot) st = HL_OOM();
      if (!st) st = hl_mlirp_parse_type(p, slot);
      if (!st && p->last_quant) st = ERR("tuples of quantized tensors are not supported");
      if (!st && !at_punct(p, '>')) st = expect_punct(p, ',');
    }
    if (!st) st = expect_punct(p, '>');
    if (!st) st = hl_shape_tuple(el, count, out);
    for (int i = 0; i < count; i++) hl_shape_deinit(&el[i]);
    hl_free(el);
    return st;
  }
  if (TOK->kind == HL_MTOK_BANG) {
    if (hl_mlir_tok_is(TOK, HL_MTOK_BANG, "!stablehlo.token")) {
      *out = hl_shape_token();
      advance(p);
      return NULL;
    }
    if (hl_mlirp_find_alias(p, TOK)) return hl_mlirp_parse_alias_use(p, out, NULL);
  }
  hl_dtype_t t;
  HL_RETURN_IF_ERROR(parse_element_type(p, &t));
  *out = hl_shape_scalar(t);
  return NULL;
}

bool hl_mlirp_at_type_start(parser_t *p) {
  if (TOK->kind == HL_MTOK_BANG) return true;
  if (TOK->kind != HL_MTOK_IDENT) return false;
  return at_ident(p, "tensor") || at_ident(p, "tuple") || at_ident(p, "complex") ||
         hl_mlir_element_type(TOK->text, TOK->length) != HL_INVALID;
}

// Records quantization id `id` for entry k of a type list.
hl_status_t hl_mlirp_record_quant(hl_mlir_quant_ids_t *q, int k, int id) {
  if (!id && k >= q->n) return NULL;
  if (k >= q->n) {
    int *ni = hl_realloc(q->ids, (size_t)(k + 1) * sizeof(int));
    if (!ni) return HL_OOM();
    for (int i = q->n; i <= k; i++) ni[i] = 0;
    q->ids = ni;
    q->n = k + 1;
  }
  q->ids[k] = id;
  return NULL;
}

hl_status_t hl_mlirp_push_type(parser_t *p, hl_shape_t **arr, int *n, hl_mlir_quant_ids_t *q) {
  hl_shape_t *slot = push(arr, n, sizeof(hl_shape_t));
  if (!slot) return HL_OOM();
  HL_RETURN_IF_ERROR(hl_mlirp_parse_type(p, slot));
  return hl_mlirp_record_quant(q, *n - 1, p->last_quant);
}

// ( type, type, ... ) -- the '(' is current.
hl_status_t hl_mlirp_parse_paren_types(parser_t *p, hl_shape_t **arr, int *n,
                                     hl_mlir_quant_ids_t *q) {
  HL_RETURN_IF_ERROR(expect_punct(p, '('));
  while (!at_punct(p, ')')) {
    HL_RETURN_IF_ERROR(hl_mlirp_push_type(p, arr, n, q));
    if (!at_punct(p, ')')) HL_RETURN_IF_ERROR(expect_punct(p, ','));
  }
  advance(p);
  return NULL;
}
