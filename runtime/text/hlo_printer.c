// Module IR -> HLO text, following XLA's HloInstruction::ToString (short
// parsable names, no '%', no computation signatures) but never eliding
// constants, so a printed module reloads into the same IR.
//
// Attribute order mirrors XLA: the op's own attributes
// (ExtraAttributesToStringImpl), then called computations, sharding,
// frontend_attributes, control-predecessors, metadata, backend_config.
#include "runtime/text/hlo_printer.h"

#include "runtime/base/alloc.h"

#include <stdlib.h>
#include <string.h>

typedef hl_strbuf_t sb_t;

//===----------------------------------------------------------------------===//
// Small formatters
//===----------------------------------------------------------------------===//

// absl::CEscape: what XLA writes inside "..." attribute strings.
static void append_escaped(sb_t *out, const char *s) {
  hl_strbuf_append_char(out, '"');
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    switch (*p) {
      case '\n': hl_strbuf_append(out, "\\n"); break;
      case '\r': hl_strbuf_append(out, "\\r"); break;
      case '\t': hl_strbuf_append(out, "\\t"); break;
      case '"': hl_strbuf_append(out, "\\\""); break;
      case '\'': hl_strbuf_append(out, "\\'"); break;
      case '\\': hl_strbuf_append(out, "\\\\"); break;
      default:
        if (*p < 0x20 || *p >= 0x7f)
          hl_strbuf_appendf(out, "\\%03o", *p);
        else
          hl_strbuf_append_char(out, (char)*p);
    }
  }
  hl_strbuf_append_char(out, '"');
}

static void append_i64s(sb_t *out, const int64_t *v, int n, const char *sep) {
  for (int i = 0; i < n; i++) {
    if (i) hl_strbuf_append(out, sep);
    hl_strbuf_appendf(out, "%lld", (long long)v[i]);
  }
}

// "{1,2,3}"
static void append_braced_list(sb_t *out, const hl_i64_list_t *l) {
  hl_strbuf_append_char(out, '{');
  append_i64s(out, l->v, l->n, ",");
  hl_strbuf_append_char(out, '}');
}

// ", name={1,2}"
static void attr_list(sb_t *out, const char *name, const hl_i64_list_t *l) {
  hl_strbuf_appendf(out, ", %s=", name);
  append_braced_list(out, l);
}

static void attr_true(sb_t *out, const char *name, bool value) {
  if (value) hl_strbuf_appendf(out, ", %s=true", name);
}

// XLA prints a float attribute (epsilon) with StrCat: six significant
// digits; we widen to nine when six would not read back the same float.
static void append_float(sb_t *out, float v) {
  char buf[48];
  snprintf(buf, sizeof(buf), "%.6g", (double)v);
  if (strtof(buf, NULL) != v) snprintf(buf, sizeof(buf), "%.9g", (double)v);
  hl_strbuf_append(out, buf);
}

static const char *name_of(const char *const *names, int count, int value) {
  return (value >= 0 && value < count && names[value]) ? names[value] : NULL;
}

#define COUNT_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const char *const kPrecisionNames[] = {"default", "high", "highest", "packed_nibble"};
static const char *const kAlgorithmNames[] = {
    "unset", "dot_any_f8_any_f8_f32", "dot_any_f8_any_f8_f32_fast_accum",
    "dot_f16_f16_f16", "dot_f16_f16_f32", "dot_bf16_bf16_bf16", "dot_bf16_bf16_f32",
    "dot_bf16_bf16_f32_x3", "dot_bf16_bf16_f32_x6", "dot_tf32_tf32_f32",
    "dot_tf32_tf32_f32_x3", "dot_f32_f32_f32", "dot_f64_f64_f64", "dot_bf16_bf16_f32_x9"};
static const char *const kDistributionNames[] = {"rng_invalid", "rng_uniform", "rng_normal"};
static const char *const kRngAlgorithmNames[] = {"rng_default", "rng_three_fry", "rng_philox"};
static const char *const kFftNames[] = {"FFT", "IFFT", "RFFT", "IRFFT"};
static const char *const kTransposeNames[] = {"TRANSPOSE_INVALID", "NO_TRANSPOSE", "TRANSPOSE",
                                              "ADJOINT"};
static const char *const kApiVersionNames[] = {
    "API_VERSION_UNSPECIFIED", "API_VERSION_ORIGINAL", "API_VERSION_STATUS_RETURNING",
    "API_VERSION_STATUS_RETURNING_UNIFIED", "API_VERSION_TYPED_FFI"};
static const char *const kShardingTypeNames[] = {"replicated", "maximal", "tuple", "other",
                                                 "manual", "unknown", "unreduced"};

//===----------------------------------------------------------------------===//
// Structured attributes
//===----------------------------------------------------------------------===//

// XLA's PrecisionConfigToString and AlgorithmToString.
static void attr_precision(sb_t *out, const hl_attrs_t *a) {
  bool any = false;
  for (int i = 0; i < a->operand_precision.n; i++) any |= a->operand_precision.v[i] != 0;
  if (any) {
    hl_strbuf_append(out, ", operand_precision={");
    for (int i = 0; i < a->operand_precision.n; i++) {
      if (i) hl_strbuf_append_char(out, ',');
      const char *n = name_of(kPrecisionNames, COUNT_OF(kPrecisionNames),
                              (int)a->operand_precision.v[i]);
      if (n)
        hl_strbuf_append(out, n);
      else
        hl_strbuf_appendf(out, "%lld", (long long)a->operand_precision.v[i]);
    }
    hl_strbuf_append_char(out, '}');
  }
  const char *alg = name_of(kAlgorithmNames, COUNT_OF(kAlgorithmNames), a->precision_algorithm);
  if (a->precision_algorithm != 0 && alg) hl_strbuf_appendf(out, ", algorithm=%s", alg);
}

