// The StableHLO test dialect's checks (check.expect_eq, expect_almost_eq,
// expect_close, custom_call @check.*), lowered to side-effecting custom-calls
// "check.<name>" by runtime/stablehlo/. Semantics of upstream's interpreter
// (stablehlo/tests/CheckOps.cpp): equality (NaN equals NaN), |a - e| <=
// tolerance, and ULP distance within [min_ulp, max_ulp]. backend_config
// carries "tolerance=..;min_ulp=..;max_ulp=..". A failure is an error naming
// the check, the function and position, the first differing index, and both values.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>

#include "runtime/base/minifloat.h"
#include "runtime/base/npy.h"
#include "runtime/base/strbuf.h"
#include "runtime/kernels/check.h"
#include "runtime/kernels/kernel.h"

typedef struct check_config {
  double tolerance;
  long long min_ulp, max_ulp;
} check_config_t;

static check_config_t parse_config(const char *s) {
  check_config_t c = {0.001, 0, 1};
  if (!s) return c;
  const char *t = strstr(s, "tolerance=");
  if (t) c.tolerance = strtod(t + 10, NULL);
  t = strstr(s, "min_ulp=");
  if (t) c.min_ulp = strtoll(t + 8, NULL, 10);
  t = strstr(s, "max_ulp=");
  if (t) c.max_ulp = strtoll(t + 8, NULL, 10);
  return c;
}

static uint64_t raw_bits(const hl_literal_t *l, int64_t i, int part, int *out_bits) {
  hl_dtype_t t = l->shape.dtype;
  size_t size = hl_dtype_is_complex(t) ? hl_dtype_size(t) / 2 : hl_dtype_size(t);
  uint64_t v = 0;
  memcpy(&v, (const uint8_t *)l->data + ((size_t)i * (hl_dtype_is_complex(t) ? 2 : 1) + (size_t)part) * size,
         size);
  *out_bits = hl_dtype_is_complex(t) ? (int)size * 8 : hl_dtype_bit_width(t);
  return v;
}

static double part_value(const hl_literal_t *l, int64_t i, int part) {
  hl_dtype_t t = l->shape.dtype;
  if (t == HL_C64) return ((const float *)l->data)[2 * i + part];
  if (t == HL_C128) return ((const double *)l->data)[2 * i + part];
  return hl_literal_get_f64(l, i);
}

// Distance in units in the last place: bit patterns mapped onto a line
// ordered like the values (sign-magnitude -> two's complement).
static uint64_t ulp_distance(uint64_t a, uint64_t b, int bits) {
  uint64_t sign = UINT64_C(1) << (bits - 1);
  int64_t oa = (a & sign) ? -(int64_t)(a & ~sign) : (int64_t)a;
  int64_t ob = (b & sign) ? -(int64_t)(b & ~sign) : (int64_t)b;
  return oa > ob ? (uint64_t)(oa - ob) : (uint64_t)(ob - oa);
}

static bool element_ok(const char *check, const check_config_t *cfg, const hl_literal_t *a,
                       const hl_literal_t *e, int64_t i) {
  hl_dtype_t t = a->shape.dtype;
  bool is_float = hl_dtype_is_float(t) || hl_dtype_is_complex(t);
  if (!is_float) {
    size_t size = hl_dtype_size(t);
    return memcmp((const uint8_t *)a->data + (size_t)i * size,
                  (const uint8_t *)e->data + (size_t)i * size, size) == 0;
  }
  int parts = hl_dtype_is_complex(t) ? 2 : 1;
  for (int p = 0; p < parts; p++) {
    double x = part_value(a, i, p), y = part_value(e, i, p);
    if (isnan(x) || isnan(y)) {
      if (isnan(x) != isnan(y)) return false;
      continue;
    }
    if (strcmp(check, "check.expect_almost_eq") == 0) {
      if (x == y) continue;  // equal infinities
      if (!(fabs(x - y) <= cfg->tolerance)) return false;
    } else if (strcmp(check, "check.expect_close") == 0) {
      int bits;
      uint64_t bx = raw_bits(a, i, p, &bits), by = raw_bits(e, i, p, &bits);
      uint64_t d = x == y ? 0 : ulp_distance(bx, by, bits);
      if (d < (uint64_t)cfg->min_ulp || d > (uint64_t)cfg->max_ulp) return false;
    } else if (x != y) {
      return false;
    }
  }
  return true;
}

