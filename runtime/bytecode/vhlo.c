// VHLO bytecode -> the StableHLO syntax tree (vhlo.h). Attribute and type
// codes are those of stablehlo/dialect/VhloBytecode.cpp (stable: VHLO never
// renumbers them); op attribute names and their order come from VhloOps.td
// (vhlo_ops.inc). The conversion gives each VHLO attribute the form the
// text parser gives its StableHLO spelling, so the lowering cannot tell
// them apart. This file converts ops, blocks and the module; the types and
// attributes they carry are decoded by vhlo_attrs.c (vhlo_internal.h).
#include "runtime/bytecode/vhlo.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/base/strbuf.h"
#include "runtime/bytecode/sdy_attrs.h"
#include "runtime/bytecode/vhlo_internal.h"
#include "runtime/stablehlo/mlir_generic.h"
#include "runtime/stablehlo/mlir_parser.h"
#include "runtime/stablehlo/stablehlo.h"

typedef struct vhlo_op_info {
  const char *vhlo;       // "compare_v1"
  const char *stablehlo;  // "stablehlo.compare"
  int major, minor, patch;
  const char *attrs[24];  // NULL-terminated, declaration order
} vhlo_op_info_t;

#define VHLO_OP(v, s, a, b, c, ...) {v, s, a, b, c, __VA_ARGS__},
static const vhlo_op_info_t kOps[] = {
#include "runtime/bytecode/vhlo_ops.inc"
};
#undef VHLO_OP

static hl_status_t version_note(const vctx_t *v, hl_status_t st) {
  // Names both versions when the artifact is newer than this reader.
  if (!st || v->major < HL_VHLO_MAX_MAJOR ||
      (v->major == HL_VHLO_MAX_MAJOR && v->minor <= HL_VHLO_MAX_MINOR))
    return st;
  hl_status_t w = HL_INVALID("%s (the artifact was written by StableHLO %d.%d.%d, newer than "
                             "%d.%d, the newest this reader knows)", hl_status_message(st),
                             v->major, v->minor, v->patch, HL_VHLO_MAX_MAJOR, HL_VHLO_MAX_MINOR);
  hl_status_free(st);
  return w;
}

// ---- ops ----

static const vhlo_op_info_t *find_op(const char *name) {
  for (size_t i = 0; i < sizeof(kOps) / sizeof(kOps[0]); i++)
    if (strcmp(kOps[i].vhlo, name) == 0) return &kOps[i];
  return NULL;
}

static hl_status_t add_attr(hl_mlir_op_t *op, const char *name, hl_mlir_attr_t *value) {
  char **names = hl_realloc(op->attr_names, ((size_t)op->attr_count + 1) * sizeof(char *));
  if (!names) return HL_OOM();
  op->attr_names = names;
  hl_mlir_attr_t *vals = hl_realloc(op->attrs, ((size_t)op->attr_count + 1) * sizeof(*vals));
  if (!vals) return HL_OOM();
  op->attrs = vals;
  if (!(names[op->attr_count] = hl_strdup(name))) return HL_OOM();
  vals[op->attr_count++] = *value;
  memset(value, 0, sizeof(*value));
  return NULL;
}

static hl_mlir_attr_t *op_attr(hl_mlir_op_t *op, const char *name) {
  for (int i = 0; i < op->attr_count; i++)
    if (strcmp(op->attr_names[i], name) == 0) return &op->attrs[i];
  return NULL;
}

// Removes attribute `name` from op into *out (zeroed when absent).
static bool take(hl_mlir_op_t *op, const char *name, hl_mlir_attr_t *out) {
  memset(out, 0, sizeof(*out));
  for (int i = 0; i < op->attr_count; i++) {
    if (strcmp(op->attr_names[i], name) != 0) continue;
    *out = op->attrs[i];
    hl_free(op->attr_names[i]);
    memmove(&op->attr_names[i], &op->attr_names[i + 1], (size_t)(op->attr_count - i - 1) * sizeof(char *));
    memmove(&op->attrs[i], &op->attrs[i + 1], (size_t)(op->attr_count - i - 1) * sizeof(*out));
    op->attr_count--;
    return true;
  }
  return false;
}

// StableHLO keeps 1-D i64 / i1 dimension lists as `array<i64: ...>` (dense
// arrays); VHLO stores them as tensors.
static hl_status_t tensor_to_array(const vctx_t *v, hl_mlir_attr_t *a) {
  if (a->kind != HL_MATTR_DENSE || a->type.rank != 1 ||
      (a->type.dtype != HL_S64 && a->type.dtype != HL_PRED))
    return NULL;
  int64_t n = a->type.dims[0];
  bool pred = a->type.dtype == HL_PRED;
  size_t es = pred ? 1 : 8;
  if (a->blob_len != (size_t)n * es && !(a->blob_len == es && n > 0))
    return verr(v, "dimension list data does not match its type");
  hl_mlir_attr_t arr = {0};
  arr.kind = HL_MATTR_ARRAY;
  arr.has_type = true;
  arr.type = hl_shape_scalar(a->type.dtype);
  arr.items = hl_calloc((size_t)n + 1, sizeof(hl_mlir_attr_t));
  if (!arr.items) return HL_OOM();
  arr.n = (int)n;
  for (int64_t i = 0; i < n; i++) {
    const uint8_t *p = a->blob + (a->blob_len == es ? 0 : (size_t)i * es);
    hl_mlir_attr_t *it = &arr.items[i];
    if (pred) {
      it->kind = HL_MATTR_BOOL;
      it->b = *p != 0;
    } else {
      uint64_t x = 0;
      for (int k = 7; k >= 0; k--) x = x << 8 | p[k];
      it->kind = HL_MATTR_INT;
      it->u = x;
      it->i = (int64_t)x;
    }
  }
  hl_mlir_attr_deinit(a);
  *a = arr;
  return NULL;
}

