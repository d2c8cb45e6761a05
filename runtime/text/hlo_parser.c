// HLO text -> module IR: module header, computations, instructions,
// operands (plain, inline-shaped, nested anonymous), legacy opcodes, async
// sugar, shape inference for the ops whose shape XLA lets the text omit, and
// the final callees-before-callers ordering. Attribute values are decoded in
// hlo_attr_parser.c; shapes and literals in their own files.
#include "runtime/text/hlo_parser.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/text/hlo_parser_internal.h"

//===----------------------------------------------------------------------===//
// Token helpers shared with the other parser files
//===----------------------------------------------------------------------===//

hl_status_t hl_expect(hl_lexer_t *lx, hl_tok_kind_t kind, const char *what) {
  if (lx->tok.kind != kind) return hl_lexer_error(lx, NULL, "expected %s", what);
  hl_lexer_next(lx);
  return NULL;
}

hl_status_t hl_parse_int64(hl_lexer_t *lx, int64_t *out) {
  if (lx->tok.kind != HL_TOK_INT) return hl_lexer_error(lx, NULL, "expected an integer");
  HL_RETURN_IF_ERROR(hl_lexer_int64(lx, &lx->tok, out));
  hl_lexer_next(lx);
  return NULL;
}

hl_status_t hl_parse_i64_list(hl_lexer_t *lx, hl_i64_list_t *out) {
  hl_i64_list_deinit(out);
  HL_RETURN_IF_ERROR(hl_expect(lx, HL_TOK_LBRACE, "'{' to open a list of integers"));
  int cap = 0;
  while (lx->tok.kind != HL_TOK_RBRACE) {
    int64_t v;
    HL_RETURN_IF_ERROR(hl_parse_int64(lx, &v));
    if (out->n == cap) {
      cap = cap ? cap * 2 : 8;
      int64_t *nv = hl_realloc(out->v, (size_t)cap * sizeof(int64_t));
      if (!nv) return HL_OOM();
      out->v = nv;
    }
    out->v[out->n++] = v;
    if (lx->tok.kind != HL_TOK_COMMA) break;
    hl_lexer_next(lx);
    if (lx->tok.kind != HL_TOK_INT) return hl_lexer_error(lx, NULL, "expected an integer");
  }
  return hl_expect(lx, HL_TOK_RBRACE, "',' or '}' in a list of integers");
}

char *hl_token_strdup(const hl_token_t *tok) { return hl_strndup(tok->text, tok->length); }

// Skips one balanced group; *out_closer_line is the line of its closing bracket.
static hl_status_t skip_group(hl_lexer_t *lx, int *out_closer_line) {
  char stack[256];
  int depth = 0;
  do {
    hl_tok_kind_t k = lx->tok.kind;
    if (k == HL_TOK_EOF || k == HL_TOK_ERROR)
      return hl_lexer_error(lx, NULL, "unbalanced brackets");
    char want = 0;
    if (k == HL_TOK_LBRACE) want = '}';
    if (k == HL_TOK_LPAREN) want = ')';
    if (k == HL_TOK_LSQUARE) want = ']';
    if (want) {
      if (depth == (int)sizeof(stack)) return hl_lexer_error(lx, NULL, "nested too deeply");
      stack[depth++] = want;
    } else if (k == HL_TOK_RBRACE || k == HL_TOK_RPAREN || k == HL_TOK_RSQUARE) {
      char got = k == HL_TOK_RBRACE ? '}' : k == HL_TOK_RPAREN ? ')' : ']';
      if (depth == 0 || stack[depth - 1] != got)
        return hl_lexer_error(lx, NULL, "mismatched '%c'", got);
      depth--;
    }
    *out_closer_line = lx->tok.line;
    hl_lexer_next(lx);
  } while (depth > 0);
  return NULL;
}

hl_status_t hl_skip_balanced(hl_lexer_t *lx) {
  int line;
  return skip_group(lx, &line);
}

hl_status_t hl_skip_attribute_value(hl_lexer_t *lx, int attr_line) {
  int last_line = attr_line;
  bool any = false;
  for (;;) {
    hl_tok_kind_t k = lx->tok.kind;
    if (k == HL_TOK_EOF || k == HL_TOK_ERROR || k == HL_TOK_COMMA || k == HL_TOK_RPAREN ||
        k == HL_TOK_RSQUARE || k == HL_TOK_RBRACE)
      break;
    // Values span lines only inside brackets; a token on a later line starts
    // the next instruction.
    if (any && lx->tok.line != last_line) break;
    if (k == HL_TOK_LBRACE || k == HL_TOK_LPAREN || k == HL_TOK_LSQUARE) {
      HL_RETURN_IF_ERROR(skip_group(lx, &last_line));
    } else {
      last_line = lx->tok.line;
      hl_lexer_next(lx);
    }
    any = true;
  }
  if (lx->tok.kind == HL_TOK_ERROR) return hl_lexer_error(lx, NULL, "bad value");
  return NULL;
}

//===----------------------------------------------------------------------===//
// Instruction name lookup (hash map per computation being parsed)
//===----------------------------------------------------------------------===//

typedef struct name_map {
  hl_instruction_t **slots;
  size_t cap, count;
  struct name_map *outer;
} name_map_t;

static uint64_t hash_name(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}

static hl_instruction_t *map_find(const name_map_t *m, const char *name, size_t n) {
  if (!m || m->cap == 0) return NULL;
  for (size_t i = hash_name(name, n) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
    hl_instruction_t *inst = m->slots[i];
    if (!inst) return NULL;
    if (strlen(inst->name) == n && memcmp(inst->name, name, n) == 0) return inst;
  }
}

static hl_status_t map_insert(name_map_t *m, hl_instruction_t *inst) {
  if ((m->count + 1) * 2 > m->cap) {
    size_t cap = m->cap ? m->cap * 2 : 64;
    hl_instruction_t **slots = hl_calloc(cap, sizeof(*slots));
    if (!slots) return HL_OOM();
    for (size_t i = 0; i < m->cap; i++) {
      hl_instruction_t *x = m->slots[i];
      if (!x) continue;
      size_t j = hash_name(x->name, strlen(x->name)) & (cap - 1);
      while (slots[j]) j = (j + 1) & (cap - 1);
      slots[j] = x;
    }
    hl_free(m->slots);
    m->slots = slots;
    m->cap = cap;
  }
  size_t j = hash_name(inst->name, strlen(inst->name)) & (m->cap - 1);
  while (m->slots[j]) j = (j + 1) & (m->cap - 1);
  m->slots[j] = inst;
  m->count++;
  return NULL;
}