static void print_index(const hl_shape_t *s, int64_t flat, hl_strbuf_t *sb) {
  int64_t idx[HL_MAX_RANK];
  for (int d = s->rank - 1; d >= 0; d--) {
    idx[d] = s->dims[d] ? flat % s->dims[d] : 0;
    flat = s->dims[d] ? flat / s->dims[d] : 0;
  }
  hl_strbuf_append_char(sb, '[');
  for (int d = 0; d < s->rank; d++) hl_strbuf_appendf(sb, d ? ", %lld" : "%lld", (long long)idx[d]);
  hl_strbuf_append_char(sb, ']');
}

// interpreter.probe / check.expect_serialized_eq: the probed tensors are .npy
// files <dir>/replica<r>_partition<p>/<probe_id>_<k>.npy, k counting the
// probe's executions (a probe in a loop writes one per iteration). <dir> is
// hlo-launch's --probe-output-dir, handed to every rank as
// HLO_PROBE_OUTPUT_DIR (kernels see no launcher options).
static hl_status_t probe_path(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                              const char *id, long long k, char *out, size_t n) {
  const char *dir = getenv("HLO_PROBE_OUTPUT_DIR");
  if (!dir || !*dir)
    return HL_INVALID("%s: interpreter.probe / check.expect_serialized_eq need a probe "
                      "directory (hlo-launch --probe-output-dir DIR)", hl_instruction_location(inst));
  const hl_exec_options_t *o = hl_kernel_options(ctx);
  int len = snprintf(out, n, "%s/replica%lld_partition%lld", dir, (long long)o->replica_id,
                     (long long)o->partition_id);
  mkdir(dir, 0777);
  mkdir(out, 0777);
  // The id in the file name with '/' and '%' escaped as %2F and %25.
  char esc[768];
  size_t e = 0;
  for (const char *s = id; *s && e + 4 < sizeof(esc); s++) {
    if (*s == '/' || *s == '%') e += (size_t)snprintf(esc + e, sizeof(esc) - e, "%%%02X", *s);
    else esc[e++] = *s;
  }
  esc[e] = 0;
  if (k >= 0) snprintf(out + len, n - (size_t)len, "/%s_%lld.npy", esc, k);
  return NULL;
}

static void config_string(const char *config, const char *key, char *out, size_t n) {
  out[0] = 0;
  const char *s = config ? strstr(config, key) : NULL;
  if (!s) return;
  s += strlen(key);
  size_t i = 0;
  while (s[i] && s[i] != ';' && i + 1 < n) {
    out[i] = s[i];
    i++;
  }
  out[i] = 0;
}

static hl_status_t check_values(const hl_instruction_t *inst, const char *check,
                                const hl_literal_t *a, const hl_literal_t *e, hl_literal_t **out);

hl_status_t hl_kernel_probe(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                            hl_literal_t *const *operands, hl_literal_t **out) {
  char id[256], path[4096];
  config_string(inst->attrs.backend_config, "probe_id=", id, sizeof(id));
  struct stat sb;
  long long k = 0;
  do {
    HL_RETURN_IF_ERROR(probe_path(ctx, inst, id, k++, path, sizeof(path)));
  } while (stat(path, &sb) == 0);
  HL_RETURN_IF_ERROR_CTX(hl_npy_write_file(path, operands[0]), "%s: interpreter.probe",
                         hl_instruction_location(inst));
  *out = hl_literal_retain(operands[0]);
  return NULL;
}