// XLA's WindowToString: each field only when some dimension differs from the default.
static void append_window(sb_t *out, const hl_window_t *w) {
  bool stride = false, pad = false, lhs = false, rhs = false, rev = false;
  for (int i = 0; i < w->n; i++) {
    const hl_window_dim_t *d = &w->dims[i];
    stride |= d->stride != 1;
    pad |= d->padding_low != 0 || d->padding_high != 0;
    lhs |= d->base_dilation != 1;
    rhs |= d->window_dilation != 1;
    rev |= d->window_reversal;
  }
#define WINDOW_FIELD(heading, fmt_expr)                    \
  do {                                                     \
    hl_strbuf_append(out, heading "=");                    \
    for (int i = 0; i < w->n; i++) {                       \
      const hl_window_dim_t *d = &w->dims[i];              \
      if (i) hl_strbuf_append_char(out, 'x');              \
      fmt_expr;                                            \
    }                                                      \
  } while (0)
  if (w->n > 0) WINDOW_FIELD("size", hl_strbuf_appendf(out, "%lld", (long long)d->size));
  if (stride) {
    hl_strbuf_append_char(out, ' ');
    WINDOW_FIELD("stride", hl_strbuf_appendf(out, "%lld", (long long)d->stride));
  }
  if (pad) {
    hl_strbuf_append_char(out, ' ');
    WINDOW_FIELD("pad", hl_strbuf_appendf(out, "%lld_%lld", (long long)d->padding_low,
                                          (long long)d->padding_high));
  }
  if (lhs) {
    hl_strbuf_append_char(out, ' ');
    WINDOW_FIELD("lhs_dilate", hl_strbuf_appendf(out, "%lld", (long long)d->base_dilation));
  }
  if (rhs) {
    hl_strbuf_append_char(out, ' ');
    WINDOW_FIELD("rhs_dilate", hl_strbuf_appendf(out, "%lld", (long long)d->window_dilation));
  }
  if (rev) {
    hl_strbuf_append_char(out, ' ');
    WINDOW_FIELD("rhs_reversal", hl_strbuf_append_char(out, d->window_reversal ? '1' : '0'));
  }
#undef WINDOW_FIELD
}

static void attr_window(sb_t *out, const hl_attrs_t *a) {
  if (!a->has_window || a->window.n == 0) return;
  hl_strbuf_append(out, ", window={");
  append_window(out, &a->window);
  hl_strbuf_append_char(out, '}');
}

// One operand's labels: position = dimension number; '?' where nothing maps.
static void append_labels(sb_t *out, int64_t rank, int64_t d0, char c0, int64_t d1, char c1,
                          const hl_i64_list_t *spatial) {
  char buf[HL_MAX_RANK + 3];
  if (rank > HL_MAX_RANK + 2) rank = HL_MAX_RANK + 2;
  memset(buf, '?', sizeof(buf));
  if (d0 >= 0 && d0 < rank) buf[d0] = c0;
  if (d1 >= 0 && d1 < rank) buf[d1] = c1;
  for (int i = 0; i < spatial->n && i < 10; i++)
    if (spatial->v[i] >= 0 && spatial->v[i] < rank) buf[spatial->v[i]] = (char)('0' + i);
  hl_strbuf_append_n(out, buf, (size_t)rank);
}

// XLA's ConvolutionDimensionNumbersToString: "b01f_01io->b01f".
static void attr_dim_labels(sb_t *out, const hl_attrs_t *a) {
  if (!a->has_convolution_dimension_numbers) return;
  const hl_conv_dims_t *c = &a->convolution_dimension_numbers;
  hl_strbuf_append(out, ", dim_labels=");
  append_labels(out, 2 + c->input_spatial_dimensions.n, c->input_batch_dimension, 'b',
                c->input_feature_dimension, 'f', &c->input_spatial_dimensions);
  hl_strbuf_append_char(out, '_');
  append_labels(out, 2 + c->kernel_spatial_dimensions.n, c->kernel_input_feature_dimension, 'i',
                c->kernel_output_feature_dimension, 'o', &c->kernel_spatial_dimensions);
  hl_strbuf_append(out, "->");
  append_labels(out, 2 + c->output_spatial_dimensions.n, c->output_batch_dimension, 'b',
                c->output_feature_dimension, 'f', &c->output_spatial_dimensions);
}

static void attr_group_counts(sb_t *out, const hl_attrs_t *a) {
  if (a->feature_group_count != 1 && a->feature_group_count != 0)
    hl_strbuf_appendf(out, ", feature_group_count=%lld", (long long)a->feature_group_count);
  if (a->batch_group_count != 1 && a->batch_group_count != 0)
    hl_strbuf_appendf(out, ", batch_group_count=%lld", (long long)a->batch_group_count);
}