hl_instruction_t *hl_parser_find_instruction(hl_parser_t *p, const char *name, size_t len) {
  return map_find(p->names, name, len);
}

//===----------------------------------------------------------------------===//
// Opcodes: names, legacy spellings, async sugar, shape inference
//===----------------------------------------------------------------------===//

static const char *const kKernelOf[] = {
#define X(e, name, arity, kernel) #kernel,
#include "runtime/ir/opcode.def"
#undef X
};

typedef struct {
  hl_opcode_t op;                       // the instruction's opcode
  hl_opcode_t wrapped;                  // async sugar: the wrapped op, else invalid
  hl_comparison_direction_t direction;  // legacy compare spelling
} opcode_info_t;

static bool resolve_opcode(const hl_token_t *tok, opcode_info_t *info) {
  info->wrapped = HL_OP_INVALID_;
  info->direction = HL_CMP_NONE;
  info->op = hl_opcode_from_name(tok->text, tok->length);
  if (info->op != HL_OP_INVALID_) return true;
  static const struct {
    const char *name;
    hl_comparison_direction_t dir;
  } kLegacy[] = {{"equal-to", HL_CMP_EQ},    {"not-equal-to", HL_CMP_NE},
                 {"greater-than", HL_CMP_GT}, {"greater-than-or-equal-to", HL_CMP_GE},
                 {"less-than", HL_CMP_LT},    {"less-than-or-equal-to", HL_CMP_LE}};
  for (size_t i = 0; i < sizeof(kLegacy) / sizeof(kLegacy[0]); i++)
    if (hl_tok_text_equals(tok, kLegacy[i].name)) {
      info->op = HL_OP_COMPARE;
      info->direction = kLegacy[i].dir;
      return true;
    }
  if (hl_tok_text_equals(tok, "cross-replica-sum")) {
    info->op = HL_OP_ALL_REDUCE;
    return true;
  }
  static const struct {
    const char *suffix;
    hl_opcode_t op;
  } kAsync[] = {{"-start", HL_OP_ASYNC_START}, {"-update", HL_OP_ASYNC_UPDATE},
                {"-done", HL_OP_ASYNC_DONE}};
  for (size_t i = 0; i < 3; i++) {
    size_t n = strlen(kAsync[i].suffix);
    if (tok->length <= n || memcmp(tok->text + tok->length - n, kAsync[i].suffix, n) != 0)
      continue;
    hl_opcode_t w = hl_opcode_from_name(tok->text, tok->length - n);
    if (w == HL_OP_INVALID_) return false;
    info->op = kAsync[i].op;
    info->wrapped = w;
    return true;
  }
  return false;
}

static bool is_opcode_word(const hl_token_t *tok) {
  opcode_info_t info;
  return tok->kind == HL_TOK_IDENT && resolve_opcode(tok, &info);
}

// Result shape for the ops XLA lets the text omit it on. Returns false when
// the shape cannot be inferred here.
static hl_status_t infer_shape(hl_instruction_t *inst, bool *out_ok) {
  *out_ok = true;
  hl_opcode_t op = inst->opcode;
  hl_instruction_t *const *ops = inst->operands;
  int n = inst->operand_count;
  const char *kernel = kKernelOf[op];
  if (op == HL_OP_TUPLE) {
    hl_shape_t *elems = hl_calloc((size_t)(n ? n : 1), sizeof(hl_shape_t));
    if (!elems) return HL_OOM();
    for (int i = 0; i < n; i++) elems[i] = ops[i]->shape;  // shallow; copied below
    hl_status_t st = hl_shape_tuple(elems, n, &inst->shape);
    hl_free(elems);
    return st;
  }
  if (op == HL_OP_AFTER_ALL) {
    inst->shape = hl_shape_token();
    return NULL;
  }
  if (op == HL_OP_REPLICA_ID || op == HL_OP_PARTITION_ID) {
    inst->shape = hl_shape_scalar(HL_U32);
    return NULL;
  }
  if (n == 0) {
    *out_ok = false;
    return NULL;
  }
  if (op == HL_OP_GET_TUPLE_ELEMENT) {
    const hl_shape_t *t = &ops[0]->shape;
    int64_t i = inst->attrs.tuple_index;
    if (t->dtype != HL_TUPLE || i < 0 || i >= t->tuple_count) {
      *out_ok = false;
      return NULL;
    }
    return hl_shape_copy(&t->tuple[i], &inst->shape);
  }
  const hl_shape_t *src = NULL;
  if ((strcmp(kernel, "hl_kernel_unary") == 0 && n == 1) ||
      (strcmp(kernel, "hl_kernel_binary") == 0 && n == 2) || op == HL_OP_COPY ||
      op == HL_OP_OPTIMIZATION_BARRIER || op == HL_OP_ADD_DEPENDENCY || op == HL_OP_COMPARE)
    src = &ops[0]->shape;
  else if ((op == HL_OP_SELECT || op == HL_OP_CLAMP) && n == 3)
    src = &ops[1]->shape;
  if (!src) {
    *out_ok = false;
    return NULL;
  }
  HL_RETURN_IF_ERROR(hl_shape_copy(src, &inst->shape));
  if (inst->shape.dtype == HL_TUPLE) return NULL;
  if (op == HL_OP_COMPARE || op == HL_OP_IS_FINITE) inst->shape.dtype = HL_PRED;
  if (op == HL_OP_ABS && inst->shape.dtype == HL_C64) inst->shape.dtype = HL_F32;
  if (op == HL_OP_ABS && inst->shape.dtype == HL_C128) inst->shape.dtype = HL_F64;
  return NULL;
}

//===----------------------------------------------------------------------===//
// Instructions
//===----------------------------------------------------------------------===//

typedef struct {
  hl_instruction_t **v;
  int n, cap;
} inst_vec_t;

