// Binary HloProto / HloModuleProto / HloSnapshot -> module IR.
//
// The bytes are first walked against the schema (bounds, wire types, nesting
// depth), then unpacked with protobuf-c, then copied field by field into the
// IR. Ids are opaque int64 keys resolved through hash maps; every reference
// that does not resolve is an error naming computation, instruction and field.
#include <stdint.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/proto/proto_internal.h"
#include "runtime/proto/proto_io.h"

//===----------------------------------------------------------------------===//
// int64 id -> int index map (open addressing)
//===----------------------------------------------------------------------===//

typedef struct id_map {
  int64_t *keys;
  int *vals;  // -1 = empty slot
  size_t cap;
} id_map_t;

static size_t id_hash(int64_t key, size_t cap) {
  uint64_t x = (uint64_t)key + 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return (size_t)(x ^ (x >> 31)) & (cap - 1);
}

static hl_status_t id_map_init(id_map_t *m, size_t n) {
  size_t cap = 16;
  while (cap < 2 * n + 1) cap *= 2;
  m->cap = cap;
  m->keys = hl_malloc(cap * sizeof(int64_t));
  m->vals = hl_malloc(cap * sizeof(int));
  if (!m->keys || !m->vals) {
    hl_free(m->keys);
    hl_free(m->vals);
    memset(m, 0, sizeof(*m));
    return HL_OOM();
  }
  for (size_t i = 0; i < cap; i++) m->vals[i] = -1;
  return NULL;
}

static void id_map_deinit(id_map_t *m) {
  hl_free(m->keys);
  hl_free(m->vals);
  memset(m, 0, sizeof(*m));
}