static void attr_dot_dims(sb_t *out, const hl_attrs_t *a) {
  if (!a->has_dot_dimension_numbers) return;
  const hl_dot_dims_t *d = &a->dot_dimension_numbers;
  if (d->lhs_batch_dimensions.n) attr_list(out, "lhs_batch_dims", &d->lhs_batch_dimensions);
  attr_list(out, "lhs_contracting_dims", &d->lhs_contracting_dimensions);
  if (d->rhs_batch_dimensions.n) attr_list(out, "rhs_batch_dims", &d->rhs_batch_dimensions);
  attr_list(out, "rhs_contracting_dims", &d->rhs_contracting_dimensions);
  if (a->has_ragged_dot_dimension_numbers) {
    attr_list(out, "lhs_ragged_dims", &a->lhs_ragged_dimensions);
    attr_list(out, "rhs_group_dims", &a->rhs_group_dimensions);
  }
}

static void attr_slice(sb_t *out, const hl_attrs_t *a) {
  bool strided = false;
  for (int i = 0; i < a->slice_count; i++) strided |= a->slice_dimensions[i].stride != 1;
  hl_strbuf_append(out, ", slice={");
  for (int i = 0; i < a->slice_count; i++) {
    const hl_slice_dim_t *s = &a->slice_dimensions[i];
    if (i) hl_strbuf_append(out, ", ");
    hl_strbuf_appendf(out, "[%lld:%lld", (long long)s->start, (long long)s->limit);
    if (strided) hl_strbuf_appendf(out, ":%lld", (long long)s->stride);
    hl_strbuf_append_char(out, ']');
  }
  hl_strbuf_append_char(out, '}');
}

static void attr_padding(sb_t *out, const hl_attrs_t *a) {
  bool interior = false;
  for (int i = 0; i < a->padding_count; i++) interior |= a->padding_config[i].interior_padding != 0;
  hl_strbuf_append(out, ", padding=");
  for (int i = 0; i < a->padding_count; i++) {
    const hl_padding_dim_t *p = &a->padding_config[i];
    if (i) hl_strbuf_append_char(out, 'x');
    hl_strbuf_appendf(out, "%lld_%lld", (long long)p->edge_padding_low,
                      (long long)p->edge_padding_high);
    if (interior) hl_strbuf_appendf(out, "_%lld", (long long)p->interior_padding);
  }
}

static void append_iota_list(sb_t *out, const hl_i64_list_t *reshape, const hl_i64_list_t *perm) {
  hl_strbuf_append(out, "<=[");
  append_i64s(out, reshape->v, reshape->n, ",");
  hl_strbuf_append_char(out, ']');
  // XLA's parser needs T(...) whenever there is more than one reshape dim.
  if (reshape->n > 1) {
    hl_strbuf_append(out, "T(");
    if (perm->n)
      append_i64s(out, perm->v, perm->n, ",");
    else
      for (int i = 0; i < reshape->n; i++) hl_strbuf_appendf(out, i ? ",%d" : "%d", i);
    hl_strbuf_append_char(out, ')');
  }
}

static void attr_replica_groups(sb_t *out, const hl_replica_groups_t *g) {
  hl_strbuf_append(out, ", replica_groups=");
  if (g->kind == HL_GROUPS_IOTA) {
    hl_strbuf_appendf(out, "[%lld,%lld]", (long long)g->iota_num_groups,
                      (long long)g->iota_group_size);
    append_iota_list(out, &g->iota_reshape_dims, &g->iota_transpose_perm);
    return;
  }
  hl_strbuf_append_char(out, '{');
  for (int i = 0; g->kind == HL_GROUPS_LIST && i < g->group_count; i++) {
    if (i) hl_strbuf_append_char(out, ',');
    append_braced_list(out, &g->groups[i]);
  }
  hl_strbuf_append_char(out, '}');
}

static void attr_source_target_pairs(sb_t *out, const hl_attrs_t *a) {
  hl_strbuf_append(out, ", source_target_pairs={");
  for (int i = 0; i < a->source_target_count; i++) {
    if (i) hl_strbuf_append_char(out, ',');
    hl_strbuf_appendf(out, "{%lld,%lld}", (long long)a->source_target_pairs[i].source,
                      (long long)a->source_target_pairs[i].target);
  }
  hl_strbuf_append_char(out, '}');
}

// Combined collective-permute keeps all slice sizes flattened; each group
// has one entry per dimension of its buffer: the input (operand 0), or for
// a tuple input its elements in order, each with the same number of slices
// (XLA's proto loader groups them the same way).
static void attr_permute_slice_sizes(sb_t *out, const hl_instruction_t *inst) {
  const hl_i64_list_t *s = &inst->attrs.dynamic_slice_sizes;
  if (s->n == 0 || inst->operand_count < 1 || !inst->operands[0]) return;
  const hl_shape_t *in = &inst->operands[0]->shape;
  int nb = in->dtype == HL_TUPLE ? in->tuple_count : 1, per_slice = 0;
  for (int b = 0; b < nb; b++) per_slice += in->dtype == HL_TUPLE ? in->tuple[b].rank : in->rank;
  if (per_slice <= 0 || s->n % per_slice != 0) return;
  int slots = s->n / per_slice, at = 0;
  hl_strbuf_append(out, ", slice_sizes={");
  for (int b = 0; b < nb; b++) {
    int rank = in->dtype == HL_TUPLE ? in->tuple[b].rank : in->rank;
    for (int k = 0; k < slots; k++, at += rank) {
      if (at) hl_strbuf_append_char(out, ',');
      hl_strbuf_append_char(out, '{');
      append_i64s(out, s->v + at, rank, ",");
      hl_strbuf_append_char(out, '}');
    }
  }
  hl_strbuf_append_char(out, '}');
}

