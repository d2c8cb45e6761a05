// Module IR -> xla.HloProto bytes, the mirror of proto_loader.c.
//
// Every IR attribute the loader reads is written back to the field it came
// from, so decode(encode(m)) encodes to the same bytes. Messages are built in
// an arena and packed once; protobuf-c packs fields in number order, so the
// output depends only on the module.
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/proto/proto_internal.h"
#include "runtime/proto/proto_io.h"

typedef struct writer {
  hl_proto_arena_t *arena;
  bool oom;
} writer_t;

static void *w_alloc(writer_t *w, size_t size) {
  void *p = hl_proto_arena_alloc(w->arena, size);
  if (!p) w->oom = true;
  return p;
}

static char *w_str(writer_t *w, const char *s) {
  char *d = hl_proto_arena_strdup(w->arena, s);
  if (!d) w->oom = true;
  return d;
}

static ProtobufCBinaryData w_bytes(writer_t *w, const char *s) {
  ProtobufCBinaryData b = {0, NULL};
  if (s && *s) {
    b.len = strlen(s);
    b.data = (uint8_t *)w_str(w, s);
    if (!b.data) b.len = 0;
  }
  return b;
}

static int64_t *w_list(writer_t *w, const hl_i64_list_t *l, size_t *n) {
  *n = l->n > 0 ? (size_t)l->n : 0;
  return hl_proto_arena_i64(w->arena, l->v, *n, &w->oom);
}

static int32_t *w_list32(writer_t *w, const hl_i64_list_t *l, size_t *n) {
  *n = 0;
  if (l->n <= 0) return NULL;
  int32_t *v = w_alloc(w, (size_t)l->n * sizeof(int32_t));
  if (!v) return NULL;
  for (int i = 0; i < l->n; i++) v[i] = (int32_t)l->v[i];
  *n = (size_t)l->n;
  return v;
}

// Allocates an array of n message pointers (NULL for n == 0).
static void *w_ptrs(writer_t *w, size_t n) { return n ? w_alloc(w, n * sizeof(void *)) : NULL; }

static Xla__OpSharding *sharding_msg(writer_t *w, const hl_sharding_t *s) {
  Xla__OpSharding *m = w_alloc(w, sizeof(*m));
  if (!m) return NULL;
  xla__op_sharding__init(m);
  m->type = (Xla__OpSharding__Type)s->type;
  m->tile_assignment_dimensions = w_list(w, &s->tile_assignment_dimensions,
                                         &m->n_tile_assignment_dimensions);
  m->tile_assignment_devices = w_list(w, &s->tile_assignment_devices,
                                      &m->n_tile_assignment_devices);
  m->iota_reshape_dims = w_list(w, &s->iota_reshape_dims, &m->n_iota_reshape_dims);
  m->iota_transpose_perm = w_list32(w, &s->iota_transpose_perm, &m->n_iota_transpose_perm);
  m->last_tile_dims =
      (Xla__OpSharding__Type *)w_list32(w, &s->last_tile_dims, &m->n_last_tile_dims);
  m->replicate_on_last_tile_dim = s->replicate_on_last_tile_dim;
  if (s->tuple_count > 0) {
    m->tuple_shardings = w_ptrs(w, (size_t)s->tuple_count);
    if (!m->tuple_shardings) return m;
    m->n_tuple_shardings = (size_t)s->tuple_count;
    for (int i = 0; i < s->tuple_count; i++)
      m->tuple_shardings[i] = sharding_msg(w, &s->tuple_shardings[i]);
  }
  return m;
}

static Xla__FrontendAttributes *frontend_msg(writer_t *w, const hl_frontend_attributes_t *fa) {
  if (fa->n <= 0) return NULL;
  Xla__FrontendAttributes *m = w_alloc(w, sizeof(*m));
  if (!m) return NULL;
  xla__frontend_attributes__init(m);
  m->map = w_ptrs(w, (size_t)fa->n);
  if (!m->map) return m;
  m->n_map = (size_t)fa->n;
  for (int i = 0; i < fa->n; i++) {
    Xla__FrontendAttributes__MapEntry *e = w_alloc(w, sizeof(*e));
    if (!e) return m;
    xla__frontend_attributes__map_entry__init(e);
    e->key = w_str(w, fa->entries[i].key);
    e->value = w_str(w, fa->entries[i].value);
    m->map[i] = e;
  }
  return m;
}

