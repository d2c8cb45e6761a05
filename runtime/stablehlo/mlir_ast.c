// Ownership of the MLIR syntax tree (see mlir_ast.h).
#include "runtime/stablehlo/mlir_ast.h"

#include <string.h>

#include "runtime/base/alloc.h"

void hl_mlir_attr_deinit(hl_mlir_attr_t *a) {
  if (!a) return;
  hl_free(a->s);
  hl_shape_deinit(&a->type);
  for (int i = 0; i < a->n; i++) {
    hl_mlir_attr_deinit(&a->items[i]);
    if (a->keys) hl_free(a->keys[i]);
  }
  hl_free(a->items);
  hl_free(a->keys);
  if (a->blob_owned) hl_free((void *)a->blob);
  memset(a, 0, sizeof(*a));
}

static void block_deinit(hl_mlir_block_t *b) {
  for (int i = 0; i < b->arg_count; i++) {
    hl_free(b->arg_names[i]);
    hl_shape_deinit(&b->arg_types[i]);
  }
  hl_free(b->arg_names);
  hl_free(b->arg_types);
  hl_free(b->arg_quant.ids);
  for (int i = 0; i < b->op_count; i++) hl_mlir_op_deinit(&b->ops[i]);
  hl_free(b->ops);
}

static void shapes_free(hl_shape_t *s, int n) {
  for (int i = 0; i < n; i++) hl_shape_deinit(&s[i]);
  hl_free(s);
}

static void attrs_free(hl_mlir_attr_t *a, int n) {
  for (int i = 0; a && i < n; i++) hl_mlir_attr_deinit(&a[i]);
  hl_free(a);
}

void hl_mlir_op_deinit(hl_mlir_op_t *op) {
  if (!op) return;
  hl_free(op->name);
  hl_free(op->location);
  for (int i = 0; i < op->result_group_count; i++) hl_free(op->result_names[i]);
  hl_free(op->result_names);
  hl_free(op->result_counts);
  for (int i = 0; i < op->operand_count; i++) hl_free(op->operands[i].name);
  hl_free(op->operands);
  for (int i = 0; i < op->attr_count; i++) hl_free(op->attr_names[i]);
  hl_free(op->attr_names);
  attrs_free(op->attrs, op->attr_count);
  attrs_free(op->items, op->item_count);
  for (int i = 0; i < op->iter_arg_count; i++) hl_free(op->iter_arg_names[i]);
  hl_free(op->iter_arg_names);
  for (int r = 0; r < op->region_count; r++) {
    for (int b = 0; b < op->regions[r].block_count; b++) block_deinit(&op->regions[r].blocks[b]);
    hl_free(op->regions[r].blocks);
  }
  hl_free(op->regions);
  attrs_free(op->arg_attrs, op->arg_attr_count);
  attrs_free(op->res_attrs, op->res_attr_count);
  shapes_free(op->operand_types, op->operand_type_count);
  shapes_free(op->result_types, op->result_type_count);
  hl_free(op->operand_type_quant.ids);
  hl_free(op->result_type_quant.ids);
  hl_free(op->symbol);
  memset(op, 0, sizeof(*op));
}

void hl_mlir_file_deinit(hl_mlir_file_t *f) {
  if (!f) return;
  hl_free(f->module_name);
  for (int i = 0; i < f->module_attr_count; i++) hl_free(f->module_attr_names[i]);
  hl_free(f->module_attr_names);
  attrs_free(f->module_attrs, f->module_attr_count);
  for (int i = 0; i < f->op_count; i++) hl_mlir_op_deinit(&f->ops[i]);
  hl_free(f->ops);
  for (int i = 0; i < f->resource_count; i++) hl_free(f->resources[i].name);
  hl_free(f->resources);
  for (int i = 0; i < f->quant_type_count; i++) {
    hl_free(f->quant_types[i].scales);
    hl_free(f->quant_types[i].zero_points);
  }
  hl_free(f->quant_types);
  for (int i = 0; i < f->mesh_count; i++) hl_mlir_op_deinit(&f->meshes[i]);
  hl_free(f->meshes);
  memset(f, 0, sizeof(*f));
}

const hl_mlir_attr_t *hl_mlir_op_attr(const hl_mlir_op_t *op, const char *name) {
  for (int i = 0; i < op->attr_count; i++)
    if (strcmp(op->attr_names[i], name) == 0) return &op->attrs[i];
  return NULL;
}

const hl_mlir_attr_t *hl_mlir_attr_member(const hl_mlir_attr_t *a, const char *key) {
  if (!a || !a->keys) return NULL;
  for (int i = 0; i < a->n; i++)
    if (a->keys[i] && strcmp(a->keys[i], key) == 0) return &a->items[i];
  return NULL;
}

int hl_mlir_quant_id(const hl_mlir_quant_ids_t *q, int k) {
  return q && q->ids && k >= 0 && k < q->n ? q->ids[k] : 0;
}