static void attr_gather(sb_t *out, const hl_attrs_t *a) {
  if (a->has_gather_dimension_numbers) {
    const hl_gather_dims_t *g = &a->gather_dimension_numbers;
    attr_list(out, "offset_dims", &g->offset_dims);
    attr_list(out, "collapsed_slice_dims", &g->collapsed_slice_dims);
    attr_list(out, "start_index_map", &g->start_index_map);
    if (g->operand_batching_dims.n) attr_list(out, "operand_batching_dims", &g->operand_batching_dims);
    if (g->start_indices_batching_dims.n)
      attr_list(out, "start_indices_batching_dims", &g->start_indices_batching_dims);
    hl_strbuf_appendf(out, ", index_vector_dim=%lld", (long long)g->index_vector_dim);
  }
  attr_list(out, "slice_sizes", &a->gather_slice_sizes);
  attr_true(out, "indices_are_sorted", a->indices_are_sorted);
}

static void attr_scatter(sb_t *out, const hl_attrs_t *a) {
  if (a->has_scatter_dimension_numbers) {
    const hl_scatter_dims_t *s = &a->scatter_dimension_numbers;
    attr_list(out, "update_window_dims", &s->update_window_dims);
    attr_list(out, "inserted_window_dims", &s->inserted_window_dims);
    attr_list(out, "scatter_dims_to_operand_dims", &s->scatter_dims_to_operand_dims);
    if (s->input_batching_dims.n) attr_list(out, "input_batching_dims", &s->input_batching_dims);
    if (s->scatter_indices_batching_dims.n)
      attr_list(out, "scatter_indices_batching_dims", &s->scatter_indices_batching_dims);
    hl_strbuf_appendf(out, ", index_vector_dim=%lld", (long long)s->index_vector_dim);
  }
  attr_true(out, "indices_are_sorted", a->indices_are_sorted);
  attr_true(out, "unique_indices", a->unique_indices);
}

// HloSharding::ToString.
static void append_sharding(sb_t *out, const hl_sharding_t *s) {
  switch (s->type) {
    case HL_SHARDING_TUPLE:
      hl_strbuf_append_char(out, '{');
      for (int i = 0; i < s->tuple_count; i++) {
        if (i) hl_strbuf_append(out, ", ");
        append_sharding(out, &s->tuple_shardings[i]);
      }
      hl_strbuf_append_char(out, '}');
      return;
    case HL_SHARDING_MAXIMAL:
      hl_strbuf_appendf(out, "{maximal device=%lld}",
                        (long long)(s->tile_assignment_devices.n ? s->tile_assignment_devices.v[0]
                                                                 : 0));
      return;
    case HL_SHARDING_OTHER:
      hl_strbuf_append(out, "{devices=[");
      append_i64s(out, s->tile_assignment_dimensions.v, s->tile_assignment_dimensions.n, ",");
      hl_strbuf_append_char(out, ']');
      if (s->iota_reshape_dims.n)
        append_iota_list(out, &s->iota_reshape_dims, &s->iota_transpose_perm);
      else
        append_i64s(out, s->tile_assignment_devices.v, s->tile_assignment_devices.n, ",");
      if (s->replicate_on_last_tile_dim) hl_strbuf_append(out, " last_tile_dim_replicate");
      if (s->last_tile_dims.n) {
        hl_strbuf_append(out, " last_tile_dims={");
        for (int i = 0; i < s->last_tile_dims.n; i++) {
          const char *n = name_of(kShardingTypeNames, COUNT_OF(kShardingTypeNames),
                                  (int)s->last_tile_dims.v[i]);
          hl_strbuf_appendf(out, "%s%s", i ? ", " : "", n ? n : "unknown");
        }
        hl_strbuf_append_char(out, '}');
      }
      hl_strbuf_append_char(out, '}');
      return;
    default: {
      const char *n = name_of(kShardingTypeNames, COUNT_OF(kShardingTypeNames), (int)s->type);
      hl_strbuf_appendf(out, "{%s}", n ? n : "unknown");
      return;
    }
  }
}

void hl_print_sharding(const hl_sharding_t *sharding, hl_strbuf_t *out) {
  append_sharding(out, sharding);
}

static int compare_entries(const void *a, const void *b) {
  const hl_key_value_t *x = *(const hl_key_value_t *const *)a;
  const hl_key_value_t *y = *(const hl_key_value_t *const *)b;
  return strcmp(x->key ? x->key : "", y->key ? y->key : "");
}

// XLA sorts frontend attributes by key. Values are always quoted: every
// parser reads a quoted string, whatever the value holds.
static void append_frontend_attributes(sb_t *out, const hl_frontend_attributes_t *fa) {
  const hl_key_value_t *stack_sorted[16];
  const hl_key_value_t **sorted = stack_sorted;
  if (fa->n > 16) {
    sorted = hl_malloc((size_t)fa->n * sizeof(*sorted));
    if (!sorted) {
      out->failed = true;
      return;
    }
  }
  for (int i = 0; i < fa->n; i++) sorted[i] = &fa->entries[i];
  qsort(sorted, (size_t)fa->n, sizeof(*sorted), compare_entries);
  hl_strbuf_append_char(out, '{');
  for (int i = 0; i < fa->n; i++) {
    if (i) hl_strbuf_append_char(out, ',');
    hl_strbuf_append(out, sorted[i]->key ? sorted[i]->key : "");
    hl_strbuf_append_char(out, '=');
    append_escaped(out, sorted[i]->value);
  }
  hl_strbuf_append_char(out, '}');
  if (sorted != stack_sorted) hl_free(sorted);
}