static Xla__IotaReplicaGroupListProto *iota_msg(writer_t *w, const hl_replica_groups_t *g) {
  Xla__IotaReplicaGroupListProto *m = w_alloc(w, sizeof(*m));
  if (!m) return NULL;
  xla__iota_replica_group_list_proto__init(m);
  m->num_replica_groups = g->iota_num_groups;
  m->num_devices_per_group = g->iota_group_size;
  m->iota_reshape_dims = w_list(w, &g->iota_reshape_dims, &m->n_iota_reshape_dims);
  m->iota_transpose_perm = w_list32(w, &g->iota_transpose_perm, &m->n_iota_transpose_perm);
  return m;
}

// Explicit groups go to the legacy field 49, which every XLA version reads
// first; iota groups go inside collective_device_list (87), which both the
// versions with and without field 92 understand.
static void replica_groups_msg(writer_t *w, const hl_replica_groups_t *g,
                               Xla__HloInstructionProto *p) {
  if (g->kind == HL_GROUPS_LIST && g->group_count > 0) {
    p->replica_groups = w_ptrs(w, (size_t)g->group_count);
    if (!p->replica_groups) return;
    p->n_replica_groups = (size_t)g->group_count;
    for (int i = 0; i < g->group_count; i++) {
      Xla__ReplicaGroup *r = w_alloc(w, sizeof(*r));
      if (!r) return;
      xla__replica_group__init(r);
      r->replica_ids = w_list(w, &g->groups[i], &r->n_replica_ids);
      p->replica_groups[i] = r;
    }
  } else if (g->kind == HL_GROUPS_IOTA) {
    Xla__CollectiveDeviceListProto *c = w_alloc(w, sizeof(*c));
    if (!c) return;
    xla__collective_device_list_proto__init(c);
    c->iota_replica_group_list = iota_msg(w, g);
    p->collective_device_list = c;
  }
}