// Moves the named attributes (those present) into one #dialect<key = value, ...>.
static hl_status_t group(hl_mlir_op_t *op, const char *into, const char *dialect,
                         const char *const *keys) {
  hl_mlir_attr_t g = {0};
  HL_RETURN_IF_ERROR(hl_vhlo_set_string(&g, HL_MATTR_DIALECT, dialect));
  hl_status_t st = NULL;
  bool any = false;
  for (int k = 0; keys[k] && !st; k++) {
    hl_mlir_attr_t a;
    if (!take(op, keys[k], &a)) continue;
    any = true;
    if (a.kind == HL_MATTR_ARRAY && a.n == 0) {  // MLIR prints empty lists not at all
      hl_mlir_attr_deinit(&a);
      continue;
    }
    hl_mlir_attr_t *slot;
    st = hl_vhlo_push_item(&g, keys[k], &slot);
    if (!st) *slot = a;
    else hl_mlir_attr_deinit(&a);
  }
  if (!st && any) st = add_attr(op, into, &g);
  hl_mlir_attr_deinit(&g);
  return st;
}

static void strings_to_symbols(hl_mlir_attr_t *a) {
  if (!a) return;
  if (a->kind == HL_MATTR_STRING) a->kind = HL_MATTR_SYMBOL;
  if (a->kind == HL_MATTR_ARRAY)
    for (int i = 0; i < a->n; i++) strings_to_symbols(&a->items[i]);
}

// The StableHLO spelling of a VHLO op's attributes.
static hl_status_t stablehlo_attrs(const vctx_t *v, const char *vname, hl_mlir_op_t *op) {
  for (int i = 0; i < op->attr_count; i++)
    if (strcmp(op->attr_names[i], "value") != 0 && strncmp(op->attr_names[i], "mhlo.", 5) != 0)
      HL_RETURN_IF_ERROR(tensor_to_array(v, &op->attrs[i]));
  strings_to_symbols(op_attr(op, "callee"));
  strings_to_symbols(op_attr(op, "decomposition"));
  strings_to_symbols(op_attr(op, "called_computations"));
  if (strncmp(vname, "dot_general", 11) == 0) {
    static const char *const k[] = {"lhs_batching_dimensions", "rhs_batching_dimensions",
                                    "lhs_contracting_dimensions", "rhs_contracting_dimensions", NULL};
    HL_RETURN_IF_ERROR(group(op, "dot_dimension_numbers", "stablehlo.dot", k));
    static const char *const alg[] = {"lhs_precision_type", "rhs_precision_type", "accumulation_type",
                                      "lhs_component_count", "rhs_component_count",
                                      "num_primitive_operations", "allow_imprecise_accumulation", NULL};
    const hl_mlir_attr_t *lp = op_attr(op, "lhs_precision_type");
    if (lp && lp->kind != HL_MATTR_UNIT)  // a dot algorithm, as the text writes it
      return group(op, "algorithm", "stablehlo.dot_algorithm", alg);
    for (int i = 0; alg[i]; i++) {  // none: VHLO's NoneV1Type placeholders
      hl_mlir_attr_t a;
      take(op, alg[i], &a);
      hl_mlir_attr_deinit(&a);
    }
  } else if (strncmp(vname, "custom_call_v", 13) == 0) {
    // VHLO writes these always; empty means "not given" in StableHLO (upstream's
    // VhloToStablehlo drops them), and an empty operand_layouts beside operands
    // would read as a count mismatch. Kept where empty is the right count (no
    // operands; a `tuple<>` result), as the text form writes them.
    bool no_results = op->result_type_count == 0 ||
                      (op->result_type_count == 1 && op->result_types[0].dtype == HL_TUPLE &&
                       op->result_types[0].tuple_count == 0);
    const char *optional[] = {op->operand_count ? "operand_layouts" : "",
                              no_results ? "" : "result_layouts", "output_operand_aliases", NULL};
    for (int i = 0; optional[i]; i++) {
      const hl_mlir_attr_t *a = *optional[i] ? op_attr(op, optional[i]) : NULL;
      if (a && a->kind == HL_MATTR_ARRAY && a->n == 0) {
        hl_mlir_attr_t gone;
        take(op, optional[i], &gone);
        hl_mlir_attr_deinit(&gone);
      }
    }
    // backend_config likewise: an empty string or dictionary is no config.
    const hl_mlir_attr_t *bc = op_attr(op, "backend_config");
    if (bc && ((bc->kind == HL_MATTR_STRING && bc->s_len == 0) ||
               (bc->kind == HL_MATTR_DICT && bc->n == 0))) {
      hl_mlir_attr_t gone;
      take(op, "backend_config", &gone);
      hl_mlir_attr_deinit(&gone);
    }
  } else if (strstr(vname, "gather_v")) {
    static const char *const k[] = {"offset_dims", "collapsed_slice_dims", "operand_batching_dims",
                                    "start_indices_batching_dims", "start_index_map",
                                    "index_vector_dim", NULL};
    HL_RETURN_IF_ERROR(group(op, "dimension_numbers", "stablehlo.gather", k));
  } else if (strncmp(vname, "scatter_v", 9) == 0) {
    static const char *const k[] = {"update_window_dims", "inserted_window_dims", "input_batching_dims",
                                    "scatter_indices_batching_dims", "scatter_dims_to_operand_dims",
                                    "index_vector_dim", NULL};
    HL_RETURN_IF_ERROR(group(op, "scatter_dimension_numbers", "stablehlo.scatter", k));
  } else if (strncmp(vname, "convolution_v", 13) == 0 || strncmp(vname, "dynamic_conv_v", 14) == 0) {
    static const char *const k[] = {"input_batch_dimension", "input_feature_dimension",
                                    "input_spatial_dimensions", "kernel_input_feature_dimension",
                                    "kernel_output_feature_dimension", "kernel_spatial_dimensions",
                                    "output_batch_dimension", "output_feature_dimension",
                                    "output_spatial_dimensions", NULL};
    HL_RETURN_IF_ERROR(group(op, "dimension_numbers", "stablehlo.conv", k));
  }
  hl_mlir_attr_t id, type;
  if (take(op, "channel_id", &id)) {  // channel_id (+ channel_type) -> channel_handle
    bool has_type = take(op, "channel_type", &type);
    hl_status_t st = NULL;
    if (id.kind == HL_MATTR_INT && (id.i != 0 || has_type)) {
      hl_mlir_attr_t h = {0};
      hl_mlir_attr_t *slot;
      st = hl_vhlo_set_string(&h, HL_MATTR_DIALECT, "stablehlo.channel_handle");
      if (!st) st = hl_vhlo_push_item(&h, "handle", &slot);
      if (!st) {
        slot->kind = HL_MATTR_INT;
        slot->i = id.i;
        slot->u = id.u;
        st = hl_vhlo_push_item(&h, "type", &slot);
      }
      if (!st) {
        slot->kind = HL_MATTR_INT;
        slot->i = has_type && type.kind == HL_MATTR_INT ? type.i : 0;
        slot->u = (uint64_t)slot->i;
        st = add_attr(op, "channel_handle", &h);
      }
      hl_mlir_attr_deinit(&h);
    }
    hl_mlir_attr_deinit(&id);
    if (has_type) hl_mlir_attr_deinit(&type);
    HL_RETURN_IF_ERROR(st);
  }
  return NULL;
}

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

