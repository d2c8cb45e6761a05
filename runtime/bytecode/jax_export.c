// jax.export's flatbuffer (jax_export.h). Field slots of table Exported, in
// schema order (serialization.fbs): the vtable entry of field k is slot k.
#include "runtime/bytecode/jax_export.h"

#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/bytecode/jax_shardings.h"
#include "runtime/bytecode/vhlo.h"
#include "runtime/stablehlo/stablehlo.h"

enum {
  kSerializationVersion = 0, kFunctionName = 1, kInAvals = 3, kOutAvals = 5,
  kNrDevicesShort = 6, kPlatforms = 9, kOrderedEffects = 10, kModule = 13,
  kCallingConvention = 14, kKeptVarIdx = 15, kUsesGlobalConstants = 16, kNrDevices = 18,
  kInShardings = 7, kOutShardings = 8, kUniqueAbstractMeshes = 20, kUniqueNamedShardings = 21,
  kInShardingsIdxs = 24, kOutShardingsIdxs = 25,
};
// Slots of the tables a sharding is made of.
enum { kShardingProto = 1, kShardingNamed = 2 };                   // Sharding
enum { kNamedMesh = 0, kNamedSpec = 1, kNamedMemoryKind = 2, kNamedMeshIdx = 3 };  // NamedSharding
enum { kMeshSizes = 0, kMeshNames = 1, kMeshTypes = 2 };           // AbstractMesh
enum { kSpecPartitions = 0, kSpecReduced = 1, kSpecUnreduced = 2 };  // PartitionSpec

typedef struct fb {
  const uint8_t *d;
  size_t n;
} fb_t;

static bool rd32(const fb_t *b, size_t at, uint32_t *v) {
  if (at > b->n || b->n - at < 4) return false;
  *v = (uint32_t)b->d[at] | (uint32_t)b->d[at + 1] << 8 | (uint32_t)b->d[at + 2] << 16 |
       (uint32_t)b->d[at + 3] << 24;
  return true;
}

static bool rd16(const fb_t *b, size_t at, uint16_t *v) {
  if (at > b->n || b->n - at < 2) return false;
  *v = (uint16_t)(b->d[at] | b->d[at + 1] << 8);
  return true;
}

// A table at `pos`: its vtable checked; *field = absolute position of field
// `slot`, 0 when the field is absent.
static bool field(const fb_t *b, size_t pos, int slot, size_t *at) {
  uint32_t soff;
  uint16_t vsize, tsize, off;
  *at = 0;
  if (!rd32(b, pos, &soff)) return false;
  int64_t vt = (int64_t)pos - (int32_t)soff;
  if (vt < 0 || (uint64_t)vt >= b->n) return false;
  if (!rd16(b, (size_t)vt, &vsize) || !rd16(b, (size_t)vt + 2, &tsize)) return false;
  if (vsize < 4 || (vsize & 1) || (size_t)vt + vsize > b->n || pos + tsize > b->n) return false;
  if (4 + 2 * (size_t)slot + 2 > vsize) return true;  // beyond the vtable: absent
  if (!rd16(b, (size_t)vt + 4 + 2 * (size_t)slot, &off)) return false;
  if (off == 0) return true;
  if (off >= tsize) return false;
  *at = pos + off;
  return true;
}

// The vector (or string, or table) a uoffset at `at` points to.
static bool deref(const fb_t *b, size_t at, size_t *target) {
  uint32_t off;
  if (!rd32(b, at, &off) || (uint64_t)at + off >= b->n) return false;
  *target = at + off;
  return true;
}

// A vector of `elem`-byte elements: *data = first element, *count.
static bool vector(const fb_t *b, size_t at, size_t elem, size_t *data, uint32_t *count) {
  size_t v;
  if (!deref(b, at, &v) || !rd32(b, v, count)) return false;
  if ((uint64_t)*count * elem > b->n - v - 4) return false;
  *data = v + 4;
  return true;
}