// XLA's OpMetadataToString.
static void attr_metadata(sb_t *out, const hl_metadata_t *m) {
  bool any = (m->op_type && *m->op_type) || (m->op_name && *m->op_name) ||
             (m->source_file && *m->source_file) || m->source_line != 0;
  if (!any) return;
  const char *sep = "";
  hl_strbuf_append(out, ", metadata={");
  if (m->op_type && *m->op_type) {
    hl_strbuf_append(out, "op_type=");
    append_escaped(out, m->op_type);
    sep = " ";
  }
  if (m->op_name && *m->op_name) {
    hl_strbuf_appendf(out, "%sop_name=", sep);
    append_escaped(out, m->op_name);
    sep = " ";
  }
  if (m->source_file && *m->source_file) {
    hl_strbuf_appendf(out, "%ssource_file=", sep);
    append_escaped(out, m->source_file);
    sep = " ";
  }
  if (m->source_line != 0) hl_strbuf_appendf(out, "%ssource_line=%d", sep, (int)m->source_line);
  hl_strbuf_append_char(out, '}');
}

//===----------------------------------------------------------------------===//
// Per-op attributes (XLA's ExtraAttributesToStringImpl)
//===----------------------------------------------------------------------===//

static bool is_collective(hl_opcode_t op) {
  switch (op) {
    case HL_OP_ALL_GATHER: case HL_OP_ALL_GATHER_START: case HL_OP_ALL_REDUCE:
    case HL_OP_ALL_REDUCE_START: case HL_OP_REDUCE_SCATTER: case HL_OP_ALL_TO_ALL:
    case HL_OP_COLLECTIVE_BROADCAST: case HL_OP_RAGGED_ALL_TO_ALL: case HL_OP_COLLECTIVE_REDUCE:
      return true;
    default:
      return false;
  }
}

static void attr_channel_id(sb_t *out, const hl_attrs_t *a) {
  if (a->channel_id > 0) hl_strbuf_appendf(out, ", channel_id=%lld", (long long)a->channel_id);
}

