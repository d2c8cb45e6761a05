// A stablehlo.custom_call's attributes into the fields the HLO path fills, so
// one custom-call runtime (runtime/custom_calls) serves both front ends:
//   api_version                -> custom_call_api_version (StableHLO's default 1)
//   mhlo.backend_config = {..} -> backend_config as MLIR dictionary text, the
//                                 form HLO text writes for typed-FFI calls
//                                 (api_version 4)
//   backend_config = "..."     -> backend_config (api_version 1-3: opaque bytes)
//   operand_layouts            -> operand_layout_constraints (operand shapes with layouts)
//   result_layouts             -> the layouts of the result shape
//   output_operand_aliases     -> output_operand_aliases
//   called_computations        -> the instruction's called computations
// Anything these cannot hold is an error naming the attribute.
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/base/strbuf.h"
#include "runtime/stablehlo/lower_internal.h"
#include "runtime/stablehlo/mlir_dense.h"

#define ERR(...) hl_lower_op_error(L, op, __VA_ARGS__)

// The MLIR spelling of the scalar types XLA's FFI attributes have (ffi_call_attrs.c).
static const char *ffi_type_name(hl_dtype_t t) {
  switch (t) {
    case HL_PRED: return "i1";
    case HL_S8: return "i8";
    case HL_S16: return "i16";
    case HL_S32: return "i32";
    case HL_S64: return "i64";
    case HL_U8: return "ui8";
    case HL_U16: return "ui16";
    case HL_U32: return "ui32";
    case HL_U64: return "ui64";
    case HL_F32: return "f32";
    case HL_F64: return "f64";
    default: return NULL;
  }
}

static bool is_unsigned(hl_dtype_t t) {
  return t == HL_U8 || t == HL_U16 || t == HL_U32 || t == HL_U64;
}

static void append_string(hl_strbuf_t *sb, const char *s, size_t n) {
  hl_strbuf_append_char(sb, '"');
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\')
      hl_strbuf_appendf(sb, "\\%02X", c);  // MLIR's \XX escape
    else
      hl_strbuf_append_char(sb, (char)c);
  }
  hl_strbuf_append_char(sb, '"');
}

// One number of type t (from an INT or FLOAT attribute).
static bool append_number(hl_strbuf_t *sb, const hl_mlir_attr_t *a, hl_dtype_t t) {
  bool is_float = t == HL_F32 || t == HL_F64;
  if (a->kind == HL_MATTR_BOOL) {
    hl_strbuf_append(sb, a->b ? "1" : "0");
    return t == HL_PRED;
  }
  if (a->kind == HL_MATTR_INT && !is_float) {
    if (is_unsigned(t))
      hl_strbuf_appendf(sb, "%" PRIu64, a->u ? a->u : (uint64_t)a->i);
    else
      hl_strbuf_appendf(sb, "%" PRId64, a->i);
    return true;
  }
  double v = a->kind == HL_MATTR_FLOAT ? a->f : a->kind == HL_MATTR_INT ? (double)a->i : NAN;
  if (!is_float || !isfinite(v)) return false;
  // An f32 attribute is the nearest float to its decimal text (MLIR's
  // parser), what a handler receives and what bytecode stores.
  if (t == HL_F32) v = (double)(float)v;
  char num[40];
  snprintf(num, sizeof(num), "%.17g", v);
  hl_strbuf_append(sb, num);
  if (!strpbrk(num, ".e")) hl_strbuf_append(sb, ".0");
  return true;
}

static hl_status_t append_value(hl_lower_t *L, const hl_mlir_op_t *op, const char *key,
                                const hl_mlir_attr_t *a, hl_strbuf_t *sb);

static hl_status_t append_dict(hl_lower_t *L, const hl_mlir_op_t *op, const hl_mlir_attr_t *d,
                               hl_strbuf_t *sb) {
  hl_strbuf_append_char(sb, '{');
  for (int i = 0; i < d->n; i++) {
    const char *k = d->keys ? d->keys[i] : NULL;
    if (!k) return ERR("mhlo.backend_config holds an entry without a name");
    if (i) hl_strbuf_append(sb, ", ");
    bool plain = k[0] != 0 && strspn(k, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                         "0123456789_.$") == strlen(k);
    if (plain)
      hl_strbuf_append(sb, k);
    else
      append_string(sb, k, strlen(k));
    hl_strbuf_append(sb, " = ");
    HL_RETURN_IF_ERROR(append_value(L, op, k, &d->items[i], sb));
  }
  hl_strbuf_append_char(sb, '}');
  return NULL;
}