static bool string(const fb_t *b, size_t at, const char **s) {
  size_t data;
  uint32_t len;
  if (!vector(b, at, 1, &data, &len) || data + len >= b->n || b->d[data + len] != 0) return false;
  *s = (const char *)b->d + data;
  return true;
}

static bool root(const fb_t *b, size_t *pos) {
  uint32_t off;
  if (!rd32(b, 0, &off) || off < 4 || off >= b->n) return false;
  *pos = off;
  return true;
}

bool hl_jax_export_looks_like(const uint8_t *data, size_t size) {
  fb_t b = {data, size};
  size_t pos, at, mod;
  uint32_t len;
  return size >= 16 && root(&b, &pos) && field(&b, pos, kModule, &at) && at &&
         vector(&b, at, 1, &mod, &len) && len >= 4 && memcmp(data + mod, "ML\xEFR", 4) == 0;
}

hl_status_t hl_jax_export_read(const uint8_t *data, size_t size, const char *path,
                               hl_jax_export_t *out) {
  memset(out, 0, sizeof(*out));
  fb_t b = {data, size};
  size_t pos, at, v;
  uint32_t n;
  uint16_t u16;
#define BAD(what) HL_INVALID("%s: jax.export flatbuffer: %s", path, what)
  if (!root(&b, &pos)) return BAD("bad root offset");
  if (!field(&b, pos, kSerializationVersion, &at)) return BAD("bad root table");
  if (at && rd16(&b, at, &u16)) out->serialization_version = u16;
  if (!field(&b, pos, kFunctionName, &at) || (at && !string(&b, at, &out->function_name)))
    return BAD("bad function_name");
  static const int kCounted[3] = {kInAvals, kOutAvals, kOrderedEffects};
  int *counts[3] = {&out->in_aval_count, &out->out_aval_count, &out->ordered_effect_count};
  for (int k = 0; k < 3; k++) {
    if (!field(&b, pos, kCounted[k], &at)) return BAD("bad root table");
    if (at && !vector(&b, at, 4, &v, &n)) return BAD("bad vector");
    *counts[k] = at ? (int)n : 0;
  }
  out->nr_devices = 1;
  if (!field(&b, pos, kNrDevicesShort, &at)) return BAD("bad root table");
  if (at && rd16(&b, at, &u16)) out->nr_devices = (int16_t)u16;
  if (!field(&b, pos, kNrDevices, &at)) return BAD("bad root table");
  if (at) {
    uint32_t nd;
    if (!rd32(&b, at, &nd) || nd > (1u << 20)) return BAD("bad nr_devices");
    if (nd) out->nr_devices = (int)nd;
  }
  if (out->nr_devices < 1) return BAD("nr_devices below 1");
  if (!field(&b, pos, kPlatforms, &at)) return BAD("bad root table");
  if (at) {
    if (!vector(&b, at, 4, &v, &n) || n > HL_JAX_EXPORT_MAX_LIST) return BAD("bad platforms");
    for (uint32_t k = 0; k < n; k++)
      if (!string(&b, v + 4 * k, &out->platforms[k])) return BAD("bad platform name");
    out->platform_count = (int)n;
  }
  if (!field(&b, pos, kCallingConvention, &at)) return BAD("bad root table");
  if (at && rd16(&b, at, &u16)) out->calling_convention_version = u16;
  if (!field(&b, pos, kKeptVarIdx, &at)) return BAD("bad root table");
  out->kept_var_count = -1;
  if (at) {
    if (!vector(&b, at, 2, &v, &n)) return BAD("bad module_kept_var_idx");
    out->kept_var_count = (int)n;
    out->kept_var_at = v;
  }
  out->data = data;
  out->size = size;
  out->path = path;
  static const int kShardingSlots[2][2] = {{kInShardings, kInShardingsIdxs},
                                           {kOutShardings, kOutShardingsIdxs}};
  for (int k = 0; k < 2; k++) {
    int *count = k ? &out->out_sharding_count : &out->in_sharding_count;
    if (!field(&b, pos, kShardingSlots[k][0], &at)) return BAD("bad root table");
    if (at) {
      if (!vector(&b, at, 4, &v, &n)) return BAD("bad in_shardings / out_shardings");
      out->sharding_vec[k] = v;
      *count = (int)n;
    }
    if (!field(&b, pos, kShardingSlots[k][1], &at)) return BAD("bad root table");
    if (at) {
      if (!vector(&b, at, 4, &v, &n)) return BAD("bad in_shardings_idxs / out_shardings_idxs");
      if (n > 0) {  // JAX reads the indices when there are any
        out->sharding_idx_vec[k] = v;
        *count = (int)n;
      }
    }
  }
  if (!field(&b, pos, kUniqueNamedShardings, &at)) return BAD("bad root table");
  if (at && !vector(&b, at, 4, &out->unique_shardings_vec, &out->unique_sharding_count))
    return BAD("bad unique_named_shardings");
  if (!field(&b, pos, kUniqueAbstractMeshes, &at)) return BAD("bad root table");
  if (at && !vector(&b, at, 4, &out->unique_meshes_vec, &out->unique_mesh_count))
    return BAD("bad unique_abstract_meshes");
  if (!field(&b, pos, kUsesGlobalConstants, &at)) return BAD("bad root table");
  out->uses_global_constants = at && at < size && data[at] != 0;
  if (!field(&b, pos, kModule, &at) || !at || !vector(&b, at, 1, &v, &n))
    return BAD("no mlir_module_serialized");
  out->module = data + v;
  out->module_size = n;
  return NULL;
#undef BAD
}