// A registered VHLO op's properties: its attributes, one attribute index
// each, in the order of ODS's Properties struct (sorted by name).
static hl_status_t read_properties(const vctx_t *v, const hl_bc_op_t *bop,
                                   const vhlo_op_info_t *info, hl_mlir_op_t *op) {
  const char *names[24];
  int n = 0;
  while (info->attrs[n]) names[n] = info->attrs[n], n++;
  qsort(names, (size_t)n, sizeof(names[0]), cmp_names);
  hl_bc_reader_t r = {bop->properties.data, bop->properties.data + bop->properties.size};
  for (int k = 0; k < n; k++) {
    uint64_t idx;
    if (!hl_bc_read_varint(&r, &idx))
      return verr(v, "vhlo.%s: properties end before attribute '%s'", info->vhlo, names[k]);
    hl_mlir_attr_t a;
    HL_RETURN_IF_ERROR(hl_vhlo_decode_attr(v, idx, &a, 0));
    hl_status_t st = add_attr(op, names[k], &a);
    hl_mlir_attr_deinit(&a);
    HL_RETURN_IF_ERROR(st);
  }
  if (r.p != r.end) return verr(v, "vhlo.%s: properties hold more attributes than the op has", info->vhlo);
  return NULL;
}

// The attribute dictionary of an op (all attributes before bytecode version
// 5; the discardable ones after).
static hl_status_t read_attr_dict(const vctx_t *v, const hl_bc_op_t *bop, hl_mlir_op_t *op) {
  if (bop->attr_dict < 0) return NULL;
  hl_mlir_attr_t d;
  HL_RETURN_IF_ERROR(hl_vhlo_decode_attr(v, (uint64_t)bop->attr_dict, &d, 0));
  hl_status_t st = d.kind == HL_MATTR_DICT ? NULL : verr(v, "op attributes are not a dictionary");
  for (int i = 0; !st && i < d.n; i++) st = add_attr(op, d.keys[i], &d.items[i]);
  hl_mlir_attr_deinit(&d);
  return st;
}

// Quantization id `id` of entry k of a list of n types (ids allocated on the first one).
static hl_status_t note_quant(hl_mlir_quant_ids_t *q, int k, int n, int id) {
  if (!id) return NULL;
  if (!q->ids) {
    q->ids = hl_calloc((size_t)n + 1, sizeof(int));
    if (!q->ids) return HL_OOM();
    q->n = n;
  }
  if (k < q->n) q->ids[k] = id;
  return NULL;
}

