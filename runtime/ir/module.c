#include "runtime/ir/module.h"

#include <stdio.h>
#include <string.h>

#include "runtime/base/alloc.h"

// Arrays that grow by doubling; capacity is implied by the count (powers of two).
static hl_status_t grow_ptr_array(void ***array, int count) {
  if (count == 0 || (count & (count - 1)) == 0) {
    int cap = count ? count * 2 : 4;
    void **p = hl_realloc(*array, (size_t)cap * sizeof(void *));
    if (!p) return HL_OOM();
    *array = p;
  }
  return NULL;
}

hl_status_t hl_module_create(const char *name, hl_module_t **out) {
  *out = NULL;
  hl_module_t *m = hl_calloc(1, sizeof(*m));
  if (!m) return HL_OOM();
  m->name = hl_strdup(name ? name : "module");
  if (!m->name) {
    hl_free(m);
    return HL_OOM();
  }
  *out = m;
  return NULL;
}

static void frontend_attributes_deinit(hl_frontend_attributes_t *fa) {
  for (int i = 0; i < fa->n; i++) {
    hl_free(fa->entries[i].key);
    hl_free(fa->entries[i].value);
  }
  hl_free(fa->entries);
  memset(fa, 0, sizeof(*fa));
}

void hl_i64_list_deinit(hl_i64_list_t *l) {
  hl_free(l->v);
  l->v = NULL;
  l->n = 0;
}

hl_status_t hl_i64_list_set(hl_i64_list_t *l, const int64_t *values, int n) {
  hl_i64_list_deinit(l);
  if (n <= 0) return NULL;
  l->v = hl_malloc((size_t)n * sizeof(int64_t));
  if (!l->v) return HL_OOM();
  memcpy(l->v, values, (size_t)n * sizeof(int64_t));
  l->n = n;
  return NULL;
}

void hl_replica_groups_deinit(hl_replica_groups_t *g) {
  for (int i = 0; i < g->group_count; i++) hl_i64_list_deinit(&g->groups[i]);
  hl_free(g->groups);
  hl_i64_list_deinit(&g->iota_reshape_dims);
  hl_i64_list_deinit(&g->iota_transpose_perm);
  memset(g, 0, sizeof(*g));
}

void hl_sharding_deinit(hl_sharding_t *s) {
  if (!s) return;
  hl_i64_list_deinit(&s->tile_assignment_dimensions);
  hl_i64_list_deinit(&s->tile_assignment_devices);
  hl_i64_list_deinit(&s->iota_reshape_dims);
  hl_i64_list_deinit(&s->iota_transpose_perm);
  hl_i64_list_deinit(&s->last_tile_dims);
  for (int i = 0; i < s->tuple_count; i++) hl_sharding_deinit(&s->tuple_shardings[i]);
  hl_free(s->tuple_shardings);
  memset(s, 0, sizeof(*s));
}

static void conv_dims_deinit(hl_conv_dims_t *d) {
  hl_i64_list_deinit(&d->input_spatial_dimensions);
  hl_i64_list_deinit(&d->kernel_spatial_dimensions);
  hl_i64_list_deinit(&d->output_spatial_dimensions);
}