static hl_status_t vec_push(inst_vec_t *vec, hl_instruction_t *inst) {
  if (vec->n == vec->cap) {
    int cap = vec->cap ? vec->cap * 2 : 8;
    hl_instruction_t **v = hl_realloc(vec->v, (size_t)cap * sizeof(*v));
    if (!v) return HL_OOM();
    vec->v = v;
    vec->cap = cap;
  }
  vec->v[vec->n++] = inst;
  return NULL;
}

static hl_status_t new_instruction(hl_parser_t *p, hl_computation_t *c, const char *name,
                                   hl_opcode_t op, const hl_token_t *at, hl_instruction_t **out) {
  HL_RETURN_IF_ERROR(hl_computation_add_instruction(c, name, op, out));
  (*out)->id = ++p->next_instruction_id;
  (*out)->line = at->line;
  (*out)->column = at->column;
  return map_insert(p->names, *out);
}

// "<base>", or "<base>.N" for the first N that is free in the map.
static char *unique_instruction_name(hl_parser_t *p, const char *base) {
  size_t n = strlen(base);
  char *name = hl_malloc(n + 24);
  if (!name) return NULL;
  memcpy(name, base, n + 1);
  for (int i = 1; map_find(p->names, name, strlen(name)); i++)
    snprintf(name + n, 24, ".%d", i);
  return name;
}

static char *unique_computation_name(hl_module_t *m, const char *base) {
  size_t n = strlen(base);
  char *name = hl_malloc(n + 24);
  if (!name) return NULL;
  memcpy(name, base, n + 1);
  for (int i = 1; hl_module_find_computation(m, name); i++) snprintf(name + n, 24, ".%d", i);
  return name;
}

void hl_called_slots_deinit(hl_called_slots_t *s) {
  hl_free(s->branches);
  hl_free(s->called);
  memset(s, 0, sizeof(*s));
}

// called_computations in proto order: while [body, condition], conditional
// [true, false] or branches, select-and-scatter [select, scatter], others
// [to_apply] / [calls] / called_computations={...}.
static hl_status_t assemble_called(hl_instruction_t *inst, const hl_called_slots_t *s) {
  hl_computation_t *list[8];
  int n = 0;
  hl_computation_t *singles[] = {s->to_apply, s->calls, s->body, s->condition,
                                 s->true_computation, s->false_computation, s->select,
                                 s->scatter};
  for (int i = 0; i < 8; i++)
    if (singles[i]) list[n++] = singles[i];
  int total = n + s->branch_count + s->called_count;
  if (total == 0) return NULL;
  hl_computation_t **all = hl_malloc((size_t)total * sizeof(*all));
  if (!all) return HL_OOM();
  memcpy(all, list, (size_t)n * sizeof(*all));
  if (s->branch_count) memcpy(all + n, s->branches, (size_t)s->branch_count * sizeof(*all));
  if (s->called_count)
    memcpy(all + n + s->branch_count, s->called, (size_t)s->called_count * sizeof(*all));
  hl_status_t st = hl_instruction_set_called(inst, all, total);
  hl_free(all);
  return st;
}

typedef struct {
  char **names;
  int n, cap;
} seen_attrs_t;

static hl_status_t parse_attributes(hl_parser_t *p, hl_instruction_t *inst,
                                    hl_called_slots_t *slots) {
  hl_lexer_t *lx = &p->lx;
  seen_attrs_t seen = {0};
  hl_status_t st = NULL;
  while (!st && lx->tok.kind == HL_TOK_COMMA) {
    hl_lexer_next(lx);
    if (lx->tok.kind != HL_TOK_ATTR) {
      st = hl_lexer_error(lx, NULL, "expected an attribute name (name=value)");
      break;
    }
    for (int i = 0; i < seen.n; i++)
      if (hl_tok_text_equals(&lx->tok, seen.names[i])) {
        st = hl_lexer_error(lx, NULL, "attribute '%s' is given more than once", seen.names[i]);
        break;
      }
    if (st) break;
    if (seen.n == seen.cap) {
      int cap = seen.cap ? seen.cap * 2 : 8;
      char **v = hl_realloc(seen.names, (size_t)cap * sizeof(char *));
      if (!v) {
        st = HL_OOM();
        break;
      }
      seen.names = v;
      seen.cap = cap;
    }
    if (!(seen.names[seen.n] = hl_token_strdup(&lx->tok))) {
      st = HL_OOM();
      break;
    }
    seen.n++;
    st = hl_parse_instruction_attribute(p, inst, slots);
  }
  for (int i = 0; i < seen.n; i++) hl_free(seen.names[i]);
  hl_free(seen.names);
  return st;
}

static hl_status_t parse_instruction_rest(hl_parser_t *p, hl_computation_t *c, const char *name,
                                          const hl_token_t *name_tok, hl_shape_t *shape,
                                          bool has_shape, bool nested, hl_instruction_t **out);

// One operand: [shape] name | [shape] opcode(...) (nested, anonymous).
static hl_status_t parse_operand(hl_parser_t *p, hl_computation_t *c, hl_instruction_t **out) {
  hl_lexer_t *lx = &p->lx;
  *out = NULL;
  hl_shape_t shape;
  memset(&shape, 0, sizeof(shape));
  bool has_shape = false;
  hl_token_t shape_tok = lx->tok;
  if (hl_lexer_at_shape(lx) &&
      !(lx->tok.kind == HL_TOK_TYPE && hl_lexer_peek(lx).kind != HL_TOK_LSQUARE)) {
    HL_RETURN_IF_ERROR(hl_parse_shape_tokens(lx, &shape));
    has_shape = true;
  }
  hl_token_t tok = lx->tok;
  hl_status_t st = NULL;
  if (tok.kind == HL_TOK_IDENT && hl_lexer_peek(lx).kind == HL_TOK_LPAREN && is_opcode_word(&tok)) {
    if (++p->depth > 200) {
      st = hl_lexer_error(lx, NULL, "operands nested too deeply");
    } else {
      opcode_info_t info;
      resolve_opcode(&tok, &info);
      char base[96];
      snprintf(base, sizeof(base), "%s.anon", hl_opcode_name(info.op));
      char *name = unique_instruction_name(p, base);
      st = name ? parse_instruction_rest(p, c, name, &tok, &shape, has_shape, true, out)
                : HL_OOM();
      hl_free(name);
    }
    p->depth--;
    hl_shape_deinit(&shape);
    return st;
  }
  if (tok.kind != HL_TOK_IDENT && tok.kind != HL_TOK_NAME && tok.kind != HL_TOK_TYPE) {
    hl_shape_deinit(&shape);
    return hl_lexer_error(lx, NULL, "expected an operand name");
  }
  hl_instruction_t *inst = map_find(p->names, tok.text, tok.length);
  if (!inst) {
    hl_shape_deinit(&shape);
    return hl_lexer_error(lx, NULL, "instruction '%.*s' is not defined", (int)tok.length,
                          tok.text);
  }
  if (has_shape && !hl_shape_equal(&shape, &inst->shape)) {
    char want[256];
    snprintf(want, sizeof(want), "%s", hl_shape_debug_string(&inst->shape));
    st = hl_lexer_error(lx, &shape_tok, "operand '%s' has shape %s but the text says %s",
                        inst->name, want, hl_shape_debug_string(&shape));
  }
  hl_shape_deinit(&shape);
  if (st) return st;
  hl_lexer_next(lx);
  *out = inst;
  return NULL;
}

