// jax.export's shardings onto the program (jax_shardings.h).
#include "runtime/bytecode/jax_shardings.h"

#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/base/strbuf.h"
#include "runtime/proto/proto_io.h"
#include "runtime/spmd/spmd_sharding.h"
#include "runtime/text/hlo_printer.h"

static hl_status_t named_to_ir(const hl_jax_export_t *ex, const hl_jax_sharding_t *js, int rank,
                               hl_sharding_t *out) {
  if (js->dim_count > rank)
    return HL_INVALID("a partition spec of %d entries for an array of rank %d", js->dim_count,
                      rank);
  if (js->unreduced_count)
    return HL_UNIMPL("a named sharding with unreduced axes (partial sums) is not supported");
  int64_t devices = 1;
  bool used[HL_JAX_MAX_MESH_AXES] = {false};
  for (int a = 0; a < js->axis_count; a++) {
    devices *= js->axis_sizes[a];
    if (devices > (1 << 20)) return HL_INVALID("a mesh of more than 2^20 devices");
  }
  if (devices != ex->nr_devices)
    return HL_INVALID("its mesh has %lld devices, the export %d", (long long)devices,
                      ex->nr_devices);
  int64_t tiles[HL_MAX_RANK + 1];
  for (int d = 0; d < rank; d++) tiles[d] = 1;
  for (int d = 0; d < js->dim_count; d++)
    for (int k = 0; k < js->dim_axis_count[d]; k++) {
      int a = js->dim_axes[d][k];
      if (used[a]) return HL_INVALID("the mesh axis '%s' is used twice", js->axis_names[a]);
      used[a] = true;
      tiles[d] *= js->axis_sizes[a];
    }
  int64_t replicas = 1;
  for (int a = 0; a < js->axis_count; a++) {
    if (js->axis_types[a] == HL_JAX_AXIS_MANUAL && js->axis_sizes[a] > 1)
      return HL_UNIMPL("a named sharding over the manual mesh axis '%s' is not supported",
                       js->axis_names[a]);
    if (!used[a]) replicas *= js->axis_sizes[a];
  }
  memset(out, 0, sizeof(*out));
  if (replicas == devices) {  // no dimension split
    out->type = HL_SHARDING_REPLICATED;
    return NULL;
  }
  int ndims = rank + (replicas > 1 ? 1 : 0);
  tiles[rank] = replicas;
  int64_t *list = hl_malloc((size_t)devices * sizeof(int64_t));
  if (!list) return HL_OOM();
  for (int64_t dev = 0; dev < devices; dev++) {
    uint32_t coord[HL_JAX_MAX_MESH_AXES];
    int64_t rest = dev;
    for (int a = js->axis_count - 1; a >= 0; a--) {  // row-major over the mesh axes
      coord[a] = (uint32_t)(rest % js->axis_sizes[a]);
      rest /= js->axis_sizes[a];
    }
    int64_t pos = 0;
    for (int d = 0; d < rank; d++) {
      int64_t index = 0;
      for (int k = 0; d < js->dim_count && k < js->dim_axis_count[d]; k++) {
        int a = js->dim_axes[d][k];
        index = index * js->axis_sizes[a] + coord[a];
      }
      pos = pos * tiles[d] + index;
    }
    if (replicas > 1) {
      int64_t index = 0;
      for (int a = 0; a < js->axis_count; a++)
        if (!used[a]) index = index * js->axis_sizes[a] + coord[a];
      pos = pos * replicas + index;
    }
    list[pos] = dev;
  }
  out->type = HL_SHARDING_OTHER;
  out->replicate_on_last_tile_dim = replicas > 1;
  hl_status_t st = hl_i64_list_set(&out->tile_assignment_dimensions, tiles, ndims);
  if (!st) st = hl_i64_list_set(&out->tile_assignment_devices, list, (int)devices);
  hl_free(list);
  if (st) hl_sharding_deinit(out);
  return st;
}

hl_status_t hl_jax_sharding_to_ir(const hl_jax_export_t *ex, const hl_jax_sharding_t *js, int rank,
                                  hl_sharding_t *out, bool *out_specified) {
  memset(out, 0, sizeof(*out));
  *out_specified = js->kind != HL_JAX_SHARDING_UNSPECIFIED;
  if (js->kind == HL_JAX_SHARDING_HLO)
    return hl_proto_decode_op_sharding(js->hlo_proto, js->hlo_proto_size, out);
  if (js->kind == HL_JAX_SHARDING_NAMED) return named_to_ir(ex, js, rank, out);
  return NULL;
}

static hl_mlir_op_t *find_main(hl_mlir_file_t *f) {
  for (int i = 0; i < f->op_count; i++)
    if (f->ops[i].symbol && strcmp(f->ops[i].symbol, "main") == 0) return &f->ops[i];
  return NULL;
}