static hl_status_t instruction_msg(writer_t *w, const hl_instruction_t *inst,
                                   Xla__HloInstructionProto **out) {
  const hl_attrs_t *a = &inst->attrs;
  // The newest XLA's shuffle mode and has_dynamic_root have no field in
  // proto/hlo.proto (their numbers are not known here): refuse rather than
  // write a proto that silently loses them.
  if (a->shuffle_mode != HL_SHUFFLE_NONE || a->has_dynamic_root)
    return HL_UNIMPL("%s: %s cannot be written as a proto (this runtime's hlo.proto has no "
                     "field for it); keep the program as HLO text",
                     hl_instruction_location(inst),
                     a->has_dynamic_root ? "has_dynamic_root" : "the shuffle mode");
  Xla__HloInstructionProto *p = w_alloc(w, sizeof(*p));
  if (!p) return HL_OOM();
  xla__hlo_instruction_proto__init(p);
  *out = p;
  p->name = w_str(w, inst->name);
  p->opcode = w_str(w, hl_opcode_name(inst->opcode));
  HL_RETURN_IF_ERROR(hl_proto_shape_to_message(w->arena, &inst->shape, &p->shape));
  p->id = inst->id;

  if (a->metadata.present) {
    Xla__OpMetadata *md = w_alloc(w, sizeof(*md));
    if (!md) return HL_OOM();
    xla__op_metadata__init(md);
    md->op_type = w_str(w, a->metadata.op_type);
    md->op_name = w_str(w, a->metadata.op_name);
    md->source_file = w_str(w, a->metadata.source_file);
    md->source_line = a->metadata.source_line;
    p->metadata = md;
  }
  if (a->literal)
    HL_RETURN_IF_ERROR_CTX(hl_proto_literal_to_message(w->arena, a->literal, &p->literal),
                           "%s: literal", hl_instruction_location(inst));
  p->parameter_number = a->parameter_number;
  p->fusion_kind = w_str(w, a->fusion_kind);
  p->tuple_index = a->tuple_index;
  p->dimensions = w_list(w, &a->dimensions, &p->n_dimensions);
  if (a->has_window) {
    Xla__Window *win = w_alloc(w, sizeof(*win));
    if (!win) return HL_OOM();
    xla__window__init(win);
    if (a->window.n > 0) {
      win->dimensions = w_ptrs(w, (size_t)a->window.n);
      if (!win->dimensions) return HL_OOM();
      win->n_dimensions = (size_t)a->window.n;
      for (int i = 0; i < a->window.n; i++) {
        const hl_window_dim_t *d = &a->window.dims[i];
        Xla__WindowDimension *wd = w_alloc(w, sizeof(*wd));
        if (!wd) return HL_OOM();
        xla__window_dimension__init(wd);
        wd->size = d->size;
        wd->stride = d->stride;
        wd->padding_low = d->padding_low;
        wd->padding_high = d->padding_high;
        wd->window_dilation = d->window_dilation;
        wd->base_dilation = d->base_dilation;
        wd->window_reversal = d->window_reversal;
        win->dimensions[i] = wd;
      }
    }
    p->window = win;
  }
  if (a->has_convolution_dimension_numbers) {
    const hl_conv_dims_t *d = &a->convolution_dimension_numbers;
    Xla__ConvolutionDimensionNumbers *c = w_alloc(w, sizeof(*c));
    if (!c) return HL_OOM();
    xla__convolution_dimension_numbers__init(c);
    c->input_batch_dimension = d->input_batch_dimension;
    c->input_feature_dimension = d->input_feature_dimension;
    c->kernel_input_feature_dimension = d->kernel_input_feature_dimension;
    c->kernel_output_feature_dimension = d->kernel_output_feature_dimension;
    c->output_batch_dimension = d->output_batch_dimension;
    c->output_feature_dimension = d->output_feature_dimension;
    c->input_spatial_dimensions = w_list(w, &d->input_spatial_dimensions,
                                         &c->n_input_spatial_dimensions);
    c->kernel_spatial_dimensions = w_list(w, &d->kernel_spatial_dimensions,
                                          &c->n_kernel_spatial_dimensions);
    c->output_spatial_dimensions = w_list(w, &d->output_spatial_dimensions,
                                          &c->n_output_spatial_dimensions);
    p->convolution_dimension_numbers = c;
  }
  // 1 is what absence means; leave it out like XLA's defaults.
  p->feature_group_count = a->feature_group_count == 1 ? 0 : a->feature_group_count;
  p->batch_group_count = a->batch_group_count == 1 ? 0 : a->batch_group_count;
  if (a->slice_count > 0) {
    p->slice_dimensions = w_ptrs(w, (size_t)a->slice_count);
    if (!p->slice_dimensions) return HL_OOM();
    p->n_slice_dimensions = (size_t)a->slice_count;
    for (int i = 0; i < a->slice_count; i++) {
      Xla__HloInstructionProto__SliceDimensions *s = w_alloc(w, sizeof(*s));
      if (!s) return HL_OOM();
      xla__hlo_instruction_proto__slice_dimensions__init(s);
      s->start = a->slice_dimensions[i].start;
      s->limit = a->slice_dimensions[i].limit;
      s->stride = a->slice_dimensions[i].stride;
      p->slice_dimensions[i] = s;
    }
  }
  p->exponent_bits = a->exponent_bits;
  p->mantissa_bits = a->mantissa_bits;
  p->dynamic_slice_sizes = w_list(w, &a->dynamic_slice_sizes, &p->n_dynamic_slice_sizes);
  if (a->padding_count > 0) {
    Xla__PaddingConfig *pc = w_alloc(w, sizeof(*pc));
    if (!pc) return HL_OOM();
    xla__padding_config__init(pc);
    pc->dimensions = w_ptrs(w, (size_t)a->padding_count);
    if (!pc->dimensions) return HL_OOM();
    pc->n_dimensions = (size_t)a->padding_count;
    for (int i = 0; i < a->padding_count; i++) {
      Xla__PaddingConfig__PaddingConfigDimension *d = w_alloc(w, sizeof(*d));
      if (!d) return HL_OOM();
      xla__padding_config__padding_config_dimension__init(d);
      d->edge_padding_low = a->padding_config[i].edge_padding_low;
      d->edge_padding_high = a->padding_config[i].edge_padding_high;
      d->interior_padding = a->padding_config[i].interior_padding;
      pc->dimensions[i] = d;
    }
    p->padding_config = pc;
  }
  p->outfeed_config = w_bytes(w, a->outfeed_config);
  p->distribution = (Xla__RandomDistribution)a->distribution;
  p->epsilon = a->epsilon;
  p->feature_index = a->feature_index;
  p->channel_id = a->channel_id > 0 ? a->channel_id : 0;
  p->infeed_config = w_bytes(w, a->infeed_config);
  p->custom_call_target = w_str(w, a->custom_call_target);
  if (a->outfeed_shape)
    HL_RETURN_IF_ERROR(hl_proto_shape_to_message(w->arena, a->outfeed_shape, &p->outfeed_shape));
  if (a->operand_shapes_with_layout_count > 0) {
    p->operand_shapes_with_layout =
        w_alloc(w, sizeof(*p->operand_shapes_with_layout) * (size_t)a->operand_shapes_with_layout_count);
    if (!p->operand_shapes_with_layout) return HL_OOM();
    p->n_operand_shapes_with_layout = (size_t)a->operand_shapes_with_layout_count;
    for (int i = 0; i < a->operand_shapes_with_layout_count; i++)
      HL_RETURN_IF_ERROR(hl_proto_shape_to_message(w->arena, &a->operand_shapes_with_layout[i],
                                                   &p->operand_shapes_with_layout[i]));
  }
  if (a->output_operand_alias_count > 0) {
    size_t n = (size_t)a->output_operand_alias_count;
    p->output_operand_aliasing = w_ptrs(w, n);
    if (!p->output_operand_aliasing) return HL_OOM();
    p->n_output_operand_aliasing = n;
    for (size_t i = 0; i < n; i++) {
      Xla__OutputOperandAliasing *m = w_alloc(w, sizeof(*m));
      int64_t *k = w_alloc(w, sizeof(int64_t));
      if (!m || !k) return HL_OOM();
      xla__output_operand_aliasing__init(m);
      if (inst->shape.dtype == HL_TUPLE) {
        *k = a->output_operand_aliases[i].output;
        m->output_shape_index = k;
        m->n_output_shape_index = 1;
      }
      m->operand_index = a->output_operand_aliases[i].operand;
      p->output_operand_aliasing[i] = m;
    }
  }
  if (a->has_dot_dimension_numbers) {
    const hl_dot_dims_t *d = &a->dot_dimension_numbers;
    Xla__DotDimensionNumbers *dm = w_alloc(w, sizeof(*dm));
    if (!dm) return HL_OOM();
    xla__dot_dimension_numbers__init(dm);
    dm->lhs_contracting_dimensions = w_list(w, &d->lhs_contracting_dimensions,
                                            &dm->n_lhs_contracting_dimensions);
    dm->rhs_contracting_dimensions = w_list(w, &d->rhs_contracting_dimensions,
                                            &dm->n_rhs_contracting_dimensions);
    dm->lhs_batch_dimensions = w_list(w, &d->lhs_batch_dimensions, &dm->n_lhs_batch_dimensions);
    dm->rhs_batch_dimensions = w_list(w, &d->rhs_batch_dimensions, &dm->n_rhs_batch_dimensions);
    if (a->has_ragged_dot_dimension_numbers) {
      // XLA keeps a ragged-dot's dot dims inside field 90, not in field 30.
      Xla__RaggedDotDimensionNumbers *rm = w_alloc(w, sizeof(*rm));
      if (!rm) return HL_OOM();
      xla__ragged_dot_dimension_numbers__init(rm);
      rm->dot_dimension_numbers = dm;
      rm->lhs_ragged_dimensions = w_list(w, &a->lhs_ragged_dimensions,
                                         &rm->n_lhs_ragged_dimensions);
      rm->rhs_group_dimensions = w_list(w, &a->rhs_group_dimensions,
                                        &rm->n_rhs_group_dimensions);
      p->ragged_dot_dimension_numbers = rm;
    } else {
      p->dot_dimension_numbers = dm;
    }
  }
  p->fft_type = (Xla__FftType)a->fft_type;
  p->fft_length = w_list(w, &a->fft_length, &p->n_fft_length);
  if (a->has_gather_dimension_numbers) {
    const hl_gather_dims_t *g = &a->gather_dimension_numbers;
    Xla__GatherDimensionNumbers *gm = w_alloc(w, sizeof(*gm));
    if (!gm) return HL_OOM();
    xla__gather_dimension_numbers__init(gm);
    gm->offset_dims = w_list(w, &g->offset_dims, &gm->n_offset_dims);
    gm->collapsed_slice_dims = w_list(w, &g->collapsed_slice_dims, &gm->n_collapsed_slice_dims);
    gm->start_index_map = w_list(w, &g->start_index_map, &gm->n_start_index_map);
    gm->index_vector_dim = g->index_vector_dim;
    gm->operand_batching_dims = w_list(w, &g->operand_batching_dims,
                                       &gm->n_operand_batching_dims);
    gm->start_indices_batching_dims = w_list(w, &g->start_indices_batching_dims,
                                             &gm->n_start_indices_batching_dims);
    p->gather_dimension_numbers = gm;
  }
  p->gather_slice_sizes = w_list(w, &a->gather_slice_sizes, &p->n_gather_slice_sizes);

  p->operand_ids = w_alloc(w, (size_t)(inst->operand_count + 1) * sizeof(int64_t));
  if (!p->operand_ids) return HL_OOM();
  p->n_operand_ids = (size_t)inst->operand_count;
  for (int i = 0; i < inst->operand_count; i++) p->operand_ids[i] = inst->operands[i]->id;
  p->control_predecessor_ids =
      w_alloc(w, (size_t)(inst->control_predecessor_count + 1) * sizeof(int64_t));
  if (!p->control_predecessor_ids) return HL_OOM();
  p->n_control_predecessor_ids = (size_t)inst->control_predecessor_count;
  for (int i = 0; i < inst->control_predecessor_count; i++)
    p->control_predecessor_ids[i] = inst->control_predecessors[i]->id;
  p->called_computation_ids = w_alloc(w, (size_t)(inst->called_count + 1) * sizeof(int64_t));
  if (!p->called_computation_ids) return HL_OOM();
  p->n_called_computation_ids = (size_t)inst->called_count;
  for (int i = 0; i < inst->called_count; i++)
    p->called_computation_ids[i] = inst->called_computations[i]->id;

  if (a->sharding) p->sharding = sharding_msg(w, a->sharding);
  p->backend_config = w_bytes(w, a->backend_config);
  replica_groups_msg(w, &a->replica_groups, p);
  p->use_global_device_ids = a->use_global_device_ids;
  p->is_host_transfer = a->is_host_transfer;
  p->is_stable = a->is_stable;
  if (a->has_scatter_dimension_numbers) {
    const hl_scatter_dims_t *s = &a->scatter_dimension_numbers;
    Xla__ScatterDimensionNumbers *sm = w_alloc(w, sizeof(*sm));
    if (!sm) return HL_OOM();
    xla__scatter_dimension_numbers__init(sm);
    sm->update_window_dims = w_list(w, &s->update_window_dims, &sm->n_update_window_dims);
    sm->inserted_window_dims = w_list(w, &s->inserted_window_dims, &sm->n_inserted_window_dims);
    sm->scatter_dims_to_operand_dims = w_list(w, &s->scatter_dims_to_operand_dims,
                                              &sm->n_scatter_dims_to_operand_dims);
    sm->index_vector_dim = s->index_vector_dim;
    sm->input_batching_dims = w_list(w, &s->input_batching_dims, &sm->n_input_batching_dims);
    sm->scatter_indices_batching_dims = w_list(w, &s->scatter_indices_batching_dims,
                                               &sm->n_scatter_indices_batching_dims);
    p->scatter_dimension_numbers = sm;
  }
  if (a->operand_precision.n > 0 || a->precision_algorithm) {
    Xla__PrecisionConfig *pc = w_alloc(w, sizeof(*pc));
    if (!pc) return HL_OOM();
    xla__precision_config__init(pc);
    pc->operand_precision = (Xla__PrecisionConfig__Precision *)w_list32(
        w, &a->operand_precision, &pc->n_operand_precision);
    pc->algorithm = (Xla__PrecisionConfig__Algorithm)a->precision_algorithm;
    p->precision_config = pc;
  }
  if (a->source_target_count > 0) {
    p->source_target_pairs = w_ptrs(w, (size_t)a->source_target_count);
    if (!p->source_target_pairs) return HL_OOM();
    p->n_source_target_pairs = (size_t)a->source_target_count;
    for (int i = 0; i < a->source_target_count; i++) {
      Xla__SourceTarget *s = w_alloc(w, sizeof(*s));
      if (!s) return HL_OOM();
      xla__source_target__init(s);
      s->source = a->source_target_pairs[i].source;
      s->target = a->source_target_pairs[i].target;
      p->source_target_pairs[i] = s;
    }
  }
  p->constrain_layout = a->constrain_layout;
  if (a->triangular_left_side || a->triangular_lower || a->triangular_unit_diagonal ||
      a->triangular_transpose_a) {
    Xla__TriangularSolveOptions *t = w_alloc(w, sizeof(*t));
    if (!t) return HL_OOM();
    xla__triangular_solve_options__init(t);
    t->left_side = a->triangular_left_side;
    t->lower = a->triangular_lower;
    t->unit_diagonal = a->triangular_unit_diagonal;
    t->transpose_a = (Xla__TriangularSolveOptions__Transpose)a->triangular_transpose_a;
    p->triangular_solve_options = t;
  }
  if (a->cholesky_lower) {
    Xla__CholeskyOptions *c = w_alloc(w, sizeof(*c));
    if (!c) return HL_OOM();
    xla__cholesky_options__init(c);
    c->lower = true;
    p->cholesky_options = c;
  }
  if (a->parameter_replication_count > 0) {
    Xla__ParameterReplication *r = w_alloc(w, sizeof(*r));
    if (!r) return HL_OOM();
    xla__parameter_replication__init(r);
    r->replicated_at_leaf_buffers =
        w_alloc(w, (size_t)a->parameter_replication_count * sizeof(protobuf_c_boolean));
    if (!r->replicated_at_leaf_buffers) return HL_OOM();
    r->n_replicated_at_leaf_buffers = (size_t)a->parameter_replication_count;
    for (int i = 0; i < a->parameter_replication_count; i++)
      r->replicated_at_leaf_buffers[i] = a->parameter_replication[i];
    p->parameter_replication = r;
  }
  if (a->comparison_direction != HL_CMP_NONE)
    p->comparison_direction = w_str(w, hl_comparison_direction_name(a->comparison_direction));
  p->custom_call_has_side_effect = a->custom_call_has_side_effect;
  p->delta = a->delta;
  p->indices_are_sorted = a->indices_are_sorted;
  p->frontend_attributes = frontend_msg(w, &a->frontend_attributes);
  p->unique_indices = a->unique_indices;
  p->rng_algorithm = (Xla__RandomAlgorithm)a->rng_algorithm;
  if (a->comparison_type != HL_CMPTYPE_DEFAULT)
    p->comparison_type = w_str(w, hl_comparison_type_name(a->comparison_type));
  p->custom_call_api_version = (Xla__CustomCallApiVersion)a->custom_call_api_version;
  p->async_execution_thread = w_str(w, a->async_execution_thread);
  p->k = a->k;
  p->largest = a->largest;
  p->is_composite = a->is_composite;
  p->is_reverse = a->is_reverse;
  p->num_carries = a->num_carries;
  p->is_associative = (Xla__TriState)a->is_associative;
  return w->oom ? HL_OOM() : NULL;
}