// Wrapped computation for async sugar "op-start": parameters for the
// operands and one instruction of the wrapped opcode; returns that instruction.
static hl_status_t build_async_wrapped(hl_parser_t *p, hl_opcode_t wrapped_op,
                                       const hl_token_t *at, inst_vec_t *operands,
                                       const hl_shape_t *start_shape,
                                       hl_computation_t **out_comp, hl_instruction_t **out_inst) {
  char base[96];
  snprintf(base, sizeof(base), "wrapped_%s", hl_opcode_name(wrapped_op));
  for (char *q = base; *q; q++)
    if (*q == '-') *q = '_';
  char *cname = unique_computation_name(p->module, base);
  if (!cname) return HL_OOM();
  hl_computation_t *w;
  hl_status_t st = hl_module_add_computation(p->module, cname, &w);
  hl_free(cname);
  if (st) return st;
  name_map_t map = {.outer = p->names};
  p->names = &map;
  hl_instruction_t **params = hl_calloc((size_t)(operands->n ? operands->n : 1), sizeof(*params));
  if (!params) st = HL_OOM();
  for (int i = 0; !st && i < operands->n; i++) {
    char pname[32];
    snprintf(pname, sizeof(pname), "param_%d", i);
    st = new_instruction(p, w, pname, HL_OP_PARAMETER, at, &params[i]);
    if (!st) {
      params[i]->attrs.parameter_number = i;
      st = hl_shape_copy(&operands->v[i]->shape, &params[i]->shape);
    }
  }
  hl_instruction_t *inst = NULL;
  if (!st) {
    char base2[96];
    snprintf(base2, sizeof(base2), "%s", hl_opcode_name(wrapped_op));
    st = new_instruction(p, w, base2, wrapped_op, at, &inst);
  }
  if (!st) st = hl_instruction_set_operands(inst, params, operands->n);
  if (!st && start_shape->dtype == HL_TUPLE && start_shape->tuple_count >= 2)
    st = hl_shape_copy(&start_shape->tuple[1], &inst->shape);
  else if (!st)
    st = hl_lexer_error(&p->lx, at, "the shape of an async start must be a tuple "
                        "((operands), result, ...)");
  if (!st) {
    w->root = inst;
    st = hl_computation_index_parameters(w);
  }
  hl_free(params);
  p->names = map.outer;
  hl_free(map.slots);
  *out_comp = w;
  *out_inst = inst;
  return st;
}

static hl_status_t parse_instruction_rest(hl_parser_t *p, hl_computation_t *c, const char *name,
                                          const hl_token_t *name_tok, hl_shape_t *shape,
                                          bool has_shape, bool nested, hl_instruction_t **out) {
  hl_lexer_t *lx = &p->lx;
  *out = NULL;
  hl_token_t op_tok = lx->tok;
  opcode_info_t info;
  if (op_tok.kind != HL_TOK_IDENT) return hl_lexer_error(lx, NULL, "expected an opcode");
  if (!resolve_opcode(&op_tok, &info))
    return hl_lexer_error(lx, NULL, "unknown opcode '%.*s'", (int)op_tok.length, op_tok.text);
  hl_lexer_next(lx);
  HL_RETURN_IF_ERROR(hl_expect(lx, HL_TOK_LPAREN, "'(' after the opcode"));

  inst_vec_t operands = {0};
  int64_t parameter_number = 0;
  hl_literal_t *literal = NULL;
  hl_status_t st = NULL;
  if (info.op == HL_OP_PARAMETER) {
    hl_token_t at = lx->tok;
    st = hl_parse_int64(lx, &parameter_number);
    if (!st && parameter_number < 0)
      st = hl_lexer_error(lx, &at, "parameter number must not be negative");
  } else if (info.op == HL_OP_CONSTANT) {
    if (!has_shape) {
      st = hl_lexer_error(lx, &op_tok, "shape required for constant '%s'", name);
    } else if (lx->tok.kind == HL_TOK_LBRACE && hl_lexer_peek(lx).kind == HL_TOK_DOTS) {
      st = hl_lexer_error(lx, NULL,
                          "constant '%s' is elided as {...} in this text dump; load the .pb dump "
                          "(--xla_dump_hlo_as_proto) to get its value", name);
    } else {
      st = hl_parse_literal_tokens(lx, shape, &literal);
    }
  } else {
    while (!st && lx->tok.kind != HL_TOK_RPAREN) {
      hl_instruction_t *operand;
      st = parse_operand(p, c, &operand);
      if (!st) st = vec_push(&operands, operand);
      if (st || lx->tok.kind != HL_TOK_COMMA) break;
      hl_lexer_next(lx);
    }
  }
  if (!st) st = hl_expect(lx, HL_TOK_RPAREN, "')' to close the operands");

  hl_instruction_t *inst = NULL;
  hl_instruction_t *target = NULL;  // where the attributes go
  hl_computation_t *wrapped_comp = NULL;
  if (!st) st = new_instruction(p, c, name, info.op, name_tok, &inst);
  if (!st) {
    inst->attrs.parameter_number = parameter_number;
    inst->attrs.literal = literal;
    literal = NULL;
    inst->attrs.comparison_direction = info.direction;
    if (has_shape) {
      inst->shape = *shape;  // moved
      memset(shape, 0, sizeof(*shape));
    }
    st = hl_instruction_set_operands(inst, operands.v, operands.n);
    target = inst;
  }
  if (!st && info.op == HL_OP_ASYNC_START && info.wrapped != HL_OP_INVALID_) {
    if (!has_shape)
      st = hl_lexer_error(lx, &op_tok, "shape required for '%.*s'", (int)op_tok.length,
                          op_tok.text);
    if (!st)
      st = build_async_wrapped(p, info.wrapped, name_tok, &operands, &inst->shape, &wrapped_comp,
                               &target);
    if (!st) st = hl_instruction_set_called(inst, &wrapped_comp, 1);
  }
  hl_called_slots_t slots;
  memset(&slots, 0, sizeof(slots));
  if (!st && !nested) st = parse_attributes(p, target, &slots);
  if (!st) st = assemble_called(target, &slots);
  hl_called_slots_deinit(&slots);
  if (!st && info.wrapped != HL_OP_INVALID_ && info.op != HL_OP_ASYNC_START &&
      inst->operand_count >= 1 && inst->called_count == 0) {
    // op-update / op-done run the computation their start wraps.
    hl_instruction_t *prev = inst->operands[0];
    st = hl_instruction_set_called(inst, prev->called_computations, prev->called_count);
  }
  // Checks on the instruction that carries the opcode's operands.
  hl_instruction_t *checked = target ? target : inst;
  if (!st && !has_shape) {
    bool ok;
    st = infer_shape(inst, &ok);
    if (!st && !ok)
      st = hl_lexer_error(lx, &op_tok, "shape required for '%s' (the text gives none and it "
                          "cannot be inferred)", name);
  }
  if (!st) {
    int arity = hl_opcode_arity(checked->opcode);
    if (arity >= 0 && checked->operand_count != arity)
      st = hl_lexer_error(lx, &op_tok, "'%s' takes %d operand%s but %d %s given",
                          hl_opcode_name(checked->opcode), arity, arity == 1 ? "" : "s",
                          checked->operand_count, checked->operand_count == 1 ? "is" : "are");
  }
  if (!st && info.op == HL_OP_GET_TUPLE_ELEMENT && inst->operand_count == 1) {
    const hl_shape_t *t = &inst->operands[0]->shape;
    if (t->dtype != HL_TUPLE || inst->attrs.tuple_index < 0 ||
        inst->attrs.tuple_index >= t->tuple_count)
      st = hl_lexer_error(lx, &op_tok, "get-tuple-element index %lld is out of range for %s",
                          (long long)inst->attrs.tuple_index, hl_shape_debug_string(t));
  }
  hl_literal_release(literal);
  hl_free(operands.v);
  *out = inst;
  return st;
}