hl_status_t hl_jax_export_kept_var(const hl_jax_export_t *ex, int k, int *out_index) {
  fb_t b = {ex->data, ex->size};
  uint16_t v;
  if (ex->kept_var_count < 0) {  // absent: every argument kept
    *out_index = k;
    return NULL;
  }
  if (k < 0 || k >= ex->kept_var_count || !rd16(&b, ex->kept_var_at + 2 * (size_t)k, &v))
    return HL_INVALID("%s: jax.export: module_kept_var_idx has no entry %d", ex->path, k);
  *out_index = v;
  return NULL;
}

// The table a uoffset at `at` points to (0 at = absent table: *table = 0).
static bool table_at(const fb_t *b, size_t at, size_t *table) {
  *table = 0;
  return !at || deref(b, at, table);
}

static hl_status_t read_mesh(const fb_t *b, size_t mesh, const char *path, hl_jax_sharding_t *s) {
#define BAD(what) HL_INVALID("%s: jax.export flatbuffer: abstract mesh: %s", path, what)
  size_t at, v, names, types = 0;
  uint32_t n, name_count, type_count = 0;
  if (!mesh) return BAD("missing");
  if (!field(b, mesh, kMeshSizes, &at) || !at || !vector(b, at, 4, &v, &n)) return BAD("bad axis_sizes");
  if (n > HL_JAX_MAX_MESH_AXES) return BAD("more axes than this reader takes (16)");
  if (!field(b, mesh, kMeshNames, &at) || !at || !vector(b, at, 4, &names, &name_count) ||
      name_count != n)
    return BAD("bad axis_names (one per axis size)");
  if (!field(b, mesh, kMeshTypes, &at) || (at && !vector(b, at, 1, &types, &type_count)) ||
      (at && type_count != n && type_count != 0))
    return BAD("bad axis_types");
  s->axis_count = (int)n;
  for (uint32_t k = 0; k < n; k++) {
    uint32_t size;
    if (!rd32(b, v + 4 * k, &size) || size < 1 || size > (1u << 20)) return BAD("bad axis size");
    s->axis_sizes[k] = size;
    if (!string(b, names + 4 * k, &s->axis_names[k])) return BAD("bad axis name");
    s->axis_types[k] = type_count ? b->d[types + k] : HL_JAX_AXIS_MISSING;
    for (uint32_t j = 0; j < k; j++)
      if (strcmp(s->axis_names[j], s->axis_names[k]) == 0) return BAD("an axis name repeats");
  }
  return NULL;
#undef BAD
}