void hl_attrs_deinit(hl_attrs_t *a) {
  hl_literal_release(a->literal);
  hl_literal_release(a->shuffle_indices);
  hl_i64_list_deinit(&a->shuffle_shifts);
  hl_free(a->fusion_kind);
  hl_i64_list_deinit(&a->dimensions);
  hl_free(a->window.dims);
  conv_dims_deinit(&a->convolution_dimension_numbers);
  hl_free(a->slice_dimensions);
  hl_i64_list_deinit(&a->dynamic_slice_sizes);
  hl_free(a->padding_config);
  hl_free(a->outfeed_config);
  hl_free(a->infeed_config);
  hl_free(a->custom_call_target);
  for (int i = 0; i < a->operand_shapes_with_layout_count; i++)
    hl_shape_deinit(&a->operand_shapes_with_layout[i]);
  hl_free(a->operand_shapes_with_layout);
  hl_free(a->output_operand_aliases);
  if (a->outfeed_shape) {
    hl_shape_deinit(a->outfeed_shape);
    hl_free(a->outfeed_shape);
  }
  hl_i64_list_deinit(&a->dot_dimension_numbers.lhs_contracting_dimensions);
  hl_i64_list_deinit(&a->dot_dimension_numbers.rhs_contracting_dimensions);
  hl_i64_list_deinit(&a->dot_dimension_numbers.lhs_batch_dimensions);
  hl_i64_list_deinit(&a->dot_dimension_numbers.rhs_batch_dimensions);
  hl_i64_list_deinit(&a->lhs_ragged_dimensions);
  hl_i64_list_deinit(&a->rhs_group_dimensions);
  hl_i64_list_deinit(&a->fft_length);
  hl_gather_dims_t *g = &a->gather_dimension_numbers;
  hl_i64_list_deinit(&g->offset_dims);
  hl_i64_list_deinit(&g->collapsed_slice_dims);
  hl_i64_list_deinit(&g->start_index_map);
  hl_i64_list_deinit(&g->operand_batching_dims);
  hl_i64_list_deinit(&g->start_indices_batching_dims);
  hl_i64_list_deinit(&a->gather_slice_sizes);
  if (a->sharding) {
    hl_sharding_deinit(a->sharding);
    hl_free(a->sharding);
  }
  hl_free(a->backend_config);
  hl_scatter_dims_t *s = &a->scatter_dimension_numbers;
  hl_i64_list_deinit(&s->update_window_dims);
  hl_i64_list_deinit(&s->inserted_window_dims);
  hl_i64_list_deinit(&s->scatter_dims_to_operand_dims);
  hl_i64_list_deinit(&s->input_batching_dims);
  hl_i64_list_deinit(&s->scatter_indices_batching_dims);
  hl_replica_groups_deinit(&a->replica_groups);
  hl_i64_list_deinit(&a->operand_precision);
  hl_free(a->source_target_pairs);
  hl_free(a->parameter_replication);
  frontend_attributes_deinit(&a->frontend_attributes);
  hl_free(a->async_execution_thread);
  hl_free(a->metadata.op_type);
  hl_free(a->metadata.op_name);
  hl_free(a->metadata.source_file);
  memset(a, 0, sizeof(*a));
}

void hl_instruction_destroy(hl_instruction_t *inst) {
  if (!inst) return;
  hl_free(inst->name);
  hl_shape_deinit(&inst->shape);
  hl_free(inst->operands);
  hl_free(inst->called_computations);
  hl_free(inst->control_predecessors);
  hl_attrs_deinit(&inst->attrs);
  hl_free(inst);
}

static void computation_destroy(hl_computation_t *c) {
  if (!c) return;
  for (int i = 0; i < c->instruction_count; i++) hl_instruction_destroy(c->instructions[i]);
  hl_free(c->instructions);
  hl_free(c->parameters);
  hl_free(c->name);
  hl_free(c->execution_thread);
  hl_free(c);
}

void hl_module_destroy(hl_module_t *m) {
  if (!m) return;
  for (int i = 0; i < m->computation_count; i++) computation_destroy(m->computations[i]);
  hl_free(m->computations);
  frontend_attributes_deinit(&m->frontend_attributes);
  hl_sharding_deinit(m->spmd_output_sharding);
  hl_free(m->spmd_output_sharding);
  for (int i = 0; i < m->spmd_parameters_sharding_count; i++)
    hl_sharding_deinit(&m->spmd_parameters_shardings[i]);
  hl_free(m->spmd_parameters_shardings);
  hl_free(m->name);
  hl_free(m->source_path);
  hl_free(m);
}

hl_status_t hl_module_add_computation(hl_module_t *m, const char *name, hl_computation_t **out) {
  *out = NULL;
  HL_RETURN_IF_ERROR(grow_ptr_array((void ***)&m->computations, m->computation_count));
  hl_computation_t *c = hl_calloc(1, sizeof(*c));
  if (!c) return HL_OOM();
  c->name = hl_strdup(name ? name : "");
  if (!c->name) {
    hl_free(c);
    return HL_OOM();
  }
  c->module = m;
  c->id = m->computation_count;
  m->computations[m->computation_count++] = c;
  *out = c;
  return NULL;
}