// [ROOT] name = [shape] opcode(operands)[, attr=value]*
static hl_status_t parse_instruction(hl_parser_t *p, hl_computation_t *c, bool *out_is_root,
                                     hl_instruction_t **out) {
  hl_lexer_t *lx = &p->lx;
  *out_is_root = false;
  if (hl_tok_is_word(&lx->tok, "ROOT")) {
    *out_is_root = true;
    hl_lexer_next(lx);
  }
  hl_token_t name_tok = lx->tok;
  if (name_tok.kind == HL_TOK_ATTR) {
    hl_lexer_next(lx);  // "name=" lexed as one token
  } else if (name_tok.kind == HL_TOK_IDENT || name_tok.kind == HL_TOK_NAME ||
             name_tok.kind == HL_TOK_TYPE) {
    hl_lexer_next(lx);
    HL_RETURN_IF_ERROR(hl_expect(lx, HL_TOK_EQUAL, "'=' after the instruction name"));
  } else {
    return hl_lexer_error(lx, NULL, "expected an instruction name");
  }
  if (map_find(p->names, name_tok.text, name_tok.length))
    return hl_lexer_error(lx, &name_tok, "instruction '%.*s' is defined twice in computation "
                          "'%s'", (int)name_tok.length, name_tok.text, c->name);
  char *name = hl_token_strdup(&name_tok);
  if (!name) return HL_OOM();
  hl_shape_t shape;
  memset(&shape, 0, sizeof(shape));
  bool has_shape = false;
  hl_status_t st = NULL;
  if (hl_lexer_at_shape(lx)) {
    st = hl_parse_shape_tokens(lx, &shape);
    has_shape = !st;
  }
  if (!st) st = parse_instruction_rest(p, c, name, &name_tok, &shape, has_shape, false, out);
  hl_shape_deinit(&shape);
  hl_free(name);
  return st;
}

//===----------------------------------------------------------------------===//
// Computations
//===----------------------------------------------------------------------===//

// The checks of hl_computation_index_parameters, reported at the parameter's
// position in the text.
static hl_status_t check_parameter_numbers(const hl_lexer_t *lx, const hl_computation_t *c) {
  int count = 0;
  for (int i = 0; i < c->instruction_count; i++)
    if (c->instructions[i]->opcode == HL_OP_PARAMETER) count++;
  for (int i = 0; i < c->instruction_count; i++) {
    const hl_instruction_t *a = c->instructions[i];
    if (a->opcode != HL_OP_PARAMETER) continue;
    int64_t n = a->attrs.parameter_number;
    if (n >= count)
      return HL_INVALID("%s:%d:%d: parameter number %lld is out of range: computation '%s' has "
                        "%d parameters near '%s'", lx->source_name, a->line, a->column,
                        (long long)n, c->name, count, a->name);
    for (int j = 0; j < i; j++) {
      const hl_instruction_t *b = c->instructions[j];
      if (b->opcode == HL_OP_PARAMETER && b->attrs.parameter_number == n)
        return HL_INVALID("%s:%d:%d: parameter number %lld is used twice (also by '%s') "
                          "near '%s'", lx->source_name, a->line, a->column, (long long)n,
                          b->name, a->name);
    }
  }
  return NULL;
}