static bool has_own(const hl_mlir_attr_t *dict) {
  if (!dict || dict->kind != HL_MATTR_DICT) return false;
  const hl_mlir_attr_t *m = hl_mlir_attr_member(dict, "mhlo.sharding");
  if (m && !(m->kind == HL_MATTR_STRING && m->s_len == 0)) return true;
  return hl_mlir_attr_member(dict, "sdy.sharding") != NULL;
}

// `mhlo.sharding = "<text>"` into the attribute dictionary `dict` (UNIT when
// the value had none; an empty mhlo.sharding, JAX's old "none", is replaced).
static hl_status_t put_sharding(hl_mlir_attr_t *dict, const char *text) {
  char *s = hl_strdup(text);
  if (!s) return HL_OOM();
  if (dict->kind == HL_MATTR_DICT)
    for (int k = 0; k < dict->n; k++)
      if (dict->keys[k] && strcmp(dict->keys[k], "mhlo.sharding") == 0) {
        hl_mlir_attr_deinit(&dict->items[k]);
        memset(&dict->items[k], 0, sizeof(dict->items[k]));
        dict->items[k].kind = HL_MATTR_STRING;
        dict->items[k].s = s;
        dict->items[k].s_len = strlen(s);
        return NULL;
      }
  if (dict->kind != HL_MATTR_DICT) {
    hl_mlir_attr_deinit(dict);
    memset(dict, 0, sizeof(*dict));
    dict->kind = HL_MATTR_DICT;
  }
  hl_mlir_attr_t *items = hl_realloc(dict->items, ((size_t)dict->n + 1) * sizeof(*items));
  if (items) dict->items = items;
  char **keys = items ? hl_realloc(dict->keys, ((size_t)dict->n + 1) * sizeof(*keys)) : NULL;
  if (keys) dict->keys = keys;
  char *key = keys ? hl_strdup("mhlo.sharding") : NULL;
  if (!key) {
    hl_free(s);
    return HL_OOM();
  }
  memset(&items[dict->n], 0, sizeof(items[dict->n]));
  items[dict->n].kind = HL_MATTR_STRING;
  items[dict->n].s = s;
  items[dict->n].s_len = strlen(s);
  keys[dict->n] = key;
  dict->n++;
  return NULL;
}

// One attribute dictionary per value (`*attrs` allocated with UNIT entries
// when the function had none).
static hl_status_t ensure_attrs(hl_mlir_attr_t **attrs, int *allocated, int count) {
  if (*attrs && *allocated >= count) return NULL;
  hl_mlir_attr_t *a = hl_realloc(*attrs, (size_t)(count > 0 ? count : 1) * sizeof(*a));
  if (!a) return HL_OOM();
  int have = *attrs ? *allocated : 0;
  memset(a + have, 0, (size_t)(count - have) * sizeof(*a));
  *attrs = a;
  *allocated = count;
  return NULL;
}

// The export's sharding of argument / result `index` (of `rank`) onto `dict`
// unless it has one; *own says it had.
static hl_status_t annotate_one(const hl_jax_export_t *ex, bool result, int index, int rank,
                                hl_mlir_attr_t *dict, bool *own) {
  *own = has_own(dict);
  if (*own) return NULL;
  hl_jax_sharding_t js;
  hl_sharding_t s;
  bool specified;
  HL_RETURN_IF_ERROR(hl_jax_export_sharding(ex, result, index, &js));
  HL_RETURN_IF_ERROR(hl_jax_sharding_to_ir(ex, &js, rank, &s, &specified));
  if (!specified) return NULL;
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  hl_print_sharding(&s, &sb);
  hl_sharding_deinit(&s);
  hl_status_t st = sb.failed ? HL_OOM() : put_sharding(dict, hl_strbuf_cstr(&sb));
  hl_strbuf_deinit(&sb);
  return st;
}

hl_status_t hl_jax_export_annotate(const hl_jax_export_t *ex, hl_mlir_file_t *file,
                                   hl_jax_annotations_t *out) {
  memset(out, 0, sizeof(*out));
  if (!ex->in_sharding_count && !ex->out_sharding_count) return NULL;
  hl_mlir_op_t *main = find_main(file);
  if (!main) return HL_INVALID("%s: jax.export: the module has no @main", ex->path);
  int nargs = main->operand_type_count, nres = main->result_type_count;
  if (ex->kept_var_count >= 0 && ex->kept_var_count != nargs)
    return HL_INVALID("%s: jax.export: @main takes %d arguments, but module_kept_var_idx lists %d",
                      ex->path, nargs, ex->kept_var_count);
  if (ex->out_sharding_count && ex->out_sharding_count != nres)
    return HL_INVALID("%s: jax.export: @main returns %d results, but the export has %d result "
                      "shardings", ex->path, nres, ex->out_sharding_count);
  HL_RETURN_IF_ERROR(ensure_attrs(&main->arg_attrs, &main->arg_attr_count, nargs));
  HL_RETURN_IF_ERROR(ensure_attrs(&main->res_attrs, &main->res_attr_count, nres));
  out->own_arg = hl_calloc((size_t)nargs + 1, sizeof(bool));
  out->own_result = hl_calloc((size_t)nres + 1, sizeof(bool));
  if (!out->own_arg || !out->own_result) {
    hl_jax_annotations_deinit(out);
    return HL_OOM();
  }
  out->arg_count = nargs;
  out->result_count = nres;
  hl_status_t st = NULL;
  for (int k = 0; k < nargs && !st; k++) {
    int aval;
    st = hl_jax_export_kept_var(ex, k, &aval);
    if (!st) st = annotate_one(ex, false, aval, main->operand_types[k].rank, &main->arg_attrs[k],
                               &out->own_arg[k]);
    if (st) st = hl_status_annotate(st, "%s: jax.export: in_shardings[%d] (argument %d of @main)",
                                    ex->path, aval, k);
  }
  for (int k = 0; k < nres && !st; k++) {
    st = annotate_one(ex, true, k, main->result_types[k].rank, &main->res_attrs[k],
                      &out->own_result[k]);
    if (st) st = hl_status_annotate(st, "%s: jax.export: out_shardings[%d]", ex->path, k);
  }
  if (st) hl_jax_annotations_deinit(out);
  return st;
}