static hl_status_t program_shape_msg(writer_t *w, const hl_computation_t *c,
                                     Xla__ProgramShapeProto **out) {
  Xla__ProgramShapeProto *ps = w_alloc(w, sizeof(*ps));
  if (!ps) return HL_OOM();
  xla__program_shape_proto__init(ps);
  if (c->parameter_count > 0) {
    ps->parameters = w_ptrs(w, (size_t)c->parameter_count);
    ps->parameter_names = w_ptrs(w, (size_t)c->parameter_count);
    if (!ps->parameters || !ps->parameter_names) return HL_OOM();
    ps->n_parameters = ps->n_parameter_names = (size_t)c->parameter_count;
    for (int i = 0; i < c->parameter_count; i++) {
      const hl_instruction_t *param = c->parameters[i];
      if (!param) return HL_INVALID("computation '%s' lacks parameter %d", c->name, i);
      HL_RETURN_IF_ERROR(
          hl_proto_shape_to_message_with_layout(w->arena, &param->shape, &ps->parameters[i]));
      ps->parameter_names[i] = w_str(w, param->name);
    }
  }
  if (c->root)
    HL_RETURN_IF_ERROR(hl_proto_shape_to_message_with_layout(w->arena, &c->root->shape, &ps->result));
  *out = ps;
  return w->oom ? HL_OOM() : NULL;
}