static hl_status_t read_named(const hl_jax_export_t *ex, size_t named, hl_jax_sharding_t *s) {
#define BAD(what) HL_INVALID("%s: jax.export flatbuffer: named sharding: %s", ex->path, what)
  fb_t b = {ex->data, ex->size};
  size_t at, mesh = 0, spec = 0, v;
  uint32_t n;
  s->kind = HL_JAX_SHARDING_NAMED;
  if (ex->unique_mesh_count) {  // v10+: the mesh by its index
    uint32_t idx = 0;
    if (!field(&b, named, kNamedMeshIdx, &at) || (at && !rd32(&b, at, &idx)) ||
        idx >= ex->unique_mesh_count || !table_at(&b, ex->unique_meshes_vec + 4 * (size_t)idx, &mesh))
      return BAD("bad abstract_mesh_idx");
  } else if (!field(&b, named, kNamedMesh, &at) || !table_at(&b, at, &mesh)) {
    return BAD("bad mesh");
  }
  HL_RETURN_IF_ERROR(read_mesh(&b, mesh, ex->path, s));
  if (!field(&b, named, kNamedMemoryKind, &at) || (at && !string(&b, at, &s->memory_kind)))
    return BAD("bad memory_kind");
  if (!field(&b, named, kNamedSpec, &at) || !table_at(&b, at, &spec)) return BAD("bad spec");
  if (!spec) return NULL;  // no spec: every dimension whole
  static const int kSets[2] = {kSpecReduced, kSpecUnreduced};
  int *set_counts[2] = {&s->reduced_count, &s->unreduced_count};
  for (int k = 0; k < 2; k++) {
    if (!field(&b, spec, kSets[k], &at) || (at && !vector(&b, at, 4, &v, &n)))
      return BAD("bad reduced / unreduced axes");
    *set_counts[k] = at ? (int)n : 0;
  }
  if (!field(&b, spec, kSpecPartitions, &at)) return BAD("bad partitions");
  if (!at) return NULL;
  if (!vector(&b, at, 4, &v, &n)) return BAD("bad partitions");
  if (n > HL_MAX_RANK) return BAD("more partition spec entries than an array has dimensions");
  s->dim_count = (int)n;
  for (uint32_t d = 0; d < n; d++) {
    size_t one, axes;
    uint32_t axis_count;
    if (!table_at(&b, v + 4 * d, &one) || !one) return BAD("bad partition spec entry");
    if (!field(&b, one, 0, &at)) return BAD("bad partition spec entry");
    if (!at) continue;  // None
    if (!vector(&b, at, 4, &axes, &axis_count) || axis_count > HL_JAX_MAX_MESH_AXES)
      return BAD("bad partition spec axes");
    for (uint32_t k = 0; k < axis_count; k++) {
      const char *name;
      if (!string(&b, axes + 4 * k, &name)) return BAD("bad partition spec axis name");
      int found = -1;
      for (int j = 0; j < s->axis_count; j++)
        if (strcmp(s->axis_names[j], name) == 0) found = j;
      if (found < 0)
        return HL_INVALID("%s: jax.export: the partition spec names the axis '%s', which its "
                          "mesh does not have", ex->path, name);
      s->dim_axes[d][s->dim_axis_count[d]++] = (uint8_t)found;
    }
  }
  return NULL;
#undef BAD
}