static hl_status_t append_value(hl_lower_t *L, const hl_mlir_op_t *op, const char *key,
                                const hl_mlir_attr_t *a, hl_strbuf_t *sb) {
  switch (a->kind) {
    case HL_MATTR_BOOL:
      hl_strbuf_append(sb, a->b ? "true" : "false");
      return NULL;
    case HL_MATTR_STRING:
      append_string(sb, a->s, a->s_len);
      return NULL;
    case HL_MATTR_DICT:
      return append_dict(L, op, a, sb);
    case HL_MATTR_INT:
    case HL_MATTR_FLOAT: {
      hl_dtype_t t = a->has_type ? a->type.dtype : a->kind == HL_MATTR_INT ? HL_S64 : HL_F64;
      const char *tn = a->has_type && a->type.rank == 0 ? ffi_type_name(t) : NULL;
      if (!tn || !append_number(sb, a, t))
        return ERR("mhlo.backend_config attribute %s: a %s of type %s is not a typed-FFI "
                   "attribute (integers i1..i64 / ui8..ui64, f32, f64 finite)", key,
                   a->kind == HL_MATTR_INT ? "integer" : "float",
                   a->has_type ? hl_shape_debug_string(&a->type) : "none");
      hl_strbuf_appendf(sb, " : %s", tn);
      return NULL;
    }
    case HL_MATTR_ARRAY: {
      const char *tn = a->has_type && a->type.rank == 0 ? ffi_type_name(a->type.dtype) : NULL;
      if (!tn)
        return ERR("mhlo.backend_config attribute %s: only dense arrays array<T: ...> of "
                   "integers, booleans, f32 or f64 are typed-FFI attributes", key);
      hl_strbuf_appendf(sb, "array<%s", tn);
      for (int i = 0; i < a->n; i++) {
        hl_strbuf_append(sb, i ? ", " : ": ");
        if (!append_number(sb, &a->items[i], a->type.dtype))
          return ERR("mhlo.backend_config attribute %s: element %d is not a finite %s", key, i,
                     tn);
      }
      hl_strbuf_append_char(sb, '>');
      return NULL;
    }
    default:
      return ERR("mhlo.backend_config attribute %s: this kind of value (a unit, type, symbol, "
                 "dense<...> or dialect attribute) has no typed-FFI form", key);
  }
}

// dense<[1, 0]> : tensor<2xindex> -> minor_to_major of a shape of rank `rank`.
static hl_status_t read_layout(hl_lower_t *L, const hl_mlir_op_t *op, const char *what, int k,
                               const hl_mlir_attr_t *a, const hl_shape_t *of, hl_shape_t *out) {
  if (a->kind != HL_MATTR_DENSE || !a->has_type || a->type.rank != 1)
    return ERR("%s %d is not a dense<...> : tensor<Nxindex>", what, k);
  if (a->type.dims[0] != of->rank)
    return ERR("%s %d has %" PRId64 " entries for %s", what, k, a->type.dims[0],
               hl_shape_debug_string(of));
  hl_literal_t *lit;
  HL_RETURN_IF_ERROR(hl_mlir_dense_literal(L->file, a, &a->type, &lit));
  unsigned seen = 0;
  hl_status_t st = NULL;
  for (int i = 0; i < of->rank && !st; i++) {
    int64_t d = hl_literal_get_s64(lit, i);
    if (d < 0 || d >= of->rank || (seen & (1u << d)))
      st = ERR("%s %d is not a permutation of the dimensions of %s", what, k, hl_shape_debug_string(of));
    else
      out->minor_to_major[i] = d;
    seen |= d >= 0 && d < 32 ? 1u << d : 0;
  }
  hl_literal_release(lit);
  out->has_layout = true;
  return st;
}

