// MLIR text parser: attribute values (numbers, strings, arrays, dictionaries,
// dense and dialect attributes, locations) (mlir_parser_internal.h). Dense
// bodies and dialect groups are kept as raw text where the lowering reads them.
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/stablehlo/mlir_parser_internal.h"

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

hl_status_t hl_mlirp_parse_number(parser_t *p, hl_mlir_attr_t *a) {
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
hl_status_t hl_mlirp_scan_raw_group(parser_t *p, const char **out_raw, size_t *out_len) {
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
      HL_RETURN_IF_ERROR(hl_mlirp_parse_attr_value(p, slot, true));
    }
  }
  advance(p);
  return NULL;
}

hl_status_t hl_mlirp_parse_array(parser_t *p, hl_mlir_attr_t *a) {
  a->kind = HL_MATTR_ARRAY;
  HL_RETURN_IF_ERROR(expect_punct(p, '['));
  while (!at_punct(p, ']')) {
    hl_mlir_attr_t *slot = push(&a->items, &a->n, sizeof(hl_mlir_attr_t));
    if (!slot) return HL_OOM();
    HL_RETURN_IF_ERROR(hl_mlirp_parse_attr_value(p, slot, true));
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
  HL_RETURN_IF_ERROR(hl_mlirp_parse_type(p, &a->type));
  a->type_quant = p->last_quant;
  a->has_type = true;
  if (accept_punct(p, ':')) {
    while (!at_punct(p, '>')) {
      hl_mlir_attr_t *slot = push(&a->items, &a->n, sizeof(hl_mlir_attr_t));
      if (!slot) return HL_OOM();
      HL_RETURN_IF_ERROR(hl_mlirp_parse_attr_value(p, slot, false));
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
  hl_status_t st = hl_mlirp_parse_paren_types(p, &types[0], &counts[0], &quant[0]);
  if (!st && TOK->kind != HL_MTOK_ARROW) st = ERR("expected '->' in function type");
  if (!st) {
    advance(p);
    st = at_punct(p, '(') ? hl_mlirp_parse_paren_types(p, &types[1], &counts[1], &quant[1])
                          : hl_mlirp_push_type(p, &types[1], &counts[1], &quant[1]);
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

hl_status_t hl_mlirp_parse_attr_value_nested(parser_t *p, hl_mlir_attr_t *a,
                                           bool allow_type_suffix) {
  a->line = TOK->line;
  a->column = TOK->column;
  switch (TOK->kind) {
    case HL_MTOK_INT:
    case HL_MTOK_FLOAT:
      HL_RETURN_IF_ERROR(hl_mlirp_parse_number(p, a));
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
      if (!body && hl_mlirp_find_alias(p, TOK)) return hl_mlirp_parse_alias_use(p, NULL, a);
      a->kind = HL_MATTR_DIALECT;
      a->s = tok_strdup(TOK, 1);
      if (!a->s) return HL_OOM();
      advance(p);
      if (body && strncmp(a->s, "sdy.", 4) == 0) {  // Shardy syntax: read by sharding_attrs.c
        a->kind = HL_MATTR_RAW;
        HL_RETURN_IF_ERROR(hl_mlirp_scan_raw_group(p, &a->raw, &a->raw_len));
      } else if (body) {
        HL_RETURN_IF_ERROR(parse_dialect_body(p, a));
      }
      break;
    }
    case HL_MTOK_PUNCT:
      if (at_punct(p, '[')) {
        HL_RETURN_IF_ERROR(hl_mlirp_parse_array(p, a));
      } else if (at_punct(p, '{')) {
        HL_RETURN_IF_ERROR(hl_mlirp_parse_dict(p, a));
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
      HL_RETURN_IF_ERROR(hl_mlirp_parse_type(p, &a->type));
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
        HL_RETURN_IF_ERROR(hl_mlirp_scan_raw_group(p, &a->raw, &a->raw_len));
      } else if (hl_mlirp_at_type_start(p) && !at_ident(p, "i") && !at_ident(p, "f")) {
        a->kind = HL_MATTR_TYPE;
        HL_RETURN_IF_ERROR(hl_mlirp_parse_type(p, &a->type));
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
    if (!hl_mlirp_at_type_start(p)) {
      p->lx = saved;
      return NULL;
    }
    hl_shape_deinit(&a->type);
    HL_RETURN_IF_ERROR(hl_mlirp_parse_type(p, &a->type));
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
  if (accept_punct(p, '=')) return hl_mlirp_parse_attr_value(p, vslot, true);
  vslot->kind = HL_MATTR_UNIT;
  return NULL;
}

// {name = value, flag, ...} into parallel name / value arrays.
hl_status_t hl_mlirp_parse_named_dict(parser_t *p, char ***names, hl_mlir_attr_t **vals,
                                    int *count) {
  HL_RETURN_IF_ERROR(expect_punct(p, '{'));
  while (!at_punct(p, '}')) {
    HL_RETURN_IF_ERROR(dict_add(p, names, vals, count));
    if (!at_punct(p, '}')) HL_RETURN_IF_ERROR(expect_punct(p, ','));
  }
  advance(p);
  return NULL;
}

hl_status_t hl_mlirp_parse_dict(parser_t *p, hl_mlir_attr_t *a) {
  a->kind = HL_MATTR_DICT;
  int n = 0;
  hl_status_t st = hl_mlirp_parse_named_dict(p, &a->keys, &a->items, &n);
  a->n = n;
  return st;
}

hl_status_t hl_mlirp_skip_loc(parser_t *p) {
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