hl_status_t hl_jax_export_sharding(const hl_jax_export_t *ex, bool result, int index,
                                   hl_jax_sharding_t *out) {
  memset(out, 0, sizeof(*out));
  fb_t b = {ex->data, ex->size};
  int k = result ? 1 : 0;
  int count = result ? ex->out_sharding_count : ex->in_sharding_count;
  if (index < 0 || index >= count) return NULL;  // none recorded: unspecified
  size_t at, t;
  if (ex->sharding_idx_vec[k]) {  // v10+: 1-based index into unique_named_shardings, 0: none
    uint32_t idx;
    if (!rd32(&b, ex->sharding_idx_vec[k] + 4 * (size_t)index, &idx))
      return HL_INVALID("%s: jax.export flatbuffer: bad sharding index", ex->path);
    if (idx == 0) return NULL;
    if (idx > ex->unique_sharding_count ||
        !table_at(&b, ex->unique_shardings_vec + 4 * (size_t)(idx - 1), &t) || !t)
      return HL_INVALID("%s: jax.export flatbuffer: sharding index %u past the %u unique "
                        "named shardings", ex->path, idx, ex->unique_sharding_count);
    return read_named(ex, t, out);
  }
  if (!table_at(&b, ex->sharding_vec[k] + 4 * (size_t)index, &t) || !t)
    return HL_INVALID("%s: jax.export flatbuffer: bad sharding entry", ex->path);
  size_t named;
  if (!field(&b, t, kShardingNamed, &at) || !table_at(&b, at, &named))
    return HL_INVALID("%s: jax.export flatbuffer: bad named_sharding", ex->path);
  if (named) return read_named(ex, named, out);  // JAX prefers it over the proto
  if (!field(&b, t, kShardingProto, &at))
    return HL_INVALID("%s: jax.export flatbuffer: bad sharding entry", ex->path);
  if (!at) return NULL;  // unspecified
  size_t v;
  uint32_t n;
  if (!vector(&b, at, 1, &v, &n))
    return HL_INVALID("%s: jax.export flatbuffer: bad hlo_sharding_proto", ex->path);
  out->kind = HL_JAX_SHARDING_HLO;
  out->hlo_proto = ex->data + v;
  out->hlo_proto_size = n;
  return NULL;
}

