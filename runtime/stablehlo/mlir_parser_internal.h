// The MLIR text parser's shared state and helpers (mlir_parser.c: functions,
// modules and files; mlir_parser_types.c: types and aliases;
// mlir_parser_attrs.c: attribute values; mlir_parser_ops.c: operations and
// regions). Private to runtime/stablehlo's parser files.
#ifndef HL_RUNTIME_STABLEHLO_MLIR_PARSER_INTERNAL_H_
#define HL_RUNTIME_STABLEHLO_MLIR_PARSER_INTERNAL_H_

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/stablehlo/mlir_ast.h"
#include "runtime/stablehlo/mlir_lexer.h"

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
static inline void *push(void *arr_ptr, int *n, size_t es) {
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

static inline void advance(parser_t *p) { hl_mlir_lex_next(&p->lx); }

static inline bool at_punct(parser_t *p, char c) { return hl_mlir_tok_is_punct(TOK, c); }
static inline bool at_ident(parser_t *p, const char *s) { return hl_mlir_tok_is(TOK, HL_MTOK_IDENT, s); }

static inline hl_status_t expect_punct(parser_t *p, char c) {
  if (!at_punct(p, c)) return ERR("expected '%c'", c);
  advance(p);
  return NULL;
}

static inline bool accept_punct(parser_t *p, char c) {
  if (!at_punct(p, c)) return false;
  advance(p);
  return true;
}

// The byte right after the current token (raw scanning starts there).
static inline size_t tok_end(parser_t *p) { return hl_mlir_tok_offset(&p->lx) + TOK->length; }

static inline char *tok_strdup(const hl_mlir_token_t *t, size_t skip) {
  return hl_strndup(t->text + skip, t->length - skip);
}

// mlir_parser_types.c
alias_t *hl_mlirp_find_alias(parser_t *p, const hl_mlir_token_t *t);
hl_status_t hl_mlirp_parse_alias_use(parser_t *p, hl_shape_t *type_out, hl_mlir_attr_t *attr_out);
hl_status_t hl_mlirp_parse_type(parser_t *p, hl_shape_t *out);
hl_status_t hl_mlirp_parse_attr_value(parser_t *p, hl_mlir_attr_t *a, bool allow_type_suffix);
bool hl_mlirp_at_type_start(parser_t *p);
hl_status_t hl_mlirp_record_quant(hl_mlir_quant_ids_t *q, int k, int id);
hl_status_t hl_mlirp_push_type(parser_t *p, hl_shape_t **arr, int *n, hl_mlir_quant_ids_t *q);
hl_status_t hl_mlirp_parse_paren_types(parser_t *p, hl_shape_t **arr, int *n, hl_mlir_quant_ids_t *q);

// mlir_parser_attrs.c
hl_status_t hl_mlirp_parse_number(parser_t *p, hl_mlir_attr_t *a);
hl_status_t hl_mlirp_scan_raw_group(parser_t *p, const char **out_raw, size_t *out_len);
hl_status_t hl_mlirp_parse_array(parser_t *p, hl_mlir_attr_t *a);
hl_status_t hl_mlirp_parse_attr_value_nested(parser_t *p, hl_mlir_attr_t *a, bool allow_type_suffix);
hl_status_t hl_mlirp_parse_dict(parser_t *p, hl_mlir_attr_t *a);
hl_status_t hl_mlirp_parse_named_dict(parser_t *p, char ***names, hl_mlir_attr_t **vals, int *count);
hl_status_t hl_mlirp_skip_loc(parser_t *p);

// mlir_parser_ops.c
hl_status_t hl_mlirp_parse_op(parser_t *p, hl_mlir_op_t *op);

// mlir_parser.c
hl_status_t hl_mlirp_parse_func(parser_t *p, hl_mlir_op_t *op);

#endif  // HL_RUNTIME_STABLEHLO_MLIR_PARSER_INTERNAL_H_
