// MLIR text parser (see mlir_parser.h). Recursive descent over the tokens of
// mlir_lexer.c; shapes and dense bodies are scanned from the raw text because
// MLIR lexes `4x2xi64` and hex blobs differently from the rest.
#include "runtime/stablehlo/mlir_parser.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/stablehlo/mlir_generic.h"
#include "runtime/stablehlo/mlir_lexer.h"
#include "runtime/stablehlo/quant_type.h"

typedef struct alias {
  char *name;  // with its '#' or '!'
  size_t pos;  // offset of the aliased value
  int line;
  size_t line_start;
} alias_t;

typedef struct parser {
  hl_mlir_lexer_t lx;
  hl_mlir_file_t *file;
  alias_t *aliases;
  int alias_count, alias_cap;
  int nesting;  // types / attributes being parsed inside each other (and alias uses)
  int last_quant;  // quantization id of the type parse_type parsed last (0: none)
  bool seen_module;  // a top-level `module` was parsed: a file holds one
} parser_t;

// Deeper nesting of types, attribute values and alias uses is refused, so a
// hostile file (an alias defined by itself, ten thousand '[') cannot
// overflow the stack.
enum { kMaxNesting = 200 };

// Grows *arr (element size es) to hold *n + 1 elements; returns the new slot zeroed.
static void *push(void *arr_ptr, int *n, size_t es) {
  void **arr = (void **)arr_ptr;
  void *na = hl_realloc(*arr, (size_t)(*n + 1) * es);
  if (!na) return NULL;
  *arr = na;
  void *slot = (char *)na + (size_t)*n * es;
  memset(slot, 0, es);
  (*n)++;
  return slot;
}

#define TOK (&p->lx.tok)
#define ERR(...) hl_mlir_error_at(&p->lx, NULL, __VA_ARGS__)

static void advance(parser_t *p) { hl_mlir_lex_next(&p->lx); }

static bool at_punct(parser_t *p, char c) { return hl_mlir_tok_is_punct(TOK, c); }
static bool at_ident(parser_t *p, const char *s) { return hl_mlir_tok_is(TOK, HL_MTOK_IDENT, s); }

static hl_status_t expect_punct(parser_t *p, char c) {
  if (!at_punct(p, c)) return ERR("expected '%c'", c);
  advance(p);
  return NULL;
}

static bool accept_punct(parser_t *p, char c) {
  if (!at_punct(p, c)) return false;
  advance(p);
  return true;
}

// The byte right after the current token (raw scanning starts there).
static size_t tok_end(parser_t *p) { return hl_mlir_tok_offset(&p->lx) + TOK->length; }

static char *tok_strdup(const hl_mlir_token_t *t, size_t skip) {
  return hl_strndup(t->text + skip, t->length - skip);
}

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

static hl_status_t parse_type(parser_t *p, hl_shape_t *out);
static hl_status_t parse_attr_value(parser_t *p, hl_mlir_attr_t *a, bool allow_type_suffix);

static alias_t *find_alias(parser_t *p, const hl_mlir_token_t *t) {
  for (int i = 0; i < p->alias_count; i++)
    if (strlen(p->aliases[i].name) == t->length &&
        memcmp(p->aliases[i].name, t->text, t->length) == 0)
      return &p->aliases[i];
  return NULL;
}