// Binds argument 0 of @main (the platform index, tensor<i32>) to `index`:
// a stablehlo.constant takes the argument's name, and the argument goes.
static hl_status_t bind_platform_index(hl_mlir_file_t *f, const char *path, int index) {
  hl_mlir_op_t *main = NULL;
  for (int i = 0; i < f->op_count; i++)
    if (f->ops[i].symbol && strcmp(f->ops[i].symbol, "main") == 0) main = &f->ops[i];
  if (!main || main->region_count != 1 || main->regions[0].block_count < 1)
    return HL_INVALID("%s: jax.export: the module has no @main", path);
  hl_mlir_block_t *b = &main->regions[0].blocks[0];
  // tensor<i32>, or tensor<i64> in an export JAX made with 64-bit types enabled.
  hl_dtype_t type = main->operand_type_count > 0 ? main->operand_types[0].dtype : HL_S32;
  if (b->arg_count < 1 || main->operand_type_count < 1 || main->operand_types[0].rank != 0 ||
      (type != HL_S32 && type != HL_S64))
    return HL_INVALID("%s: jax.export: a multi-platform export's @main must take the platform "
                      "index (tensor<i32> or tensor<i64>) first", path);
  hl_mlir_op_t *ops = hl_realloc(b->ops, ((size_t)b->op_count + 1) * sizeof(*ops));
  if (!ops) return HL_OOM();
  b->ops = ops;
  memmove(&ops[1], &ops[0], (size_t)b->op_count * sizeof(*ops));
  b->op_count++;
  hl_mlir_op_t *c = &ops[0];
  memset(c, 0, sizeof(*c));
  size_t width = type == HL_S64 ? sizeof(int64_t) : sizeof(int32_t);
  void *value = hl_malloc(width);
  c->name = hl_strdup("stablehlo.constant");
  c->result_names = hl_calloc(1, sizeof(char *));
  c->result_counts = hl_calloc(1, sizeof(int));
  c->result_types = hl_calloc(1, sizeof(hl_shape_t));
  c->attr_names = hl_calloc(1, sizeof(char *));
  c->attrs = hl_calloc(1, sizeof(hl_mlir_attr_t));
  if (!value || !c->name || !c->result_names || !c->result_counts || !c->result_types ||
      !c->attr_names || !c->attrs || !(c->attr_names[0] = hl_strdup("value"))) {
    hl_free(value);
    return HL_OOM();
  }
  if (type == HL_S64) *(int64_t *)value = index;
  else *(int32_t *)value = index;
  c->generic = c->has_function_type = true;
  c->result_names[0] = b->arg_names[0];  // the argument's uses now read the constant
  c->result_counts[0] = 1;
  c->result_group_count = c->result_count = c->result_type_count = 1;
  c->result_types[0] = hl_shape_scalar(type);
  c->attr_count = 1;
  c->attrs[0].kind = HL_MATTR_DENSE;
  c->attrs[0].has_type = true;
  c->attrs[0].type = hl_shape_scalar(type);
  c->attrs[0].blob = (const uint8_t *)value;
  c->attrs[0].blob_len = width;
  c->attrs[0].blob_owned = true;
  // Drop argument 0 from the block and the signature.
  hl_shape_deinit(&b->arg_types[0]);
  memmove(&b->arg_names[0], &b->arg_names[1], (size_t)(b->arg_count - 1) * sizeof(char *));
  memmove(&b->arg_types[0], &b->arg_types[1], (size_t)(b->arg_count - 1) * sizeof(hl_shape_t));
  if (b->arg_quant.ids && b->arg_quant.n > 0) {
    memmove(&b->arg_quant.ids[0], &b->arg_quant.ids[1], (size_t)(b->arg_quant.n - 1) * sizeof(int));
    b->arg_quant.n--;
  }
  b->arg_count--;
  hl_shape_deinit(&main->operand_types[0]);
  memmove(&main->operand_types[0], &main->operand_types[1],
          (size_t)(main->operand_type_count - 1) * sizeof(hl_shape_t));
  main->operand_type_count--;
  if (main->operand_type_quant.ids && main->operand_type_quant.n > 0) {
    memmove(&main->operand_type_quant.ids[0], &main->operand_type_quant.ids[1],
            (size_t)(main->operand_type_quant.n - 1) * sizeof(int));
    main->operand_type_quant.n--;
  }
  if (main->arg_attrs && main->arg_attr_count > 0) {
    hl_mlir_attr_deinit(&main->arg_attrs[0]);
    memmove(&main->arg_attrs[0], &main->arg_attrs[1],
            (size_t)(main->arg_attr_count - 1) * sizeof(hl_mlir_attr_t));
    main->arg_attr_count--;
  }
  return NULL;
}

hl_status_t hl_jax_export_load(const uint8_t *data, size_t size, const char *path,
                               hl_module_t **out_module) {
  return hl_jax_export_load_with_args(data, size, path, NULL, -1, out_module, NULL);
}