static hl_status_t computation_msg(writer_t *w, const hl_computation_t *c,
                                   Xla__HloComputationProto **out) {
  Xla__HloComputationProto *cp = w_alloc(w, sizeof(*cp));
  if (!cp) return HL_OOM();
  xla__hlo_computation_proto__init(cp);
  cp->name = w_str(w, c->name);
  cp->id = c->id;
  if (!c->root) return HL_INVALID("computation '%s' has no root", c->name);
  cp->root_id = c->root->id;
  cp->is_fusion_computation = c->is_fusion_computation;
  cp->execution_thread = w_str(w, c->execution_thread);
  if (c->instruction_count > 0) {
    cp->instructions = w_ptrs(w, (size_t)c->instruction_count);
    if (!cp->instructions) return HL_OOM();
    cp->n_instructions = (size_t)c->instruction_count;
    for (int i = 0; i < c->instruction_count; i++)
      HL_RETURN_IF_ERROR(instruction_msg(w, c->instructions[i], &cp->instructions[i]));
  }
  HL_RETURN_IF_ERROR(program_shape_msg(w, c, &cp->program_shape));
  *out = cp;
  return w->oom ? HL_OOM() : NULL;
}

// replica r of partition p runs on device r * P + p (row-major replica-major ids).
static Xla__DeviceAssignmentProto *device_assignment_msg(writer_t *w, int64_t replicas,
                                                         int64_t partitions) {
  Xla__DeviceAssignmentProto *da = w_alloc(w, sizeof(*da));
  if (!da) return NULL;
  xla__device_assignment_proto__init(da);
  da->replica_count = (int32_t)replicas;
  da->computation_count = (int32_t)partitions;
  da->computation_devices = w_ptrs(w, (size_t)partitions);
  if (!da->computation_devices) return da;
  da->n_computation_devices = (size_t)partitions;
  for (int64_t p = 0; p < partitions; p++) {
    Xla__DeviceAssignmentProto__ComputationDevice *cd = w_alloc(w, sizeof(*cd));
    if (!cd) return da;
    xla__device_assignment_proto__computation_device__init(cd);
    cd->replica_device_ids = w_alloc(w, (size_t)replicas * sizeof(int64_t));
    if (!cd->replica_device_ids) return da;
    cd->n_replica_device_ids = (size_t)replicas;
    for (int64_t r = 0; r < replicas; r++) cd->replica_device_ids[r] = r * partitions + p;
    da->computation_devices[p] = cd;
  }
  return da;
}