// The text of location attribute `idx` (BuiltinDialectBytecode.td): the
// first file:line:col found, with the innermost name before it; "" when the
// location holds neither.
static void location_text(const vctx_t *v, uint64_t idx, hl_strbuf_t *out, int depth) {
  if (depth > 16 || idx >= v->bc->attr_count) return;
  const hl_bc_entry_t *e = &v->bc->attrs[idx];
  if (e->dialect != v->builtin || !e->custom) return;
  hl_bc_reader_t r = {e->bytes.data, e->bytes.data + e->bytes.size};
  uint64_t code, a, b, c;
  if (!hl_bc_read_varint(&r, &code)) return;
  switch (code) {
    case 10:  // CallSiteLoc { callee, caller }: the callee's
      if (hl_bc_read_varint(&r, &a)) location_text(v, a, out, depth + 1);
      return;
    case 11: {  // FileLineColLoc { filename: StringAttr, line, column }
      hl_mlir_attr_t name;
      if (!hl_bc_read_varint(&r, &a) || !hl_bc_read_varint(&r, &b) || !hl_bc_read_varint(&r, &c))
        return;
      hl_status_t st = hl_vhlo_decode_attr(v, a, &name, depth + 1);
      if (!st && name.kind == HL_MATTR_STRING)
        hl_strbuf_appendf(out, "%s:%llu:%llu", name.s, (unsigned long long)b, (unsigned long long)c);
      hl_status_free(st);
      hl_mlir_attr_deinit(&name);
      return;
    }
    case 12: case 13: {  // FusedLoc(WithMetadata) { Array<Location> }: the first that says something
      uint64_t n;
      if (!hl_bc_read_varint(&r, &n)) return;
      for (uint64_t k = 0; k < n && k < 64 && !out->length; k++)
        if (hl_bc_read_varint(&r, &a)) location_text(v, a, out, depth + 1);
      return;
    }
    case 14: {  // NameLoc { name: StringAttr, child }
      hl_mlir_attr_t name;
      if (!hl_bc_read_varint(&r, &a) || !hl_bc_read_varint(&r, &b)) return;
      hl_status_t st = hl_vhlo_decode_attr(v, a, &name, depth + 1);
      if (!st && name.kind == HL_MATTR_STRING) hl_strbuf_appendf(out, "\"%s\"", name.s);
      hl_status_free(st);
      hl_mlir_attr_deinit(&name);
      hl_strbuf_t child;
      hl_strbuf_init(&child);
      location_text(v, b, &child, depth + 1);
      if (child.length) hl_strbuf_appendf(out, " %s", hl_strbuf_cstr(&child));
      hl_strbuf_deinit(&child);
      return;
    }
    default: return;  // UnknownLoc and kinds that name no place
  }
}

static char *value_name(uint32_t group) {
  char buf[24];
  snprintf(buf, sizeof(buf), "v%u", group);
  return hl_strdup(buf);
}

static hl_status_t convert_block(const vctx_t *v, const hl_bc_block_t *b, bool func_body,
                                 hl_mlir_block_t *out);
static bool is_cast(const vctx_t *v, const hl_bc_op_t *op);

// The text between the outer brackets of a RAW attribute's text (`[a, b]`
// -> `a, b`), as the text parser keeps `key=[...]` / `key={...}`.
static hl_status_t strip_brackets(const vctx_t *v, hl_mlir_attr_t *a, char open, char close) {
  if (a->kind != HL_MATTR_RAW || a->raw_len < 2 || a->raw[0] != open ||
      a->raw[a->raw_len - 1] != close)
    return verr(v, "unexpected form of the Shardy attribute %s", a->s ? a->s : "?");
  a->raw++;
  a->raw_len -= 2;
  return NULL;
}

// Shardy's ops in a function (sdy.manual_computation, sdy.return,
// sdy.sharding_constraint, sdy.reshard) in the form the text parser gives
// them (sharding_attrs.c lowers them).
static hl_status_t convert_non_vhlo(const vctx_t *v, const hl_bc_op_t *bop,
                                    const hl_bc_op_name_t *on, const char *full,
                                    hl_mlir_op_t *op) {
  char name[96];
  if (on->dialect == v->builtin)  // the 1:1 casts were dropped (note_aliases)
    return verr(v, "'%s' with %d operands and %d results (expected one each)", full,
                bop->operand_count, bop->result_count);
  snprintf(name, sizeof(name), "sdy.%s", on->name);
  static const char *const kKnown[] = {"sdy.manual_computation", "sdy.return",
                                       "sdy.sharding_constraint", "sdy.reshard"};
  bool known = false;
  for (size_t i = 0; i < sizeof(kKnown) / sizeof(kKnown[0]); i++) known |= strcmp(name, kKnown[i]) == 0;
  if (!known)
    return verr(v, "Shardy op '%s' is not supported (read: manual_computation, return, "
                "sharding_constraint, reshard)", full);
  if (!(op->name = hl_strdup(name))) return HL_OOM();
  // Properties: one attribute index each (ODS order); Shardy's attributes
  // say what they are, the two per-value shardings come in and then out.
  hl_mlir_attr_t props[4];
  int n = 0;
  hl_status_t st = NULL;
  if (bop->has_properties && !bop->properties_are_attr) {
    hl_bc_reader_t r = {bop->properties.data, bop->properties.data + bop->properties.size};
    while (!st && r.p != r.end) {
      uint64_t idx;
      if (n == 4 || !hl_bc_read_varint(&r, &idx)) {
        st = verr(v, "'%s': malformed properties", full);
        break;
      }
      st = hl_vhlo_decode_attr(v, idx, &props[n], 0);
      if (!st) n++;
    }
  } else if (bop->has_properties) {
    st = verr(v, "'%s' was written as an unregistered op", full);
  }
  int per_value = 0;
  for (int k = 0; k < n && !st; k++) {
    hl_mlir_attr_t *a = &props[k];
    const char *kind = a->kind == HL_MATTR_RAW && a->s ? a->s : "";
    if (strcmp(name, "sdy.manual_computation") == 0 && strcmp(kind, "sdy.sharding_per_value") == 0 &&
        per_value < 2) {
      st = strip_brackets(v, a, '[', ']');
      if (!st) st = add_attr(op, per_value++ ? "out_shardings" : "in_shardings", a);
    } else if (strcmp(name, "sdy.manual_computation") == 0 && strcmp(kind, "sdy.manual_axes") == 0) {
      st = strip_brackets(v, a, '{', '}');
      if (!st) st = add_attr(op, "manual_axes", a);
    } else if (strcmp(kind, "sdy.sharding") == 0 && op->item_count == 0) {
      // sharding_constraint / reshard: the sharding as the pretty form's item
      op->items = hl_calloc(1, sizeof(hl_mlir_attr_t));
      if (!op->items) {
        st = HL_OOM();
        break;
      }
      op->items[0] = *a;
      memset(a, 0, sizeof(*a));
      op->item_count = 1;
    } else {
      st = verr(v, "'%s': unexpected property %s", full, kind[0] ? kind : "(not a Shardy attribute)");
    }
  }
  for (int k = 0; k < n; k++) hl_mlir_attr_deinit(&props[k]);
  if (!st) st = read_attr_dict(v, bop, op);
  return st;
}