// Parses the value an alias stands for, then resumes after the alias use.
static hl_status_t parse_alias_use(parser_t *p, hl_shape_t *type_out, hl_mlir_attr_t *attr_out) {
  alias_t *al = find_alias(p, TOK);
  if (!al) return ERR("undefined alias");
  hl_mlir_lexer_t saved = p->lx;
  hl_mlir_lex_reset(&p->lx, al->pos, al->line, al->line_start);
  hl_status_t st = type_out ? parse_type(p, type_out) : parse_attr_value(p, attr_out, true);
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
  if (TOK->kind == HL_MTOK_BANG && find_alias(p, TOK)) {  // `!q = !quant.uniform<...>`, tensor<4x!q>
    hl_shape_t s;
    HL_RETURN_IF_ERROR(parse_alias_use(p, &s, NULL));
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
  if (accept_punct(p, ',')) {  // encoding (bounds, sparsity): not needed for static shapes
    int quant = p->last_quant;
    hl_mlir_attr_t enc = {0};
    hl_status_t st = parse_attr_value(p, &enc, false);
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
static hl_status_t parse_attr_value_nested(parser_t *p, hl_mlir_attr_t *a, bool allow_type_suffix);

static hl_status_t parse_type(parser_t *p, hl_shape_t *out) {
  if (p->nesting >= kMaxNesting)
    return ERR("types nest more than %d deep (or an alias refers to itself)", kMaxNesting);
  p->nesting++;
  p->last_quant = 0;
  hl_status_t st = parse_type_nested(p, out);
  p->nesting--;
  return st;
}

static hl_status_t parse_attr_value(parser_t *p, hl_mlir_attr_t *a, bool allow_type_suffix) {
  if (p->nesting >= kMaxNesting)
    return ERR("attributes nest more than %d deep (or an alias refers to itself)", kMaxNesting);
  p->nesting++;
  hl_status_t st = parse_attr_value_nested(p, a, allow_type_suffix);
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
      if (!st) st = parse_type(p, slot);
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
    if (find_alias(p, TOK)) return parse_alias_use(p, out, NULL);
  }
  hl_dtype_t t;
  HL_RETURN_IF_ERROR(parse_element_type(p, &t));
  *out = hl_shape_scalar(t);
  return NULL;
}

static bool at_type_start(parser_t *p) {
  if (TOK->kind == HL_MTOK_BANG) return true;
  if (TOK->kind != HL_MTOK_IDENT) return false;
  return at_ident(p, "tensor") || at_ident(p, "tuple") || at_ident(p, "complex") ||
         hl_mlir_element_type(TOK->text, TOK->length) != HL_INVALID;
}

// Records quantization id `id` for entry k of a type list.
static hl_status_t record_quant(hl_mlir_quant_ids_t *q, int k, int id) {
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

static hl_status_t push_type(parser_t *p, hl_shape_t **arr, int *n, hl_mlir_quant_ids_t *q) {
  hl_shape_t *slot = push(arr, n, sizeof(hl_shape_t));
  if (!slot) return HL_OOM();
  HL_RETURN_IF_ERROR(parse_type(p, slot));
  return record_quant(q, *n - 1, p->last_quant);
}

// ( type, type, ... ) -- the '(' is current.
static hl_status_t parse_paren_types(parser_t *p, hl_shape_t **arr, int *n,
                                     hl_mlir_quant_ids_t *q) {
  HL_RETURN_IF_ERROR(expect_punct(p, '('));
  while (!at_punct(p, ')')) {
    HL_RETURN_IF_ERROR(push_type(p, arr, n, q));
    if (!at_punct(p, ')')) HL_RETURN_IF_ERROR(expect_punct(p, ','));
  }
  advance(p);
  return NULL;
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

static hl_status_t unescape_string(parser_t *p, hl_mlir_attr_t *a) {
  const char *s = TOK->text + 1;
  size_t n = TOK->length - 2;
  char *out = hl_malloc(n + 1);
  if (!out) return HL_OOM();
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (c == '\\' && i + 1 < n) {
      char d = s[++i];
      if (d == 'n') c = '\n';
      else if (d == 't') c = '\t';
      else if (d == '\\' || d == '"') c = d;
      else if (i + 1 < n && strchr("0123456789abcdefABCDEF", d) &&
               strchr("0123456789abcdefABCDEF", s[i + 1])) {
        char hex[3] = {d, s[i + 1], 0};
        c = (char)strtol(hex, NULL, 16);
        i++;
      } else {
        c = d;
      }
    }
    out[o++] = c;
  }
  out[o] = 0;
  a->s = out;
  a->s_len = o;
  return NULL;
}

static hl_status_t parse_number(parser_t *p, hl_mlir_attr_t *a) {
  char buf[64];
  size_t n = TOK->length < sizeof(buf) - 1 ? TOK->length : sizeof(buf) - 1;
  memcpy(buf, TOK->text, n);
  buf[n] = 0;
  errno = 0;
  if (TOK->kind == HL_MTOK_FLOAT) {
    a->kind = HL_MATTR_FLOAT;
    a->f = strtod(buf, NULL);
  } else {
    a->kind = HL_MATTR_INT;
    bool neg = buf[0] == '-';
    const char *digits = neg ? buf + 1 : buf;
    bool hex = digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X');
    a->u = strtoull(digits, NULL, hex ? 16 : 10);
    if (errno == ERANGE) return ERR("integer out of range");
    a->i = neg ? (int64_t)(0 - a->u) : (int64_t)a->u;
    a->f = neg ? -(double)a->u : (double)a->u;
  }
  advance(p);
  return NULL;
}

// The body of dense<...> is kept as raw text: it is decoded once the type is
// known (and a 100 MB hex blob must not go through the tokenizer).
static hl_status_t scan_angle_body(parser_t *p, const char **out_raw, size_t *out_len) {
  if (!at_punct(p, '<')) return ERR("expected '<'");
  const char *s = p->lx.src;
  size_t start = tok_end(p), i = start, n = p->lx.size;
  int depth = 1;
  while (i < n) {
    char c = s[i];
    if (c == '"') {
      const char *q = memchr(s + i + 1, '"', n - i - 1);
      if (!q) break;
      i = (size_t)(q - s) + 1;
      continue;
    }
    if (c == '<') depth++;
    if (c == '>' && --depth == 0) break;
    i++;
  }
  if (i >= n) return ERR("unterminated '<'");
  *out_raw = s + start;
  *out_len = i - start;
  hl_mlir_lex_seek(&p->lx, i + 1);
  return NULL;
}

// The text of a bracketed group at the current token ('<', '[', '{' or
// '(' through its balanced closer, brackets of every kind counted, strings
// skipped), without the outer brackets; the parser continues after it.
static hl_status_t scan_raw_group(parser_t *p, const char **out_raw, size_t *out_len) {
  const char *s = p->lx.src;
  size_t start = tok_end(p), i = start, n = p->lx.size;
  int depth = 1;
  while (i < n) {
    char c = s[i];
    if (c == '"') {
      size_t j = i + 1;
      while (j < n && s[j] != '"') j += s[j] == '\\' ? 2 : 1;
      i = j + 1;
      continue;
    }
    if (c == '-' && i + 1 < n && s[i + 1] == '>') {  // an arrow is no closer
      i += 2;
      continue;
    }
    if (c == '<' || c == '[' || c == '{' || c == '(') depth++;
    if ((c == '>' || c == ']' || c == '}' || c == ')') && --depth == 0) break;
    i++;
  }
  if (i >= n) return ERR("unterminated bracket");
  *out_raw = s + start;
  *out_len = i - start;
  hl_mlir_lex_seek(&p->lx, i + 1);
  return NULL;
}

static hl_status_t parse_dict(parser_t *p, hl_mlir_attr_t *a);

// Items of #dialect.name<...>: `key = value` or bare values, ',' optional.
static hl_status_t parse_dialect_body(parser_t *p, hl_mlir_attr_t *a) {
  HL_RETURN_IF_ERROR(expect_punct(p, '<'));
  while (!at_punct(p, '>')) {
    if (TOK->kind == HL_MTOK_EOF) return ERR("unterminated dialect attribute");
    if (accept_punct(p, ',')) continue;
    char *key = NULL;
    if (TOK->kind == HL_MTOK_IDENT) {
      hl_mlir_lexer_t saved = p->lx;
      hl_mlir_token_t name = *TOK;
      advance(p);
      if (at_punct(p, '=')) {
        advance(p);
        key = tok_strdup(&name, 0);
        if (!key) return HL_OOM();
      } else {
        p->lx = saved;
      }
    }
    int n = a->n;
    hl_mlir_attr_t *slot = push(&a->items, &a->n, sizeof(hl_mlir_attr_t));
    char **kslot = slot ? push(&a->keys, &n, sizeof(char *)) : NULL;
    if (!slot || !kslot) {
      hl_free(key);
      return HL_OOM();
    }
    *kslot = key;
    slot->line = TOK->line;
    slot->column = TOK->column;
    if (TOK->kind == HL_MTOK_ARROW || at_punct(p, '?') || at_punct(p, '*')) {
      slot->kind = HL_MATTR_WORD;
      slot->s = tok_strdup(TOK, 0);
      if (!slot->s) return HL_OOM();
      advance(p);
    } else {
      HL_RETURN_IF_ERROR(parse_attr_value(p, slot, true));
    }
  }
  advance(p);
  return NULL;
}

static hl_status_t parse_array(parser_t *p, hl_mlir_attr_t *a) {
  a->kind = HL_MATTR_ARRAY;
  HL_RETURN_IF_ERROR(expect_punct(p, '['));
  while (!at_punct(p, ']')) {
    hl_mlir_attr_t *slot = push(&a->items, &a->n, sizeof(hl_mlir_attr_t));
    if (!slot) return HL_OOM();
    HL_RETURN_IF_ERROR(parse_attr_value(p, slot, true));
    if (!at_punct(p, ']')) HL_RETURN_IF_ERROR(expect_punct(p, ','));
  }
  advance(p);
  return NULL;
}

// array<i64: 1, 2, 3> / array<i1: true> / array<i64>
static hl_status_t parse_dense_array(parser_t *p, hl_mlir_attr_t *a) {
  a->kind = HL_MATTR_ARRAY;
  advance(p);
  HL_RETURN_IF_ERROR(expect_punct(p, '<'));
  HL_RETURN_IF_ERROR(parse_type(p, &a->type));
  a->type_quant = p->last_quant;
  a->has_type = true;
  if (accept_punct(p, ':')) {
    while (!at_punct(p, '>')) {
      hl_mlir_attr_t *slot = push(&a->items, &a->n, sizeof(hl_mlir_attr_t));
      if (!slot) return HL_OOM();
      HL_RETURN_IF_ERROR(parse_attr_value(p, slot, false));
      if (!at_punct(p, '>')) HL_RETURN_IF_ERROR(expect_punct(p, ','));
    }
  }
  return expect_punct(p, '>');
}

// (t, ...) -> t | (t, ...) as HL_MATTR_FUNCTION_TYPE.
static hl_status_t parse_function_type_attr(parser_t *p, hl_mlir_attr_t *a) {
  a->kind = HL_MATTR_FUNCTION_TYPE;
  a->items = hl_calloc(2, sizeof(hl_mlir_attr_t));
  if (!a->items) return HL_OOM();
  a->n = 2;
  hl_shape_t *types[2] = {NULL, NULL};
  int counts[2] = {0, 0};
  hl_mlir_quant_ids_t quant[2] = {{0}, {0}};
  hl_status_t st = parse_paren_types(p, &types[0], &counts[0], &quant[0]);
  if (!st && TOK->kind != HL_MTOK_ARROW) st = ERR("expected '->' in function type");
  if (!st) {
    advance(p);
    st = at_punct(p, '(') ? parse_paren_types(p, &types[1], &counts[1], &quant[1])
                          : push_type(p, &types[1], &counts[1], &quant[1]);
  }
  // A function type as an attribute value keeps no quantization table.
  for (int k = 0; k < 2; k++) {
    for (int i = 0; !st && i < quant[k].n; i++)
      if (quant[k].ids[i]) st = ERR("!quant.uniform types in a generic function type are not supported");
    hl_free(quant[k].ids);
  }
  for (int k = 0; k < 2; k++) {
    hl_mlir_attr_t *list = &a->items[k];
    list->kind = HL_MATTR_ARRAY;
    list->items = hl_calloc((size_t)counts[k] + 1, sizeof(hl_mlir_attr_t));
    if (!list->items && !st) st = HL_OOM();
    for (int i = 0; i < counts[k]; i++) {
      if (list->items) {
        list->items[i].kind = HL_MATTR_TYPE;
        list->items[i].has_type = true;
        list->items[i].type = types[k][i];
        list->n = i + 1;
      } else {
        hl_shape_deinit(&types[k][i]);
      }
    }
    hl_free(types[k]);
  }
  return st;
}

static hl_status_t parse_attr_value_nested(parser_t *p, hl_mlir_attr_t *a,
                                           bool allow_type_suffix) {
  a->line = TOK->line;
  a->column = TOK->column;
  switch (TOK->kind) {
    case HL_MTOK_INT:
    case HL_MTOK_FLOAT:
      HL_RETURN_IF_ERROR(parse_number(p, a));
      break;
    case HL_MTOK_STRING:
      a->kind = HL_MATTR_STRING;
      HL_RETURN_IF_ERROR(unescape_string(p, a));
      advance(p);
      break;
    case HL_MTOK_SYMBOL:
      a->kind = HL_MATTR_SYMBOL;
      a->s = TOK->text[1] == '"' ? hl_strndup(TOK->text + 2, TOK->length - 3) : tok_strdup(TOK, 1);
      if (!a->s) return HL_OOM();
      advance(p);
      break;
    case HL_MTOK_HASH: {
      bool body = tok_end(p) < p->lx.size && p->lx.src[tok_end(p)] == '<';
      if (!body && find_alias(p, TOK)) return parse_alias_use(p, NULL, a);
      a->kind = HL_MATTR_DIALECT;
      a->s = tok_strdup(TOK, 1);
      if (!a->s) return HL_OOM();
      advance(p);
      if (body && strncmp(a->s, "sdy.", 4) == 0) {  // Shardy syntax: read by sharding_attrs.c
        a->kind = HL_MATTR_RAW;
        HL_RETURN_IF_ERROR(scan_raw_group(p, &a->raw, &a->raw_len));
      } else if (body) {
        HL_RETURN_IF_ERROR(parse_dialect_body(p, a));
      }
      break;
    }
    case HL_MTOK_PUNCT:
      if (at_punct(p, '[')) {
        HL_RETURN_IF_ERROR(parse_array(p, a));
      } else if (at_punct(p, '{')) {
        HL_RETURN_IF_ERROR(parse_dict(p, a));
      } else if (at_punct(p, '<')) {  // an op's own attribute in short form: algorithm = <...>
        a->kind = HL_MATTR_DIALECT;
        a->s = hl_strdup("");
        if (!a->s) return HL_OOM();
        HL_RETURN_IF_ERROR(parse_dialect_body(p, a));
      } else if (at_punct(p, '(')) {  // a function type: generic func.func's function_type
        HL_RETURN_IF_ERROR(parse_function_type_attr(p, a));
        return NULL;
      } else if (at_punct(p, '-') || at_punct(p, '?')) {
        a->kind = HL_MATTR_WORD;
        a->s = tok_strdup(TOK, 0);
        if (!a->s) return HL_OOM();
        advance(p);
      } else {
        return ERR("expected an attribute value");
      }
      break;
    case HL_MTOK_BANG:
      a->kind = HL_MATTR_TYPE;
      HL_RETURN_IF_ERROR(parse_type(p, &a->type));
      a->type_quant = p->last_quant;
      a->has_type = true;
      return NULL;
    case HL_MTOK_IDENT:
      if (at_ident(p, "true") || at_ident(p, "false")) {
        a->kind = HL_MATTR_BOOL;
        a->b = at_ident(p, "true");
        advance(p);
      } else if (at_ident(p, "unit")) {
        a->kind = HL_MATTR_UNIT;
        advance(p);
      } else if (at_ident(p, "dense") || at_ident(p, "dense_resource")) {
        bool resource = at_ident(p, "dense_resource");
        advance(p);
        a->kind = resource ? HL_MATTR_RESOURCE : HL_MATTR_DENSE;
        HL_RETURN_IF_ERROR(scan_angle_body(p, &a->raw, &a->raw_len));
        if (resource) {
          const char *r = a->raw;
          size_t len = a->raw_len;
          while (len && (*r == ' ' || *r == '\n')) r++, len--;
          while (len && (r[len - 1] == ' ' || r[len - 1] == '\n')) len--;
          a->s = hl_strndup(r, len);
          if (!a->s) return HL_OOM();
        }
      } else if (at_ident(p, "array")) {
        HL_RETURN_IF_ERROR(parse_dense_array(p, a));
      } else if (at_ident(p, "loc") && tok_end(p) < p->lx.size && p->lx.src[tok_end(p)] == '(') {
        // A location used as an attribute value: debug information, kept as text.
        a->kind = HL_MATTR_RAW;
        a->s = hl_strdup("loc");
        if (!a->s) return HL_OOM();
        advance(p);
        HL_RETURN_IF_ERROR(scan_raw_group(p, &a->raw, &a->raw_len));
      } else if (at_type_start(p) && !at_ident(p, "i") && !at_ident(p, "f")) {
        a->kind = HL_MATTR_TYPE;
        HL_RETURN_IF_ERROR(parse_type(p, &a->type));
        a->type_quant = p->last_quant;
        a->has_type = true;
        return NULL;
      } else {
        a->kind = HL_MATTR_WORD;
        a->s = tok_strdup(TOK, 0);
        if (!a->s) return HL_OOM();
        advance(p);
      }
      break;
    default:
      return ERR("expected an attribute value");
  }
  if (allow_type_suffix && at_punct(p, ':')) {
    hl_mlir_lexer_t saved = p->lx;
    advance(p);
    if (!at_type_start(p)) {
      p->lx = saved;
      return NULL;
    }
    hl_shape_deinit(&a->type);
    HL_RETURN_IF_ERROR(parse_type(p, &a->type));
    a->type_quant = p->last_quant;
    a->has_type = true;
  }
  return NULL;
}

static hl_status_t dict_add(parser_t *p, char ***names, hl_mlir_attr_t **vals, int *count) {
  int n = *count;
  char **nslot = push(names, &n, sizeof(char *));
  hl_mlir_attr_t *vslot = nslot ? push(vals, count, sizeof(hl_mlir_attr_t)) : NULL;
  if (!vslot) return HL_OOM();
  if (TOK->kind == HL_MTOK_STRING) {
    *nslot = hl_strndup(TOK->text + 1, TOK->length - 2);
  } else if (TOK->kind == HL_MTOK_IDENT) {
    *nslot = tok_strdup(TOK, 0);
  } else {
    return ERR("expected an attribute name");
  }
  if (!*nslot) return HL_OOM();
  vslot->line = TOK->line;
  vslot->column = TOK->column;
  advance(p);
  if (accept_punct(p, '=')) return parse_attr_value(p, vslot, true);
  vslot->kind = HL_MATTR_UNIT;
  return NULL;
}

// {name = value, flag, ...} into parallel name / value arrays.
static hl_status_t parse_named_dict(parser_t *p, char ***names, hl_mlir_attr_t **vals,
                                    int *count) {
  HL_RETURN_IF_ERROR(expect_punct(p, '{'));
  while (!at_punct(p, '}')) {
    HL_RETURN_IF_ERROR(dict_add(p, names, vals, count));
    if (!at_punct(p, '}')) HL_RETURN_IF_ERROR(expect_punct(p, ','));
  }
  advance(p);
  return NULL;
}

static hl_status_t parse_dict(parser_t *p, hl_mlir_attr_t *a) {
  a->kind = HL_MATTR_DICT;
  int n = 0;
  hl_status_t st = parse_named_dict(p, &a->keys, &a->items, &n);
  a->n = n;
  return st;
}

static hl_status_t skip_loc(parser_t *p) {
  while (at_ident(p, "loc")) {
    advance(p);
    HL_RETURN_IF_ERROR(expect_punct(p, '('));
    int depth = 1;
    while (depth > 0) {
      if (TOK->kind == HL_MTOK_EOF) return ERR("unterminated loc(");
      if (at_punct(p, '(')) depth++;
      if (at_punct(p, ')')) depth--;
      advance(p);
    }
  }
  return NULL;
}

//===----------------------------------------------------------------------===//
// Operations and regions
//===----------------------------------------------------------------------===//

static hl_status_t parse_op(parser_t *p, hl_mlir_op_t *op);

static hl_status_t value_ref(parser_t *p, hl_mlir_value_ref_t *r) {
  if (TOK->kind != HL_MTOK_VALUE) return ERR("expected a value (%%name)");
  const char *t = TOK->text + 1;
  size_t n = TOK->length - 1;
  const char *hash = memchr(t, '#', n);
  r->index = 0;
  if (hash) {
    r->index = atoi(hash + 1);
    n = (size_t)(hash - t);
  }
  r->name = hl_strndup(t, n);
  r->line = TOK->line;
  r->column = TOK->column;
  if (!r->name) return HL_OOM();
  advance(p);
  return NULL;
}

static hl_status_t push_operand(parser_t *p, hl_mlir_op_t *op) {
  hl_mlir_value_ref_t *slot = push(&op->operands, &op->operand_count, sizeof(*slot));
  if (!slot) return HL_OOM();
  return value_ref(p, slot);
}

// (%a: type, ...) appended to b's arguments; the '(' is current.
static hl_status_t parse_block_arg_list(parser_t *p, hl_mlir_block_t *b) {
  advance(p);  // '('
  while (!at_punct(p, ')')) {
    if (TOK->kind != HL_MTOK_VALUE) return ERR("expected a block argument");
    int n = b->arg_count;
    char **nslot = push(&b->arg_names, &n, sizeof(char *));
    hl_shape_t *tslot = nslot ? push(&b->arg_types, &b->arg_count, sizeof(hl_shape_t)) : NULL;
    if (!tslot) return HL_OOM();
    *nslot = tok_strdup(TOK, 1);
    if (!*nslot) return HL_OOM();
    advance(p);
    HL_RETURN_IF_ERROR(expect_punct(p, ':'));
    HL_RETURN_IF_ERROR(parse_type(p, tslot));
    HL_RETURN_IF_ERROR(record_quant(&b->arg_quant, b->arg_count - 1, p->last_quant));
    HL_RETURN_IF_ERROR(skip_loc(p));
    if (!at_punct(p, ')')) HL_RETURN_IF_ERROR(expect_punct(p, ','));
  }
  advance(p);
  return NULL;
}

// ^bb0(%a: type, ...):
static hl_status_t parse_block_header(parser_t *p, hl_mlir_block_t *b) {
  advance(p);  // ^bbN
  if (at_punct(p, '(')) HL_RETURN_IF_ERROR(parse_block_arg_list(p, b));
  return expect_punct(p, ':');
}

static hl_status_t parse_region_nested(parser_t *p, hl_mlir_region_t *r);

static hl_status_t parse_region(parser_t *p, hl_mlir_region_t *r) {
  if (p->nesting >= kMaxNesting)
    return ERR("regions nest more than %d deep", kMaxNesting);
  p->nesting++;
  hl_status_t st = parse_region_nested(p, r);
  p->nesting--;
  return st;
}

static hl_status_t parse_region_nested(parser_t *p, hl_mlir_region_t *r) {
  HL_RETURN_IF_ERROR(expect_punct(p, '{'));
  hl_mlir_block_t *b = push(&r->blocks, &r->block_count, sizeof(*b));
  if (!b) return HL_OOM();
  if (TOK->kind == HL_MTOK_BLOCK) HL_RETURN_IF_ERROR(parse_block_header(p, b));
  while (!at_punct(p, '}')) {
    if (TOK->kind == HL_MTOK_EOF) return ERR("unterminated region");
    if (TOK->kind == HL_MTOK_BLOCK) {
      if (b->op_count == 0 && r->block_count == 1 && !b->arg_count) {
        HL_RETURN_IF_ERROR(parse_block_header(p, b));
        continue;
      }
      return ERR("regions with more than one block are not supported");
    }
    hl_mlir_op_t *op = push(&b->ops, &b->op_count, sizeof(*op));
    if (!op) return HL_OOM();
    HL_RETURN_IF_ERROR(parse_op(p, op));
  }
  advance(p);
  return NULL;
}

static hl_status_t push_region(parser_t *p, hl_mlir_op_t *op) {
  hl_mlir_region_t *r = push(&op->regions, &op->region_count, sizeof(*r));
  if (!r) return HL_OOM();
  return parse_region(p, r);
}

// ':' then `(types) -> type-or-(types)` or `type, type, ...`.
static hl_status_t parse_signature(parser_t *p, hl_mlir_op_t *op) {
  advance(p);  // ':'
  if (at_punct(p, '(')) {
    HL_RETURN_IF_ERROR(parse_paren_types(p, &op->operand_types, &op->operand_type_count,
                                         &op->operand_type_quant));
    if (TOK->kind != HL_MTOK_ARROW) return ERR("expected '->' in function type");
    advance(p);
    op->has_function_type = true;
    if (at_punct(p, '(')) return parse_paren_types(p, &op->result_types, &op->result_type_count,
                                                    &op->result_type_quant);
    return push_type(p, &op->result_types, &op->result_type_count, &op->result_type_quant);
  }
  HL_RETURN_IF_ERROR(push_type(p, &op->operand_types, &op->operand_type_count, &op->operand_type_quant));
  if (at_ident(p, "to")) {  // arith / tensor casts: `: type to type`
    advance(p);
    op->has_function_type = true;
    return push_type(p, &op->result_types, &op->result_type_count, &op->result_type_quant);
  }
  if (TOK->kind == HL_MTOK_ARROW) {  // CHLO's `: type -> type`
    advance(p);
    op->has_function_type = true;
    if (at_punct(p, '(')) return parse_paren_types(p, &op->result_types, &op->result_type_count,
                                                    &op->result_type_quant);
    return push_type(p, &op->result_types, &op->result_type_count, &op->result_type_quant);
  }
  while (at_punct(p, ',')) {
    hl_mlir_lexer_t saved = p->lx;
    advance(p);
    if (!at_type_start(p)) {
      p->lx = saved;
      break;
    }
    HL_RETURN_IF_ERROR(push_type(p, &op->operand_types, &op->operand_type_count, &op->operand_type_quant));
  }
  if (TOK->kind == HL_MTOK_ARROW) {  // CHLO's `: type, type -> type` (next_after, zeta)
    advance(p);
    op->has_function_type = true;
    if (at_punct(p, '(')) return parse_paren_types(p, &op->result_types, &op->result_type_count,
                                                    &op->result_type_quant);
    return push_type(p, &op->result_types, &op->result_type_count, &op->result_type_quant);
  }
  return NULL;
}

static bool looks_like_region(parser_t *p) {
  // After '{': a block label, an op result, a generic op, or a dotted op name
  // not followed by '='.
  hl_mlir_lexer_t saved = p->lx;
  advance(p);
  bool region = false;
  if (TOK->kind == HL_MTOK_BLOCK || TOK->kind == HL_MTOK_VALUE || at_punct(p, '}')) {
    region = TOK->kind != HL_MTOK_PUNCT;
  } else if (TOK->kind == HL_MTOK_STRING) {
    advance(p);
    region = at_punct(p, '(');
  } else if (TOK->kind == HL_MTOK_IDENT && memchr(TOK->text, '.', TOK->length)) {
    advance(p);
    region = !at_punct(p, '=');
  } else if (at_ident(p, "return")) {
    region = true;
  }
  p->lx = saved;
  return region;
}

static hl_status_t push_item(parser_t *p, hl_mlir_op_t *op, hl_mlir_attr_t **out) {
  *out = push(&op->items, &op->item_count, sizeof(hl_mlir_attr_t));
  return *out ? NULL : HL_OOM();
}

// [0:2, 1:3:1] or [2]: one ARRAY per ',' group of ':' separated integers.
static hl_status_t parse_slice_item(parser_t *p, hl_mlir_attr_t *a) {
  a->kind = HL_MATTR_ARRAY;
  a->line = TOK->line;
  a->column = TOK->column;
  advance(p);
  while (!at_punct(p, ']')) {
    hl_mlir_attr_t *dim = push(&a->items, &a->n, sizeof(*dim));
    if (!dim) return HL_OOM();
    dim->kind = HL_MATTR_ARRAY;
    for (;;) {
      hl_mlir_attr_t *v = push(&dim->items, &dim->n, sizeof(*v));
      if (!v) return HL_OOM();
      if (TOK->kind != HL_MTOK_INT) return ERR("expected an integer");
      HL_RETURN_IF_ERROR(parse_number(p, v));
      if (!accept_punct(p, ':')) break;
    }
    if (!at_punct(p, ']')) HL_RETURN_IF_ERROR(expect_punct(p, ','));
  }
  advance(p);
  return NULL;
}

// dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]: an ARRAY of the three arrays.
static hl_status_t parse_conv_dim_numbers(parser_t *p, hl_mlir_attr_t *a) {
  a->kind = HL_MATTR_ARRAY;
  a->line = TOK->line;
  a->column = TOK->column;
  for (int k = 0; k < 3; k++) {
    hl_mlir_attr_t *slot = push(&a->items, &a->n, sizeof(*slot));
    if (!slot) return HL_OOM();
    HL_RETURN_IF_ERROR(parse_array(p, slot));
    if (k == 0) {
      if (!at_ident(p, "x")) return ERR("expected 'x' in dim_numbers");
      advance(p);
    } else if (k == 1) {
      if (TOK->kind != HL_MTOK_ARROW) return ERR("expected '->' in dim_numbers");
      advance(p);
    }
  }
  return NULL;
}

// dot_general's batching_dims = [0] x [0]: an ARRAY of the two arrays.
static hl_status_t parse_dims_pair(parser_t *p, hl_mlir_attr_t *a) {
  a->kind = HL_MATTR_ARRAY;
  a->line = TOK->line;
  a->column = TOK->column;
  for (int k = 0; k < 2; k++) {
    hl_mlir_attr_t *slot = push(&a->items, &a->n, sizeof(*slot));
    if (!slot) return HL_OOM();
    HL_RETURN_IF_ERROR(parse_array(p, slot));
    if (k == 0) {
      if (!at_ident(p, "x")) return ERR("expected 'x' between the lhs and rhs dimensions");
      advance(p);
    }
  }
  return NULL;
}

// Parenthesized operands of a pretty op: (%a, %b), (%iter = %init, ...), (%x init: %y).
// Counts the `init:` seen in *inits (when not NULL).
static hl_status_t parse_paren_operands(parser_t *p, hl_mlir_op_t *op, int *inits) {
  advance(p);  // '('
  while (!at_punct(p, ')')) {
    if (at_ident(p, "init")) {
      advance(p);
      HL_RETURN_IF_ERROR(expect_punct(p, ':'));
      if (inits) ++*inits;
      continue;
    }
    if (TOK->kind == HL_MTOK_IDENT) {  // chlo.top_k(%x, k = 8, is_stable = true)
      hl_mlir_token_t name = *TOK;
      advance(p);
      HL_RETURN_IF_ERROR(expect_punct(p, '='));
      int n = op->attr_count;
      char **nslot = push(&op->attr_names, &n, sizeof(char *));
      hl_mlir_attr_t *v = nslot ? push(&op->attrs, &op->attr_count, sizeof(*v)) : NULL;
      if (!v || !(*nslot = tok_strdup(&name, 0))) return HL_OOM();
      HL_RETURN_IF_ERROR(parse_attr_value(p, v, false));
      accept_punct(p, ',');
      continue;
    }
    if (TOK->kind != HL_MTOK_VALUE) return ERR("expected an operand");
    hl_mlir_lexer_t saved = p->lx;
    hl_mlir_token_t name = *TOK;
    advance(p);
    if (at_punct(p, '=')) {
      char **slot = push(&op->iter_arg_names, &op->iter_arg_count, sizeof(char *));
      if (!slot || !(*slot = tok_strdup(&name, 1))) return HL_OOM();
      advance(p);
    } else {
      p->lx = saved;
    }
    HL_RETURN_IF_ERROR(push_operand(p, op));
    accept_punct(p, ',');
  }
  advance(p);
  return NULL;
}

static bool ends_pretty_op(parser_t *p, bool after_comma) {
  if (TOK->kind == HL_MTOK_EOF || at_punct(p, '}') || at_punct(p, ':')) return true;
  if (after_comma || TOK->line == p->lx.prev_line) return false;
  // A new line that starts a new op ends this one.
  if (TOK->kind == HL_MTOK_VALUE || TOK->kind == HL_MTOK_BLOCK || TOK->kind == HL_MTOK_STRING)
    return true;
  if (TOK->kind == HL_MTOK_IDENT && (memchr(TOK->text, '.', TOK->length) || at_ident(p, "return")))
    return true;
  return false;
}

// Pretty reduce of several inputs: `(%a init: %x), (%b init: %y)` lists each
// input beside its init value; the op takes the inputs, then the inits.
static hl_status_t order_inputs_before_inits(parser_t *p, hl_mlir_op_t *op, int first, int inits) {
  int n = op->operand_count - first;
  if (inits < 2) return NULL;
  if (n != 2 * inits) return ERR("expected one input per init value in %s", op->name);
  hl_mlir_value_ref_t *v = op->operands + first;
  hl_mlir_value_ref_t *tmp = hl_malloc((size_t)n * sizeof(*tmp));
  if (!tmp) return HL_OOM();
  for (int i = 0; i < inits; i++) {
    tmp[i] = v[2 * i];
    tmp[inits + i] = v[2 * i + 1];
  }
  memcpy(v, tmp, (size_t)n * sizeof(*tmp));
  hl_free(tmp);
  return NULL;
}

// Pretty reduce's `reducer(%a0: t, %b0: t) (%a1: t, %b1: t) { body }`: one
// (accumulator, element) pair per input; the body's block takes every
// accumulator, then every element (how MLIR prints and parses it).
static hl_status_t parse_reducer(parser_t *p, hl_mlir_op_t *op) {
  advance(p);  // reducer
  hl_mlir_block_t pairs = {0};
  hl_status_t st = NULL;
  while (!st && at_punct(p, '(')) {
    int before = pairs.arg_count;
    st = parse_block_arg_list(p, &pairs);
    if (!st && pairs.arg_count != before + 2)
      st = ERR("a reducer argument pair needs two arguments (accumulator, element)");
  }
  if (!st && !pairs.arg_count) st = ERR("expected the reducer's (accumulator, element) arguments");
  if (!st) st = skip_loc(p);
  if (!st && !at_punct(p, '{')) st = ERR("expected the reducer's body");
  if (!st) st = push_region(p, op);
  hl_mlir_block_t *b = st ? NULL : &op->regions[op->region_count - 1].blocks[0];
  if (b && b->arg_count) st = ERR("a reducer body with a second argument list");
  if (!st) {
    int n = pairs.arg_count / 2;
    b->arg_names = hl_malloc((size_t)pairs.arg_count * sizeof(char *));
    b->arg_types = hl_malloc((size_t)pairs.arg_count * sizeof(hl_shape_t));
    if (!b->arg_names || !b->arg_types) st = HL_OOM();
    for (int k = 0; !st && k < pairs.arg_count; k++) {
      int from = k < n ? 2 * k : 2 * (k - n) + 1;
      b->arg_names[k] = pairs.arg_names[from];
      b->arg_types[k] = pairs.arg_types[from];
      pairs.arg_names[from] = NULL;
      memset(&pairs.arg_types[from], 0, sizeof(hl_shape_t));
      b->arg_count = k + 1;
      st = record_quant(&b->arg_quant, k, hl_mlir_quant_id(&pairs.arg_quant, from));
    }
  }
  for (int i = 0; i < pairs.arg_count; i++) {
    hl_free(pairs.arg_names[i]);
    hl_shape_deinit(&pairs.arg_types[i]);
  }
  hl_free(pairs.arg_names);
  hl_free(pairs.arg_types);
  hl_free(pairs.arg_quant.ids);
  return st;
}

static hl_status_t parse_pretty_body(parser_t *p, hl_mlir_op_t *op) {
  bool after_comma = false;
  int inits = 0, first_paren_operand = -1;
  while (!ends_pretty_op(p, after_comma)) {
    after_comma = false;
    if (at_punct(p, ',')) {
      advance(p);
      after_comma = true;
      continue;
    }
    if (TOK->kind == HL_MTOK_VALUE) {
      HL_RETURN_IF_ERROR(push_operand(p, op));
      continue;
    }
    if (at_ident(p, "loc")) {
      HL_RETURN_IF_ERROR(skip_loc(p));
      continue;
    }
    if (at_punct(p, '(')) {
      if (first_paren_operand < 0) first_paren_operand = op->operand_count;
      HL_RETURN_IF_ERROR(parse_paren_operands(p, op, &inits));
      continue;
    }
    if (at_punct(p, '{')) {
      if (looks_like_region(p)) {
        HL_RETURN_IF_ERROR(push_region(p, op));
      } else {
        HL_RETURN_IF_ERROR(parse_named_dict(p, &op->attr_names, &op->attrs, &op->attr_count));
      }
      continue;
    }
    if (at_punct(p, '[') && strncmp(op->name, "tensor.", 7) == 0) {  // tensor.extract %t[%i, %j]
      advance(p);
      while (!at_punct(p, ']')) {
        HL_RETURN_IF_ERROR(push_operand(p, op));
        if (!at_punct(p, ']')) HL_RETURN_IF_ERROR(expect_punct(p, ','));
      }
      advance(p);
      continue;
    }
    if (at_punct(p, '[')) {
      hl_mlir_attr_t *item;
      HL_RETURN_IF_ERROR(push_item(p, op, &item));
      HL_RETURN_IF_ERROR(parse_slice_item(p, item));
      continue;
    }
    if (TOK->kind == HL_MTOK_IDENT && !at_ident(p, "dense") && !at_ident(p, "array") &&
        !at_ident(p, "dense_resource")) {
      hl_mlir_lexer_t saved = p->lx;
      hl_mlir_token_t name = *TOK;
      advance(p);
      if (at_punct(p, '=')) {
        advance(p);
        int n = op->attr_count;
        char **nslot = push(&op->attr_names, &n, sizeof(char *));
        hl_mlir_attr_t *v = nslot ? push(&op->attrs, &op->attr_count, sizeof(*v)) : NULL;
        if (!v || !(*nslot = tok_strdup(&name, 0))) return HL_OOM();
        if (hl_mlir_tok_is(&name, HL_MTOK_IDENT, "dim_numbers"))
          HL_RETURN_IF_ERROR(parse_conv_dim_numbers(p, v));
        else if (hl_mlir_tok_is(&name, HL_MTOK_IDENT, "batching_dims") ||
                 hl_mlir_tok_is(&name, HL_MTOK_IDENT, "contracting_dims"))
          HL_RETURN_IF_ERROR(parse_dims_pair(p, v));
        else
          HL_RETURN_IF_ERROR(parse_attr_value(p, v, false));
        continue;
      }
      p->lx = saved;
    }
    hl_mlir_attr_t *item;
    HL_RETURN_IF_ERROR(push_item(p, op, &item));
    HL_RETURN_IF_ERROR(parse_attr_value(p, item, false));
    if (item->kind == HL_MATTR_WORD) item->i = op->operand_count;  // where a keyword stood
  }
  HL_RETURN_IF_ERROR(order_inputs_before_inits(p, op, first_paren_operand, inits));
  if (at_punct(p, ':')) HL_RETURN_IF_ERROR(parse_signature(p, op));
  // check.expect_almost_eq_const %x, dense<...> : t {tolerance = ...}
  if (at_punct(p, '{') && TOK->line == p->lx.prev_line && !looks_like_region(p))
    HL_RETURN_IF_ERROR(parse_named_dict(p, &op->attr_names, &op->attrs, &op->attr_count));
  HL_RETURN_IF_ERROR(skip_loc(p));
  if (at_ident(p, "reducer")) {
    HL_RETURN_IF_ERROR(parse_reducer(p, op));
    return skip_loc(p);
  }
  // Pretty while: cond { ... } do { ... } after the signature.
  if (at_ident(p, "cond")) {
    advance(p);
    HL_RETURN_IF_ERROR(push_region(p, op));
    if (!at_ident(p, "do")) return ERR("expected 'do' region of while");
    advance(p);
    HL_RETURN_IF_ERROR(push_region(p, op));
    HL_RETURN_IF_ERROR(skip_loc(p));
  }
  return NULL;
}

static hl_status_t parse_generic_body(parser_t *p, hl_mlir_op_t *op) {
  HL_RETURN_IF_ERROR(expect_punct(p, '('));
  while (!at_punct(p, ')')) {
    HL_RETURN_IF_ERROR(push_operand(p, op));
    if (!at_punct(p, ')')) HL_RETURN_IF_ERROR(expect_punct(p, ','));
  }
  advance(p);
  if (at_punct(p, '[')) return ERR("successor blocks are not supported");
  if (at_punct(p, '<')) {  // properties <{...}>
    advance(p);
    HL_RETURN_IF_ERROR(parse_named_dict(p, &op->attr_names, &op->attrs, &op->attr_count));
    HL_RETURN_IF_ERROR(expect_punct(p, '>'));
  }
  if (at_punct(p, '(')) {
    advance(p);
    while (!at_punct(p, ')')) {
      HL_RETURN_IF_ERROR(push_region(p, op));
      if (!at_punct(p, ')')) HL_RETURN_IF_ERROR(expect_punct(p, ','));
    }
    advance(p);
  }
  if (at_punct(p, '{'))
    HL_RETURN_IF_ERROR(parse_named_dict(p, &op->attr_names, &op->attrs, &op->attr_count));
  if (!at_punct(p, ':')) return ERR("expected ':' and the function type of a generic op");
  HL_RETURN_IF_ERROR(parse_signature(p, op));
  if (!op->has_function_type) return ERR("a generic op needs a function type (...) -> (...)");
  return skip_loc(p);
}

static hl_status_t parse_results(parser_t *p, hl_mlir_op_t *op) {
  while (TOK->kind == HL_MTOK_VALUE) {
    int n = op->result_group_count;
    char **nslot = push(&op->result_names, &n, sizeof(char *));
    int *cslot = nslot ? push(&op->result_counts, &op->result_group_count, sizeof(int)) : NULL;
    if (!cslot || !(*nslot = tok_strdup(TOK, 1))) return HL_OOM();
    if (memchr(TOK->text, '#', TOK->length)) return ERR("a result name cannot have '#'");
    advance(p);
    *cslot = 1;
    if (accept_punct(p, ':')) {
      if (TOK->kind != HL_MTOK_INT || TOK->text[0] == '-') return ERR("expected a result count");
      *cslot = atoi(TOK->text);
      advance(p);
    }
    op->result_count += *cslot;
    if (!accept_punct(p, ',')) break;
  }
  return expect_punct(p, '=');
}

// Shardy ops (sdy.mesh, sdy.sharding_constraint, sdy.reshard,
// sdy.manual_computation, sdy.return): operands, `@symbol`s, `key=value`
// attributes and `<...>` shardings kept as raw text (HL_MATTR_RAW, read by
// sharding_attrs.c), a `(%arg: type, ...)` block argument list for the
// region that follows, the region, and the signature.
static hl_status_t parse_sdy_body(parser_t *p, hl_mlir_op_t *op) {
  bool after_comma = false;
  hl_mlir_block_t args = {0};
  hl_status_t st = NULL;
  while (!st && !ends_pretty_op(p, after_comma)) {
    after_comma = false;
    hl_mlir_attr_t *item;
    if (at_punct(p, ',')) {
      advance(p);
      after_comma = true;
    } else if (at_punct(p, '=')) {  // sdy.mesh @name = <...>
      advance(p);
      after_comma = true;
    } else if (TOK->kind == HL_MTOK_VALUE) {
      st = push_operand(p, op);
    } else if (at_ident(p, "loc")) {
      st = skip_loc(p);
    } else if (at_punct(p, '(')) {
      hl_mlir_lexer_t saved = p->lx;
      advance(p);
      bool block_args = at_punct(p, ')') ? op->attr_count > 0 : TOK->kind == HL_MTOK_VALUE;
      if (block_args && TOK->kind == HL_MTOK_VALUE) {
        advance(p);
        block_args = at_punct(p, ':');
      }
      p->lx = saved;
      if (!block_args) {
        st = parse_paren_operands(p, op, NULL);
        continue;
      }
      args.arg_count = -1;  // seen (possibly empty)
      int count = 0;
      advance(p);
      while (!st && !at_punct(p, ')')) {
        if (TOK->kind != HL_MTOK_VALUE) {
          st = ERR("expected a block argument");
          break;
        }
        int n = count;
        char **nslot = push(&args.arg_names, &n, sizeof(char *));
        hl_shape_t *tslot = nslot ? push(&args.arg_types, &count, sizeof(hl_shape_t)) : NULL;
        if (!tslot || !(*nslot = tok_strdup(TOK, 1))) {
          st = HL_OOM();
          break;
        }
        advance(p);
        st = expect_punct(p, ':');
        if (!st) st = parse_type(p, tslot);
        if (!st) st = skip_loc(p);  // (%arg1: tensor<1x4xf32> loc("shard_map:"(#loc4)))
        if (!st && !at_punct(p, ')')) st = expect_punct(p, ',');
      }
      if (!st) advance(p);
      args.arg_count = -1 - count;
    } else if (at_punct(p, '{') && looks_like_region(p)) {
      st = push_region(p, op);
      if (!st && args.arg_count < 0) {  // hand the block arguments to the region's block
        hl_mlir_block_t *b = &op->regions[op->region_count - 1].blocks[0];
        if (b->arg_count) {
          st = ERR("a region with two block argument lists");
        } else {
          b->arg_names = args.arg_names;
          b->arg_types = args.arg_types;
          b->arg_count = -1 - args.arg_count;
          memset(&args, 0, sizeof(args));
        }
      }
    } else if (at_punct(p, '{')) {
      st = parse_named_dict(p, &op->attr_names, &op->attrs, &op->attr_count);
    } else if (at_punct(p, '<')) {
      st = push_item(p, op, &item);
      if (!st) {
        item->kind = HL_MATTR_RAW;
        item->line = TOK->line;
        item->column = TOK->column;
        st = scan_raw_group(p, &item->raw, &item->raw_len);
      }
    } else if (at_ident(p, "dense") || at_ident(p, "dense_resource")) {  // sdy.constant dense<...>
      st = push_item(p, op, &item);
      if (!st) st = parse_attr_value(p, item, false);
    } else if (TOK->kind == HL_MTOK_IDENT) {
      hl_mlir_token_t name = *TOK;
      advance(p);
      if (!at_punct(p, '=')) {
        st = ERR("unexpected '%.*s' in %s", (int)name.length, name.text, op->name);
        break;
      }
      advance(p);
      int n = op->attr_count;
      char **nslot = push(&op->attr_names, &n, sizeof(char *));
      hl_mlir_attr_t *v = nslot ? push(&op->attrs, &op->attr_count, sizeof(*v)) : NULL;
      if (!v || !(*nslot = tok_strdup(&name, 0))) {
        st = HL_OOM();
        break;
      }
      v->line = TOK->line;
      v->column = TOK->column;
      if (at_punct(p, '[') || at_punct(p, '{') || at_punct(p, '<')) {
        v->kind = HL_MATTR_RAW;
        st = scan_raw_group(p, &v->raw, &v->raw_len);
      } else {
        st = parse_attr_value(p, v, false);
      }
    } else {
      st = push_item(p, op, &item);
      if (!st) st = parse_attr_value(p, item, false);
    }
  }
  int left = args.arg_count < 0 ? -1 - args.arg_count : args.arg_count;
  for (int i = 0; i < left; i++) {
    hl_free(args.arg_names[i]);
    hl_shape_deinit(&args.arg_types[i]);
  }
  hl_free(args.arg_names);
  hl_free(args.arg_types);
  HL_RETURN_IF_ERROR(st);
  if (at_punct(p, ':')) HL_RETURN_IF_ERROR(parse_signature(p, op));
  if (at_punct(p, '{') && TOK->line == p->lx.prev_line && !looks_like_region(p))
    HL_RETURN_IF_ERROR(parse_named_dict(p, &op->attr_names, &op->attrs, &op->attr_count));
  return skip_loc(p);
}

static hl_status_t parse_func(parser_t *p, hl_mlir_op_t *op);

static hl_status_t parse_op(parser_t *p, hl_mlir_op_t *op) {
  op->line = TOK->line;
  op->column = TOK->column;
  if (TOK->kind == HL_MTOK_VALUE) HL_RETURN_IF_ERROR(parse_results(p, op));
  op->line = TOK->line;
  op->column = TOK->column;
  if (TOK->kind == HL_MTOK_STRING) {
    op->generic = true;
    op->name = hl_strndup(TOK->text + 1, TOK->length - 2);
    if (!op->name) return HL_OOM();
    advance(p);
    HL_RETURN_IF_ERROR(parse_generic_body(p, op));
    return strcmp(op->name, "func.func") == 0 ? hl_mlir_generic_func(p->lx.file, op) : NULL;
  }
  if (TOK->kind != HL_MTOK_IDENT) return ERR("expected an operation");
  op->name = tok_strdup(TOK, 0);
  if (!op->name) return HL_OOM();
  if (at_ident(p, "func.func")) return parse_func(p, op);
  if (TOK->length > 3 && memcmp(TOK->text, "cf.", 3) == 0)  // cf.br, cf.cond_br, cf.switch
    return ERR("'%.*s': branches between blocks (the cf dialect) are not supported; "
               "StableHLO's if / case / while are", (int)TOK->length, TOK->text);
  bool sdy = TOK->length > 4 && memcmp(TOK->text, "sdy.", 4) == 0;
  advance(p);
  return sdy ? parse_sdy_body(p, op) : parse_pretty_body(p, op);
}

//===----------------------------------------------------------------------===//
// Functions, modules, files
//===----------------------------------------------------------------------===//

// func.func [public|private] @name(%a: t {attrs}, ...) [-> t | (t {attrs}, ...)]
//   [attributes {...}] { body }
static hl_status_t parse_func(parser_t *p, hl_mlir_op_t *op) {
  advance(p);
  if (at_ident(p, "public") || at_ident(p, "private") || at_ident(p, "nested")) {
    op->is_private = at_ident(p, "private");
    advance(p);
  }
  if (TOK->kind != HL_MTOK_SYMBOL) return ERR("expected the function's @name");
  op->symbol = TOK->text[1] == '"' ? hl_strndup(TOK->text + 2, TOK->length - 3) : tok_strdup(TOK, 1);
  if (!op->symbol) return HL_OOM();
  advance(p);
  hl_mlir_region_t *r = push(&op->regions, &op->region_count, sizeof(*r));
  hl_mlir_block_t *b = r ? push(&r->blocks, &r->block_count, sizeof(*b)) : NULL;
  if (!b) return HL_OOM();
  HL_RETURN_IF_ERROR(expect_punct(p, '('));
  while (!at_punct(p, ')')) {
    if (TOK->kind != HL_MTOK_VALUE) return ERR("expected an argument (%%name: type)");
    int n = b->arg_count, n2 = b->arg_count;
    char **nslot = push(&b->arg_names, &n, sizeof(char *));
    hl_shape_t *tslot = nslot ? push(&b->arg_types, &b->arg_count, sizeof(hl_shape_t)) : NULL;
    hl_mlir_attr_t *aslot = tslot ? push(&op->arg_attrs, &n2, sizeof(hl_mlir_attr_t)) : NULL;
    if (aslot) op->arg_attr_count = n2;
    if (!aslot || !(*nslot = tok_strdup(TOK, 1))) return HL_OOM();
    advance(p);
    HL_RETURN_IF_ERROR(expect_punct(p, ':'));
    HL_RETURN_IF_ERROR(parse_type(p, tslot));
    HL_RETURN_IF_ERROR(record_quant(&b->arg_quant, b->arg_count - 1, p->last_quant));
    if (at_punct(p, '{')) HL_RETURN_IF_ERROR(parse_dict(p, aslot));
    HL_RETURN_IF_ERROR(skip_loc(p));
    if (!at_punct(p, ')')) HL_RETURN_IF_ERROR(expect_punct(p, ','));
  }
  advance(p);
  // The signature is kept as operand / result types of the func op.
  for (int i = 0; i < b->arg_count; i++) {
    int n = op->operand_type_count;
    hl_shape_t *slot = push(&op->operand_types, &n, sizeof(hl_shape_t));
    if (!slot) return HL_OOM();
    HL_RETURN_IF_ERROR(hl_shape_copy(&b->arg_types[i], slot));
    op->operand_type_count = n;
    HL_RETURN_IF_ERROR(
        record_quant(&op->operand_type_quant, i, hl_mlir_quant_id(&b->arg_quant, i)));
  }
  if (TOK->kind == HL_MTOK_ARROW) {
    advance(p);
    bool paren = accept_punct(p, '(');
    while (paren ? !at_punct(p, ')') : op->result_type_count == 0) {
      int n = op->result_type_count;
      hl_mlir_attr_t *aslot = push(&op->res_attrs, &n, sizeof(hl_mlir_attr_t));
      if (!aslot) return HL_OOM();
      op->res_attr_count = n;
      HL_RETURN_IF_ERROR(push_type(p, &op->result_types, &op->result_type_count, &op->result_type_quant));
      if (paren && at_punct(p, '{')) HL_RETURN_IF_ERROR(parse_dict(p, aslot));
      HL_RETURN_IF_ERROR(skip_loc(p));
      if (paren && !at_punct(p, ')')) HL_RETURN_IF_ERROR(expect_punct(p, ','));
    }
    if (paren) advance(p);
  }
  if (at_ident(p, "attributes")) {
    advance(p);
    HL_RETURN_IF_ERROR(parse_named_dict(p, &op->attr_names, &op->attrs, &op->attr_count));
  }
  // Parse the body into the block that already holds the arguments.
  HL_RETURN_IF_ERROR(expect_punct(p, '{'));
  while (!at_punct(p, '}')) {
    if (TOK->kind == HL_MTOK_EOF) return ERR("unterminated function body");
    if (TOK->kind == HL_MTOK_BLOCK) return ERR("functions with more than one block are not supported");
    hl_mlir_op_t *inner = push(&b->ops, &b->op_count, sizeof(*inner));
    if (!inner) return HL_OOM();
    HL_RETURN_IF_ERROR(parse_op(p, inner));
  }
  advance(p);
  return skip_loc(p);
}

// #name = value / !name = type: remembered by position, parsed at each use.
static hl_status_t parse_alias_def(parser_t *p) {
  alias_t *al = push(&p->aliases, &p->alias_count, sizeof(*al));
  if (!al || !(al->name = tok_strdup(TOK, 0))) return HL_OOM();
  advance(p);
  HL_RETURN_IF_ERROR(expect_punct(p, '='));
  al->pos = hl_mlir_tok_offset(&p->lx);
  al->line = TOK->line;
  al->line_start = al->pos - (size_t)(TOK->column - 1);
  // Skip the value by parsing it once.
  hl_mlir_attr_t tmp = {0};
  hl_status_t st;
  if (al->name[0] == '!') {
    st = parse_type(p, &tmp.type);
  } else if (at_ident(p, "loc")) {
    st = NULL;
    advance(p);
    int depth = 0;
    do {
      if (TOK->kind == HL_MTOK_EOF) break;
      if (at_punct(p, '(')) depth++;
      if (at_punct(p, ')')) depth--;
      advance(p);
    } while (depth > 0);
  } else {
    st = parse_attr_value(p, &tmp, true);
  }
  hl_mlir_attr_deinit(&tmp);
  return st;
}

// {-# dialect_resources: { builtin: { name: "0x..." } } #-}
static hl_status_t parse_resources(parser_t *p) {
  advance(p);
  while (TOK->kind != HL_MTOK_META_END) {
    if (TOK->kind == HL_MTOK_EOF) return ERR("unterminated {-# ... #-} section");
    if (TOK->kind == HL_MTOK_IDENT || TOK->kind == HL_MTOK_STRING) {
      hl_mlir_token_t key = *TOK;
      advance(p);
      if (!at_punct(p, ':')) continue;
      advance(p);
      if (TOK->kind == HL_MTOK_STRING) {
        hl_mlir_resource_t *r = push(&p->file->resources, &p->file->resource_count, sizeof(*r));
        if (!r) return HL_OOM();
        r->name = key.kind == HL_MTOK_STRING ? hl_strndup(key.text + 1, key.length - 2)
                                             : tok_strdup(&key, 0);
        if (!r->name) return HL_OOM();
        r->hex = TOK->text + 1;
        r->hex_len = TOK->length - 2;
        advance(p);
      }
      continue;
    }
    advance(p);
  }
  advance(p);
  return NULL;
}

static hl_status_t parse_module_body(parser_t *p, bool braced) {
  hl_mlir_file_t *f = p->file;
  for (;;) {
    if (braced && at_punct(p, '}')) {
      advance(p);
      return skip_loc(p);
    }
    if (TOK->kind == HL_MTOK_EOF) return braced ? ERR("unterminated module") : NULL;
    if (TOK->kind == HL_MTOK_ERROR) return ERR("unexpected character");
    if ((TOK->kind == HL_MTOK_HASH || TOK->kind == HL_MTOK_BANG) && !braced) {
      HL_RETURN_IF_ERROR(parse_alias_def(p));
      continue;
    }
    if (TOK->kind == HL_MTOK_META_BEGIN) {
      HL_RETURN_IF_ERROR(parse_resources(p));
      continue;
    }
    if (at_ident(p, "module") && !braced) {
      if (f->op_count) return ERR("a module after top-level operations");
      if (p->seen_module) return ERR("a second module (a file holds one)");
      p->seen_module = true;
      advance(p);
      if (TOK->kind == HL_MTOK_SYMBOL) {
        f->module_name = tok_strdup(TOK, 1);
        if (!f->module_name) return HL_OOM();
        advance(p);
      }
      if (at_ident(p, "attributes")) {
        advance(p);
        HL_RETURN_IF_ERROR(parse_named_dict(p, &f->module_attr_names, &f->module_attrs,
                                            &f->module_attr_count));
      }
      HL_RETURN_IF_ERROR(expect_punct(p, '{'));
      HL_RETURN_IF_ERROR(parse_module_body(p, true));
      continue;
    }
    if (at_ident(p, "sdy.mesh")) {  // Shardy mesh: kept for sharding_attrs.c
      hl_mlir_op_t *mesh = push(&f->meshes, &f->mesh_count, sizeof(*mesh));
      if (!mesh) return HL_OOM();
      HL_RETURN_IF_ERROR(parse_op(p, mesh));
      continue;
    }
    hl_mlir_op_t *op = push(&f->ops, &f->op_count, sizeof(*op));
    if (!op) return HL_OOM();
    HL_RETURN_IF_ERROR(parse_op(p, op));
    if (op->generic && strcmp(op->name, "builtin.module") == 0 && !braced) {
      hl_mlir_op_t module = f->ops[--f->op_count];  // its ops join f->ops
      HL_RETURN_IF_ERROR(hl_mlir_generic_module(p->lx.file, f, &module));
      continue;
    }
    if (strcmp(op->name, "func.func") != 0)
      return hl_mlir_error_pos(p->lx.file, op->line, op->column,
                               "'%s' at module level (expected func.func)", op->name);
  }
}

hl_status_t hl_mlir_parse(const char *text, size_t length, const char *path, int first_line,
                          hl_mlir_file_t *out) {
  memset(out, 0, sizeof(*out));
  out->path = path ? path : "<mlir>";
  parser_t p;
  memset(&p, 0, sizeof(p));
  p.file = out;
  hl_mlir_lexer_init(&p.lx, "", 0, out->path);
  p.lx.src = text ? text : "";
  p.lx.size = text ? length : 0;
  p.lx.line = first_line > 0 ? first_line : 1;
  hl_mlir_lex_next(&p.lx);
  hl_status_t st = parse_module_body(&p, false);
  for (int i = 0; i < p.alias_count; i++) hl_free(p.aliases[i].name);
  hl_free(p.aliases);
  if (st) hl_mlir_file_deinit(out);
  return st;
}