// "{ instructions }" into computation c.
static hl_status_t parse_body(hl_parser_t *p, hl_computation_t *c) {
  hl_lexer_t *lx = &p->lx;
  HL_RETURN_IF_ERROR(hl_expect(lx, HL_TOK_LBRACE, "'{' to open the computation body"));
  if (++p->depth > 200) return hl_lexer_error(lx, NULL, "computations nested too deeply");
  name_map_t map = {.outer = p->names};
  p->names = &map;
  hl_instruction_t *root = NULL;
  hl_token_t root_tok = lx->tok;
  hl_status_t st = NULL;
  while (!st && lx->tok.kind != HL_TOK_RBRACE) {
    if (lx->tok.kind == HL_TOK_EOF || lx->tok.kind == HL_TOK_ERROR) {
      st = hl_lexer_error(lx, NULL, "expected '}' to close computation '%s'", c->name);
      break;
    }
    bool is_root;
    hl_token_t at = lx->tok;
    hl_instruction_t *inst = NULL;
    st = parse_instruction(p, c, &is_root, &inst);
    if (!st && is_root) {
      if (root)
        st = hl_lexer_error(lx, &at, "computation '%s' has more than one ROOT (also '%s' at "
                            "line %d)", c->name, root->name, root_tok.line);
      root = inst;
      root_tok = at;
    }
  }
  p->names = map.outer;
  hl_free(map.slots);
  p->depth--;
  if (st) return st;
  if (c->instruction_count == 0)
    return hl_lexer_error(lx, NULL, "computation '%s' has no instructions", c->name);
  hl_lexer_next(lx);  // '}'
  c->root = root ? root : c->instructions[c->instruction_count - 1];
  HL_RETURN_IF_ERROR(check_parameter_numbers(lx, c));
  return hl_computation_index_parameters(c);
}

static hl_status_t add_named_computation(hl_parser_t *p, const hl_token_t *name_tok,
                                         hl_computation_t **out) {
  char *name = hl_token_strdup(name_tok);
  if (!name) return HL_OOM();
  hl_status_t st = NULL;
  if (hl_module_find_computation(p->module, name))
    st = hl_lexer_error(&p->lx, name_tok, "computation '%s' is defined twice", name);
  if (!st) st = hl_module_add_computation(p->module, name, out);
  hl_free(name);
  return st;
}

hl_status_t hl_parse_inline_computation(hl_parser_t *p, const char *hint,
                                        hl_computation_t **out) {
  char *name = unique_computation_name(p->module, hint);
  if (!name) return HL_OOM();
  hl_status_t st = hl_module_add_computation(p->module, name, out);
  hl_free(name);
  if (st) return st;
  return parse_body(p, *out);
}

hl_status_t hl_parse_computation_ref(hl_parser_t *p, const char *hint, hl_computation_t **out) {
  hl_lexer_t *lx = &p->lx;
  *out = NULL;
  if (lx->tok.kind == HL_TOK_LBRACE) return hl_parse_inline_computation(p, hint, out);
  if (lx->tok.kind != HL_TOK_IDENT && lx->tok.kind != HL_TOK_NAME && lx->tok.kind != HL_TOK_TYPE)
    return hl_lexer_error(lx, NULL, "expected a computation name");
  char *name = hl_token_strdup(&lx->tok);
  if (!name) return HL_OOM();
  hl_computation_t *c = hl_module_find_computation(p->module, name);
  hl_status_t st = NULL;
  if (!c)
    st = hl_lexer_error(lx, NULL, "computation '%s' is not defined", name);
  else if (!c->root)
    st = hl_lexer_error(lx, NULL, "computation '%s' is used inside its own definition", name);
  hl_free(name);
  if (st) return st;
  hl_lexer_next(lx);
  *out = c;
  return NULL;
}

// "(p0: f32[2], ...) -> shape": checked for syntax only; parameters are
// defined by the parameter instructions.
static hl_status_t skip_signature(hl_lexer_t *lx) {
  HL_RETURN_IF_ERROR(hl_expect(lx, HL_TOK_LPAREN, "'('"));
  while (lx->tok.kind != HL_TOK_RPAREN) {
    if (lx->tok.kind == HL_TOK_LABEL) {
      hl_lexer_next(lx);
    } else if (lx->tok.kind == HL_TOK_NAME || lx->tok.kind == HL_TOK_IDENT) {
      hl_lexer_next(lx);
      HL_RETURN_IF_ERROR(hl_expect(lx, HL_TOK_COLON, "':' after the parameter name"));
    } else {
      return hl_lexer_error(lx, NULL, "expected a parameter name");
    }
    hl_shape_t s;
    HL_RETURN_IF_ERROR(hl_parse_shape_tokens(lx, &s));
    hl_shape_deinit(&s);
    if (lx->tok.kind != HL_TOK_COMMA) break;
    hl_lexer_next(lx);
  }
  HL_RETURN_IF_ERROR(hl_expect(lx, HL_TOK_RPAREN, "')' to close the signature"));
  HL_RETURN_IF_ERROR(hl_expect(lx, HL_TOK_ARROW, "'->' after the parameters"));
  hl_shape_t s;
  HL_RETURN_IF_ERROR(hl_parse_shape_tokens(lx, &s));
  hl_shape_deinit(&s);
  return NULL;
}

// [ENTRY] name [signature] { ... } [, execution_thread="..."]
static hl_status_t parse_computation(hl_parser_t *p, bool *out_is_entry, hl_computation_t **out) {
  hl_lexer_t *lx = &p->lx;
  *out_is_entry = false;
  if (hl_tok_is_word(&lx->tok, "ENTRY")) {
    *out_is_entry = true;
    hl_lexer_next(lx);
  }
  hl_token_t name_tok = lx->tok;
  if (name_tok.kind != HL_TOK_IDENT && name_tok.kind != HL_TOK_NAME &&
      name_tok.kind != HL_TOK_TYPE)  // a name may be spelled like a type ("f16")
    return hl_lexer_error(lx, NULL, "expected a computation name");
  hl_lexer_next(lx);
  hl_computation_t *c;
  HL_RETURN_IF_ERROR(add_named_computation(p, &name_tok, &c));
  *out = c;
  if (lx->tok.kind == HL_TOK_LPAREN) HL_RETURN_IF_ERROR(skip_signature(lx));
  HL_RETURN_IF_ERROR(parse_body(p, c));
  if (lx->tok.kind == HL_TOK_COMMA && hl_lexer_peek(lx).kind == HL_TOK_ATTR) {
    hl_lexer_next(lx);
    if (!hl_tok_text_equals(&lx->tok, "execution_thread"))
      return hl_lexer_error(lx, NULL, "unknown computation attribute");
    hl_lexer_next(lx);
    hl_strbuf_t sb;
    hl_strbuf_init(&sb);
    hl_status_t st = hl_lexer_decode_string(lx, &lx->tok, &sb);
    if (!st) {
      hl_free(c->execution_thread);
      c->execution_thread = hl_strbuf_take(&sb);
      if (!c->execution_thread) c->execution_thread = hl_strdup("");
      if (!c->execution_thread) st = HL_OOM();
    }
    hl_strbuf_deinit(&sb);
    HL_RETURN_IF_ERROR(st);
    hl_lexer_next(lx);
  }
  return NULL;
}