static hl_status_t convert_op(const vctx_t *v, const hl_bc_op_t *bop, bool func_body,
                              hl_mlir_op_t *op) {
  const hl_bc_module_t *bc = v->bc;
  const hl_bc_op_name_t *on = &bc->op_names[bop->name];
  char full[160];
  hl_bc_op_full_name(bc, bop, full, sizeof(full));
  const vhlo_op_info_t *info = NULL;
  const char *name;
  if (on->dialect == v->sdy || (on->dialect == v->builtin &&
                                strcmp(on->name, "unrealized_conversion_cast") == 0)) {
    name = NULL;  // Shardy's ops and the casts between VHLO and builtin types around them
  } else if (on->dialect != v->vhlo) {
    return verr(v, "op '%s' is not a VHLO op", full);
  } else if (!(info = find_op(on->name))) {
    return verr(v, "unregistered operation '%s' (this reader knows the VHLO ops of StableHLO "
                "up to %d.%d)", full, HL_VHLO_MAX_MAJOR, HL_VHLO_MAX_MINOR);
  } else {
    name = info->stablehlo;
    if (strcmp(info->vhlo, "return_v1") == 0 && func_body) name = "func.return";
  }
  hl_strbuf_t loc;
  hl_strbuf_init(&loc);
  location_text(v, bop->location, &loc, 0);
  if (loc.length && !(op->location = hl_strbuf_take(&loc))) return HL_OOM();
  hl_strbuf_deinit(&loc);
  if (info) {
    if (!(op->name = hl_strdup(name))) return HL_OOM();
    op->generic = true;
    op->has_function_type = true;
    if (bop->has_properties) {
      if (bop->properties_are_attr) return verr(v, "'%s' was written as an unregistered op", full);
      HL_RETURN_IF_ERROR(read_properties(v, bop, info, op));
    }
    HL_RETURN_IF_ERROR(read_attr_dict(v, bop, op));
  } else {
    HL_RETURN_IF_ERROR(convert_non_vhlo(v, bop, on, full, op));
  }
  // Results: one group.
  if (bop->result_count) {
    op->result_names = hl_calloc(1, sizeof(char *));
    op->result_counts = hl_calloc(1, sizeof(int));
    if (!op->result_names || !op->result_counts || !(op->result_names[0] = value_name(bop->first_result)))
      return HL_OOM();
    op->result_counts[0] = bop->result_count;
    op->result_group_count = 1;
    op->result_count = bop->result_count;
    op->result_types = hl_calloc((size_t)bop->result_count, sizeof(hl_shape_t));
    if (!op->result_types) return HL_OOM();
    for (int k = 0; k < bop->result_count; k++) {
      op->result_type_count = k + 1;
      HL_RETURN_IF_ERROR(hl_vhlo_decode_type(v, bop->result_types[k], &op->result_types[k], 0));
      HL_RETURN_IF_ERROR(note_quant(&op->result_type_quant, k, bop->result_count, *v->last_quant));
    }
  }
  if (bop->operand_count) {
    op->operands = hl_calloc((size_t)bop->operand_count, sizeof(hl_mlir_value_ref_t));
    op->operand_types = hl_calloc((size_t)bop->operand_count, sizeof(hl_shape_t));
    if (!op->operands || !op->operand_types) return HL_OOM();
    for (int k = 0; k < bop->operand_count; k++) {
      const hl_bc_value_t *val = &bc->values[v->value_alias[bop->operands[k]]];
      op->operand_count = op->operand_type_count = k + 1;
      if (!(op->operands[k].name = value_name(val->group))) return HL_OOM();
      op->operands[k].index = (int)val->index;
      HL_RETURN_IF_ERROR(hl_vhlo_decode_type(v, v->value_type[bop->operands[k]],
                                             &op->operand_types[k], 0));
      HL_RETURN_IF_ERROR(note_quant(&op->operand_type_quant, k, bop->operand_count, *v->last_quant));
    }
  }
  // After the operands and results: some spellings depend on their counts.
  if (info) HL_RETURN_IF_ERROR(stablehlo_attrs(v, info->vhlo, op));
  if (bop->successor_count) return verr(v, "'%s' has block successors (unsupported)", full);
  if (bop->region_count) {
    op->regions = hl_calloc((size_t)bop->region_count, sizeof(hl_mlir_region_t));
    if (!op->regions) return HL_OOM();
    op->region_count = bop->region_count;
    bool is_func = info && strcmp(info->vhlo, "func_v1") == 0;
    for (int i = 0; i < bop->region_count; i++) {
      const hl_bc_region_t *br = &bop->regions[i];
      op->regions[i].blocks = hl_calloc((size_t)br->block_count + 1, sizeof(hl_mlir_block_t));
      if (!op->regions[i].blocks) return HL_OOM();
      for (int k = 0; k < br->block_count; k++) {
        op->regions[i].block_count = k + 1;
        HL_RETURN_IF_ERROR(convert_block(v, &br->blocks[k], is_func, &op->regions[i].blocks[k]));
      }
    }
  }
  if (info && strcmp(info->vhlo, "func_v1") == 0) {
    // The signature's quantization ids (the generic func keeps only the types).
    const hl_mlir_attr_t *ft = op_attr(op, "function_type");
    for (int side = 0; ft && ft->kind == HL_MATTR_FUNCTION_TYPE && side < 2; side++) {
      const hl_mlir_attr_t *list = &ft->items[side];
      hl_mlir_quant_ids_t *q = side ? &op->result_type_quant : &op->operand_type_quant;
      for (int i = 0; i < list->n; i++)
        HL_RETURN_IF_ERROR(note_quant(q, i, list->n, list->items[i].type_quant));
    }
    HL_RETURN_IF_ERROR(hl_mlir_generic_func(bc->path, op));
  }
  return NULL;
}

