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
//
// GELU_AUX / BIAS_GELU_AUX (gemm_rewriter's FuseGeluActivation) add the
// pre-activation value as result 1: (d, aux[, workspace]).
//
// `__cublas$lt$matmul$f8` (gemm_rewriter's CreateF8CustomCall, run by
// EmitCublasLtMatmulThunkF8): operands a, b (f8), [c when beta != 0], then
// f32 scalars a_scale, b_scale and either
//   (older XLA) c_scale, d_scale [, bias]     or
//   (newer XLA) [bias] [, d_scale when d is f8, last];
// told apart by whether the operand after b_scale is a scalar followed by
// another. d = act(alpha * a_scale * b_scale * dot + beta * c + bias), then for
// an f8 d: * d_scale, saturated to the f8 range (XLA folds the clamp into the
// call) and rounded once. damax_output adds result 1, an f32 scalar holding
// max |act(...)| before d_scale, as cuBLASLt's amax_d. A c_scale other than 1
// is an error (cuBLASLt takes no C scale for a non-f8 C).
#include <complex.h>
#include <math.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/custom_calls/json.h"
#include "runtime/custom_calls/registry.h"
#include "runtime/kernels/element_access.h"

typedef enum epilogue {
  EPI_DEFAULT, EPI_BIAS, EPI_RELU, EPI_BIAS_RELU, EPI_GELU, EPI_BIAS_GELU, EPI_GELU_AUX,
  EPI_BIAS_GELU_AUX,
} epilogue_t;

static const struct {
  const char *name;
  epilogue_t e;
} kEpilogues[] = {
    {"DEFAULT", EPI_DEFAULT}, {"BIAS", EPI_BIAS}, {"RELU", EPI_RELU},
    {"BIAS_RELU", EPI_BIAS_RELU}, {"GELU", EPI_GELU}, {"BIAS_GELU", EPI_BIAS_GELU},
    {"GELU_AUX", EPI_GELU_AUX}, {"BIAS_GELU_AUX", EPI_BIAS_GELU_AUX},
};

static bool has_bias(epilogue_t e) {
  return e == EPI_BIAS || e == EPI_BIAS_RELU || e == EPI_BIAS_GELU || e == EPI_BIAS_GELU_AUX;
}
static bool has_aux(epilogue_t e) { return e == EPI_GELU_AUX || e == EPI_BIAS_GELU_AUX; }