void hl_module_remove_computation(hl_module_t *m, hl_computation_t *c) {
  int at = -1;
  for (int i = 0; i < m->computation_count; i++)
    if (m->computations[i] == c) at = i;
  if (at < 0) return;
  memmove(&m->computations[at], &m->computations[at + 1],
          sizeof(*m->computations) * (size_t)(m->computation_count - at - 1));
  m->computation_count--;
  if (m->entry == c) m->entry = NULL;
  computation_destroy(c);
}

hl_computation_t *hl_module_find_computation(const hl_module_t *m, const char *name) {
  for (int i = 0; i < m->computation_count; i++)
    if (strcmp(m->computations[i]->name, name) == 0) return m->computations[i];
  return NULL;
}

hl_computation_t *hl_module_find_computation_by_id(const hl_module_t *m, int64_t id) {
  for (int i = 0; i < m->computation_count; i++)
    if (m->computations[i]->id == id) return m->computations[i];
  return NULL;
}

hl_status_t hl_computation_add_instruction(hl_computation_t *c, const char *name,
                                           hl_opcode_t opcode, hl_instruction_t **out) {
  *out = NULL;
  HL_RETURN_IF_ERROR(grow_ptr_array((void ***)&c->instructions, c->instruction_count));
  hl_instruction_t *inst = hl_calloc(1, sizeof(*inst));
  if (!inst) return HL_OOM();
  inst->name = hl_strdup(name ? name : "");
  if (!inst->name) {
    hl_free(inst);
    return HL_OOM();
  }
  inst->opcode = opcode;
  inst->parent = c;
  inst->index = c->instruction_count;
  inst->attrs.feature_group_count = 1;
  inst->attrs.batch_group_count = 1;
  c->instructions[c->instruction_count++] = inst;
  *out = inst;
  return NULL;
}

hl_instruction_t *hl_computation_find_instruction(const hl_computation_t *c, const char *name) {
  for (int i = 0; i < c->instruction_count; i++)
    if (strcmp(c->instructions[i]->name, name) == 0) return c->instructions[i];
  return NULL;
}

hl_status_t hl_computation_index_parameters(hl_computation_t *c) {
  int count = 0;
  for (int i = 0; i < c->instruction_count; i++)
    if (c->instructions[i]->opcode == HL_OP_PARAMETER) count++;
  hl_free(c->parameters);
  c->parameters = NULL;
  c->parameter_count = 0;
  if (count == 0) return NULL;
  c->parameters = hl_calloc((size_t)count, sizeof(hl_instruction_t *));
  if (!c->parameters) return HL_OOM();
  c->parameter_count = count;
  for (int i = 0; i < c->instruction_count; i++) {
    hl_instruction_t *inst = c->instructions[i];
    if (inst->opcode != HL_OP_PARAMETER) continue;
    int64_t n = inst->attrs.parameter_number;
    if (n < 0 || n >= count)
      return HL_INVALID("%s: parameter number %lld out of range: the computation has %d parameters",
                        hl_instruction_location(inst), (long long)n, count);
    if (c->parameters[n])
      return HL_INVALID("%s: parameter number %lld is used twice (also by '%s')",
                        hl_instruction_location(inst), (long long)n, c->parameters[n]->name);
    c->parameters[n] = inst;
  }
  return NULL;
}

static hl_status_t copy_ptrs(void ***dst, int *dst_count, void *const *src, int count) {
  hl_free(*dst);
  *dst = NULL;
  *dst_count = 0;
  if (count <= 0) return NULL;
  *dst = hl_malloc((size_t)count * sizeof(void *));
  if (!*dst) return HL_OOM();
  memcpy(*dst, src, (size_t)count * sizeof(void *));
  *dst_count = count;
  return NULL;
}

hl_status_t hl_instruction_set_operands(hl_instruction_t *inst, hl_instruction_t *const *ops,
                                        int count) {
  return copy_ptrs((void ***)&inst->operands, &inst->operand_count, (void *const *)ops, count);
}

hl_status_t hl_instruction_set_called(hl_instruction_t *inst, hl_computation_t *const *comps,
                                      int count) {
  return copy_ptrs((void ***)&inst->called_computations, &inst->called_count,
                   (void *const *)comps, count);
}

hl_status_t hl_instruction_set_control_predecessors(hl_instruction_t *inst,
                                                    hl_instruction_t *const *preds, int count) {
  return copy_ptrs((void ***)&inst->control_predecessors, &inst->control_predecessor_count,
                   (void *const *)preds, count);
}