static hl_status_t module_msg(writer_t *w, const hl_module_t *m, Xla__HloModuleProto **out) {
  Xla__HloModuleProto *mp = w_alloc(w, sizeof(*mp));
  if (!mp) return HL_OOM();
  xla__hlo_module_proto__init(mp);
  if (!m->entry) return HL_INVALID("module '%s' has no entry computation", m->name);
  mp->name = w_str(w, m->name);
  mp->entry_computation_name = w_str(w, m->entry->name);
  mp->entry_computation_id = m->entry->id;
  mp->id = m->id;
  if (m->computation_count > 0) {
    mp->computations = w_ptrs(w, (size_t)m->computation_count);
    if (!mp->computations) return HL_OOM();
    mp->n_computations = (size_t)m->computation_count;
    for (int i = 0; i < m->computation_count; i++)
      HL_RETURN_IF_ERROR(computation_msg(w, m->computations[i], &mp->computations[i]));
  }
  HL_RETURN_IF_ERROR(program_shape_msg(w, m->entry, &mp->host_program_shape));
  if (m->is_scheduled) {
    Xla__HloScheduleProto *s = w_alloc(w, sizeof(*s));
    if (!s) return HL_OOM();
    xla__hlo_schedule_proto__init(s);
    s->sequences = w_ptrs(w, (size_t)m->computation_count);
    for (int i = 0; i < m->computation_count && s->sequences; i++) {
      const hl_computation_t *c = m->computations[i];
      if (c->is_fusion_computation) continue;  // XLA schedules no fusion bodies
      Xla__HloScheduleProto__SequencesEntry *e = w_alloc(w, sizeof(*e));
      Xla__HloScheduleProto__InstructionSequence *seq = w_alloc(w, sizeof(*seq));
      if (!e || !seq) return HL_OOM();
      xla__hlo_schedule_proto__sequences_entry__init(e);
      xla__hlo_schedule_proto__instruction_sequence__init(seq);
      seq->instruction_ids = w_alloc(w, (size_t)(c->instruction_count + 1) * sizeof(int64_t));
      if (!seq->instruction_ids) return HL_OOM();
      seq->n_instruction_ids = (size_t)c->instruction_count;
      for (int k = 0; k < c->instruction_count; k++)
        seq->instruction_ids[k] = c->instructions[k]->id;
      e->key = c->id;
      e->value = seq;
      s->sequences[s->n_sequences++] = e;
    }
    mp->schedule = s;
  }
  if (m->replica_count > 1 || m->num_partitions > 1) {
    int64_t r = m->replica_count > 1 ? m->replica_count : 1;
    int64_t p = m->num_partitions > 1 ? m->num_partitions : 1;
    if (r > INT32_MAX || p > INT32_MAX || r * p > (1 << 24))
      return HL_INVALID("module '%s': %lld replicas x %lld partitions is too large to encode",
                        m->name, (long long)r, (long long)p);
    mp->device_assignment = device_assignment_msg(w, r, p);
  }
  mp->frontend_attributes = frontend_msg(w, &m->frontend_attributes);
  if (m->spmd_output_sharding) mp->spmd_output_sharding = sharding_msg(w, m->spmd_output_sharding);
  if (m->spmd_parameters_sharding_count > 0) {
    mp->spmd_parameters_shardings = w_ptrs(w, (size_t)m->spmd_parameters_sharding_count);
    if (mp->spmd_parameters_shardings) {
      mp->n_spmd_parameters_shardings = (size_t)m->spmd_parameters_sharding_count;
      for (int i = 0; i < m->spmd_parameters_sharding_count; i++)
        mp->spmd_parameters_shardings[i] = sharding_msg(w, &m->spmd_parameters_shardings[i]);
    }
  }
  *out = mp;
  return w->oom ? HL_OOM() : NULL;
}

hl_status_t hl_proto_encode_hlo_proto(const hl_module_t *module, uint8_t **out_data,
                                      size_t *out_size) {
  *out_data = NULL;
  *out_size = 0;
  writer_t w = {0};
  HL_RETURN_IF_ERROR(hl_proto_arena_create(&w.arena));
  Xla__HloProto hp;
  xla__hlo_proto__init(&hp);
  hl_status_t st = module_msg(&w, module, &hp.hlo_module);
  if (!st && w.oom) st = HL_OOM();
  if (!st) st = hl_proto_pack(&hp.base, out_data, out_size);
  hl_proto_arena_destroy(w.arena);
  return st ? hl_status_annotate(st, "encoding HloProto") : NULL;
}