static void print_op_attributes(const hl_instruction_t *inst, sb_t *out) {
  const hl_attrs_t *a = &inst->attrs;
  hl_opcode_t op = inst->opcode;
  if (is_collective(op)) {
    attr_channel_id(out, a);
    attr_replica_groups(out, &a->replica_groups);
    attr_true(out, "constrain_layout", a->constrain_layout);
    if (a->dimensions.n &&
        (op == HL_OP_ALL_GATHER || op == HL_OP_ALL_GATHER_START || op == HL_OP_REDUCE_SCATTER ||
         op == HL_OP_ALL_TO_ALL))
      attr_list(out, "dimensions", &a->dimensions);
    attr_true(out, "use_global_device_ids", a->use_global_device_ids);
    attr_true(out, "has_dynamic_root", a->has_dynamic_root);
    return;
  }
  switch (op) {
    case HL_OP_BROADCAST: case HL_OP_TRANSPOSE: case HL_OP_REVERSE: case HL_OP_REDUCE:
    case HL_OP_MAP: case HL_OP_CONCATENATE: case HL_OP_GET_DIMENSION_SIZE:
    case HL_OP_SET_DIMENSION_SIZE:
      attr_list(out, "dimensions", &a->dimensions);
      break;
    case HL_OP_SCAN:
      attr_list(out, "dimensions", &a->dimensions);
      hl_strbuf_appendf(out, ", num_carries=%lld", (long long)a->num_carries);
      attr_true(out, "is_reverse", a->is_reverse);
      if (a->is_associative == 1 || a->is_associative == 2)
        hl_strbuf_appendf(out, ", is_associative=%s", a->is_associative == 1 ? "true" : "false");
      break;
    case HL_OP_SORT:
      attr_list(out, "dimensions", &a->dimensions);
      attr_true(out, "is_stable", a->is_stable);
      break;
    case HL_OP_GET_TUPLE_ELEMENT:
      hl_strbuf_appendf(out, ", index=%lld", (long long)a->tuple_index);
      break;
    case HL_OP_IOTA:
      if (a->dimensions.n)
        hl_strbuf_appendf(out, ", iota_dimension=%lld", (long long)a->dimensions.v[0]);
      break;
    case HL_OP_RESHAPE:
      if (a->dimensions.n && a->dimensions.v[0] >= 0)
        hl_strbuf_appendf(out, ", inferred_dimension=%lld", (long long)a->dimensions.v[0]);
      break;
    case HL_OP_SLICE:
      attr_slice(out, a);
      break;
    case HL_OP_PAD:
      attr_padding(out, a);
      break;
    case HL_OP_COMPARE: {
      hl_strbuf_appendf(out, ", direction=%s", hl_comparison_direction_name(a->comparison_direction));
      hl_dtype_t operand_type = inst->operand_count > 0 && inst->operands[0]
                                    ? inst->operands[0]->shape.dtype : HL_INVALID;
      if (a->comparison_type != HL_CMPTYPE_DEFAULT &&
          a->comparison_type != hl_comparison_type_default(operand_type))
        hl_strbuf_appendf(out, ", type=%s", hl_comparison_type_name(a->comparison_type));
      break;
    }
    case HL_OP_DOT:
    case HL_OP_RAGGED_DOT:
    case HL_OP_SCALED_DOT:
      attr_dot_dims(out, a);
      attr_precision(out, a);
      break;
    case HL_OP_CONVOLUTION:
      attr_window(out, a);
      attr_dim_labels(out, a);
      attr_group_counts(out, a);
      attr_precision(out, a);
      break;
    case HL_OP_REDUCE_WINDOW: case HL_OP_SELECT_AND_SCATTER:
      attr_window(out, a);
      break;
    case HL_OP_GATHER:
      attr_gather(out, a);
      break;
    case HL_OP_SCATTER:
      attr_scatter(out, a);
      break;
    case HL_OP_DYNAMIC_SLICE:
      attr_list(out, "dynamic_slice_sizes", &a->dynamic_slice_sizes);
      break;
    case HL_OP_SHUFFLE:
      attr_list(out, "dimensions", &a->dimensions);
      if (a->shuffle_mode == HL_SHUFFLE_ROTATE) {
        hl_strbuf_append(out, ", mode=rotate");
        attr_list(out, "shifts", &a->shuffle_shifts);
      } else if (a->shuffle_mode == HL_SHUFFLE_PERMUTE) {
        hl_strbuf_append(out, ", mode=permute");
        if (a->shuffle_indices) {
          hl_strbuf_append(out, ", indices=");
          // The value's '{' would read back as a layout, so the shape always
          // carries one.
          const hl_shape_t *is = &a->shuffle_indices->shape;
          hl_shape_print(is, true, out);
          if (!is->has_layout && is->rank > 0) {
            hl_strbuf_append_char(out, '{');
            for (int d = is->rank - 1; d >= 0; d--)
              hl_strbuf_appendf(out, d == is->rank - 1 ? "%d" : ",%d", d);
            hl_strbuf_append_char(out, '}');
          }
          hl_strbuf_append_char(out, ' ');
          hl_literal_print_value(a->shuffle_indices, out);
        }
      }
      break;
    case HL_OP_COLLECTIVE_PERMUTE: case HL_OP_COLLECTIVE_PERMUTE_START:
      attr_channel_id(out, a);
      attr_source_target_pairs(out, a);
      attr_permute_slice_sizes(out, inst);
      break;
    case HL_OP_SEND: case HL_OP_RECV: case HL_OP_SEND_DONE: case HL_OP_RECV_DONE:
      attr_channel_id(out, a);
      attr_true(out, "is_host_transfer", a->is_host_transfer);
      break;
    case HL_OP_CUSTOM_CALL: {
      attr_window(out, a);
      attr_dim_labels(out, a);
      attr_group_counts(out, a);
      attr_precision(out, a);
      hl_strbuf_append(out, ", custom_call_target=");
      append_escaped(out, a->custom_call_target);
      attr_true(out, "custom_call_has_side_effect", a->custom_call_has_side_effect);
      const char *v = name_of(kApiVersionNames, COUNT_OF(kApiVersionNames),
                              a->custom_call_api_version);
      if (v && a->custom_call_api_version > 1) hl_strbuf_appendf(out, ", api_version=%s", v);
      if (a->operand_shapes_with_layout_count > 0) {
        hl_strbuf_append(out, ", operand_layout_constraints={");
        for (int i = 0; i < a->operand_shapes_with_layout_count; i++) {
          if (i) hl_strbuf_append(out, ", ");
          hl_shape_print(&a->operand_shapes_with_layout[i], true, out);
        }
        hl_strbuf_append(out, "}");
      }
      if (a->output_operand_alias_count > 0) {
        hl_strbuf_append(out, ", output_to_operand_aliasing={");
        for (int i = 0; i < a->output_operand_alias_count; i++) {
          const hl_output_operand_alias_t *al = &a->output_operand_aliases[i];
          if (inst->shape.dtype == HL_TUPLE)
            hl_strbuf_appendf(out, "%s{%d}: (%d, {})", i ? ", " : "", al->output, al->operand);
          else
            hl_strbuf_appendf(out, "%s{}: (%d, {})", i ? ", " : "", al->operand);
        }
        hl_strbuf_append(out, "}");
      }
      break;
    }
    case HL_OP_FUSION:
      hl_strbuf_appendf(out, ", kind=%s", a->fusion_kind ? a->fusion_kind : "kLoop");
      break;
    case HL_OP_RNG: {
      const char *n = name_of(kDistributionNames, COUNT_OF(kDistributionNames), a->distribution);
      if (n) hl_strbuf_appendf(out, ", distribution=%s", n);
      break;
    }
    case HL_OP_RNG_BIT_GENERATOR: {
      const char *n = name_of(kRngAlgorithmNames, COUNT_OF(kRngAlgorithmNames), a->rng_algorithm);
      if (n) hl_strbuf_appendf(out, ", algorithm=%s", n);
      break;
    }
    case HL_OP_RNG_GET_AND_UPDATE_STATE:
      hl_strbuf_appendf(out, ", delta=%lld", (long long)a->delta);
      break;
    case HL_OP_REDUCE_PRECISION:
      hl_strbuf_appendf(out, ", exponent_bits=%d, mantissa_bits=%d", (int)a->exponent_bits,
                        (int)a->mantissa_bits);
      break;
    case HL_OP_BATCH_NORM_GRAD: case HL_OP_BATCH_NORM_INFERENCE: case HL_OP_BATCH_NORM_TRAINING:
      hl_strbuf_append(out, ", epsilon=");
      append_float(out, a->epsilon);
      hl_strbuf_appendf(out, ", feature_index=%lld", (long long)a->feature_index);
      break;
    case HL_OP_FFT: {
      const char *n = name_of(kFftNames, COUNT_OF(kFftNames), a->fft_type);
      if (n) hl_strbuf_appendf(out, ", fft_type=%s", n);
      attr_list(out, "fft_length", &a->fft_length);
      break;
    }
    case HL_OP_TRIANGULAR_SOLVE: {
      attr_true(out, "left_side", a->triangular_left_side);
      attr_true(out, "lower", a->triangular_lower);
      attr_true(out, "unit_diagonal", a->triangular_unit_diagonal);
      const char *n = name_of(kTransposeNames, COUNT_OF(kTransposeNames),
                              (int)a->triangular_transpose_a);
      if (n && a->triangular_transpose_a != HL_NO_TRANSPOSE &&
          a->triangular_transpose_a != HL_TRANSPOSE_INVALID)
        hl_strbuf_appendf(out, ", transpose_a=%s", n);
      break;
    }
    case HL_OP_CHOLESKY:
      attr_true(out, "lower", a->cholesky_lower);
      break;
    case HL_OP_TOPK:
      hl_strbuf_appendf(out, ", k=%lld, largest=%s", (long long)a->k, a->largest ? "true" : "false");
      break;
    case HL_OP_PARAMETER:
      if (a->parameter_replication_count > 0) {
        hl_strbuf_append(out, ", parameter_replication={");
        for (int i = 0; i < a->parameter_replication_count; i++)
          hl_strbuf_appendf(out, "%s%s", i ? "," : "",
                            a->parameter_replication[i] ? "true" : "false");
        hl_strbuf_append_char(out, '}');
      }
      break;
    case HL_OP_INFEED:
      if (a->infeed_config && *a->infeed_config) {
        hl_strbuf_append(out, ", infeed_config=");
        append_escaped(out, a->infeed_config);
      }
      break;
    case HL_OP_OUTFEED:
      if (a->outfeed_shape) {
        hl_strbuf_append(out, ", outfeed_shape=");
        hl_shape_print(a->outfeed_shape, true, out);
      }
      if (a->outfeed_config && *a->outfeed_config) {
        hl_strbuf_append(out, ", outfeed_config=");
        append_escaped(out, a->outfeed_config);
      }
      break;
    case HL_OP_CALL:
      attr_true(out, "is_composite", a->is_composite);
      break;
    case HL_OP_ASYNC_START: case HL_OP_ASYNC_UPDATE: case HL_OP_ASYNC_DONE:
      if (a->async_execution_thread && *a->async_execution_thread &&
          strcmp(a->async_execution_thread, "main") != 0) {
        hl_strbuf_append(out, ", async_execution_thread=");
        append_escaped(out, a->async_execution_thread);
      }
      break;
    default:
      break;
  }
}