//===----------------------------------------------------------------------===//
// Module
//===----------------------------------------------------------------------===//

static hl_status_t parse_bool_value(hl_lexer_t *lx, bool *out) {
  if (hl_tok_is_word(&lx->tok, "true") || hl_tok_is_word(&lx->tok, "false")) {
    *out = hl_tok_is_word(&lx->tok, "true");
    hl_lexer_next(lx);
    return NULL;
  }
  return hl_lexer_error(lx, NULL, "expected true or false");
}

static hl_status_t parse_module_frontend_attributes(hl_parser_t *p) {
  // Parsed through a throwaway instruction-free path: same syntax as the
  // instruction attribute.
  hl_lexer_t *lx = &p->lx;
  HL_RETURN_IF_ERROR(hl_expect(lx, HL_TOK_LBRACE, "'{'"));
  while (lx->tok.kind != HL_TOK_RBRACE) {
    if (lx->tok.kind != HL_TOK_ATTR) return hl_lexer_error(lx, NULL, "expected key=\"value\"");
    char *key = hl_token_strdup(&lx->tok);
    if (!key) return HL_OOM();
    hl_lexer_next(lx);
    hl_strbuf_t sb;
    hl_strbuf_init(&sb);
    hl_status_t st = NULL;
    if (lx->tok.kind == HL_TOK_LBRACE) {
      const char *t;
      size_t n;
      st = hl_lexer_take_braced_raw(lx, &t, &n);
      if (!st) hl_strbuf_append_n(&sb, t, n);
    } else {
      st = hl_lexer_decode_string(lx, &lx->tok, &sb);
      if (!st) hl_lexer_next(lx);
    }
    if (!st && sb.failed) st = HL_OOM();
    if (!st) st = hl_frontend_attributes_add(&p->module->frontend_attributes, key,
                                             hl_strbuf_cstr(&sb));
    hl_strbuf_deinit(&sb);
    hl_free(key);
    HL_RETURN_IF_ERROR(st);
    if (lx->tok.kind != HL_TOK_COMMA) break;
    hl_lexer_next(lx);
  }
  return hl_expect(lx, HL_TOK_RBRACE, "'}' to close frontend_attributes");
}

static hl_status_t parse_header(hl_parser_t *p) {
  hl_lexer_t *lx = &p->lx;
  hl_lexer_next(lx);  // HloModule
  hl_token_t name = lx->tok;
  if (name.kind != HL_TOK_IDENT && name.kind != HL_TOK_NAME && name.kind != HL_TOK_LABEL &&
      name.kind != HL_TOK_TYPE)
    return hl_lexer_error(lx, NULL, "expected the module name");
  char *s = hl_token_strdup(&name);
  if (!s) return HL_OOM();
  hl_free(p->module->name);
  p->module->name = s;
  hl_lexer_next(lx);
  while (lx->tok.kind == HL_TOK_COMMA) {
    hl_lexer_next(lx);
    hl_token_t attr = lx->tok;
    if (attr.kind != HL_TOK_ATTR) return hl_lexer_error(lx, NULL, "expected a module attribute");
    hl_lexer_next(lx);
    if (hl_tok_text_equals(&attr, "replica_count") || hl_tok_text_equals(&attr, "num_partitions")) {
      hl_token_t at = lx->tok;
      int64_t v;
      HL_RETURN_IF_ERROR(hl_parse_int64(lx, &v));
      if (v < 1) return hl_lexer_error(lx, &at, "%.*s must be at least 1", (int)attr.length,
                                       attr.text);
      if (hl_tok_text_equals(&attr, "replica_count"))
        p->module->replica_count = v;
      else
        p->module->num_partitions = v;
    } else if (hl_tok_text_equals(&attr, "is_scheduled")) {
      HL_RETURN_IF_ERROR(parse_bool_value(lx, &p->module->is_scheduled));
    } else if (hl_tok_text_equals(&attr, "frontend_attributes")) {
      HL_RETURN_IF_ERROR(parse_module_frontend_attributes(p));
    } else if (hl_tok_text_equals(&attr, "entry_computation_layout")) {
      p->has_entry_layout = true;
      p->entry_layout = *lx;
      HL_RETURN_IF_ERROR(hl_skip_attribute_value(lx, attr.line));
    } else {
      HL_RETURN_IF_ERROR(hl_skip_attribute_value(lx, attr.line));
    }
  }
  return NULL;
}

static bool is_table_word(const hl_token_t *t) {
  return hl_tok_is_word(t, "FileNames") || hl_tok_is_word(t, "FunctionNames") ||
         hl_tok_is_word(t, "FileLocations") || hl_tok_is_word(t, "StackFrames");
}

// The stack-frame tables after the header: "FileNames 1 "a.py" ...",
// "FileLocations 1 {file_name_id=1 ...}". Not needed to run; skipped.
static hl_status_t skip_tables(hl_lexer_t *lx) {
  while (is_table_word(&lx->tok)) {
    hl_lexer_next(lx);
    for (;;) {
      hl_tok_kind_t k = lx->tok.kind;
      if (k == HL_TOK_INT || k == HL_TOK_STRING || k == HL_TOK_DECIMAL || k == HL_TOK_COMMA)
        hl_lexer_next(lx);
      else if (k == HL_TOK_LBRACE)
        HL_RETURN_IF_ERROR(hl_skip_balanced(lx));
      else
        break;
    }
  }
  return NULL;
}

typedef struct {
  hl_computation_t **order;
  int n;
  bool *visited;  // by computation id
} postorder_t;