static hl_status_t convert_block(const vctx_t *v, const hl_bc_block_t *b, bool func_body,
                                 hl_mlir_block_t *out) {
  if (b->arg_count) {
    out->arg_names = hl_calloc((size_t)b->arg_count, sizeof(char *));
    out->arg_types = hl_calloc((size_t)b->arg_count, sizeof(hl_shape_t));
    if (!out->arg_names || !out->arg_types) return HL_OOM();
    for (int k = 0; k < b->arg_count; k++) {
      out->arg_count = k + 1;
      if (!(out->arg_names[k] = value_name(b->first_arg + (uint32_t)k))) return HL_OOM();
      HL_RETURN_IF_ERROR(hl_vhlo_decode_type(v, b->arg_types[k], &out->arg_types[k], 0));
      HL_RETURN_IF_ERROR(note_quant(&out->arg_quant, k, b->arg_count, *v->last_quant));
    }
  }
  out->ops = hl_calloc((size_t)b->op_count + 1, sizeof(hl_mlir_op_t));
  if (!out->ops) return HL_OOM();
  for (int i = 0; i < b->op_count; i++) {
    if (is_cast(v, &b->ops[i])) continue;
    HL_RETURN_IF_ERROR(convert_op(v, &b->ops[i], func_body, &out->ops[out->op_count++]));
  }
  return NULL;
}

static void note_types(const hl_bc_block_t *b, uint64_t *types) {
  for (int k = 0; k < b->arg_count; k++) types[b->first_arg + (uint32_t)k] = b->arg_types[k];
  for (int i = 0; i < b->op_count; i++) {
    const hl_bc_op_t *op = &b->ops[i];
    for (int k = 0; k < op->result_count; k++)
      types[op->first_result + (uint32_t)k] = op->result_types[k];
    for (int r = 0; r < op->region_count; r++)
      for (int k = 0; k < op->regions[r].block_count; k++) note_types(&op->regions[r].blocks[k], types);
  }
}