//===----------------------------------------------------------------------===//
// Called computations and generic attributes
//===----------------------------------------------------------------------===//

static const char *comp_name(const hl_computation_t *c) { return c && c->name ? c->name : "?"; }

static void attr_called_list(sb_t *out, const char *name, const hl_instruction_t *inst,
                             bool braced) {
  hl_strbuf_appendf(out, ", %s=%s", name, braced ? "{" : "");
  for (int i = 0; i < inst->called_count; i++)
    hl_strbuf_appendf(out, "%s%s", i ? ", " : "", comp_name(inst->called_computations[i]));
  if (braced) hl_strbuf_append_char(out, '}');
}

static void print_called(const hl_instruction_t *inst, sb_t *out) {
  if (inst->called_count == 0) return;
  hl_computation_t *const *c = inst->called_computations;
  switch (inst->opcode) {
    case HL_OP_WHILE:
      // The IR keeps proto order [body, condition]; text names condition first.
      if (inst->called_count == 2) {
        hl_strbuf_appendf(out, ", condition=%s, body=%s", comp_name(c[1]), comp_name(c[0]));
        return;
      }
      break;
    case HL_OP_SELECT_AND_SCATTER:
      if (inst->called_count == 2) {
        hl_strbuf_appendf(out, ", select=%s, scatter=%s", comp_name(c[0]), comp_name(c[1]));
        return;
      }
      break;
    case HL_OP_CONDITIONAL: {
      bool pred = inst->operand_count > 0 && inst->operands[0] &&
                  inst->operands[0]->shape.dtype == HL_PRED;
      if (pred && inst->called_count == 2) {
        hl_strbuf_appendf(out, ", true_computation=%s, false_computation=%s", comp_name(c[0]),
                          comp_name(c[1]));
      } else {
        attr_called_list(out, "branch_computations", inst, true);
      }
      return;
    }
    case HL_OP_CALL: case HL_OP_MAP: case HL_OP_REDUCE_WINDOW: case HL_OP_REDUCE:
    case HL_OP_ALL_REDUCE: case HL_OP_REDUCE_SCATTER: case HL_OP_ALL_REDUCE_START:
    case HL_OP_SCATTER: case HL_OP_SORT: case HL_OP_SCAN:
      if (inst->called_count == 1) {
        hl_strbuf_appendf(out, ", to_apply=%s", comp_name(c[0]));
        return;
      }
      break;
    case HL_OP_CUSTOM_CALL:
      attr_called_list(out, "called_computations", inst, true);
      return;
    default:
      break;
  }
  attr_called_list(out, "calls", inst, false);
}