static void visit(postorder_t *po, hl_computation_t *c) {
  if (po->visited[c->id]) return;
  po->visited[c->id] = true;
  for (int i = 0; i < c->instruction_count; i++) {
    hl_instruction_t *inst = c->instructions[i];
    for (int j = 0; j < inst->called_count; j++) visit(po, inst->called_computations[j]);
  }
  po->order[po->n++] = c;
}

static hl_status_t order_computations(hl_module_t *m) {
  int n = m->computation_count;
  postorder_t po = {hl_calloc((size_t)n, sizeof(hl_computation_t *)), 0,
                    hl_calloc((size_t)n, sizeof(bool))};
  if (!po.order || !po.visited) {
    hl_free(po.order);
    hl_free(po.visited);
    return HL_OOM();
  }
  for (int i = 0; i < n; i++)
    if (m->computations[i] != m->entry) visit(&po, m->computations[i]);
  visit(&po, m->entry);
  memcpy(m->computations, po.order, (size_t)n * sizeof(hl_computation_t *));
  hl_free(po.order);
  hl_free(po.visited);
  return NULL;
}

// entry_computation_layout={(f32[2]{0}, s32[])->f32[2]{0}}: the entry's
// signature with the layouts its caller stores the arrays in. Values stay
// logical whatever those layouts are (.npy files are row-major), so the
// shapes must only agree with the entry's parameters and root; the layouts
// are parsed like any other (every part, runtime/base/layout.h).
static hl_status_t check_entry_layout(hl_parser_t *p) {
  hl_lexer_t lx = p->entry_layout;
  const hl_computation_t *e = p->module->entry;
  HL_RETURN_IF_ERROR(hl_expect(&lx, HL_TOK_LBRACE, "'{' to open entry_computation_layout"));
  HL_RETURN_IF_ERROR(hl_expect(&lx, HL_TOK_LPAREN, "'(' before the parameter layouts"));
  int n = 0;
  hl_status_t st = NULL;
  while (!st && lx.tok.kind != HL_TOK_RPAREN) {
    hl_token_t at = lx.tok;
    hl_shape_t s;
    HL_RETURN_IF_ERROR(hl_parse_shape_tokens(&lx, &s));
    const hl_instruction_t *param = n < e->parameter_count ? e->parameters[n] : NULL;
    if (!param)
      st = hl_lexer_error(&lx, &at, "entry_computation_layout has more parameters than "
                          "computation '%s' (%d)", e->name, e->parameter_count);
    else if (!hl_shape_equal(&s, &param->shape))
      st = hl_lexer_error(&lx, &at, "entry_computation_layout gives parameter %d the shape %s, "
                          "but parameter '%s' is %s", n, hl_shape_debug_string(&s), param->name,
                          hl_shape_debug_string(&param->shape));
    hl_shape_deinit(&s);
    n++;
    if (lx.tok.kind != HL_TOK_COMMA) break;
    hl_lexer_next(&lx);
  }
  if (st) return st;
  if (n != e->parameter_count)
    return hl_lexer_error(&lx, NULL, "entry_computation_layout has %d parameters, computation "
                          "'%s' has %d", n, e->name, e->parameter_count);
  HL_RETURN_IF_ERROR(hl_expect(&lx, HL_TOK_RPAREN, "')' after the parameter layouts"));
  HL_RETURN_IF_ERROR(hl_expect(&lx, HL_TOK_ARROW, "'->' before the result layout"));
  hl_token_t at = lx.tok;
  hl_shape_t r;
  HL_RETURN_IF_ERROR(hl_parse_shape_tokens(&lx, &r));
  if (e->root && !hl_shape_equal(&r, &e->root->shape))
    st = hl_lexer_error(&lx, &at, "entry_computation_layout gives the result the shape %s, but "
                        "the root '%s' is %s", hl_shape_debug_string(&r), e->root->name,
                        hl_shape_debug_string(&e->root->shape));
  hl_shape_deinit(&r);
  if (st) return st;
  return hl_expect(&lx, HL_TOK_RBRACE, "'}' to close entry_computation_layout");
}

static hl_status_t parse_module(hl_parser_t *p) {
  hl_lexer_t *lx = &p->lx;
  bool has_header = hl_tok_is_word(&lx->tok, "HloModule");
  if (has_header) HL_RETURN_IF_ERROR(parse_header(p));
  HL_RETURN_IF_ERROR(skip_tables(lx));
  hl_computation_t *entry = NULL, *last = NULL;
  hl_token_t entry_tok = lx->tok;
  while (lx->tok.kind != HL_TOK_EOF) {
    if (lx->tok.kind == HL_TOK_ERROR) return hl_lexer_error(lx, NULL, "bad input");
    bool is_entry;
    hl_token_t at = lx->tok;
    hl_computation_t *c = NULL;
    HL_RETURN_IF_ERROR(parse_computation(p, &is_entry, &c));
    if (is_entry) {
      if (entry)
        return hl_lexer_error(lx, &at, "more than one ENTRY computation (the first is '%s' at "
                              "line %d)", entry->name, entry_tok.line);
      entry = c;
      entry_tok = at;
    }
    last = c;
  }
  if (!last) return hl_lexer_error(lx, NULL, "expected a computation");
  p->module->entry = entry ? entry : last;
  if (p->has_entry_layout) HL_RETURN_IF_ERROR(check_entry_layout(p));
  if (!has_header) {
    size_t n = strlen(p->module->entry->name) + 8;
    char *name = hl_malloc(n);
    if (!name) return HL_OOM();
    snprintf(name, n, "module_%s", p->module->entry->name);
    hl_free(p->module->name);
    p->module->name = name;
  }
  return order_computations(p->module);
}

hl_status_t hl_parse_hlo_module(const char *text, size_t length, const char *source_name,
                                hl_module_t **out_module) {
  *out_module = NULL;
  if (!source_name) source_name = "<text>";
  hl_parser_t p;
  memset(&p, 0, sizeof(p));
  HL_RETURN_IF_ERROR(hl_module_create("module", &p.module));
  p.module->source_path = hl_strdup(source_name);
  if (!p.module->source_path) {
    hl_module_destroy(p.module);
    return HL_OOM();
  }
  hl_lexer_init(&p.lx, text, text ? length : 0, source_name);
  hl_status_t st = parse_module(&p);
  if (st) {
    hl_module_destroy(p.module);
    return st;
  }
  *out_module = p.module;
  return NULL;
}