static hl_status_t serialized_eq(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                 hl_literal_t *const *operands, hl_literal_t **expected) {
  char id[256], iter[32], path[4096];
  config_string(inst->attrs.backend_config, "probe_id=", id, sizeof(id));
  config_string(inst->attrs.backend_config, "iteration=", iter, sizeof(iter));
  HL_RETURN_IF_ERROR(probe_path(ctx, inst, id, atoll(iter), path, sizeof(path)));
  HL_RETURN_IF_ERROR_CTX(hl_npy_read_file(path, &operands[0]->shape, "the probed tensor", expected),
                         "%s: check.expect_serialized_eq", hl_instruction_location(inst));
  return NULL;
}

hl_status_t hl_kernel_check(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                            hl_literal_t *const *operands, hl_literal_t **out) {
  (void)ctx;
  *out = NULL;
  const char *check = inst->attrs.custom_call_target;
  static const char *const kChecks[] = {"check.expect_eq", "check.expect_almost_eq",
                                        "check.expect_close", "check.expect_serialized_eq", NULL};
  bool known = false;
  for (int k = 0; kChecks[k]; k++) known = known || strcmp(check, kChecks[k]) == 0;
  if (!known)
    return HL_UNIMPL("%s: %s is not supported (supported: check.expect_eq, expect_eq_const, "
                     "expect_almost_eq(_const), expect_close, custom_call @check.eq / "
                     "@check.expect_*)", hl_instruction_location(inst), check);
  hl_literal_t *probed = NULL;
  if (strcmp(check, "check.expect_serialized_eq") == 0) {
    if (inst->operand_count != 1)
      return HL_INVALID("%s: %s takes 1 operand", hl_instruction_location(inst), check);
    HL_RETURN_IF_ERROR(serialized_eq(ctx, inst, operands, &probed));
    check = "check.expect_eq";  // bitwise comparison with what the probe wrote
  } else if (inst->operand_count != 2) {
    return HL_INVALID("%s: %s takes 2 operands", hl_instruction_location(inst), check);
  }
  const hl_literal_t *a = operands[0], *e = probed ? probed : operands[1];
  hl_status_t result = check_values(inst, check, a, e, out);
  hl_literal_release(probed);
  return result;
}

static hl_status_t check_values(const hl_instruction_t *inst, const char *check,
                                const hl_literal_t *a, const hl_literal_t *e, hl_literal_t **out) {
  if (!hl_shape_is_array(&a->shape) || !hl_shape_equal(&a->shape, &e->shape))
    return HL_INVALID("%s: %s compares %s with %s", hl_instruction_location(inst), check,
                      hl_shape_debug_string(&a->shape), hl_shape_debug_string(&e->shape));
  check_config_t cfg = parse_config(inst->attrs.backend_config);
  int64_t n = hl_literal_element_count(a);
  for (int64_t i = 0; i < n; i++) {
    if (element_ok(check, &cfg, a, e, i)) continue;
    hl_strbuf_t sb;
    hl_strbuf_init(&sb);
    hl_strbuf_appendf(&sb, "%s failed in %s: element ", check, hl_instruction_location(inst));
    print_index(&a->shape, i, &sb);
    hl_strbuf_append(&sb, " is ");
    hl_literal_print_element(a, i, &sb);
    hl_strbuf_append(&sb, ", expected ");
    hl_literal_print_element(e, i, &sb);
    if (strcmp(check, "check.expect_almost_eq") == 0)
      hl_strbuf_appendf(&sb, " (tolerance %g)", cfg.tolerance);
    if (strcmp(check, "check.expect_close") == 0)
      hl_strbuf_appendf(&sb, " (ULP distance allowed %lld..%lld)", cfg.min_ulp, cfg.max_ulp);
    hl_status_t st = HL_INVALID("%s", hl_strbuf_cstr(&sb));
    hl_strbuf_deinit(&sb);
    return st;
  }
  hl_shape_t empty;
  HL_RETURN_IF_ERROR(hl_shape_tuple(NULL, 0, &empty));
  hl_status_t st = hl_literal_create(&empty, out);
  hl_shape_deinit(&empty);
  return st;
}
