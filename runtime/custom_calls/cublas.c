// cuBLAS targets of XLA's GPU compiler, replayed on the CPU: `__cublas$gemm`
// and `__cublas$lt$matmul` (xla/service/gpu/transforms/gemm_rewriter.cc).
//
// The backend_config is a GpuBackendConfig in JSON, its gemm_backend_config
// (older dumps: the GemmBackendConfig itself) giving alpha_real / alpha_imag,
// beta, dot_dimension_numbers and the epilogue. Operands: lhs, rhs, then c
// when beta != 0, then the bias vector when the epilogue has BIAS. Result: d,
// or the tuple (d, workspace) whose u8 / s8 workspace is left zero. The value
// is the logical
//   d = act(alpha * dot(lhs, rhs) + beta * c + bias[last dim of d])
// computed in f32 (f64 / complex for those types) and rounded once, as cuBLAS
// does in its compute type; the layouts only tell cuBLAS how to read memory.
#include <complex.h>
#include <math.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/custom_calls/json.h"
#include "runtime/custom_calls/registry.h"
#include "runtime/kernels/element_access.h"

typedef enum epilogue { EPI_DEFAULT, EPI_BIAS, EPI_RELU, EPI_BIAS_RELU, EPI_GELU, EPI_BIAS_GELU } epilogue_t;

static const struct {
  const char *name;
  epilogue_t e;
} kEpilogues[] = {
    {"DEFAULT", EPI_DEFAULT}, {"BIAS", EPI_BIAS}, {"RELU", EPI_RELU},
    {"BIAS_RELU", EPI_BIAS_RELU}, {"GELU", EPI_GELU}, {"BIAS_GELU", EPI_BIAS_GELU},
};

static bool has_bias(epilogue_t e) { return e == EPI_BIAS || e == EPI_BIAS_RELU || e == EPI_BIAS_GELU; }

