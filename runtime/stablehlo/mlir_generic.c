#include "runtime/stablehlo/mlir_generic.h"

#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/stablehlo/mlir_lexer.h"

#define POS_ERR(op, ...) hl_mlir_error_pos(path, (op)->line, (op)->column, __VA_ARGS__)

// Takes named attribute `name` out of op (the caller owns *out); false when absent.
static bool take_attr(hl_mlir_op_t *op, const char *name, hl_mlir_attr_t *out) {
  for (int i = 0; i < op->attr_count; i++) {
    if (strcmp(op->attr_names[i], name) != 0) continue;
    *out = op->attrs[i];
    hl_free(op->attr_names[i]);
    memmove(&op->attr_names[i], &op->attr_names[i + 1],
            (size_t)(op->attr_count - i - 1) * sizeof(char *));
    memmove(&op->attrs[i], &op->attrs[i + 1],
            (size_t)(op->attr_count - i - 1) * sizeof(hl_mlir_attr_t));
    op->attr_count--;
    return true;
  }
  return false;
}

// The types of an ARRAY of TYPE items, moved into a new array.
static hl_status_t take_types(hl_mlir_attr_t *list, hl_shape_t **out, int *out_n) {
  *out = hl_calloc((size_t)list->n + 1, sizeof(hl_shape_t));
  if (!*out) return HL_OOM();
  for (int i = 0; i < list->n; i++) {
    (*out)[i] = list->items[i].type;
    memset(&list->items[i].type, 0, sizeof(hl_shape_t));
  }
  *out_n = list->n;
  return NULL;
}

// arg_attrs / res_attrs = [{...}, {...}]: one DICT per entry, moved; UNIT
// entries when absent (as parse_func leaves them).
// *out_count is what hl_mlir_op_deinit frees.
static hl_status_t take_dicts(hl_mlir_op_t *op, const char *name, int n, hl_mlir_attr_t **out,
                              int *out_count) {
  *out = hl_calloc((size_t)n + 1, sizeof(hl_mlir_attr_t));
  if (!*out) return HL_OOM();
  *out_count = n;
  hl_mlir_attr_t list;
  if (!take_attr(op, name, &list)) return NULL;
  for (int i = 0; i < n && list.kind == HL_MATTR_ARRAY && i < list.n; i++) {
    (*out)[i] = list.items[i];
    memset(&list.items[i], 0, sizeof(hl_mlir_attr_t));
  }
  hl_mlir_attr_deinit(&list);
  return NULL;
}

hl_status_t hl_mlir_generic_func(const char *path, hl_mlir_op_t *op) {
  hl_mlir_attr_t name = {0}, type = {0}, vis = {0};
  hl_status_t st = NULL;
  if (!take_attr(op, "sym_name", &name) || name.kind != HL_MATTR_STRING)
    st = POS_ERR(op, "'func.func' needs sym_name = \"...\"");
  else if (!take_attr(op, "function_type", &type) || type.kind != HL_MATTR_FUNCTION_TYPE)
    st = POS_ERR(op, "'func.func' needs function_type = (...) -> (...)");
  else if (op->region_count != 1 || op->regions[0].block_count != 1)
    st = POS_ERR(op, "'func.func' needs one region of one block");
  else if (op->operand_count || op->result_count)
    st = POS_ERR(op, "'func.func' takes no operands and has no results");
  if (!st && op->regions[0].blocks[0].arg_count != type.items[0].n)
    st = POS_ERR(op, "'func.func' @%s: the block has %d arguments, function_type %d", name.s,
                 op->regions[0].blocks[0].arg_count, type.items[0].n);
  if (!st && take_attr(op, "sym_visibility", &vis))
    op->is_private = vis.kind == HL_MATTR_STRING && strcmp(vis.s, "private") == 0;
  if (!st) {
    // The signature replaces the op's own `: () -> ()`.
    for (int i = 0; i < op->operand_type_count; i++) hl_shape_deinit(&op->operand_types[i]);
    for (int i = 0; i < op->result_type_count; i++) hl_shape_deinit(&op->result_types[i]);
    hl_free(op->operand_types);
    hl_free(op->result_types);
    op->operand_types = op->result_types = NULL;
    op->operand_type_count = op->result_type_count = 0;
    op->has_function_type = false;
    st = take_types(&type.items[0], &op->operand_types, &op->operand_type_count);
    if (!st) st = take_types(&type.items[1], &op->result_types, &op->result_type_count);
  }
  const hl_mlir_block_t *b = st ? NULL : &op->regions[0].blocks[0];
  for (int i = 0; b && !st && i < b->arg_count; i++)
    if (!hl_shape_equal(&b->arg_types[i], &op->operand_types[i]))
      st = POS_ERR(op, "'func.func' @%s: block argument %d's type differs from the function type",
                   name.s, i);
  if (!st) st = take_dicts(op, "arg_attrs", op->operand_type_count, &op->arg_attrs,
                             &op->arg_attr_count);
  if (!st) st = take_dicts(op, "res_attrs", op->result_type_count, &op->res_attrs,
                             &op->res_attr_count);
  if (!st) {
    op->symbol = name.s;
    name.s = NULL;
    op->generic = false;
  }
  hl_mlir_attr_deinit(&name);
  hl_mlir_attr_deinit(&type);
  hl_mlir_attr_deinit(&vis);
  return st;
}