hl_computation_t *hl_instruction_to_apply(const hl_instruction_t *inst) {
  return inst->called_count > 0 ? inst->called_computations[0] : NULL;
}

hl_computation_t *hl_instruction_while_body(const hl_instruction_t *inst) {
  return inst->called_count > 0 ? inst->called_computations[0] : NULL;
}

hl_computation_t *hl_instruction_while_condition(const hl_instruction_t *inst) {
  return inst->called_count > 1 ? inst->called_computations[1] : NULL;
}

int hl_instruction_permute_slot_count(const hl_instruction_t *inst) {
  if (inst->attrs.dynamic_slice_sizes.n == 0 || inst->operand_count != 4) return 1;
  const hl_shape_t *e = &inst->operands[2]->shape;
  if (inst->operands[0]->shape.dtype == HL_TUPLE && e->dtype == HL_TUPLE && e->tuple_count > 0)
    e = &e->tuple[0];
  if (e->dtype == HL_TUPLE && e->tuple_count > 0 && e->tuple[0].dtype == HL_TUPLE)
    return e->tuple_count;
  return 1;
}

const char *hl_instruction_frontend_attribute(const hl_instruction_t *inst, const char *key) {
  const hl_frontend_attributes_t *fa = &inst->attrs.frontend_attributes;
  for (int i = 0; i < fa->n; i++)
    if (strcmp(fa->entries[i].key, key) == 0) return fa->entries[i].value;
  return NULL;
}

hl_status_t hl_frontend_attributes_add(hl_frontend_attributes_t *fa, const char *key,
                                       const char *value) {
  hl_key_value_t *e = hl_realloc(fa->entries, (size_t)(fa->n + 1) * sizeof(*e));
  if (!e) return HL_OOM();
  fa->entries = e;
  e[fa->n].key = hl_strdup(key);
  e[fa->n].value = hl_strdup(value);
  if (!e[fa->n].key || !e[fa->n].value) {
    hl_free(e[fa->n].key);
    hl_free(e[fa->n].value);
    return HL_OOM();
  }
  fa->n++;
  return NULL;
}

// Iota groups: fill iota over prod(reshape_dims), transpose by perm, then
// read row-major as num_groups x group_size (the facts sheet, "Iota replica groups").
static hl_status_t expand_iota(const hl_replica_groups_t *g, hl_i64_list_t **out, int *count) {
  int nd = g->iota_reshape_dims.n;
  int64_t total = 1;
  for (int i = 0; i < nd; i++) total *= g->iota_reshape_dims.v[i];
  if (g->iota_num_groups <= 0 || g->iota_group_size <= 0 ||
      g->iota_num_groups * g->iota_group_size != total)
    return HL_INVALID("iota replica groups [%lld,%lld] do not match the %lld devices of the reshape",
                      (long long)g->iota_num_groups, (long long)g->iota_group_size,
                      (long long)total);
  if (nd > HL_MAX_RANK) return HL_INVALID("iota replica groups: too many reshape dims (%d)", nd);
  int perm[HL_MAX_RANK];
  for (int i = 0; i < nd; i++) perm[i] = i;
  if (g->iota_transpose_perm.n) {
    if (g->iota_transpose_perm.n != nd)
      return HL_INVALID("iota replica groups: transpose has %d entries for %d reshape dims",
                        g->iota_transpose_perm.n, nd);
    bool seen[HL_MAX_RANK] = {false};
    for (int i = 0; i < nd; i++) {
      int64_t p = g->iota_transpose_perm.v[i];
      if (p < 0 || p >= nd || seen[p])
        return HL_INVALID("iota replica groups: transpose is not a permutation");
      seen[p] = true;
      perm[i] = (int)p;
    }
  }
  // Transposed array has dims tdims[i] = dims[perm[i]]; element at transposed
  // index t equals the row-major offset of the source index s with s[perm[i]] = t[i].
  int64_t src_strides[HL_MAX_RANK], tdims[HL_MAX_RANK];
  int64_t st = 1;
  for (int i = nd - 1; i >= 0; i--) {
    src_strides[i] = st;
    st *= g->iota_reshape_dims.v[i];
  }
  for (int i = 0; i < nd; i++) tdims[i] = g->iota_reshape_dims.v[perm[i]];
  int ng = (int)g->iota_num_groups;
  hl_i64_list_t *groups = hl_calloc((size_t)ng, sizeof(hl_i64_list_t));
  if (!groups) return HL_OOM();
  int64_t idx[HL_MAX_RANK] = {0};
  for (int64_t flat = 0; flat < total; flat++) {
    int64_t value = 0;
    for (int i = 0; i < nd; i++) value += idx[i] * src_strides[perm[i]];
    hl_i64_list_t *grp = &groups[flat / g->iota_group_size];
    if (!grp->v) {
      grp->v = hl_malloc((size_t)g->iota_group_size * sizeof(int64_t));
      if (!grp->v) {
        for (int i = 0; i < ng; i++) hl_i64_list_deinit(&groups[i]);
        hl_free(groups);
        return HL_OOM();
      }
    }
    grp->v[grp->n++] = value;
    for (int i = nd - 1; i >= 0; i--) {
      if (++idx[i] < tdims[i]) break;
      idx[i] = 0;
    }
  }
  *out = groups;
  *count = ng;
  return NULL;
}