// A module-level `sdy.mesh @name = <[...]>` (Shardy's MeshOp: a symbol name
// and a MeshAttr, as properties or, unregistered or before bytecode v5, in
// the attribute dictionary) into f->meshes as the text parser keeps it:
// items {SYMBOL name, RAW mesh text}.
static hl_status_t convert_sdy_mesh(const vctx_t *v, const hl_bc_op_t *bop, hl_mlir_file_t *f) {
  hl_mlir_attr_t found[2];  // [0] the name, [1] the mesh
  memset(found, 0, sizeof(found));
  hl_status_t st = NULL;
  hl_mlir_op_t holder = {0};
  if (bop->has_properties && bop->properties_are_attr) {
    hl_mlir_attr_t d;
    st = hl_vhlo_decode_attr(v, (uint64_t)bop->properties_attr, &d, 0);
    for (int i = 0; !st && d.kind == HL_MATTR_DICT && i < d.n; i++)
      st = add_attr(&holder, d.keys[i], &d.items[i]);
    hl_mlir_attr_deinit(&d);
  } else if (bop->has_properties) {  // one attribute index each; told apart by their kind
    hl_bc_reader_t r = {bop->properties.data, bop->properties.data + bop->properties.size};
    for (int k = 0; !st && r.p != r.end; k++) {
      uint64_t idx;
      hl_mlir_attr_t a;
      if (k == 2 || !hl_bc_read_varint(&r, &idx)) {
        st = verr(v, "sdy.mesh: properties are not a name and a mesh");
        break;
      }
      st = hl_vhlo_decode_attr(v, idx, &a, 0);
      if (!st) st = add_attr(&holder, a.kind == HL_MATTR_STRING ? "sym_name" : "mesh", &a);
      hl_mlir_attr_deinit(&a);
    }
  }
  if (!st) st = read_attr_dict(v, bop, &holder);
  if (!st && (!take(&holder, "sym_name", &found[0]) || found[0].kind != HL_MATTR_STRING))
    st = verr(v, "sdy.mesh without a symbol name");
  if (!st && (!take(&holder, "mesh", &found[1]) || found[1].kind != HL_MATTR_RAW ||
              !found[1].s || strcmp(found[1].s, "sdy.mesh") != 0))
    st = verr(v, "sdy.mesh @%s without a Shardy mesh attribute", found[0].s ? found[0].s : "?");
  hl_mlir_op_deinit(&holder);
  hl_mlir_op_t *ops = st ? NULL : hl_realloc(f->meshes, ((size_t)f->mesh_count + 1) * sizeof(*ops));
  if (!st && !ops) st = HL_OOM();
  if (!st) {
    f->meshes = ops;
    hl_mlir_op_t *op = &ops[f->mesh_count];
    memset(op, 0, sizeof(*op));
    op->name = hl_strdup("sdy.mesh");
    op->items = hl_calloc(2, sizeof(hl_mlir_attr_t));
    if (!op->name || !op->items) {
      hl_free(op->name);
      hl_free(op->items);
      st = HL_OOM();
    } else {
      f->mesh_count++;
      op->item_count = 2;
      op->items[0] = found[0];
      op->items[0].kind = HL_MATTR_SYMBOL;
      op->items[1] = found[1];
      memset(found, 0, sizeof(found));
    }
  }
  hl_mlir_attr_deinit(&found[0]);
  hl_mlir_attr_deinit(&found[1]);
  return st;
}

// builtin.unrealized_conversion_cast (between VHLO and builtin tensor types,
// around Shardy's ops) is the identity here: its result stands for its
// operand, and the cast itself is dropped (is_cast).
static bool is_cast(const vctx_t *v, const hl_bc_op_t *op) {
  const hl_bc_op_name_t *on = &v->bc->op_names[op->name];
  return on->dialect == v->builtin && strcmp(on->name, "unrealized_conversion_cast") == 0 &&
         op->operand_count == 1 && op->result_count == 1 && op->region_count == 0;
}

static void note_aliases(const vctx_t *v, const hl_bc_block_t *b) {
  for (int i = 0; i < b->op_count; i++) {
    const hl_bc_op_t *op = &b->ops[i];
    if (is_cast(v, op) && op->operands[0] < v->bc->value_count)
      v->value_alias[op->first_result] = v->value_alias[op->operands[0]];
    for (int r = 0; r < op->region_count; r++)
      for (int k = 0; k < op->regions[r].block_count; k++) note_aliases(v, &op->regions[r].blocks[k]);
  }
}

static hl_status_t convert_module(vctx_t *v, hl_mlir_file_t *f, hl_vhlo_skipped_t *skipped) {
  const hl_bc_module_t *bc = v->bc;
  const hl_bc_block_t *top = &bc->top;
  if (top->op_count != 1 || bc->op_names[top->ops[0].name].dialect != v->builtin ||
      strcmp(bc->op_names[top->ops[0].name].name, "module") != 0)
    return verr(v, "the top level is not one builtin.module");
  const hl_bc_op_t *m = &top->ops[0];
  if (m->region_count != 1 || m->regions[0].block_count != 1)
    return verr(v, "builtin.module needs one region of one block");
  if (m->has_properties && !m->properties_are_attr) {
    // ModuleOp's properties: optional sym_name, sym_visibility.
    hl_bc_reader_t r = {m->properties.data, m->properties.data + m->properties.size};
    uint64_t x;
    if (hl_bc_read_varint(&r, &x) && (x & 1)) {
      hl_mlir_attr_t name;
      HL_RETURN_IF_ERROR(hl_vhlo_decode_attr(v, x >> 1, &name, 0));
      if (name.kind == HL_MATTR_STRING) {
        f->module_name = name.s;
        name.s = NULL;
      }
      hl_mlir_attr_deinit(&name);
    }
  }
  hl_mlir_op_t holder = {0};
  HL_RETURN_IF_ERROR(read_attr_dict(v, m, &holder));
  hl_mlir_attr_t name;
  if (take(&holder, "sym_name", &name)) {  // the module's name, when kept as an attribute
    if (name.kind == HL_MATTR_STRING && !f->module_name) {
      f->module_name = name.s;
      name.s = NULL;
    }
    hl_mlir_attr_deinit(&name);
  }
  f->module_attr_names = holder.attr_names;
  f->module_attrs = holder.attrs;
  f->module_attr_count = holder.attr_count;
  const hl_bc_block_t *body = &m->regions[0].blocks[0];
  f->ops = hl_calloc((size_t)body->op_count + 1, sizeof(hl_mlir_op_t));
  if (!f->ops) return HL_OOM();
  for (int i = 0; i < body->op_count; i++) {
    const hl_bc_op_name_t *on = &bc->op_names[body->ops[i].name];
    if (on->dialect == v->sdy && strcmp(on->name, "mesh") == 0) {
      HL_RETURN_IF_ERROR(convert_sdy_mesh(v, &body->ops[i], f));
      continue;
    }
    hl_mlir_op_t *op = &f->ops[f->op_count++];
    hl_status_t st = convert_op(v, &body->ops[i], false, op);
    if (!st && strcmp(op->name, "func.func") != 0)
      st = verr(v, "'%s' at module level (expected vhlo.func_v1)", op->name);
    if (st && skipped) {  // leave the function out, note why
      hl_mlir_op_deinit(op);
      f->op_count--;
      char **msgs = hl_realloc(skipped->messages, ((size_t)skipped->count + 1) * sizeof(char *));
      if (!msgs) {
        hl_status_free(st);
        return HL_OOM();
      }
      skipped->messages = msgs;
      msgs[skipped->count++] = hl_strdup(hl_status_message(st));
      hl_status_free(st);
      continue;
    }
    HL_RETURN_IF_ERROR(st);
  }
  return NULL;
}