// Returns the index already stored under `key`, or -1 after inserting `val`.
static int id_map_insert(id_map_t *m, int64_t key, int val) {
  for (size_t i = id_hash(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
    if (m->vals[i] < 0) {
      m->keys[i] = key;
      m->vals[i] = val;
      return -1;
    }
    if (m->keys[i] == key) return m->vals[i];
  }
}

static int id_map_get(const id_map_t *m, int64_t key) {
  for (size_t i = id_hash(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
    if (m->vals[i] < 0) return -1;
    if (m->keys[i] == key) return m->vals[i];
  }
}

//===----------------------------------------------------------------------===//
// Attribute helpers
//===----------------------------------------------------------------------===//

static hl_status_t set_list(hl_i64_list_t *l, const int64_t *v, size_t n) {
  if (n > (size_t)INT32_MAX) return HL_INVALID("list too long");
  return hl_i64_list_set(l, v, (int)n);
}

static hl_status_t set_list32(hl_i64_list_t *l, const int32_t *v, size_t n) {
  hl_i64_list_deinit(l);
  if (n == 0) return NULL;
  if (n > (size_t)INT32_MAX) return HL_INVALID("list too long");
  l->v = hl_malloc(n * sizeof(int64_t));
  if (!l->v) return HL_OOM();
  for (size_t i = 0; i < n; i++) l->v[i] = v[i];
  l->n = (int)n;
  return NULL;
}

static hl_status_t set_list_enum(hl_i64_list_t *l, const int *v, size_t n) {
  return set_list32(l, (const int32_t *)v, n);
}

// Proto3 strings and bytes are "" when absent; the IR uses NULL.
static hl_status_t dup_string(char **dst, const char *s) {
  if (!s || !*s) return NULL;
  *dst = hl_strdup(s);
  return *dst ? NULL : HL_OOM();
}

static hl_status_t dup_bytes(char **dst, const ProtobufCBinaryData *b) {
  if (!b->len) return NULL;
  *dst = hl_strndup((const char *)b->data, b->len);
  return *dst ? NULL : HL_OOM();
}

static hl_status_t sharding_from_message(const Xla__OpSharding *m, hl_sharding_t *s) {
  memset(s, 0, sizeof(*s));
  s->type = (hl_sharding_type_t)m->type;
  s->replicate_on_last_tile_dim = m->replicate_on_last_tile_dim;
  HL_RETURN_IF_ERROR(
      set_list(&s->tile_assignment_dimensions, m->tile_assignment_dimensions,
               m->n_tile_assignment_dimensions));
  HL_RETURN_IF_ERROR(set_list(&s->tile_assignment_devices, m->tile_assignment_devices,
                              m->n_tile_assignment_devices));
  HL_RETURN_IF_ERROR(set_list(&s->iota_reshape_dims, m->iota_reshape_dims,
                              m->n_iota_reshape_dims));
  HL_RETURN_IF_ERROR(set_list32(&s->iota_transpose_perm, m->iota_transpose_perm,
                                m->n_iota_transpose_perm));
  HL_RETURN_IF_ERROR(set_list_enum(&s->last_tile_dims, (const int *)m->last_tile_dims,
                                   m->n_last_tile_dims));
  if (m->n_tuple_shardings) {
    if (m->n_tuple_shardings > (size_t)INT32_MAX) return HL_INVALID("too many tuple shardings");
    s->tuple_shardings = hl_calloc(m->n_tuple_shardings, sizeof(hl_sharding_t));
    if (!s->tuple_shardings) return HL_OOM();
    s->tuple_count = (int)m->n_tuple_shardings;
    for (size_t i = 0; i < m->n_tuple_shardings; i++)
      HL_RETURN_IF_ERROR(sharding_from_message(m->tuple_shardings[i], &s->tuple_shardings[i]));
  }
  return NULL;
}

hl_status_t hl_proto_decode_op_sharding(const uint8_t *data, size_t size,
                                        hl_sharding_t *out_sharding) {
  memset(out_sharding, 0, sizeof(*out_sharding));
  Xla__OpSharding *m = xla__op_sharding__unpack(NULL, size, data);
  if (!m) return HL_INVALID("not a valid xla.OpSharding message (%zu bytes)", size);
  hl_status_t st = sharding_from_message(m, out_sharding);
  xla__op_sharding__free_unpacked(m, NULL);
  if (st) hl_sharding_deinit(out_sharding);
  return st;
}

static hl_status_t iota_groups(hl_replica_groups_t *g, const Xla__IotaReplicaGroupListProto *m) {
  g->kind = HL_GROUPS_IOTA;
  g->iota_num_groups = m->num_replica_groups;
  g->iota_group_size = m->num_devices_per_group;
  HL_RETURN_IF_ERROR(set_list(&g->iota_reshape_dims, m->iota_reshape_dims,
                              m->n_iota_reshape_dims));
  return set_list32(&g->iota_transpose_perm, m->iota_transpose_perm, m->n_iota_transpose_perm);
}

static hl_status_t list_groups(hl_replica_groups_t *g, Xla__ReplicaGroup *const *groups,
                               size_t n) {
  g->kind = HL_GROUPS_LIST;
  if (n > (size_t)INT32_MAX) return HL_INVALID("too many replica groups");
  g->groups = hl_calloc(n ? n : 1, sizeof(hl_i64_list_t));
  if (!g->groups) return HL_OOM();
  g->group_count = (int)n;
  for (size_t i = 0; i < n; i++)
    HL_RETURN_IF_ERROR(set_list(&g->groups[i], groups[i]->replica_ids, groups[i]->n_replica_ids));
  return NULL;
}

// XLA's precedence (facts §1.3b): legacy field 49, then the iota list 92,
// then mesh axes 93, then collective_device_list 87 (explicit or iota).
static hl_status_t replica_groups_from_message(const Xla__HloInstructionProto *p,
                                               hl_replica_groups_t *g) {
  if (p->n_replica_groups)
    return hl_status_annotate(list_groups(g, p->replica_groups, p->n_replica_groups),
                              "replica_groups (field 49)");
  if (p->iota_collective_device_list)
    return hl_status_annotate(iota_groups(g, p->iota_collective_device_list),
                              "iota_collective_device_list (field 92)");
  const Xla__MeshAxesReplicaGroupListProto *mesh = p->mesh_axes_replica_group_list;
  if (mesh && (mesh->mesh || mesh->n_axes))
    return HL_UNIMPL("mesh_axes_replica_group_list (field 93): mesh-axes replica groups are not "
                     "supported; re-export the program with explicit or iota replica groups");
  const Xla__CollectiveDeviceListProto *cdl = p->collective_device_list;
  if (cdl) {
    if (cdl->n_replica_groups)
      return hl_status_annotate(list_groups(g, cdl->replica_groups, cdl->n_replica_groups),
                                "collective_device_list (field 87)");
    if (cdl->iota_replica_group_list)
      return hl_status_annotate(iota_groups(g, cdl->iota_replica_group_list),
                                "collective_device_list.iota_replica_group_list (field 87.2)");
  }
  return NULL;
}

static hl_status_t frontend_attributes_from_message(const Xla__FrontendAttributes *m,
                                                    hl_frontend_attributes_t *fa) {
  if (!m) return NULL;
  for (size_t i = 0; i < m->n_map; i++) {
    const char *key = m->map[i]->key, *value = m->map[i]->value;
    bool replaced = false;
    for (int j = 0; j < fa->n && !replaced; j++) {
      if (strcmp(fa->entries[j].key, key) != 0) continue;
      // Map semantics: a repeated key keeps the last value.
      char *v = hl_strdup(value);
      if (!v) return HL_OOM();
      hl_free(fa->entries[j].value);
      fa->entries[j].value = v;
      replaced = true;
    }
    if (!replaced) HL_RETURN_IF_ERROR(hl_frontend_attributes_add(fa, key, value));
  }
  return NULL;
}

static hl_status_t window_from_message(const Xla__Window *m, hl_window_t *w) {
  if (!m->n_dimensions) return NULL;
  if (m->n_dimensions > HL_MAX_RANK)
    return HL_INVALID("window has %zu dimensions (more than %d)", m->n_dimensions, HL_MAX_RANK);
  w->dims = hl_calloc(m->n_dimensions, sizeof(hl_window_dim_t));
  if (!w->dims) return HL_OOM();
  w->n = (int)m->n_dimensions;
  for (size_t i = 0; i < m->n_dimensions; i++) {
    const Xla__WindowDimension *d = m->dimensions[i];
    w->dims[i] = (hl_window_dim_t){
        .size = d->size,
        .stride = d->stride ? d->stride : 1,
        .padding_low = d->padding_low,
        .padding_high = d->padding_high,
        .window_dilation = d->window_dilation ? d->window_dilation : 1,
        .base_dilation = d->base_dilation ? d->base_dilation : 1,
        .window_reversal = d->window_reversal,
    };
  }
  return NULL;
}

static hl_status_t shape_field(const Xla__ShapeProto *m, hl_shape_t *out, const char *field) {
  return hl_status_annotate(hl_proto_shape_from_message(m, out), "%s", field);
}

// Copies every attribute the IR keeps. `inst` already has its name and opcode.
static hl_status_t attrs_from_message(const Xla__HloInstructionProto *p, hl_instruction_t *inst) {
  hl_attrs_t *a = &inst->attrs;
  if (!p->shape) return HL_INVALID("shape (field 3) is missing");
  HL_RETURN_IF_ERROR(shape_field(p->shape, &inst->shape, "shape (field 3)"));
  inst->id = p->id;

  if (p->metadata) {
    a->metadata.present = true;
    a->metadata.source_line = p->metadata->source_line;
    HL_RETURN_IF_ERROR(dup_string(&a->metadata.op_type, p->metadata->op_type));
    HL_RETURN_IF_ERROR(dup_string(&a->metadata.op_name, p->metadata->op_name));
    HL_RETURN_IF_ERROR(dup_string(&a->metadata.source_file, p->metadata->source_file));
  }
  if (p->literal) {
    HL_RETURN_IF_ERROR_CTX(hl_proto_literal_from_message(p->literal, &a->literal),
                           "literal (field 8)");
    if (!hl_shape_equal(&a->literal->shape, &inst->shape))
      return HL_INVALID("literal (field 8) has shape %s, which differs from the instruction shape",
                        hl_shape_debug_string(&a->literal->shape));
  } else if (inst->opcode == HL_OP_CONSTANT) {
    return HL_INVALID("constant without a literal (field 8)");
  }
  a->parameter_number = p->parameter_number;
  HL_RETURN_IF_ERROR(dup_string(&a->fusion_kind, p->fusion_kind));
  a->tuple_index = p->tuple_index;
  HL_RETURN_IF_ERROR(set_list(&a->dimensions, p->dimensions, p->n_dimensions));
  if (p->window) {
    a->has_window = true;
    HL_RETURN_IF_ERROR_CTX(window_from_message(p->window, &a->window), "window (field 15)");
  }
  if (p->convolution_dimension_numbers) {
    const Xla__ConvolutionDimensionNumbers *c = p->convolution_dimension_numbers;
    hl_conv_dims_t *d = &a->convolution_dimension_numbers;
    a->has_convolution_dimension_numbers = true;
    d->input_batch_dimension = c->input_batch_dimension;
    d->input_feature_dimension = c->input_feature_dimension;
    d->kernel_input_feature_dimension = c->kernel_input_feature_dimension;
    d->kernel_output_feature_dimension = c->kernel_output_feature_dimension;
    d->output_batch_dimension = c->output_batch_dimension;
    d->output_feature_dimension = c->output_feature_dimension;
    HL_RETURN_IF_ERROR(set_list(&d->input_spatial_dimensions, c->input_spatial_dimensions,
                                c->n_input_spatial_dimensions));
    HL_RETURN_IF_ERROR(set_list(&d->kernel_spatial_dimensions, c->kernel_spatial_dimensions,
                                c->n_kernel_spatial_dimensions));
    HL_RETURN_IF_ERROR(set_list(&d->output_spatial_dimensions, c->output_spatial_dimensions,
                                c->n_output_spatial_dimensions));
  }
  a->feature_group_count = p->feature_group_count ? p->feature_group_count : 1;
  a->batch_group_count = p->batch_group_count ? p->batch_group_count : 1;
  if (p->n_slice_dimensions) {
    if (p->n_slice_dimensions > HL_MAX_RANK)
      return HL_INVALID("slice_dimensions (field 17) has %zu entries (more than %d)",
                        p->n_slice_dimensions, HL_MAX_RANK);
    a->slice_dimensions = hl_calloc(p->n_slice_dimensions, sizeof(hl_slice_dim_t));
    if (!a->slice_dimensions) return HL_OOM();
    a->slice_count = (int)p->n_slice_dimensions;
    for (size_t i = 0; i < p->n_slice_dimensions; i++) {
      const Xla__HloInstructionProto__SliceDimensions *s = p->slice_dimensions[i];
      a->slice_dimensions[i] =
          (hl_slice_dim_t){s->start, s->limit, s->stride ? s->stride : 1};
    }
  }
  a->exponent_bits = p->exponent_bits;
  a->mantissa_bits = p->mantissa_bits;
  HL_RETURN_IF_ERROR(set_list(&a->dynamic_slice_sizes, p->dynamic_slice_sizes,
                              p->n_dynamic_slice_sizes));
  if (p->padding_config && p->padding_config->n_dimensions) {
    const Xla__PaddingConfig *pc = p->padding_config;
    if (pc->n_dimensions > HL_MAX_RANK)
      return HL_INVALID("padding_config (field 21) has %zu dimensions (more than %d)",
                        pc->n_dimensions, HL_MAX_RANK);
    a->padding_config = hl_calloc(pc->n_dimensions, sizeof(hl_padding_dim_t));
    if (!a->padding_config) return HL_OOM();
    a->padding_count = (int)pc->n_dimensions;
    for (size_t i = 0; i < pc->n_dimensions; i++)
      a->padding_config[i] = (hl_padding_dim_t){pc->dimensions[i]->edge_padding_low,
                                                pc->dimensions[i]->edge_padding_high,
                                                pc->dimensions[i]->interior_padding};
  }
  HL_RETURN_IF_ERROR(dup_bytes(&a->outfeed_config, &p->outfeed_config));
  a->distribution = (int)p->distribution;
  a->epsilon = p->epsilon;
  a->feature_index = p->feature_index;
  // all_reduce_id is the pre-channel_id spelling; older dumps set only it.
  a->channel_id = p->channel_id > 0 ? p->channel_id : (p->all_reduce_id > 0 ? p->all_reduce_id : 0);
  HL_RETURN_IF_ERROR(dup_bytes(&a->infeed_config, &p->infeed_config));
  HL_RETURN_IF_ERROR(dup_string(&a->custom_call_target, p->custom_call_target));
  if (p->outfeed_shape) {
    a->outfeed_shape = hl_calloc(1, sizeof(hl_shape_t));
    if (!a->outfeed_shape) return HL_OOM();
    HL_RETURN_IF_ERROR(shape_field(p->outfeed_shape, a->outfeed_shape, "outfeed_shape (field 29)"));
  }
  if (p->n_operand_shapes_with_layout > 0) {
    a->operand_shapes_with_layout = hl_calloc(p->n_operand_shapes_with_layout, sizeof(hl_shape_t));
    if (!a->operand_shapes_with_layout) return HL_OOM();
    a->operand_shapes_with_layout_count = (int)p->n_operand_shapes_with_layout;
    for (size_t i = 0; i < p->n_operand_shapes_with_layout; i++)
      HL_RETURN_IF_ERROR(shape_field(p->operand_shapes_with_layout[i],
                                     &a->operand_shapes_with_layout[i],
                                     "operand_shapes_with_layout (field 57)"));
  }
  if (p->n_output_operand_aliasing > 0) {
    a->output_operand_aliases = hl_calloc(p->n_output_operand_aliasing, sizeof(*a->output_operand_aliases));
    if (!a->output_operand_aliases) return HL_OOM();
    for (size_t i = 0; i < p->n_output_operand_aliasing; i++) {
      const Xla__OutputOperandAliasing *al = p->output_operand_aliasing[i];
      int64_t k = al->n_output_shape_index == 1 ? al->output_shape_index[0] : 0;
      if (al->n_output_shape_index > 1 || al->n_operand_shape_index > 0 || k < 0 ||
          k > INT32_MAX || al->operand_index < 0 || al->operand_index > INT32_MAX)
        return HL_UNIMPL("output_operand_aliasing (field 74) entry %zu: only a result at most "
                         "one tuple level deep aliasing an array operand is supported", i);
      a->output_operand_aliases[i] = (hl_output_operand_alias_t){(int)k, (int)al->operand_index};
      a->output_operand_alias_count = (int)i + 1;
    }
  }
  const Xla__DotDimensionNumbers *dot_dims = p->dot_dimension_numbers;
  if (p->ragged_dot_dimension_numbers) {
    const Xla__RaggedDotDimensionNumbers *r = p->ragged_dot_dimension_numbers;
    a->has_ragged_dot_dimension_numbers = true;
    HL_RETURN_IF_ERROR(set_list(&a->lhs_ragged_dimensions, r->lhs_ragged_dimensions,
                                r->n_lhs_ragged_dimensions));
    HL_RETURN_IF_ERROR(set_list(&a->rhs_group_dimensions, r->rhs_group_dimensions,
                                r->n_rhs_group_dimensions));
    if (r->dot_dimension_numbers) dot_dims = r->dot_dimension_numbers;
  }
  if (dot_dims) {
    const Xla__DotDimensionNumbers *d = dot_dims;
    hl_dot_dims_t *o = &a->dot_dimension_numbers;
    a->has_dot_dimension_numbers = true;
    HL_RETURN_IF_ERROR(set_list(&o->lhs_contracting_dimensions, d->lhs_contracting_dimensions,
                                d->n_lhs_contracting_dimensions));
    HL_RETURN_IF_ERROR(set_list(&o->rhs_contracting_dimensions, d->rhs_contracting_dimensions,
                                d->n_rhs_contracting_dimensions));
    HL_RETURN_IF_ERROR(set_list(&o->lhs_batch_dimensions, d->lhs_batch_dimensions,
                                d->n_lhs_batch_dimensions));
    HL_RETURN_IF_ERROR(set_list(&o->rhs_batch_dimensions, d->rhs_batch_dimensions,
                                d->n_rhs_batch_dimensions));
  }
  a->fft_type = (int)p->fft_type;
  HL_RETURN_IF_ERROR(set_list(&a->fft_length, p->fft_length, p->n_fft_length));
  if (p->gather_dimension_numbers) {
    const Xla__GatherDimensionNumbers *g = p->gather_dimension_numbers;
    hl_gather_dims_t *o = &a->gather_dimension_numbers;
    a->has_gather_dimension_numbers = true;
    o->index_vector_dim = g->index_vector_dim;
    HL_RETURN_IF_ERROR(set_list(&o->offset_dims, g->offset_dims, g->n_offset_dims));
    HL_RETURN_IF_ERROR(set_list(&o->collapsed_slice_dims, g->collapsed_slice_dims,
                                g->n_collapsed_slice_dims));
    HL_RETURN_IF_ERROR(set_list(&o->start_index_map, g->start_index_map, g->n_start_index_map));
    HL_RETURN_IF_ERROR(set_list(&o->operand_batching_dims, g->operand_batching_dims,
                                g->n_operand_batching_dims));
    HL_RETURN_IF_ERROR(set_list(&o->start_indices_batching_dims, g->start_indices_batching_dims,
                                g->n_start_indices_batching_dims));
  }
  HL_RETURN_IF_ERROR(set_list(&a->gather_slice_sizes, p->gather_slice_sizes,
                              p->n_gather_slice_sizes));
  if (p->sharding) {
    a->sharding = hl_calloc(1, sizeof(hl_sharding_t));
    if (!a->sharding) return HL_OOM();
    HL_RETURN_IF_ERROR_CTX(sharding_from_message(p->sharding, a->sharding), "sharding (field 40)");
  }
  HL_RETURN_IF_ERROR(dup_bytes(&a->backend_config, &p->backend_config));
  a->is_host_transfer = p->is_host_transfer;
  if (p->scatter_dimension_numbers) {
    const Xla__ScatterDimensionNumbers *s = p->scatter_dimension_numbers;
    hl_scatter_dims_t *o = &a->scatter_dimension_numbers;
    a->has_scatter_dimension_numbers = true;
    o->index_vector_dim = s->index_vector_dim;
    HL_RETURN_IF_ERROR(set_list(&o->update_window_dims, s->update_window_dims,
                                s->n_update_window_dims));
    HL_RETURN_IF_ERROR(set_list(&o->inserted_window_dims, s->inserted_window_dims,
                                s->n_inserted_window_dims));
    HL_RETURN_IF_ERROR(set_list(&o->scatter_dims_to_operand_dims, s->scatter_dims_to_operand_dims,
                                s->n_scatter_dims_to_operand_dims));
    HL_RETURN_IF_ERROR(set_list(&o->input_batching_dims, s->input_batching_dims,
                                s->n_input_batching_dims));
    HL_RETURN_IF_ERROR(set_list(&o->scatter_indices_batching_dims,
                                s->scatter_indices_batching_dims,
                                s->n_scatter_indices_batching_dims));
  }
  HL_RETURN_IF_ERROR(replica_groups_from_message(p, &a->replica_groups));
  if (p->precision_config) {
    HL_RETURN_IF_ERROR(set_list_enum(&a->operand_precision,
                                     (const int *)p->precision_config->operand_precision,
                                     p->precision_config->n_operand_precision));
    a->precision_algorithm = (int)p->precision_config->algorithm;
  }
  if (p->n_source_target_pairs) {
    if (p->n_source_target_pairs > (size_t)INT32_MAX) return HL_INVALID("too many pairs");
    a->source_target_pairs = hl_calloc(p->n_source_target_pairs, sizeof(hl_source_target_t));
    if (!a->source_target_pairs) return HL_OOM();
    a->source_target_count = (int)p->n_source_target_pairs;
    for (size_t i = 0; i < p->n_source_target_pairs; i++)
      a->source_target_pairs[i] = (hl_source_target_t){p->source_target_pairs[i]->source,
                                                       p->source_target_pairs[i]->target};
  }
  a->constrain_layout = p->constrain_layout;
  if (p->triangular_solve_options) {
    a->triangular_left_side = p->triangular_solve_options->left_side;
    a->triangular_lower = p->triangular_solve_options->lower;
    a->triangular_unit_diagonal = p->triangular_solve_options->unit_diagonal;
    a->triangular_transpose_a = (hl_triangular_transpose_t)p->triangular_solve_options->transpose_a;
  }
  a->is_stable = p->is_stable;
  if (p->parameter_replication && p->parameter_replication->n_replicated_at_leaf_buffers) {
    size_t n = p->parameter_replication->n_replicated_at_leaf_buffers;
    if (n > (size_t)INT32_MAX) return HL_INVALID("parameter_replication too long");
    a->parameter_replication = hl_calloc(n, sizeof(bool));
    if (!a->parameter_replication) return HL_OOM();
    a->parameter_replication_count = (int)n;
    for (size_t i = 0; i < n; i++)
      a->parameter_replication[i] = p->parameter_replication->replicated_at_leaf_buffers[i];
  }
  if (p->cholesky_options) a->cholesky_lower = p->cholesky_options->lower;
  if (p->comparison_direction && *p->comparison_direction) {
    a->comparison_direction = hl_comparison_direction_from_name(p->comparison_direction);
    if (a->comparison_direction == HL_CMP_NONE)
      return HL_INVALID("comparison_direction (field 63) '%s' is not one of EQ, NE, GE, GT, LE, LT",
                        p->comparison_direction);
  }
  a->custom_call_has_side_effect = p->custom_call_has_side_effect;
  a->delta = p->delta;
  a->indices_are_sorted = p->indices_are_sorted;
  HL_RETURN_IF_ERROR_CTX(frontend_attributes_from_message(p->frontend_attributes,
                                                          &a->frontend_attributes),
                         "frontend_attributes (field 68)");
  a->unique_indices = p->unique_indices;
  a->rng_algorithm = (int)p->rng_algorithm;
  a->use_global_device_ids = p->use_global_device_ids;
  if (p->comparison_type && *p->comparison_type) {
    a->comparison_type = hl_comparison_type_from_name(p->comparison_type);
    if (a->comparison_type == HL_CMPTYPE_DEFAULT)
      return HL_INVALID("comparison_type (field 72) '%s' is not one of FLOAT, TOTALORDER, "
                        "SIGNED, UNSIGNED",
                        p->comparison_type);
  }
  a->custom_call_api_version = (int)p->custom_call_api_version;
  HL_RETURN_IF_ERROR(dup_string(&a->async_execution_thread, p->async_execution_thread));
  a->k = p->k;
  a->largest = p->largest;
  a->is_composite = p->is_composite;
  a->is_reverse = p->is_reverse;
  a->num_carries = p->num_carries;
  a->is_associative = (int)p->is_associative;
  return NULL;
}

// Opcode strings of older XLA that the current op set spells differently.
static hl_opcode_t opcode_from_proto(const char *s, hl_comparison_direction_t *legacy_dir) {
  static const struct {
    const char *name;
    hl_comparison_direction_t dir;
  } kLegacyCompare[] = {
      {"equal-to", HL_CMP_EQ},     {"not-equal-to", HL_CMP_NE},
      {"greater-than", HL_CMP_GT}, {"greater-than-or-equal-to", HL_CMP_GE},
      {"less-than", HL_CMP_LT},    {"less-than-or-equal-to", HL_CMP_LE},
  };
  *legacy_dir = HL_CMP_NONE;
  hl_opcode_t op = hl_opcode_from_name(s, strlen(s));
  if (op != HL_OP_INVALID_) return op;
  for (size_t i = 0; i < sizeof(kLegacyCompare) / sizeof(kLegacyCompare[0]); i++)
    if (strcmp(s, kLegacyCompare[i].name) == 0) {
      *legacy_dir = kLegacyCompare[i].dir;
      return HL_OP_COMPARE;
    }
  if (strcmp(s, "cross-replica-sum") == 0) return HL_OP_ALL_REDUCE;
  return HL_OP_INVALID_;
}

//===----------------------------------------------------------------------===//
// Computations
//===----------------------------------------------------------------------===//

// Orders instructions so that operands and control predecessors come first,
// keeping proto order when it already is one (the normal case). Iterative
// DFS post-order, so long chains do not exhaust the stack.
static hl_status_t topological_order(const Xla__HloComputationProto *cp, const id_map_t *ids,
                                     int *order) {
  size_t n = cp->n_instructions;
  uint8_t *state = hl_calloc(n, 1);  // 0 new, 1 on stack, 2 done
  int *stack = hl_malloc(n * sizeof(int));
  size_t *next = hl_calloc(n, sizeof(size_t));
  if (!state || !stack || !next) {
    hl_free(state);
    hl_free(stack);
    hl_free(next);
    return HL_OOM();
  }
  hl_status_t st = NULL;
  size_t emitted = 0;
  for (size_t root = 0; root < n && !st; root++) {
    if (state[root]) continue;
    size_t sp = 0;
    stack[sp++] = (int)root;
    state[root] = 1;
    while (sp && !st) {
      int i = stack[sp - 1];
      const Xla__HloInstructionProto *p = cp->instructions[i];
      size_t deps = p->n_operand_ids + p->n_control_predecessor_ids;
      if (next[i] < deps) {
        size_t k = next[i]++;
        int64_t id = k < p->n_operand_ids ? p->operand_ids[k]
                                          : p->control_predecessor_ids[k - p->n_operand_ids];
        int j = id_map_get(ids, id);  // resolved earlier, so j >= 0
        if (state[j] == 1)
          st = HL_INVALID("computation '%s': instruction '%s' depends on itself through a cycle",
                          cp->name, cp->instructions[j]->name);
        else if (state[j] == 0) {
          state[j] = 1;
          stack[sp++] = j;
        }
      } else {
        state[i] = 2;
        order[emitted++] = i;
        sp--;
      }
    }
  }
  hl_free(state);
  hl_free(stack);
  hl_free(next);
  return st;
}

static hl_status_t resolve_ids(const Xla__HloComputationProto *cp, const id_map_t *ids) {
  for (size_t i = 0; i < cp->n_instructions; i++) {
    const Xla__HloInstructionProto *p = cp->instructions[i];
    for (size_t k = 0; k < p->n_operand_ids; k++)
      if (id_map_get(ids, p->operand_ids[k]) < 0)
        return HL_INVALID("computation '%s', instruction '%s': operand_ids[%zu] = %lld names no "
                          "instruction of this computation",
                          cp->name, p->name, k, (long long)p->operand_ids[k]);
    for (size_t k = 0; k < p->n_control_predecessor_ids; k++)
      if (id_map_get(ids, p->control_predecessor_ids[k]) < 0)
        return HL_INVALID("computation '%s', instruction '%s': control_predecessor_ids[%zu] = "
                          "%lld names no instruction of this computation",
                          cp->name, p->name, k, (long long)p->control_predecessor_ids[k]);
  }
  return NULL;
}

typedef struct load_ctx {
  hl_module_t *module;
  id_map_t computation_ids;  // proto id -> index in module->computations
} load_ctx_t;

static hl_status_t fill_computation(load_ctx_t *ctx, const Xla__HloComputationProto *cp,
                                    hl_computation_t *c) {
  size_t n = cp->n_instructions;
  if (n == 0) return HL_INVALID("computation '%s' has no instructions", cp->name);
  if (n > (size_t)INT32_MAX / 2) return HL_INVALID("computation '%s' is too large", cp->name);
  id_map_t ids = {0};
  int *order = NULL;
  hl_instruction_t **by_proto = NULL;  // proto index -> instruction
  hl_instruction_t **ptrs = NULL;
  hl_computation_t **comps = NULL;
  hl_status_t st = id_map_init(&ids, n);
  if (!st) {
    order = hl_malloc(n * sizeof(int));
    by_proto = hl_calloc(n, sizeof(hl_instruction_t *));
    if (!order || !by_proto) st = HL_OOM();
  }
  for (size_t i = 0; i < n && !st; i++) {
    const Xla__HloInstructionProto *p = cp->instructions[i];
    int prev = id_map_insert(&ids, p->id, (int)i);
    if (prev >= 0)
      st = HL_INVALID("computation '%s': instructions '%s' and '%s' share id %lld", cp->name,
                      cp->instructions[prev]->name, p->name, (long long)p->id);
    else if (!p->name || !*p->name)
      st = HL_INVALID("computation '%s': instruction with id %lld has no name", cp->name,
                      (long long)p->id);
  }
  if (!st) st = resolve_ids(cp, &ids);
  if (!st) st = topological_order(cp, &ids, order);
  for (size_t k = 0; k < n && !st; k++) {
    const Xla__HloInstructionProto *p = cp->instructions[order[k]];
    hl_comparison_direction_t legacy_dir;
    hl_opcode_t op = opcode_from_proto(p->opcode ? p->opcode : "", &legacy_dir);
    if (op == HL_OP_INVALID_) {
      st = HL_UNIMPL("computation '%s', instruction '%s': opcode (field 2) '%s' is not supported",
                     cp->name, p->name, p->opcode ? p->opcode : "");
      break;
    }
    hl_instruction_t *inst;
    st = hl_computation_add_instruction(c, p->name, op, &inst);
    if (st) break;
    by_proto[order[k]] = inst;
    st = attrs_from_message(p, inst);
    if (!st && legacy_dir != HL_CMP_NONE) inst->attrs.comparison_direction = legacy_dir;
    if (st) st = hl_status_annotate(st, "computation '%s', instruction '%s'", cp->name, p->name);
  }
  // References: operands, control predecessors, called computations.
  size_t max_refs = 0;
  for (size_t i = 0; i < n; i++) {
    const Xla__HloInstructionProto *p = cp->instructions[i];
    size_t m = p->n_operand_ids;
    if (p->n_control_predecessor_ids > m) m = p->n_control_predecessor_ids;
    if (p->n_called_computation_ids > m) m = p->n_called_computation_ids;
    if (m > max_refs) max_refs = m;
  }
  if (!st && max_refs) {
    ptrs = hl_malloc(max_refs * sizeof(void *));
    comps = hl_malloc(max_refs * sizeof(void *));
    if (!ptrs || !comps) st = HL_OOM();
  }
  for (size_t i = 0; i < n && !st; i++) {
    const Xla__HloInstructionProto *p = cp->instructions[i];
    hl_instruction_t *inst = by_proto[i];
    for (size_t k = 0; k < p->n_operand_ids; k++)
      ptrs[k] = by_proto[id_map_get(&ids, p->operand_ids[k])];
    st = hl_instruction_set_operands(inst, ptrs, (int)p->n_operand_ids);
    for (size_t k = 0; k < p->n_control_predecessor_ids && !st; k++)
      ptrs[k] = by_proto[id_map_get(&ids, p->control_predecessor_ids[k])];
    if (!st) st = hl_instruction_set_control_predecessors(inst, ptrs,
                                                          (int)p->n_control_predecessor_ids);
    for (size_t k = 0; k < p->n_called_computation_ids && !st; k++) {
      int ci = id_map_get(&ctx->computation_ids, p->called_computation_ids[k]);
      if (ci < 0)
        st = HL_INVALID("computation '%s', instruction '%s': called_computation_ids[%zu] = %lld "
                        "names no computation of the module",
                        cp->name, p->name, k, (long long)p->called_computation_ids[k]);
      else
        comps[k] = ctx->module->computations[ci];
    }
    if (!st) st = hl_instruction_set_called(inst, comps, (int)p->n_called_computation_ids);
  }
  if (!st) {
    int r = id_map_get(&ids, cp->root_id);
    if (r >= 0) {
      c->root = by_proto[r];
    } else if (cp->root_id == 0) {
      c->root = by_proto[n - 1];  // protos from before root_id existed
    } else {
      st = HL_INVALID("computation '%s': root_id (field 6) = %lld names no instruction of this "
                      "computation",
                      cp->name, (long long)cp->root_id);
    }
  }
  if (!st) st = hl_computation_index_parameters(c);
  hl_free(ptrs);
  hl_free(comps);
  hl_free(order);
  hl_free(by_proto);
  id_map_deinit(&ids);
  return st;
}

static hl_status_t spmd_shardings_from_message(const Xla__HloModuleProto *mp, hl_module_t *m) {
  if (mp->spmd_output_sharding) {
    m->spmd_output_sharding = hl_calloc(1, sizeof(hl_sharding_t));
    if (!m->spmd_output_sharding) return HL_OOM();
    HL_RETURN_IF_ERROR_CTX(sharding_from_message(mp->spmd_output_sharding, m->spmd_output_sharding),
                           "spmd_output_sharding (field 12)");
  }
  size_t n = mp->n_spmd_parameters_shardings;
  if (n == 0) return NULL;
  if (n > (size_t)INT32_MAX) return HL_INVALID("too many spmd_parameters_shardings");
  m->spmd_parameters_shardings = hl_calloc(n, sizeof(hl_sharding_t));
  if (!m->spmd_parameters_shardings) return HL_OOM();
  m->spmd_parameters_sharding_count = (int)n;
  for (size_t i = 0; i < n; i++)
    HL_RETURN_IF_ERROR_CTX(sharding_from_message(mp->spmd_parameters_shardings[i],
                                                 &m->spmd_parameters_shardings[i]),
                           "spmd_parameters_shardings[%zu] (field 14)", i);
  return NULL;
}

static hl_status_t module_from_message(const Xla__HloModuleProto *mp, const char *source,
                                       hl_module_t **out) {
  *out = NULL;
  load_ctx_t ctx = {0};
  size_t nc = mp->n_computations;
  if (nc == 0) return HL_INVALID("the module has no computations");
  if (nc > (size_t)INT32_MAX / 2) return HL_INVALID("too many computations");
  HL_RETURN_IF_ERROR(hl_module_create(mp->name && *mp->name ? mp->name : "module", &ctx.module));
  hl_module_t *m = ctx.module;
  hl_status_t st = NULL;
  m->source_path = hl_strdup(source);
  if (!m->source_path) st = HL_OOM();
  if (!st) st = id_map_init(&ctx.computation_ids, nc);
  m->id = mp->id;
  // All computations exist before any instruction refers to one.
  for (size_t i = 0; i < nc && !st; i++) {
    const Xla__HloComputationProto *cp = mp->computations[i];
    hl_computation_t *c;
    st = hl_module_add_computation(m, cp->name, &c);
    if (st) break;
    c->id = cp->id;
    c->is_fusion_computation = cp->is_fusion_computation;
    st = dup_string(&c->execution_thread, cp->execution_thread);
    int prev = st ? -1 : id_map_insert(&ctx.computation_ids, cp->id, (int)i);
    if (prev >= 0)
      st = HL_INVALID("computations '%s' and '%s' share id %lld", mp->computations[prev]->name,
                      cp->name, (long long)cp->id);
  }
  for (size_t i = 0; i < nc && !st; i++)
    st = fill_computation(&ctx, mp->computations[i], m->computations[i]);
  if (!st) {
    int e = id_map_get(&ctx.computation_ids, mp->entry_computation_id);
    if (e >= 0) m->entry = m->computations[e];
    if (!m->entry && mp->entry_computation_name && *mp->entry_computation_name)
      m->entry = hl_module_find_computation(m, mp->entry_computation_name);
    if (!m->entry) m->entry = m->computations[nc - 1];
    if (mp->device_assignment) {
      m->replica_count = mp->device_assignment->replica_count;
      m->num_partitions = mp->device_assignment->computation_count;
      if (m->replica_count < 0 || m->num_partitions < 0)
        st = HL_INVALID("device_assignment (field 15) has negative counts");
    }
    m->is_scheduled = mp->schedule != NULL;
  }
  if (!st)
    st = hl_status_annotate(
        frontend_attributes_from_message(mp->frontend_attributes, &m->frontend_attributes),
        "module frontend_attributes (field 19)");
  if (!st) st = spmd_shardings_from_message(mp, m);
  id_map_deinit(&ctx.computation_ids);
  if (st) {
    hl_module_destroy(m);
    return st;
  }
  *out = m;
  return NULL;
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

static const ProtobufCMessageDescriptor *kind_descriptor(hl_proto_kind_t kind) {
  switch (kind) {
    case HL_PROTO_HLO_PROTO: return &xla__hlo_proto__descriptor;
    case HL_PROTO_MODULE_PROTO: return &xla__hlo_module_proto__descriptor;
    case HL_PROTO_SNAPSHOT: return &xla__hlo_snapshot__descriptor;
  }
  return NULL;
}

static hl_status_t decode(const uint8_t *data, size_t size, hl_proto_kind_t kind,
                          const char *name, hl_module_t **out_module, hl_literal_t ***out_args,
                          int *out_count) {
  const ProtobufCMessageDescriptor *desc = kind_descriptor(kind);
  if (!desc) return HL_INVALID("unknown proto kind %d", (int)kind);
  HL_RETURN_IF_ERROR_CTX(hl_proto_wire_check(data, size, desc), "%s", desc->name);
  ProtobufCMessage *msg = protobuf_c_message_unpack(desc, &hl_proto_allocator, size, data);
  if (!msg) return HL_INVALID("%s: malformed message (or out of memory)", desc->name);
  const Xla__HloModuleProto *mp = NULL;
  const Xla__HloSnapshot *snap = NULL;
  hl_status_t st = NULL;
  if (kind == HL_PROTO_MODULE_PROTO) {
    mp = (const Xla__HloModuleProto *)msg;
  } else if (kind == HL_PROTO_HLO_PROTO) {
    mp = ((const Xla__HloProto *)msg)->hlo_module;
    if (!mp) st = HL_INVALID("HloProto has no hlo_module (field 1)");
  } else {
    snap = (const Xla__HloSnapshot *)msg;
    if (!snap->hlo || !snap->hlo->hlo_module)
      st = HL_INVALID("HloSnapshot has no hlo.hlo_module (field 1.1)");
    else
      mp = snap->hlo->hlo_module;
  }
  hl_module_t *module = NULL;
  if (!st) st = module_from_message(mp, name, &module);
  hl_literal_t **args = NULL;
  int nargs = 0;
  if (!st && snap && snap->n_arguments) {
    if (snap->n_arguments > (size_t)INT32_MAX) st = HL_INVALID("too many snapshot arguments");
    else if (!(args = hl_calloc(snap->n_arguments, sizeof(hl_literal_t *)))) st = HL_OOM();
    for (size_t i = 0; i < snap->n_arguments && !st; i++) {
      st = hl_proto_literal_from_message(snap->arguments[i], &args[i]);
      if (st) st = hl_status_annotate(st, "HloSnapshot arguments[%zu]", i);
      else nargs++;
    }
  }
  protobuf_c_message_free_unpacked(msg, &hl_proto_allocator);
  if (st) {
    for (int i = 0; i < nargs; i++) hl_literal_release(args[i]);
    hl_free(args);
    hl_module_destroy(module);
    return st;
  }
  *out_module = module;
  if (out_args) {
    *out_args = args;
    *out_count = nargs;
  } else {
    for (int i = 0; i < nargs; i++) hl_literal_release(args[i]);
    hl_free(args);
  }
  return NULL;
}

hl_status_t hl_proto_decode(const uint8_t *data, size_t size, hl_proto_kind_t kind,
                            const char *source_name, hl_module_t **out_module,
                            hl_literal_t ***out_arguments, int *out_argument_count) {
  *out_module = NULL;
  if (out_arguments) *out_arguments = NULL;
  if (out_argument_count) *out_argument_count = 0;
  const char *name = source_name ? source_name : "<memory>";
  hl_status_t st = decode(data, size, kind, name, out_module, out_arguments, out_argument_count);
  return st ? hl_status_annotate(st, "%s", name) : NULL;
}

// A module message "fits" when it is well formed and has computations whose
// bytes are well-formed HloComputationProtos (the walk checks them).
static bool looks_like_module(const uint8_t *p, size_t n) {
  if (hl_proto_wire_count_field(p, n, 3) <= 0) return false;
  hl_status_t st = hl_proto_wire_check(p, n, &xla__hlo_module_proto__descriptor);
  hl_status_free(st);
  return st == NULL;
}

static bool looks_like_hlo_proto(const uint8_t *p, size_t n) {
  const uint8_t *mod;
  size_t mod_size;
  if (!hl_proto_wire_find_bytes(p, n, 1, &mod, &mod_size)) return false;
  if (!looks_like_module(mod, mod_size)) return false;
  hl_status_t st = hl_proto_wire_check(p, n, &xla__hlo_proto__descriptor);
  hl_status_free(st);
  return st == NULL;
}

static bool looks_like_snapshot(const uint8_t *p, size_t n) {
  const uint8_t *hlo;
  size_t hlo_size;
  if (!hl_proto_wire_find_bytes(p, n, 1, &hlo, &hlo_size)) return false;
  if (!looks_like_hlo_proto(hlo, hlo_size)) return false;
  hl_status_t st = hl_proto_wire_check(p, n, &xla__hlo_snapshot__descriptor);
  hl_status_free(st);
  return st == NULL;
}

hl_status_t hl_proto_detect_kind(const uint8_t *data, size_t size, hl_proto_kind_t *out_kind) {
  if (size && data) {
    if (looks_like_snapshot(data, size)) {
      *out_kind = HL_PROTO_SNAPSHOT;
      return NULL;
    }
    if (looks_like_hlo_proto(data, size)) {
      *out_kind = HL_PROTO_HLO_PROTO;
      return NULL;
    }
    if (looks_like_module(data, size)) {
      *out_kind = HL_PROTO_MODULE_PROTO;
      return NULL;
    }
  }
  return HL_INVALID("the data is neither an HloProto, an HloModuleProto nor an HloSnapshot");
}
