// jax.export's flatbuffer (jax_export.h). Field slots of table Exported, in
// schema order (serialization.fbs): the vtable entry of field k is slot k.
#include "runtime/bytecode/jax_export.h"

#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/bytecode/vhlo.h"
#include "runtime/stablehlo/stablehlo.h"

enum {
  kSerializationVersion = 0, kFunctionName = 1, kInAvals = 3, kOutAvals = 5,
  kNrDevicesShort = 6, kPlatforms = 9, kOrderedEffects = 10, kModule = 13,
  kCallingConvention = 14, kKeptVarIdx = 15, kUsesGlobalConstants = 16, kNrDevices = 18,
};

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
  }
  if (!field(&b, pos, kUsesGlobalConstants, &at)) return BAD("bad root table");
  out->uses_global_constants = at && at < size && data[at] != 0;
  if (!field(&b, pos, kModule, &at) || !at || !vector(&b, at, 1, &v, &n))
    return BAD("no mlir_module_serialized");
  out->module = data + v;
  out->module_size = n;
  return NULL;
#undef BAD
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
  if (b->arg_count < 1 || main->operand_type_count < 1 || main->operand_types[0].rank != 0 ||
      main->operand_types[0].dtype != HL_S32)
    return HL_INVALID("%s: jax.export: a multi-platform export's @main must take the platform "
                      "index (tensor<i32>) first", path);
  hl_mlir_op_t *ops = hl_realloc(b->ops, ((size_t)b->op_count + 1) * sizeof(*ops));
  if (!ops) return HL_OOM();
  b->ops = ops;
  memmove(&ops[1], &ops[0], (size_t)b->op_count * sizeof(*ops));
  b->op_count++;
  hl_mlir_op_t *c = &ops[0];
  memset(c, 0, sizeof(*c));
  int32_t *value = hl_malloc(sizeof(int32_t));
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
  *value = index;
  c->generic = c->has_function_type = true;
  c->result_names[0] = b->arg_names[0];  // the argument's uses now read the constant
  c->result_counts[0] = 1;
  c->result_group_count = c->result_count = c->result_type_count = 1;
  c->result_types[0] = hl_shape_scalar(HL_S32);
  c->attr_count = 1;
  c->attrs[0].kind = HL_MATTR_DENSE;
  c->attrs[0].has_type = true;
  c->attrs[0].type = hl_shape_scalar(HL_S32);
  c->attrs[0].blob = (const uint8_t *)value;
  c->attrs[0].blob_len = sizeof(int32_t);
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
static hl_status_t decode_for_cpu(const uint8_t *data, size_t size, const char *path,
                                  hl_jax_export_t *ex, hl_bc_module_t *bc, hl_mlir_file_t *file) {
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
  if (ex->uses_global_constants)
    return HL_UNIMPL("%s: jax.export: exports using global constants (shape polymorphism "
                     "dimension arguments) are not supported", path);
  HL_RETURN_IF_ERROR(hl_bc_read(ex->module, ex->module_size, path, bc));
  hl_status_t st = hl_vhlo_to_mlir(bc, file);
  if (!st && ex->platform_count > 1) {
    st = bind_platform_index(file, path, cpu);
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
  HL_RETURN_IF_ERROR(decode_for_cpu(data, size, path, &ex, &bc, &file));
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
  HL_RETURN_IF_ERROR(decode_for_cpu(data, size, path, &ex, &bc, &file));
  if (file.has_dynamic_shapes && arg_count < 0 && out_needs_args) *out_needs_args = true;
  hl_status_t st = hl_stablehlo_lower_file_with_args(&file, path, args, arg_count, out_module);
  hl_mlir_file_deinit(&file);
  hl_bc_module_deinit(&bc);
  int64_t replicas = st ? 1 : (*out_module)->replica_count ? (*out_module)->replica_count : 1;
  int64_t partitions = st ? 1 : (*out_module)->num_partitions ? (*out_module)->num_partitions : 1;
  if (!st && replicas * partitions != ex.nr_devices) {
    st = HL_INVALID("%s: jax.export: nr_devices %d, but the module runs on %lld replicas x %lld "
                    "partitions", path, ex.nr_devices, (long long)replicas, (long long)partitions);
    hl_module_destroy(*out_module);
    *out_module = NULL;
  }
  return st;
}