static hl_status_t move_attrs(hl_mlir_file_t *f, hl_mlir_op_t *m) {
  int n = f->module_attr_count + m->attr_count;
  char **names = hl_realloc(f->module_attr_names, ((size_t)n + 1) * sizeof(char *));
  if (!names) return HL_OOM();
  f->module_attr_names = names;
  hl_mlir_attr_t *vals = hl_realloc(f->module_attrs, ((size_t)n + 1) * sizeof(hl_mlir_attr_t));
  if (!vals) return HL_OOM();
  f->module_attrs = vals;
  for (int i = 0; i < m->attr_count; i++) {
    names[f->module_attr_count] = m->attr_names[i];
    vals[f->module_attr_count++] = m->attrs[i];
  }
  m->attr_count = 0;
  return NULL;
}

static hl_status_t hoist(const char *path, hl_mlir_file_t *f, hl_mlir_op_t *m, int depth) {
  if (depth > 16) return POS_ERR(m, "modules nest too deeply");
  if (m->operand_count || m->result_count || m->region_count != 1 ||
      m->regions[0].block_count != 1 || m->regions[0].blocks[0].arg_count)
    return POS_ERR(m, "'builtin.module' needs one region of one block, without operands");
  hl_mlir_attr_t name;
  if (take_attr(m, "sym_name", &name)) {
    if (name.kind == HL_MATTR_STRING && !f->module_name) {
      f->module_name = name.s;
      name.s = NULL;
    }
    hl_mlir_attr_deinit(&name);
  }
  HL_RETURN_IF_ERROR(move_attrs(f, m));
  hl_mlir_block_t *b = &m->regions[0].blocks[0];
  for (int i = 0; i < b->op_count; i++) {
    hl_mlir_op_t *op = &b->ops[i];
    if (strcmp(op->name, "builtin.module") == 0 && op->generic) {
      HL_RETURN_IF_ERROR(hoist(path, f, op, depth + 1));
      continue;
    }
    if (strcmp(op->name, "func.func") != 0)
      return POS_ERR(op, "'%s' at module level (expected func.func)", op->name);
    hl_mlir_op_t *grown = hl_realloc(f->ops, ((size_t)f->op_count + 1) * sizeof(*grown));
    if (!grown) return HL_OOM();
    f->ops = grown;
    f->ops[f->op_count++] = *op;
    memset(op, 0, sizeof(*op));
  }
  return NULL;
}

hl_status_t hl_mlir_generic_module(const char *path, hl_mlir_file_t *f, hl_mlir_op_t *module) {
  hl_status_t st = hoist(path, f, module, 0);
  hl_mlir_op_deinit(module);
  return st;
}
