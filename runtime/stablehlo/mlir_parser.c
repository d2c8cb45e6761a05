// MLIR text parser (see mlir_parser.h): functions, modules, aliases and
// resource blobs; types, attributes and operations are in
// mlir_parser_types.c, mlir_parser_attrs.c and mlir_parser_ops.c (shared
// state in mlir_parser_internal.h). Recursive descent over the tokens of
// mlir_lexer.c.
#include "runtime/stablehlo/mlir_parser.h"

#include <string.h>

#include "runtime/stablehlo/mlir_generic.h"
#include "runtime/stablehlo/mlir_parser_internal.h"

//===----------------------------------------------------------------------===//
// Functions, modules, files
//===----------------------------------------------------------------------===//

// func.func [public|private] @name(%a: t {attrs}, ...) [-> t | (t {attrs}, ...)]
//   [attributes {...}] { body }
hl_status_t hl_mlirp_parse_func(parser_t *p, hl_mlir_op_t *op) {
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
    HL_RETURN_IF_ERROR(hl_mlirp_parse_type(p, tslot));
    HL_RETURN_IF_ERROR(hl_mlirp_record_quant(&b->arg_quant, b->arg_count - 1, p->last_quant));
    if (at_punct(p, '{')) HL_RETURN_IF_ERROR(hl_mlirp_parse_dict(p, aslot));
    HL_RETURN_IF_ERROR(hl_mlirp_skip_loc(p));
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
        hl_mlirp_record_quant(&op->operand_type_quant, i, hl_mlir_quant_id(&b->arg_quant, i)));
  }
  if (TOK->kind == HL_MTOK_ARROW) {
    advance(p);
    bool paren = accept_punct(p, '(');
    while (paren ? !at_punct(p, ')') : op->result_type_count == 0) {
      int n = op->result_type_count;
      hl_mlir_attr_t *aslot = push(&op->res_attrs, &n, sizeof(hl_mlir_attr_t));
      if (!aslot) return HL_OOM();
      op->res_attr_count = n;
      HL_RETURN_IF_ERROR(hl_mlirp_push_type(p, &op->result_types, &op->result_type_count, &op->result_type_quant));
      if (paren && at_punct(p, '{')) HL_RETURN_IF_ERROR(hl_mlirp_parse_dict(p, aslot));
      HL_RETURN_IF_ERROR(hl_mlirp_skip_loc(p));
      if (paren && !at_punct(p, ')')) HL_RETURN_IF_ERROR(expect_punct(p, ','));
    }
    if (paren) advance(p);
  }
  if (at_ident(p, "attributes")) {
    advance(p);
    HL_RETURN_IF_ERROR(hl_mlirp_parse_named_dict(p, &op->attr_names, &op->attrs, &op->attr_count));
  }
  // Parse the body into the block that already holds the arguments.
  HL_RETURN_IF_ERROR(expect_punct(p, '{'));
  while (!at_punct(p, '}')) {
    if (TOK->kind == HL_MTOK_EOF) return ERR("unterminated function body");
    if (TOK->kind == HL_MTOK_BLOCK) return ERR("functions with more than one block are not supported");
    hl_mlir_op_t *inner = push(&b->ops, &b->op_count, sizeof(*inner));
    if (!inner) return HL_OOM();
    HL_RETURN_IF_ERROR(hl_mlirp_parse_op(p, inner));
  }
  advance(p);
  return hl_mlirp_skip_loc(p);
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
    st = hl_mlirp_parse_type(p, &tmp.type);
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
    st = hl_mlirp_parse_attr_value(p, &tmp, true);
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
      return hl_mlirp_skip_loc(p);
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
        HL_RETURN_IF_ERROR(hl_mlirp_parse_named_dict(p, &f->module_attr_names, &f->module_attrs,
                                            &f->module_attr_count));
      }
      HL_RETURN_IF_ERROR(expect_punct(p, '{'));
      HL_RETURN_IF_ERROR(parse_module_body(p, true));
      continue;
    }
    if (at_ident(p, "sdy.mesh")) {  // Shardy mesh: kept for sharding_attrs.c
      hl_mlir_op_t *mesh = push(&f->meshes, &f->mesh_count, sizeof(*mesh));
      if (!mesh) return HL_OOM();
      HL_RETURN_IF_ERROR(hl_mlirp_parse_op(p, mesh));
      continue;
    }
    hl_mlir_op_t *op = push(&f->ops, &f->op_count, sizeof(*op));
    if (!op) return HL_OOM();
    HL_RETURN_IF_ERROR(hl_mlirp_parse_op(p, op));
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