hl_status_t hl_replica_groups_expand(const hl_replica_groups_t *g, hl_i64_list_t **out,
                                     int *count) {
  *out = NULL;
  *count = 0;
  if (g->kind == HL_GROUPS_IOTA) return expand_iota(g, out, count);
  if (g->kind == HL_GROUPS_NONE || g->group_count == 0) return NULL;
  hl_i64_list_t *groups = hl_calloc((size_t)g->group_count, sizeof(hl_i64_list_t));
  if (!groups) return HL_OOM();
  for (int i = 0; i < g->group_count; i++) {
    hl_status_t st = hl_i64_list_set(&groups[i], g->groups[i].v, g->groups[i].n);
    if (st) {
      for (int j = 0; j < i; j++) hl_i64_list_deinit(&groups[j]);
      hl_free(groups);
      return st;
    }
  }
  *out = groups;
  *count = g->group_count;
  return NULL;
}

hl_comparison_type_t hl_comparison_type_default(hl_dtype_t t) {
  if (hl_dtype_is_signed_int(t)) return HL_CMPTYPE_SIGNED;
  if (t == HL_PRED || hl_dtype_is_unsigned_int(t)) return HL_CMPTYPE_UNSIGNED;
  return HL_CMPTYPE_FLOAT;
}

static const char *const kDirections[] = {"", "EQ", "NE", "GE", "GT", "LE", "LT"};
static const char *const kCmpTypes[] = {"", "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"};

const char *hl_comparison_direction_name(hl_comparison_direction_t d) {
  return (d >= 0 && d <= HL_CMP_LT) ? kDirections[d] : "";
}
const char *hl_comparison_type_name(hl_comparison_type_t t) {
  return (t >= 0 && t <= HL_CMPTYPE_UNSIGNED) ? kCmpTypes[t] : "";
}
hl_comparison_direction_t hl_comparison_direction_from_name(const char *s) {
  for (int i = 1; i <= HL_CMP_LT; i++)
    if (strcmp(s, kDirections[i]) == 0) return (hl_comparison_direction_t)i;
  return HL_CMP_NONE;
}
hl_comparison_type_t hl_comparison_type_from_name(const char *s) {
  for (int i = 1; i <= HL_CMPTYPE_UNSIGNED; i++)
    if (strcmp(s, kCmpTypes[i]) == 0) return (hl_comparison_type_t)i;
  return HL_CMPTYPE_DEFAULT;
}

const char *hl_instruction_location(const hl_instruction_t *inst) {
  static _Thread_local char buf[512];
  const hl_computation_t *c = inst->parent;
  const hl_module_t *m = c ? c->module : NULL;
  int n = snprintf(buf, sizeof(buf), "instruction '%s' (%s) in computation '%s'", inst->name,
                   hl_opcode_name(inst->opcode), c ? c->name : "?");
  if (inst->line > 0 && n > 0 && (size_t)n < sizeof(buf))
    snprintf(buf + n, sizeof(buf) - (size_t)n, " at %s:%d:%d",
             m && m->source_path ? m->source_path : "<text>", inst->line, inst->column);
  return buf;
}