static hl_status_t lower_layouts(hl_lower_t *L, const hl_mlir_op_t *op, hl_instruction_t *inst) {
  const hl_mlir_attr_t *ol = hl_mlir_op_attr(op, "operand_layouts");
  const hl_mlir_attr_t *rl = hl_mlir_op_attr(op, "result_layouts");
  hl_attrs_t *a = &inst->attrs;
  if (ol) {
    if (ol->kind != HL_MATTR_ARRAY || ol->n != inst->operand_count)
      return ERR("has operand_layouts for %d operands but %d operands",
                 ol->kind == HL_MATTR_ARRAY ? ol->n : -1, inst->operand_count);
    a->operand_shapes_with_layout = hl_calloc((size_t)ol->n + 1, sizeof(hl_shape_t));
    if (!a->operand_shapes_with_layout) return HL_OOM();
    for (int k = 0; k < ol->n; k++) {
      const hl_shape_t *os = &inst->operands[k]->shape;
      if (!hl_shape_is_array(os)) return ERR("operand %d is %s: operand_layouts need arrays", k, hl_shape_debug_string(os));
      HL_RETURN_IF_ERROR(hl_shape_copy(os, &a->operand_shapes_with_layout[k]));
      a->operand_shapes_with_layout_count = k + 1;
      HL_RETURN_IF_ERROR(read_layout(L, op, "operand_layouts entry", k, &ol->items[k], os,
                                     &a->operand_shapes_with_layout[k]));
    }
  }
  if (rl) {
    hl_shape_t *s = &inst->shape;
    int nr = s->dtype == HL_TUPLE ? s->tuple_count : 1;
    if (rl->kind != HL_MATTR_ARRAY || rl->n != nr)
      return ERR("has result_layouts for %d results but %d results",
                 rl->kind == HL_MATTR_ARRAY ? rl->n : -1, nr);
    for (int k = 0; k < nr; k++) {
      hl_shape_t *r = s->dtype == HL_TUPLE ? &s->tuple[k] : s;
      if (!hl_shape_is_array(r)) return ERR("result %d is %s: result_layouts need arrays", k, hl_shape_debug_string(r));
      HL_RETURN_IF_ERROR(read_layout(L, op, "result_layouts entry", k, &rl->items[k], r, r));
    }
  }
  return NULL;
}

// [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0,
//   operand_tuple_indices = []>, ...]
static hl_status_t lower_aliases(hl_lower_t *L, const hl_mlir_op_t *op, hl_instruction_t *inst) {
  const hl_mlir_attr_t *al = hl_mlir_op_attr(op, "output_operand_aliases");
  if (!al) return NULL;
  if (al->kind != HL_MATTR_ARRAY) return ERR("needs output_operand_aliases as a list");
  if (al->n == 0) return NULL;
  hl_attrs_t *a = &inst->attrs;
  a->output_operand_aliases = hl_calloc((size_t)al->n, sizeof(hl_output_operand_alias_t));
  if (!a->output_operand_aliases) return HL_OOM();
  bool tuple = inst->shape.dtype == HL_TUPLE;
  int nr = tuple ? inst->shape.tuple_count : 1;
  for (int k = 0; k < al->n; k++) {
    const hl_mlir_attr_t *e = &al->items[k];
    const hl_mlir_attr_t *out = hl_mlir_attr_member(e, "output_tuple_indices");
    const hl_mlir_attr_t *opi = hl_mlir_attr_member(e, "operand_index");
    const hl_mlir_attr_t *opt = hl_mlir_attr_member(e, "operand_tuple_indices");
    if (e->kind != HL_MATTR_DIALECT || !opi || opi->kind != HL_MATTR_INT)
      return ERR("output_operand_aliases entry %d is not a #stablehlo.output_operand_alias<...>",
                 k);
    int outn = out && out->kind == HL_MATTR_ARRAY ? out->n : 0;
    if ((opt && opt->kind == HL_MATTR_ARRAY && opt->n > 0) || outn > 1 || (tuple && outn != 1))
      return ERR("output_operand_aliases entry %d: nested tuple indices are not supported "
                 "(operands and results are arrays)", k);
    int64_t o = outn ? out->items[0].i : 0;
    if (o < 0 || o >= nr || opi->i < 0 || opi->i >= inst->operand_count)
      return ERR("output_operand_aliases entry %d: result %" PRId64 " / operand %" PRId64
                 " out of range", k, o, opi->i);
    const hl_shape_t *rs = tuple ? &inst->shape.tuple[o] : &inst->shape;
    const hl_shape_t *os = &inst->operands[opi->i]->shape;
    if (!hl_shape_equal(rs, os) || rs->dtype != os->dtype)
      return ERR("output_operand_aliases entry %d: result %" PRId64 " is %s but operand %"
                 PRId64 " is %s", k, o, hl_shape_debug_string(rs), opi->i, hl_shape_debug_string(os));
    a->output_operand_aliases[k].output = (int)o;
    a->output_operand_aliases[k].operand = (int)opi->i;
    a->output_operand_alias_count = k + 1;
  }
  return NULL;
}