static void print_generic_attributes(const hl_instruction_t *inst, sb_t *out) {
  const hl_attrs_t *a = &inst->attrs;
  if (a->sharding) {
    hl_strbuf_append(out, ", sharding=");
    append_sharding(out, a->sharding);
  }
  if (a->frontend_attributes.n > 0) {
    hl_strbuf_append(out, ", frontend_attributes=");
    append_frontend_attributes(out, &a->frontend_attributes);
  }
  if (inst->control_predecessor_count > 0) {
    hl_strbuf_append(out, ", control-predecessors={");
    for (int i = 0; i < inst->control_predecessor_count; i++) {
      const hl_instruction_t *p = inst->control_predecessors[i];
      hl_strbuf_appendf(out, "%s%s", i ? ", " : "", p && p->name ? p->name : "?");
    }
    hl_strbuf_append_char(out, '}');
  }
  attr_metadata(out, &a->metadata);
  if (a->backend_config && *a->backend_config) {
    hl_strbuf_append(out, ", backend_config=");
    append_escaped(out, a->backend_config);
  }
}

//===----------------------------------------------------------------------===//
// Instructions, computations, modules
//===----------------------------------------------------------------------===//

void hl_print_instruction(const hl_instruction_t *inst, hl_strbuf_t *out) {
  const hl_computation_t *parent = inst->parent;
  if (parent && parent->root == inst) hl_strbuf_append(out, "ROOT ");
  hl_strbuf_appendf(out, "%s = ", inst->name ? inst->name : "?");
  hl_shape_print(&inst->shape, true, out);
  hl_strbuf_appendf(out, " %s(", hl_opcode_name(inst->opcode));
  if (inst->opcode == HL_OP_PARAMETER) {
    hl_strbuf_appendf(out, "%lld", (long long)inst->attrs.parameter_number);
  } else if (inst->opcode == HL_OP_CONSTANT) {
    hl_literal_print_value(inst->attrs.literal, out);
  } else {
    for (int i = 0; i < inst->operand_count; i++) {
      if (i) {
        hl_strbuf_append(out, ", ");
        if (i % 5 == 0) hl_strbuf_appendf(out, "/*index=%d*/", i);
      }
      const hl_instruction_t *op = inst->operands[i];
      hl_strbuf_append(out, op && op->name ? op->name : "null");
    }
  }
  hl_strbuf_append_char(out, ')');
  print_op_attributes(inst, out);
  print_called(inst, out);
  print_generic_attributes(inst, out);
}

static void print_computation(const hl_computation_t *c, bool is_entry, sb_t *out) {
  hl_strbuf_appendf(out, "%s%s {\n", is_entry ? "ENTRY " : "", comp_name(c));
  for (int i = 0; i < c->instruction_count; i++) {
    hl_strbuf_append(out, "  ");
    hl_print_instruction(c->instructions[i], out);
    hl_strbuf_append_char(out, '\n');
  }
  hl_strbuf_append_char(out, '}');
  if (c->execution_thread && *c->execution_thread && strcmp(c->execution_thread, "main") != 0) {
    hl_strbuf_append(out, ", execution_thread=");
    append_escaped(out, c->execution_thread);
  }
  hl_strbuf_append_char(out, '\n');
}

hl_status_t hl_print_hlo_module(const hl_module_t *module, hl_strbuf_t *out) {
  if (!module) return HL_INVALID("printing HLO: no module");
  for (int i = 0; i < module->computation_count; i++) {
    const hl_computation_t *c = module->computations[i];
    if (!c) return HL_INVALID("printing HLO: computation %d is missing", i);
    for (int j = 0; j < c->instruction_count; j++)
      if (!c->instructions[j])
        return HL_INVALID("printing HLO: computation '%s' instruction %d is missing",
                          comp_name(c), j);
  }
  hl_strbuf_appendf(out, "HloModule %s", module->name ? module->name : "module");
  if (module->is_scheduled) hl_strbuf_append(out, ", is_scheduled=true");
  if (module->replica_count > 1)
    hl_strbuf_appendf(out, ", replica_count=%lld", (long long)module->replica_count);
  if (module->num_partitions > 1)
    hl_strbuf_appendf(out, ", num_partitions=%lld", (long long)module->num_partitions);
  if (module->frontend_attributes.n > 0) {
    hl_strbuf_append(out, ", frontend_attributes=");
    append_frontend_attributes(out, &module->frontend_attributes);
  }
  hl_strbuf_append_char(out, '\n');
  for (int i = 0; i < module->computation_count; i++) {
    const hl_computation_t *c = module->computations[i];
    hl_strbuf_append_char(out, '\n');
    print_computation(c, c == module->entry, out);
  }
  if (out->failed) return HL_OOM();
  return NULL;
}