// Reads the export and decodes its module for the CPU (platform index bound):
// *bc and *file are the caller's to release on success.
// With `notes`, the export's shardings are put on @main (jax_shardings.h).
static hl_status_t decode_for_cpu(const uint8_t *data, size_t size, const char *path,
                                  hl_jax_export_t *ex, hl_bc_module_t *bc, hl_mlir_file_t *file,
                                  hl_jax_annotations_t *notes) {
  HL_RETURN_IF_ERROR(hl_jax_export_read(data, size, path, ex));
  int cpu = -1;
  for (int i = 0; i < ex->platform_count; i++)
    if (strcmp(ex->platforms[i], "cpu") == 0) cpu = i;
  if (cpu < 0) {
    char list[256] = "";
    for (int i = 0; i < ex->platform_count; i++)
      snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? ", " : "",
               ex->platforms[i]);
    return HL_INVALID("%s: jax.export: exported for platform(s) [%s], not cpu (hlo-launch runs "
                      "programs as JAX's CPU platform)", path, list);
  }
  if (ex->ordered_effect_count)
    return HL_UNIMPL("%s: jax.export: exports with ordered effects (token arguments) are not "
                     "supported", path);
  // uses_global_constants says the module needs JAX's shape refinement
  // (refine_polymorphic_shapes) before compiling: its platform index and
  // dimension variables are global constants threaded through calls. Binding
  // the platform index below and refining '?' shapes from the arguments
  // (hl_stablehlo_lower_file_with_args) is that refinement here.
  HL_RETURN_IF_ERROR(hl_bc_read(ex->module, ex->module_size, path, bc));
  hl_status_t st = hl_vhlo_to_mlir(bc, file);
  if (!st && ex->platform_count > 1) {
    st = bind_platform_index(file, path, cpu);
    if (st) hl_mlir_file_deinit(file);
  }
  if (!st && notes) {
    st = hl_jax_export_annotate(ex, file, notes);
    if (st) hl_mlir_file_deinit(file);
  }
  if (st) hl_bc_module_deinit(bc);
  return st;
}

hl_status_t hl_jax_export_entry_types(const uint8_t *data, size_t size, const char *path,
                                      hl_shape_t **out_types, int *out_count) {
  *out_types = NULL;
  *out_count = 0;
  hl_jax_export_t ex;
  hl_bc_module_t bc;
  hl_mlir_file_t file;
  HL_RETURN_IF_ERROR(decode_for_cpu(data, size, path, &ex, &bc, &file, NULL));
  hl_status_t st = hl_stablehlo_file_entry_types(&file, path, out_types, out_count);
  hl_mlir_file_deinit(&file);
  hl_bc_module_deinit(&bc);
  return st;
}

hl_status_t hl_jax_export_load_with_args(const uint8_t *data, size_t size, const char *path,
                                         hl_literal_t *const *args, int arg_count,
                                         hl_module_t **out_module, bool *out_needs_args) {
  *out_module = NULL;
  if (out_needs_args) *out_needs_args = false;
  hl_jax_export_t ex;
  hl_bc_module_t bc;
  hl_mlir_file_t file;
  hl_jax_annotations_t notes;
  HL_RETURN_IF_ERROR(decode_for_cpu(data, size, path, &ex, &bc, &file, &notes));
  if (file.has_dynamic_shapes && arg_count < 0 && out_needs_args) *out_needs_args = true;
  hl_status_t st = hl_stablehlo_lower_file_with_args(&file, path, args, arg_count, out_module);
  hl_mlir_file_deinit(&file);
  hl_bc_module_deinit(&bc);
  hl_module_t *m = st ? NULL : *out_module;
  // JAX runs an export on nr_devices devices as that many SPMD partitions of
  // one replica; its older modules do not state the grid.
  if (m && !m->replica_count && !m->num_partitions && ex.nr_devices > 1) {
    m->replica_count = 1;
    m->num_partitions = ex.nr_devices;
  }
  int64_t replicas = !m ? 1 : m->replica_count ? m->replica_count : 1;
  int64_t partitions = !m ? 1 : m->num_partitions ? m->num_partitions : 1;
  if (m && replicas * partitions != ex.nr_devices)
    st = HL_INVALID("%s: jax.export: nr_devices %d, but the module runs on %lld replicas x %lld "
                    "partitions", path, ex.nr_devices, (long long)replicas, (long long)partitions);
  if (m && !st && m->entry) st = hl_jax_export_check_shardings(&ex, &notes, m);
  hl_jax_annotations_deinit(&notes);
  if (st && m) {
    hl_module_destroy(m);
    *out_module = NULL;
  }
  return st;
}