static hl_status_t lower_called(hl_lower_t *L, const hl_mlir_op_t *op, hl_instruction_t *inst) {
  const hl_mlir_attr_t *cc = hl_mlir_op_attr(op, "called_computations");
  if (!cc) return NULL;
  if (cc->kind != HL_MATTR_ARRAY) return ERR("needs called_computations as a list of @symbols");
  if (cc->n == 0) return NULL;
  hl_computation_t **comps = hl_calloc((size_t)cc->n, sizeof(hl_computation_t *));
  if (!comps) return HL_OOM();
  hl_status_t st = NULL;
  for (int k = 0; k < cc->n && !st; k++) {
    if (cc->items[k].kind != HL_MATTR_SYMBOL)
      st = ERR("called_computations entry %d is not an @symbol", k);
    else
      st = hl_lower_function(L, cc->items[k].s, op, &comps[k]);
  }
  if (!st) st = hl_instruction_set_called(inst, comps, cc->n);
  hl_free(comps);
  return st;
}

hl_status_t hl_lower_custom_call_attrs(hl_lower_t *L, const hl_mlir_op_t *op,
                                       hl_instruction_t *inst) {
  hl_attrs_t *a = &inst->attrs;
  const hl_mlir_attr_t *v = hl_mlir_op_attr(op, "api_version");
  a->custom_call_api_version = 1;  // API_VERSION_ORIGINAL, StableHLO's default
  if (v) {
    if (v->kind != HL_MATTR_INT || v->i < 0 || v->i > 4)
      return ERR("has api_version %" PRId64 "; known: 0..4 (4 = typed FFI)",
                 v->kind == HL_MATTR_INT ? v->i : -1);
    a->custom_call_api_version = (int)v->i;
  }
  // Typed-FFI attributes: JAX writes them as the dictionary mhlo.backend_config
  // beside an empty backend_config and api_version 1 (jax/_src/interpreters/
  // mlir.py: the op's own backend_config must be a string there); XLA hands
  // such a call its dictionary as typed-FFI attributes. StableHLO itself also
  // allows backend_config = {...} with api_version 4.
  const hl_mlir_attr_t *bc = hl_mlir_op_attr(op, "mhlo.backend_config");
  const hl_mlir_attr_t *plain = hl_mlir_op_attr(op, "backend_config");
  if (bc && plain && !(plain->kind == HL_MATTR_STRING && plain->s_len == 0))
    return ERR("has both backend_config and mhlo.backend_config");
  if (!bc) bc = plain;
  if (bc && bc->kind == HL_MATTR_DICT) {
    if (a->custom_call_api_version != 1 && a->custom_call_api_version != 4)
      return ERR("has a dictionary backend_config with api_version %d: dictionaries are "
                 "typed-FFI attributes (api_version 4, or 1 as JAX writes it)",
                 a->custom_call_api_version);
    a->custom_call_api_version = 4;
    hl_strbuf_t sb;
    hl_strbuf_init(&sb);
    hl_status_t st = append_dict(L, op, bc, &sb);
    if (!st) {
      a->backend_config = hl_strbuf_take(&sb);
      if (!a->backend_config) st = HL_OOM();
    }
    hl_strbuf_deinit(&sb);
    HL_RETURN_IF_ERROR(st);
  } else if (bc && bc->kind == HL_MATTR_STRING) {
    // Opaque bytes (api_version 1-3). NUL bytes (TPU targets' binary configs)
    // are kept MLIR-escaped: no built-in target reads binary configs, and the
    // text ones fail to parse the escapes rather than read a truncated string.
    if (memchr(bc->s, 0, bc->s_len)) {
      hl_strbuf_t sb;
      hl_strbuf_init(&sb);
      append_string(&sb, bc->s, bc->s_len);
      a->backend_config = hl_strbuf_take(&sb);
      hl_strbuf_deinit(&sb);
    } else {
      a->backend_config = hl_strdup(bc->s);
    }
    if (!a->backend_config) return HL_OOM();
  } else if (bc) {
    return ERR("needs backend_config as a string or (api_version = 4) a dictionary");
  }
  HL_RETURN_IF_ERROR(lower_layouts(L, op, inst));
  HL_RETURN_IF_ERROR(lower_aliases(L, op, inst));
  return lower_called(L, op, inst);
}