// cublasLt's GELU: the tanh approximation XLA's rewriter matches.
static double gelu(double x) {
  return 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

static double activate(epilogue_t e, double x) {
  if (e == EPI_RELU || e == EPI_BIAS_RELU) return x > 0 ? x : 0;
  if (e == EPI_GELU || e == EPI_BIAS_GELU || has_aux(e)) return gelu(x);
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
  bool damax;  // damax_output (f8)
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
  const hl_json_t *dm = hl_json_get(g, "damax_output");
  c->damax = dm && dm->kind == HL_JSON_BOOL && dm->boolean;
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
                       "BIAS, RELU, BIAS_RELU, GELU, BIAS_GELU, GELU_AUX, BIAS_GELU_AUX)", loc,
                       call->name,
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

static bool is_f8(hl_dtype_t t) {
  return t == HL_F8E4M3FN || t == HL_F8E5M2 || t == HL_F8E4M3FNUZ || t == HL_F8E5M2FNUZ;
}

static bool is_scalar(const hl_literal_t *l) {
  return l->shape.dtype != HL_TUPLE && l->shape.rank == 0;
}

// The operands in their roles; f8 scales are 1 when absent.
typedef struct gemm_operands {
  const hl_literal_t *c, *bias;
  double a_scale, b_scale, d_scale;
} gemm_operands_t;

static hl_status_t scale_of(const hl_custom_call_t *call, const hl_literal_t *l, const char *what,
                            double *out) {
  if (!is_scalar(l) || l->shape.dtype != HL_F32)
    return HL_INVALID("%s: custom-call \"%s\" %s is %s, expected an f32 scalar",
                      hl_instruction_location(call->inst), call->name, what,
                      HL_SHAPE_STR(&l->shape));
  *out = hl_literal_get_f64(l, 0);
  return NULL;
}

static hl_status_t split_operands(const hl_custom_call_t *call, const gemm_config_t *c, bool f8,
                                  hl_dtype_t d_type, gemm_operands_t *o) {
  const hl_instruction_t *inst = call->inst;
  const char *loc = hl_instruction_location(inst);
  bool with_c = c->beta != 0, with_bias = has_bias(c->epilogue);
  int n = inst->operand_count;
  o->c = with_c && n > 2 ? call->operands[2] : NULL;
  o->bias = NULL;
  o->a_scale = o->b_scale = o->d_scale = 1;
  if (!f8) {
    int want = 2 + with_c + with_bias;
    if (n != want)
      return HL_INVALID("%s: custom-call \"%s\" with beta=%g and epilogue %s takes %d operands, "
                        "got %d", loc, call->name, c->beta, kEpilogues[c->epilogue].name, want, n);
    o->bias = with_bias ? call->operands[2 + with_c] : NULL;
    return NULL;
  }
  int si = 2 + with_c;  // a_scale
  if (n < si + 2)
    return HL_INVALID("%s: custom-call \"%s\" takes a, b, %sa_scale, b_scale, ...: got %d operands",
                      loc, call->name, with_c ? "c, " : "", n);
  HL_RETURN_IF_ERROR(scale_of(call, call->operands[si], "a_scale", &o->a_scale));
  HL_RETURN_IF_ERROR(scale_of(call, call->operands[si + 1], "b_scale", &o->b_scale));
  int rest = n - si - 2;
  bool older = rest >= 2 && is_scalar(call->operands[si + 2]) && is_scalar(call->operands[si + 3]);
  if (older) {  // c_scale, d_scale [, bias]
    if (rest != 2 + with_bias)
      return HL_INVALID("%s: custom-call \"%s\" with c_scale / d_scale operands and epilogue %s "
                        "takes %d operands, got %d", loc, call->name,
                        kEpilogues[c->epilogue].name, si + 4 + with_bias, n);
    double c_scale;
    HL_RETURN_IF_ERROR(scale_of(call, call->operands[si + 2], "c_scale", &c_scale));
    if (c_scale != 1)
      return HL_UNIMPL("%s: custom-call \"%s\" c_scale=%g: cuBLASLt scales only an f8 C, and C "
                       "is never f8 here", loc, call->name, c_scale);
    HL_RETURN_IF_ERROR(scale_of(call, call->operands[si + 3], "d_scale", &o->d_scale));
    if (with_bias) o->bias = call->operands[si + 4];
  } else {  // [bias] [, d_scale]
    bool d_scaled = is_f8(d_type);
    if (rest != with_bias + d_scaled)
      return HL_INVALID("%s: custom-call \"%s\" with epilogue %s and a %s result takes %d operands, "
                        "got %d", loc, call->name, kEpilogues[c->epilogue].name,
                        hl_dtype_name(d_type), si + 2 + with_bias + d_scaled, n);
    if (with_bias) o->bias = call->operands[si + 2];
    if (d_scaled) HL_RETURN_IF_ERROR(scale_of(call, call->operands[n - 1], "d_scale", &o->d_scale));
  }
  if (!is_f8(d_type)) o->d_scale = 1;  // cuBLASLt applies d_scale to an f8 D only
  return NULL;
}

static double f8_max(hl_dtype_t t) {
  switch (t) {
    case HL_F8E4M3FN: return 448;
    case HL_F8E5M2: return 57344;
    case HL_F8E4M3FNUZ: return 240;
    default: return 57344;  // F8E5M2FNUZ
  }
}

static hl_status_t run_gemm(const hl_custom_call_t *call, const gemm_config_t *c,
                            hl_literal_t **out) {
  const hl_instruction_t *inst = call->inst;
  const char *loc = hl_instruction_location(inst);
  bool f8 = strcmp(call->name, "__cublas$lt$matmul$f8") == 0;
  const hl_shape_t *rs = &inst->shape;
  const hl_shape_t *ds = rs->dtype == HL_TUPLE ? &rs->tuple[0] : rs;
  bool aux = has_aux(c->epilogue), damax = f8 && c->damax;
  // Results: d [, aux | damax] [, s8/u8 workspace].
  int extra = aux + damax;
  int parts_n = rs->dtype == HL_TUPLE ? rs->tuple_count : 1;
  bool ws = parts_n == 2 + extra;
  bool shape_ok = parts_n == 1 + extra || ws;
  if (shape_ok && rs->dtype != HL_TUPLE && extra) shape_ok = false;
  if (shape_ok && ws) {
    hl_dtype_t wt = rs->tuple[parts_n - 1].dtype;
    shape_ok = wt == HL_S8 || wt == HL_U8;
  }
  if (shape_ok && aux) shape_ok = hl_shape_same_dims(&rs->tuple[1], ds) &&
                                  rs->tuple[1].dtype == ds->dtype;
  if (shape_ok && damax) shape_ok = rs->tuple[1].dtype == HL_F32 && rs->tuple[1].rank == 0;
  if (!shape_ok)
    return HL_INVALID("%s: custom-call \"%s\" result %s: expected d%s, optionally followed by an "
                      "s8/u8 workspace", loc, call->name, HL_SHAPE_STR(rs),
                      aux ? ", aux (d's shape)" : damax ? ", damax (f32 scalar)" : "");
  if (f8 && aux)
    return HL_UNIMPL("%s: custom-call \"%s\": epilogue %s on an f8 matmul (XLA emits none)", loc,
                     call->name, kEpilogues[c->epilogue].name);
  gemm_operands_t o;
  HL_RETURN_IF_ERROR(split_operands(call, c, f8, ds->dtype, &o));
  hl_dtype_t ot = ds->dtype;
  bool cplx = hl_dtype_is_complex(ot);
  if (cplx && c->epilogue != EPI_DEFAULT)
    return HL_UNIMPL("%s: custom-call \"%s\": epilogue %s on complex %s", loc, call->name,
                     kEpilogues[c->epilogue].name, hl_dtype_name(ot));
  if (!cplx && c->alpha_im != 0)
    return HL_INVALID("%s: custom-call \"%s\": alpha_imag=%g on a real result", loc, call->name,
                      c->alpha_im);
  const hl_literal_t *cl = o.c, *bias = o.bias;
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
  hl_literal_t *acc = NULL, *d = NULL, *auxl = NULL;
  HL_RETURN_IF_ERROR_CTX(hl_kernel_dot(call->ctx, &tmp, call->operands, &acc),
                         "%s: custom-call \"%s\"", loc, call->name);
  hl_kernel_count_flops(call->ctx, hl_kernel_flops(&tmp, call->operands, 2, acc));
  hl_status_t st = NULL;
  int64_t n = hl_literal_element_count(acc);
  double amax = 0;
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
    if (!st && aux) st = hl_literal_create_uninitialized(&s, &auxl);
    double scale = c->alpha_re * o.a_scale * o.b_scale;
    bool narrow = ot != HL_F64;  // f32 compute type
    for (int64_t i = 0; !st && i < n; i++) {
      double v = scale * hl_literal_get_f64(acc, i);
      if (cl) v += c->beta * hl_literal_get_f64(cl, i);
      if (bias) v += hl_literal_get_f64(bias, i % cols);
      if (narrow) v = (float)v;
      if (auxl) hl_literal_set_f64(auxl, i, v);
      v = activate(c->epilogue, v);
      if (narrow) v = (float)v;
      if (isnan(v)) amax = NAN;
      else if (fabs(v) > amax) amax = fabs(v);  // stays NaN once NaN
      if (is_f8(ot)) {  // scaled, saturated to the f8 range, rounded once
        double m = f8_max(ot);
        v = (float)(v * o.d_scale);
        v = v > m ? m : v < -m ? -m : v;
      }
      hl_literal_set_f64(d, i, v);
    }
  }
  hl_literal_release(acc);
  if (st) {
    hl_literal_release(d);
    hl_literal_release(auxl);
    return st;
  }
  if (rs->dtype != HL_TUPLE) {
    *out = d;
    return NULL;
  }
  hl_literal_t *parts[4] = {d, NULL, NULL, NULL};
  int k = 1;
  if (aux) parts[k++] = auxl;
  if (damax) {
    st = hl_literal_create(&rs->tuple[k], &parts[k]);
    if (!st) hl_literal_set_f64(parts[k], 0, amax);
    k++;
  }
  if (!st && ws) st = hl_literal_create(&rs->tuple[k], &parts[k]);  // workspace: zero
  if (ws) k++;
  if (!st) st = hl_literal_create_tuple(parts, k, out);
  for (int i = 0; i < 4; i++) hl_literal_release(parts[i]);
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
    {"__cublas$lt$matmul$f8", cublas_gemm, NULL},
    {NULL, NULL, NULL},
};