// The module's own sharding `have` of a value of `shape` and the export's
// entry agree on every device.
static hl_status_t check_one(const hl_jax_export_t *ex, bool result, int index,
                             const hl_sharding_t *have, const hl_shape_t *shape, const char *what,
                             int k) {
  hl_jax_sharding_t js;
  hl_sharding_t want;
  bool specified;
  HL_RETURN_IF_ERROR(hl_jax_export_sharding(ex, result, index, &js));
  HL_RETURN_IF_ERROR(hl_jax_sharding_to_ir(ex, &js, shape->rank, &want, &specified));
  // Past the partitioner's limits the program cannot run partitioned (it
  // says so then); --describe still shows the export.
  if (!specified || ex->nr_devices > HL_SPMD_MAX_DEVICES || shape->rank > HL_SPMD_MAX_RANK) {
    hl_sharding_deinit(&want);
    return NULL;
  }
  hl_spmd_sharding_t *a = hl_malloc(2 * sizeof(*a)), *b = a ? a + 1 : NULL;
  hl_status_t st = a ? NULL : HL_OOM();
  if (!st) st = hl_spmd_from_ir(have, shape->rank, ex->nr_devices, a);
  if (!st) st = hl_spmd_from_ir(&want, shape->rank, ex->nr_devices, b);
  if (!st && !hl_spmd_equal(a, b)) {
    hl_strbuf_t x, y;
    hl_strbuf_init(&x);
    hl_strbuf_init(&y);
    if (have) hl_print_sharding(have, &x); else hl_strbuf_append(&x, "{replicated}");
    hl_print_sharding(&want, &y);
    st = HL_INVALID("%s: jax.export: %s %d of @main is annotated %s in the module, but the "
                    "export's %s say %s", ex->path, what, k, hl_strbuf_cstr(&x),
                    result ? "out_shardings" : "in_shardings", hl_strbuf_cstr(&y));
    hl_strbuf_deinit(&x);
    hl_strbuf_deinit(&y);
  }
  hl_free(a);
  hl_sharding_deinit(&want);
  return st;
}

hl_status_t hl_jax_export_check_shardings(const hl_jax_export_t *ex,
                                          const hl_jax_annotations_t *notes,
                                          const hl_module_t *m) {
  const hl_computation_t *c = m->entry;
  if (!c || (!notes->arg_count && !notes->result_count)) return NULL;
  for (int k = 0; k < notes->arg_count && k < c->parameter_count; k++) {
    if (!notes->own_arg[k] || !c->parameters[k]) continue;
    int aval;
    HL_RETURN_IF_ERROR(hl_jax_export_kept_var(ex, k, &aval));
    HL_RETURN_IF_ERROR(check_one(ex, false, aval, c->parameters[k]->attrs.sharding,
                                 &c->parameters[k]->shape, "argument", k));
  }
  const hl_instruction_t *root = c->root;
  for (int k = 0; root && k < notes->result_count; k++) {
    if (!notes->own_result[k]) continue;
    const hl_sharding_t *s = root->attrs.sharding;
    const hl_shape_t *shape = &root->shape;
    if (notes->result_count > 1 || root->shape.dtype == HL_TUPLE) {
      if (root->shape.dtype != HL_TUPLE || k >= root->shape.tuple_count) continue;
      shape = &root->shape.tuple[k];
      s = s && s->type == HL_SHARDING_TUPLE && k < s->tuple_count ? &s->tuple_shardings[k] : NULL;
    }
    HL_RETURN_IF_ERROR(check_one(ex, true, k, s, shape, "result", k));
  }
  return NULL;
}

void hl_jax_annotations_deinit(hl_jax_annotations_t *notes) {
  hl_free(notes->own_arg);
  hl_free(notes->own_result);
  memset(notes, 0, sizeof(*notes));
}
