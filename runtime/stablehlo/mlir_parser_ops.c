// MLIR text parser: operations (generic and pretty forms, Shardy ops),
// operands, results, blocks and regions (mlir_parser_internal.h).
#include <stdlib.h>
#include <string.h>

#include "runtime/stablehlo/mlir_generic.h"
#include "runtime/stablehlo/mlir_parser_internal.h"

//===----------------------------------------------------------------------===//
// Operations and regions
//===----------------------------------------------------------------------===//


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
    HL_RETURN_IF_ERROR(hl_mlirp_parse_type(p, tslot));
    HL_RETURN_IF_ERROR(hl_mlirp_record_quant(&b->arg_quant, b->arg_count - 1, p->last_quant));
    HL_RETURN_IF_ERROR(hl_mlirp_skip_loc(p));
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
    HL_RETURN_IF_ERROR(hl_mlirp_parse_op(p, op));
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
    HL_RETURN_IF_ERROR(hl_mlirp_parse_paren_types(p, &op->operand_types, &op->operand_type_count,
                                         &op->operand_type_quant));
    if (TOK->kind != HL_MTOK_ARROW) return ERR("expected '->' in function type");
    advance(p);
    op->has_function_type = true;
    if (at_punct(p, '(')) return hl_mlirp_parse_paren_types(p, &op->result_types, &op->result_type_count,
                                                    &op->result_type_quant);
    return hl_mlirp_push_type(p, &op->result_types, &op->result_type_count, &op->result_type_quant);
  }
  HL_RETURN_IF_ERROR(hl_mlirp_push_type(p, &op->operand_types, &op->operand_type_count, &op->operand_type_quant));
  if (at_ident(p, "to")) {  // arith / tensor casts: `: type to type`
    advance(p);
    op->has_function_type = true;
    return hl_mlirp_push_type(p, &op->result_types, &op->result_type_count, &op->result_type_quant);
  }
  if (TOK->kind == HL_MTOK_ARROW) {  // CHLO's `: type -> type`
    advance(p);
    op->has_function_type = true;
    if (at_punct(p, '(')) return hl_mlirp_parse_paren_types(p, &op->result_types, &op->result_type_count,
                                                    &op->result_type_quant);
    return hl_mlirp_push_type(p, &op->result_types, &op->result_type_count, &op->result_type_quant);
  }
  while (at_punct(p, ',')) {
    hl_mlir_lexer_t saved = p->lx;
    advance(p);
    if (!hl_mlirp_at_type_start(p)) {
      p->lx = saved;
      break;
    }
    HL_RETURN_IF_ERROR(hl_mlirp_push_type(p, &op->operand_types, &op->operand_type_count, &op->operand_type_quant));
  }
  if (TOK->kind == HL_MTOK_ARROW) {  // CHLO's `: type, type -> type` (next_after, zeta)
    advance(p);
    op->has_function_type = true;
    if (at_punct(p, '(')) return hl_mlirp_parse_paren_types(p, &op->result_types, &op->result_type_count,
                                                    &op->result_type_quant);
    return hl_mlirp_push_type(p, &op->result_types, &op->result_type_count, &op->result_type_quant);
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
      HL_RETURN_IF_ERROR(hl_mlirp_parse_number(p, v));
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
    HL_RETURN_IF_ERROR(hl_mlirp_parse_array(p, slot));
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
    HL_RETURN_IF_ERROR(hl_mlirp_parse_array(p, slot));
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
      HL_RETURN_IF_ERROR(hl_mlirp_parse_attr_value(p, v, false));
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
  if (!st) st = hl_mlirp_skip_loc(p);
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
      st = hl_mlirp_record_quant(&b->arg_quant, k, hl_mlir_quant_id(&pairs.arg_quant, from));
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
      HL_RETURN_IF_ERROR(hl_mlirp_skip_loc(p));
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
        HL_RETURN_IF_ERROR(hl_mlirp_parse_named_dict(p, &op->attr_names, &op->attrs, &op->attr_count));
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
          HL_RETURN_IF_ERROR(hl_mlirp_parse_attr_value(p, v, false));
        continue;
      }
      p->lx = saved;
    }
    hl_mlir_attr_t *item;
    HL_RETURN_IF_ERROR(push_item(p, op, &item));
    HL_RETURN_IF_ERROR(hl_mlirp_parse_attr_value(p, item, false));
    if (item->kind == HL_MATTR_WORD) item->i = op->operand_count;  // where a keyword stood
  }
  HL_RETURN_IF_ERROR(order_inputs_before_inits(p, op, first_paren_operand, inits));
  if (at_punct(p, ':')) HL_RETURN_IF_ERROR(parse_signature(p, op));
  // check.expect_almost_eq_const %x, dense<...> : t {tolerance = ...}
  if (at_punct(p, '{') && TOK->line == p->lx.prev_line && !looks_like_region(p))
    HL_RETURN_IF_ERROR(hl_mlirp_parse_named_dict(p, &op->attr_names, &op->attrs, &op->attr_count));
  HL_RETURN_IF_ERROR(hl_mlirp_skip_loc(p));
  if (at_ident(p, "reducer")) {
    HL_RETURN_IF_ERROR(parse_reducer(p, op));
    return hl_mlirp_skip_loc(p);
  }
  // Pretty while: cond { ... } do { ... } after the signature.
  if (at_ident(p, "cond")) {
    advance(p);
    HL_RETURN_IF_ERROR(push_region(p, op));
    if (!at_ident(p, "do")) return ERR("expected 'do' region of while");
    advance(p);
    HL_RETURN_IF_ERROR(push_region(p, op));
    HL_RETURN_IF_ERROR(hl_mlirp_skip_loc(p));
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
    HL_RETURN_IF_ERROR(hl_mlirp_parse_named_dict(p, &op->attr_names, &op->attrs, &op->attr_count));
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
    HL_RETURN_IF_ERROR(hl_mlirp_parse_named_dict(p, &op->attr_names, &op->attrs, &op->attr_count));
  if (!at_punct(p, ':')) return ERR("expected ':' and the function type of a generic op");
  HL_RETURN_IF_ERROR(parse_signature(p, op));
  if (!op->has_function_type) return ERR("a generic op needs a function type (...) -> (...)");
  return hl_mlirp_skip_loc(p);
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
      st = hl_mlirp_skip_loc(p);
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
        if (!st) st = hl_mlirp_parse_type(p, tslot);
        if (!st) st = hl_mlirp_skip_loc(p);  // (%arg1: tensor<1x4xf32> loc("shard_map:"(#loc4)))
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
      st = hl_mlirp_parse_named_dict(p, &op->attr_names, &op->attrs, &op->attr_count);
    } else if (at_punct(p, '<')) {
      st = push_item(p, op, &item);
      if (!st) {
        item->kind = HL_MATTR_RAW;
        item->line = TOK->line;
        item->column = TOK->column;
        st = hl_mlirp_scan_raw_group(p, &item->raw, &item->raw_len);
      }
    } else if (at_ident(p, "dense") || at_ident(p, "dense_resource")) {  // sdy.constant dense<...>
      st = push_item(p, op, &item);
      if (!st) st = hl_mlirp_parse_attr_value(p, item, false);
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
        st = hl_mlirp_scan_raw_group(p, &v->raw, &v->raw_len);
      } else {
        st = hl_mlirp_parse_attr_value(p, v, false);
      }
    } else {
      st = push_item(p, op, &item);
      if (!st) st = hl_mlirp_parse_attr_value(p, item, false);
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
    HL_RETURN_IF_ERROR(hl_mlirp_parse_named_dict(p, &op->attr_names, &op->attrs, &op->attr_count));
  return hl_mlirp_skip_loc(p);
}


hl_status_t hl_mlirp_parse_op(parser_t *p, hl_mlir_op_t *op) {
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
  if (at_ident(p, "func.func")) return hl_mlirp_parse_func(p, op);
  if (TOK->length > 3 && memcmp(TOK->text, "cf.", 3) == 0)  // cf.br, cf.cond_br, cf.switch
    return ERR("'%.*s': branches between blocks (the cf dialect) are not supported; "
               "StableHLO's if / case / while are", (int)TOK->length, TOK->text);
  bool sdy = TOK->length > 4 && memcmp(TOK->text, "sdy.", 4) == 0;
  advance(p);
  return sdy ? parse_sdy_body(p, op) : parse_pretty_body(p, op);
}