void hl_vhlo_skipped_deinit(hl_vhlo_skipped_t *s) {
  for (int i = 0; s && i < s->count; i++) hl_free(s->messages[i]);
  if (s) hl_free(s->messages);
}

hl_status_t hl_vhlo_to_mlir(const hl_bc_module_t *bc, hl_mlir_file_t *out) {
  return hl_vhlo_to_mlir_partial(bc, out, NULL);
}

hl_status_t hl_vhlo_to_mlir_partial(const hl_bc_module_t *bc, hl_mlir_file_t *out,
                                    hl_vhlo_skipped_t *skipped) {
  if (skipped) memset(skipped, 0, sizeof(*skipped));
  memset(out, 0, sizeof(*out));
  out->path = bc->path;
  int last_quant = 0;
  vctx_t v = {bc, out, UINT32_MAX, UINT32_MAX, UINT32_MAX, NULL, NULL, 0, 0, 0, &last_quant};
  for (uint32_t i = 0; i < bc->dialect_count; i++) {
    if (strcmp(bc->dialects[i], "vhlo") == 0) v.vhlo = i;
    if (strcmp(bc->dialects[i], "builtin") == 0) v.builtin = i;
    if (strcmp(bc->dialects[i], "sdy") == 0) v.sdy = i;
  }
  // Before StableHLO named itself in the producer (JAX's early exports say
  // "MLIRxxx-trunk"), the VHLO dialect alone identifies the artifact.
  bool named = sscanf(bc->producer, "StableHLO_v%d.%d.%d", &v.major, &v.minor, &v.patch) == 3;
  if (!named && v.vhlo == UINT32_MAX)
    return HL_INVALID("%s: MLIR bytecode from '%s' is not a StableHLO portable artifact (no "
                      "VHLO dialect, producer not StableHLO_vX.Y.Z)", bc->path, bc->producer);
  if (named && v.major == 0 && v.minor < 9)
    return HL_INVALID("%s: portable artifact of StableHLO %d.%d.%d is older than 0.9.0, the "
                      "oldest with compatibility guarantees", bc->path, v.major, v.minor, v.patch);
  if (v.vhlo == UINT32_MAX) return verr(&v, "holds no VHLO dialect");
  v.value_type = hl_calloc((size_t)bc->value_count + 1, sizeof(uint64_t));
  if (!v.value_type) return HL_OOM();
  note_types(&bc->top, v.value_type);
  v.value_alias = hl_calloc((size_t)bc->value_count + 1, sizeof(uint32_t));
  if (!v.value_alias) {
    hl_free(v.value_type);
    return HL_OOM();
  }
  for (uint32_t i = 0; i < bc->value_count; i++) v.value_alias[i] = i;
  note_aliases(&v, &bc->top);
  hl_status_t st = convert_module(&v, out, skipped);
  hl_free(v.value_type);
  hl_free(v.value_alias);
  if (st) hl_mlir_file_deinit(out);
  return version_note(&v, st);
}

hl_status_t hl_bytecode_load_with_args(const uint8_t *data, size_t size, const char *path,
                                       hl_literal_t *const *args, int arg_count,
                                       hl_module_t **out_module, bool *out_needs_args) {
  *out_module = NULL;
  if (out_needs_args) *out_needs_args = false;
  hl_bc_module_t bc;
  HL_RETURN_IF_ERROR(hl_bc_read(data, size, path, &bc));
  hl_mlir_file_t file;
  hl_status_t st = hl_vhlo_to_mlir(&bc, &file);
  if (!st) {
    if (file.has_dynamic_shapes && arg_count < 0 && out_needs_args) *out_needs_args = true;
    st = hl_stablehlo_lower_file_with_args(&file, path, args, arg_count, out_module);
    hl_mlir_file_deinit(&file);
  }
  hl_bc_module_deinit(&bc);
  return st;
}

hl_status_t hl_bytecode_load(const uint8_t *data, size_t size, const char *path,
                             hl_module_t **out_module) {
  return hl_bytecode_load_with_args(data, size, path, NULL, -1, out_module, NULL);
}

hl_status_t hl_bytecode_entry_types(const uint8_t *data, size_t size, const char *path,
                                    hl_shape_t **out_types, int *out_count) {
  *out_types = NULL;
  *out_count = 0;
  hl_bc_module_t bc;
  HL_RETURN_IF_ERROR(hl_bc_read(data, size, path, &bc));
  hl_mlir_file_t file;
  hl_status_t st = hl_vhlo_to_mlir(&bc, &file);
  if (!st) {
    st = hl_stablehlo_file_entry_types(&file, path, out_types, out_count);
    hl_mlir_file_deinit(&file);
  }
  hl_bc_module_deinit(&bc);
  return st;
}