// cublasLt's GELU: the tanh approximation XLA's rewriter matches.
static double gelu(double x) {
  return 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

static double activate(epilogue_t e, double x) {
  if (e == EPI_RELU || e == EPI_BIAS_RELU) return x > 0 ? x : 0;
  if (e == EPI_GELU || e == EPI_BIAS_GELU) return gelu(x);
  return x;
}

static hl_status_t dims_list(const hl_custom_call_t *call, const hl_json_t *dn, const char *key,
                             int64_t *buf, hl_i64_list_t *out) {
  const hl_json_t *a = hl_json_get(dn, key);
  out->n = 0;
  out->v = buf;
  if (!a) return NULL;  // proto3 JSON leaves empty lists out
  if (a->kind != HL_JSON_ARRAY || a->count > HL_MAX_RANK)
    return HL_INVALID("%s: custom-call \"%s\" dot_dimension_numbers.%s is not a list of "
                      "dimensions", hl_instruction_location(call->inst), call->name, key);
  for (int i = 0; i < a->count; i++) {
    double d;
    if (!hl_json_number(&a->items[i], &d))
      return HL_INVALID("%s: custom-call \"%s\" dot_dimension_numbers.%s[%d] is not a number",
                        hl_instruction_location(call->inst), call->name, key, i);
    buf[i] = (int64_t)d;
  }
  out->n = a->count;
  return NULL;
}

typedef struct gemm_config {
  double alpha_re, alpha_im, beta;
  epilogue_t epilogue;
  int64_t dims[4][HL_MAX_RANK];
  hl_dot_dims_t dot;
} gemm_config_t;

static hl_status_t read_config(const hl_custom_call_t *call, const hl_json_t *root,
                               gemm_config_t *c) {
  const char *loc = hl_instruction_location(call->inst);
  const hl_json_t *g = hl_json_get(root, "gemm_backend_config");
  if (!g) g = root;
  if (!hl_json_number(hl_json_get(g, "alpha_real"), &c->alpha_re))
    return HL_INVALID("%s: custom-call \"%s\" backend_config has no gemm_backend_config."
                      "alpha_real", loc, call->name);
  if (!hl_json_number(hl_json_get(g, "alpha_imag"), &c->alpha_im)) c->alpha_im = 0;
  if (!hl_json_number(hl_json_get(g, "beta"), &c->beta)) c->beta = 0;
  const hl_json_t *e = hl_json_get(g, "epilogue");
  c->epilogue = EPI_DEFAULT;
  if (e) {
    bool known = false;
    for (size_t i = 0; e->kind == HL_JSON_STRING && i < sizeof(kEpilogues) / sizeof(kEpilogues[0]); i++)
      if (strcmp(e->string, kEpilogues[i].name) == 0) {
        c->epilogue = kEpilogues[i].e;
        known = true;
      }
    if (!known)
      return HL_UNIMPL("%s: custom-call \"%s\" epilogue %s is not supported (supported: DEFAULT, "
                       "BIAS, RELU, BIAS_RELU, GELU, BIAS_GELU)", loc, call->name,
                       e->kind == HL_JSON_STRING ? e->string : "(not a string)");
  }
  const hl_json_t *dn = hl_json_get(g, "dot_dimension_numbers");
  if (!dn)
    return HL_INVALID("%s: custom-call \"%s\" backend_config has no dot_dimension_numbers", loc,
                      call->name);
  HL_RETURN_IF_ERROR(dims_list(call, dn, "lhs_contracting_dimensions", c->dims[0],
                               &c->dot.lhs_contracting_dimensions));
  HL_RETURN_IF_ERROR(dims_list(call, dn, "rhs_contracting_dimensions", c->dims[1],
                               &c->dot.rhs_contracting_dimensions));
  HL_RETURN_IF_ERROR(dims_list(call, dn, "lhs_batch_dimensions", c->dims[2],
                               &c->dot.lhs_batch_dimensions));
  HL_RETURN_IF_ERROR(dims_list(call, dn, "rhs_batch_dimensions", c->dims[3],
                               &c->dot.rhs_batch_dimensions));
  return NULL;
}

static hl_status_t run_gemm(const hl_custom_call_t *call, const gemm_config_t *c,
                            hl_literal_t **out) {
  const hl_instruction_t *inst = call->inst;
  const char *loc = hl_instruction_location(inst);
  const hl_shape_t *rs = &inst->shape;
  const hl_shape_t *ds = rs->dtype == HL_TUPLE ? &rs->tuple[0] : rs;
  if (rs->dtype == HL_TUPLE) {
    bool ok = rs->tuple_count == 2 && (rs->tuple[1].dtype == HL_S8 || rs->tuple[1].dtype == HL_U8);
    if (!ok)
      return HL_UNIMPL("%s: custom-call \"%s\" result %s: only d or (d, s8/u8 workspace) is "
                       "supported (auxiliary outputs are not)", loc, call->name, HL_SHAPE_STR(rs));
  }
  bool with_c = c->beta != 0, with_bias = has_bias(c->epilogue);
  int want = 2 + with_c + with_bias;
  if (inst->operand_count != want)
    return HL_INVALID("%s: custom-call \"%s\" with beta=%g and epilogue %s takes %d operands, "
                      "got %d", loc, call->name, c->beta, kEpilogues[c->epilogue].name, want,
                      inst->operand_count);
  hl_dtype_t ot = ds->dtype;
  bool cplx = hl_dtype_is_complex(ot);
  if (cplx && c->epilogue != EPI_DEFAULT)
    return HL_UNIMPL("%s: custom-call \"%s\": epilogue %s on complex %s", loc, call->name,
                     kEpilogues[c->epilogue].name, hl_dtype_name(ot));
  if (!cplx && c->alpha_im != 0)
    return HL_INVALID("%s: custom-call \"%s\": alpha_imag=%g on a real result", loc, call->name,
                      c->alpha_im);
  const hl_literal_t *cl = with_c ? call->operands[2] : NULL;
  const hl_literal_t *bias = with_bias ? call->operands[2 + with_c] : NULL;
  if (cl && !hl_shape_same_dims(&cl->shape, ds))
    return HL_INVALID("%s: custom-call \"%s\" operand c is %s, expected the dims of %s", loc,
                      call->name, HL_SHAPE_STR(&cl->shape), HL_SHAPE_STR(ds));
  int64_t cols = ds->rank ? ds->dims[ds->rank - 1] : 1;
  if (bias && (bias->shape.rank != 1 || bias->shape.dims[0] != cols))
    return HL_INVALID("%s: custom-call \"%s\" bias is %s, expected a vector of %lld (d's last "
                      "dimension)", loc, call->name, HL_SHAPE_STR(&bias->shape), (long long)cols);
  if (bias && ds->has_layout && !hl_shape_has_default_layout(ds))
    return HL_UNIMPL("%s: custom-call \"%s\": a bias vector with the result layout %s (only the "
                     "row-major layout is supported)", loc, call->name, HL_SHAPE_STR(ds));

  // dot into the compute type: f32 for the narrow floats, else the result type.
  hl_instruction_t tmp = *inst;
  tmp.opcode = HL_OP_DOT;
  tmp.operand_count = 2;
  tmp.shape = *ds;
  tmp.shape.has_layout = false;
  if (!cplx && ot != HL_F64) tmp.shape.dtype = HL_F32;
  tmp.attrs.has_dot_dimension_numbers = true;
  tmp.attrs.dot_dimension_numbers = c->dot;
  hl_literal_t *acc = NULL, *d = NULL;
  HL_RETURN_IF_ERROR_CTX(hl_kernel_dot(call->ctx, &tmp, call->operands, &acc),
                         "%s: custom-call \"%s\"", loc, call->name);
  hl_status_t st = NULL;
  int64_t n = hl_literal_element_count(acc);
  if (cplx) {
    d = acc;
    acc = NULL;
    double complex alpha = c->alpha_re + c->alpha_im * I;
    for (int64_t i = 0; i < n; i++) {
      double complex v, cv = 0;
      if (ot == HL_C64) v = ((float complex *)d->data)[i];
      else v = ((double complex *)d->data)[i];
      if (cl) cv = ot == HL_C64 ? ((const float complex *)cl->data)[i]
                                : ((const double complex *)cl->data)[i];
      v = alpha * v + c->beta * cv;
      if (ot == HL_C64) ((float complex *)d->data)[i] = (float complex)v;
      else ((double complex *)d->data)[i] = v;
    }
  } else {
    hl_shape_t s = *ds;
    st = hl_literal_create_uninitialized(&s, &d);
    for (int64_t i = 0; !st && i < n; i++) {
      double v = c->alpha_re * hl_literal_get_f64(acc, i);
      if (cl) v += c->beta * hl_literal_get_f64(cl, i);
      if (bias) v += hl_literal_get_f64(bias, i % cols);
      if (ot == HL_F32) v = (float)v;  // f32 compute type
      hl_literal_set_f64(d, i, activate(c->epilogue, v));
    }
  }
  hl_literal_release(acc);
  if (st) {
    hl_literal_release(d);
    return st;
  }
  if (rs->dtype != HL_TUPLE) {
    *out = d;
    return NULL;
  }
  hl_literal_t *parts[2] = {d, NULL};
  st = hl_literal_create(&rs->tuple[1], &parts[1]);  // workspace: zero
  if (!st) st = hl_literal_create_tuple(parts, 2, out);
  hl_literal_release(parts[0]);
  hl_literal_release(parts[1]);
  return st;
}

static hl_status_t cublas_gemm(const hl_custom_call_t *call, hl_literal_t **out) {
  *out = NULL;
  const char *cfg = call->inst->attrs.backend_config;
  if (!cfg || !*cfg)
    return HL_INVALID("%s: custom-call \"%s\" needs its backend_config (gemm_backend_config)",
                      hl_instruction_location(call->inst), call->name);
  hl_json_t root;
  HL_RETURN_IF_ERROR_CTX(hl_json_parse(cfg, &root), "%s: custom-call \"%s\"",
                         hl_instruction_location(call->inst), call->name);
  gemm_config_t c;
  memset(&c, 0, sizeof(c));
  hl_status_t st = read_config(call, &root, &c);
  if (!st) st = run_gemm(call, &c, out);
  hl_json_free(&root);
  return st;
}

const hl_custom_call_target_t hl_custom_calls_cublas[] = {
    {"__cublas$gemm", cublas_gemm, NULL},
    {"__cublas$lt$matmul", cublas_gemm, NULL},
    {NULL, NULL, NULL},
};
