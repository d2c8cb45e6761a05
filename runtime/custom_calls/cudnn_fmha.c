// cuDNN fused multi-head attention of XLA GPU dumps, replayed on the CPU:
// `__cudnn$fmhaSoftmax`, `__cudnn$fmhaScaleBiasSoftmax` (and the `...Dropout`
// spellings at dropout_rate 0) forward and their `...Backward` targets, as
// JAX's cuDNN attention lowers them (jax/_src/cudnn/fused_attention_stablehlo.py)
// and XLA's GPU backend runs them (xla/service/gpu/cublas_cudnn.h,
// CudnnfMHABackendConfig in backend_configs.proto).
//
// The backend_config's cudnn_fmha_backend_config gives fmha_scale, mask_type
// and the dot dimension numbers of the two batched matmuls (forward: bmm1
// Q.K -> S[B,N,T,S], bmm2 P.V -> O[B,N,T,H]; backward: the four gradient
// gemms). Those dims say where batch, head, sequence and head-dim axes are in
// Q, K, V, dO (BTNH or BNTH), and the results come out in the dots' natural
// order ([B,N,T,H] / [B,N,S,H]; the layouts in the dump put them back).
//
// Forward:  S = fmha_scale * Q.K^T + bias (masked: -inf), P = softmax(S),
//           O = P.V; results (O, [stats f32[B,N,T]], workspace u8), where
//           stats is cuDNN's softmax statistic, the row log-sum-exp of S.
// Backward: operands Q, K, V, stats, dO, [bias], O; P is rebuilt from stats
//           as cuDNN does (P = exp(S - stats)); results (dQ, dK, dV, [dbias],
//           workspace) with dS = P * (dO.V^T - rowsum(dO * O)), dQ = scale *
//           dS.K, dK = scale * dS^T.Q, dV = P^T.dO, dbias = dS summed over the
//           axes the bias broadcasts.
// K and V may have fewer heads than Q (grouped-query attention: q head n uses
// kv head n / (N / Nk)). Everything is computed in double and rounded once to
// the result types (cuDNN's f32 accumulation and tiling cannot be reproduced
// bit for bit anyway). Not supported, each an error before launch naming the
// field: dropout_rate > 0 (cuDNN's dropout mask comes from its own Philox
// stream), mask types other than NO_MASK / CAUSAL, sliding_window_length,
// max_seg_per_batch > 1, is_paged_attention, is_flash_attention=false, and
// the F8 targets (not registered).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/custom_calls/json.h"
#include "runtime/custom_calls/registry.h"
#include "runtime/kernels/element_access.h"

enum { ROLE_B, ROLE_N, ROLE_SEQ, ROLE_H };

// Where the batch / head / sequence / head-dim axes of a rank-4 tensor are.
typedef struct roles {
  int axis[4];
} roles_t;

typedef struct fmha {
  bool backward, has_bias, causal;
  double scale;
  roles_t q, k, v, dout;  // dout: also O's (same shape as dO)
  int64_t B, N, Nk, T, S, H, Hv;
} fmha_t;

typedef struct dims4 {
  int lc, rc;      // the single contracting dimension of each side
  int lb[2], rb[2];
} dims4_t;

static const char *loc_of(const hl_instruction_t *inst) { return hl_instruction_location(inst); }

static hl_status_t read_int_list(const hl_instruction_t *inst, const char *name,
                                 const hl_json_t *dn, const char *field, const char *key, int *out,
                                 int want) {
  const hl_json_t *a = hl_json_get(dn, key);
  int n = a && a->kind == HL_JSON_ARRAY ? a->count : 0;
  if (!a || a->kind != HL_JSON_ARRAY || n != want)
    return HL_UNIMPL("%s: custom-call \"%s\" %s.%s must list %d dimension(s) (got %d)",
                     loc_of(inst), name, field, key, want, n);
  for (int i = 0; i < n; i++) {
    double d;
    if (!hl_json_number(&a->items[i], &d) || d < 0 || d > 3 || d != (int)d)
      return HL_INVALID("%s: custom-call \"%s\" %s.%s[%d] is not a dimension of a rank-4 "
                        "tensor", loc_of(inst), name, field, key, i);
    out[i] = (int)d;
  }
  return NULL;
}

static hl_status_t read_dims(const hl_instruction_t *inst, const char *name, const hl_json_t *cfg,
                             const char *field, dims4_t *d) {
  const hl_json_t *dn = hl_json_get(cfg, field);
  if (!dn || dn->kind != HL_JSON_OBJECT)
    return HL_INVALID("%s: custom-call \"%s\" cudnn_fmha_backend_config has no %s", loc_of(inst),
                      name, field);
  HL_RETURN_IF_ERROR(read_int_list(inst, name, dn, field, "lhs_contracting_dimensions", &d->lc, 1));
  HL_RETURN_IF_ERROR(read_int_list(inst, name, dn, field, "rhs_contracting_dimensions", &d->rc, 1));
  HL_RETURN_IF_ERROR(read_int_list(inst, name, dn, field, "lhs_batch_dimensions", d->lb, 2));
  return read_int_list(inst, name, dn, field, "rhs_batch_dimensions", d->rb, 2);
}

// The roles of one side of a dot whose batch dims are (batch, head) and whose
// contracting dim has role `contract`; the remaining axis gets `other`.
static hl_status_t side_roles(const hl_instruction_t *inst, const char *name, const char *field,
                              const int batch[2], int contracting, int contract_role,
                              int other_role, roles_t *r) {
  bool used[4] = {false, false, false, false};
  int axes[3] = {batch[0], batch[1], contracting};
  for (int i = 0; i < 3; i++) {
    if (used[axes[i]])
      return HL_INVALID("%s: custom-call \"%s\" %s names dimension %d twice", loc_of(inst), name,
                        field, axes[i]);
    used[axes[i]] = true;
  }
  r->axis[ROLE_B] = batch[0];
  r->axis[ROLE_N] = batch[1];
  r->axis[contract_role] = contracting;
  for (int a = 0; a < 4; a++)
    if (!used[a]) r->axis[other_role] = a;
  return NULL;
}

// The intermediate P / dS [B,N,T,S] side of a gemm: batch {0,1}, contracting
// `want` (2: T, 3: S).
static hl_status_t check_bnts_side(const hl_instruction_t *inst, const char *name,
                                   const char *field, const int batch[2], int contracting,
                                   int want) {
  if (batch[0] != 0 || batch[1] != 1 || contracting != want)
    return HL_UNIMPL("%s: custom-call \"%s\" %s: the [B,N,T,S] operand must have batch "
                     "dimensions {0,1} and contract dimension %d", loc_of(inst), name, field,
                     want);
  return NULL;
}

static int64_t dim_of(const hl_shape_t *s, const roles_t *r, int role) {
  return s->dims[r->axis[role]];
}

static hl_status_t expect_shape(const hl_instruction_t *inst, const char *name, const char *what,
                                const hl_shape_t *s, int rank, const int64_t *dims) {
  bool ok = s->dtype != HL_TUPLE && s->rank == rank;
  for (int i = 0; ok && i < rank; i++) ok = s->dims[i] == dims[i];
  if (!ok) {
    char want[128];
    int n = snprintf(want, sizeof(want), "[");
    for (int i = 0; i < rank; i++)
      n += snprintf(want + n, sizeof(want) - (size_t)n, "%s%lld", i ? "," : "", (long long)dims[i]);
    snprintf(want + n, sizeof(want) - (size_t)n, "]");
    return HL_INVALID("%s: custom-call \"%s\" %s is %s, expected dimensions %s", loc_of(inst),
                      name, what, HL_SHAPE_STR(s), want);
  }
  return NULL;
}

static bool is_float4(const hl_shape_t *s) {
  return s->dtype != HL_TUPLE && s->rank == 4 && hl_dtype_is_float(s->dtype);
}

static hl_status_t read_config(const hl_instruction_t *inst, const char *name, const hl_json_t *root,
                               fmha_t *f) {
  const hl_json_t *c = hl_json_get(root, "cudnn_fmha_backend_config");
  if (!c) c = root;
  if (!hl_json_number(hl_json_get(c, "fmha_scale"), &f->scale))
    return HL_INVALID("%s: custom-call \"%s\" backend_config has no "
                      "cudnn_fmha_backend_config.fmha_scale", loc_of(inst), name);
  double v;
  if (hl_json_number(hl_json_get(c, "dropout_rate"), &v) && v != 0)
    return HL_UNIMPL("%s: custom-call \"%s\" dropout_rate=%g is not supported: the dropout mask "
                     "comes from cuDNN's own Philox stream, which hlo-launch cannot reproduce",
                     loc_of(inst), name, v);
  if (hl_json_number(hl_json_get(c, "sliding_window_length"), &v) && v != 0)
    return HL_UNIMPL("%s: custom-call \"%s\" sliding_window_length=%g is not supported",
                     loc_of(inst), name, v);
  if (hl_json_number(hl_json_get(c, "max_seg_per_batch"), &v) && v > 1)
    return HL_UNIMPL("%s: custom-call \"%s\" max_seg_per_batch=%g (packed sequences) is not "
                     "supported", loc_of(inst), name, v);
  const hl_json_t *b = hl_json_get(c, "is_paged_attention");
  if (b && b->kind == HL_JSON_BOOL && b->boolean)
    return HL_UNIMPL("%s: custom-call \"%s\" is_paged_attention=true is not supported",
                     loc_of(inst), name);
  b = hl_json_get(c, "is_flash_attention");
  if (!b || b->kind != HL_JSON_BOOL || !b->boolean)
    return HL_UNIMPL("%s: custom-call \"%s\" is_flash_attention=false (cuDNN's older fused "
                     "attention, with the softmax as its activation output) is not supported",
                     loc_of(inst), name);
  const hl_json_t *m = hl_json_get(c, "mask_type");
  const char *mask = m && m->kind == HL_JSON_STRING ? m->string : "NO_MASK";
  if (strcmp(mask, "NO_MASK") == 0) f->causal = false;
  else if (strcmp(mask, "CAUSAL") == 0) f->causal = true;
  else
    return HL_UNIMPL("%s: custom-call \"%s\" mask_type %s is not supported (supported: NO_MASK, "
                     "CAUSAL)", loc_of(inst), name, m && m->kind == HL_JSON_STRING ? mask
                                                                             : "(not a string)");
  b = hl_json_get(c, "is_causal_mask");  // older configs' spelling of CAUSAL
  if (b && b->kind == HL_JSON_BOOL && b->boolean) f->causal = true;

  if (!f->backward) {
    dims4_t d1, d2;
    HL_RETURN_IF_ERROR(read_dims(inst, name, c, "bmm1_dot_dimension_numbers", &d1));
    HL_RETURN_IF_ERROR(read_dims(inst, name, c, "bmm2_dot_dimension_numbers", &d2));
    HL_RETURN_IF_ERROR(side_roles(inst, name, "bmm1_dot_dimension_numbers", d1.lb, d1.lc, ROLE_H,
                                  ROLE_SEQ, &f->q));
    HL_RETURN_IF_ERROR(side_roles(inst, name, "bmm1_dot_dimension_numbers", d1.rb, d1.rc, ROLE_H,
                                  ROLE_SEQ, &f->k));
    HL_RETURN_IF_ERROR(check_bnts_side(inst, name, "bmm2_dot_dimension_numbers", d2.lb, d2.lc, 3));
    HL_RETURN_IF_ERROR(side_roles(inst, name, "bmm2_dot_dimension_numbers", d2.rb, d2.rc, ROLE_SEQ,
                                  ROLE_H, &f->v));
  } else {
    dims4_t g11, g12, g21, g22;
    HL_RETURN_IF_ERROR(read_dims(inst, name, c, "bmm1_grad_gemm1_dot_dimension_numbers", &g11));
    HL_RETURN_IF_ERROR(read_dims(inst, name, c, "bmm1_grad_gemm2_dot_dimension_numbers", &g12));
    HL_RETURN_IF_ERROR(read_dims(inst, name, c, "bmm2_grad_gemm1_dot_dimension_numbers", &g21));
    HL_RETURN_IF_ERROR(read_dims(inst, name, c, "bmm2_grad_gemm2_dot_dimension_numbers", &g22));
    // dK = dS^T . Q, dQ = dS . K, dV = P^T . dO, dP = dO . V^T.
    HL_RETURN_IF_ERROR(check_bnts_side(inst, name, "bmm1_grad_gemm1_dot_dimension_numbers",
                                       g11.lb, g11.lc, 2));
    HL_RETURN_IF_ERROR(side_roles(inst, name, "bmm1_grad_gemm1_dot_dimension_numbers", g11.rb,
                                  g11.rc, ROLE_SEQ, ROLE_H, &f->q));
    HL_RETURN_IF_ERROR(check_bnts_side(inst, name, "bmm1_grad_gemm2_dot_dimension_numbers",
                                       g12.lb, g12.lc, 3));
    HL_RETURN_IF_ERROR(side_roles(inst, name, "bmm1_grad_gemm2_dot_dimension_numbers", g12.rb,
                                  g12.rc, ROLE_SEQ, ROLE_H, &f->k));
    HL_RETURN_IF_ERROR(check_bnts_side(inst, name, "bmm2_grad_gemm1_dot_dimension_numbers",
                                       g21.lb, g21.lc, 2));
    HL_RETURN_IF_ERROR(side_roles(inst, name, "bmm2_grad_gemm1_dot_dimension_numbers", g21.rb,
                                  g21.rc, ROLE_SEQ, ROLE_H, &f->dout));
    roles_t dout2;
    HL_RETURN_IF_ERROR(side_roles(inst, name, "bmm2_grad_gemm2_dot_dimension_numbers", g22.lb,
                                  g22.lc, ROLE_H, ROLE_SEQ, &dout2));
    HL_RETURN_IF_ERROR(side_roles(inst, name, "bmm2_grad_gemm2_dot_dimension_numbers", g22.rb,
                                  g22.rc, ROLE_H, ROLE_SEQ, &f->v));
    if (memcmp(&dout2, &f->dout, sizeof(dout2)) != 0)
      return HL_INVALID("%s: custom-call \"%s\": bmm2_grad_gemm1 and bmm2_grad_gemm2 disagree on "
                        "the axes of dO", loc_of(inst), name);
  }
  return NULL;
}

// Operands, results and their shapes against the config; fills the sizes.
static hl_status_t check_shapes(const hl_instruction_t *inst, const char *name, fmha_t *f) {
  int want_ops = (f->backward ? 6 : 3) + f->has_bias;
  if (inst->operand_count != want_ops)
    return HL_UNIMPL("%s: custom-call \"%s\" takes %d operands (%s), got %d (sequence-length "
                     "operands come only with PADDING masks, which are not supported)",
                     loc_of(inst), name, want_ops,
                     f->backward ? (f->has_bias ? "Q, K, V, stats, dO, bias, O"
                                                : "Q, K, V, stats, dO, O")
                                 : (f->has_bias ? "Q, K, V, bias" : "Q, K, V"),
                     inst->operand_count);
  const hl_shape_t *q = &inst->operands[0]->shape, *k = &inst->operands[1]->shape,
                   *v = &inst->operands[2]->shape;
  const char *names[3] = {"Q", "K", "V"};
  for (int i = 0; i < 3; i++)
    if (!is_float4(&inst->operands[i]->shape))
      return HL_INVALID("%s: custom-call \"%s\" %s is %s, expected a rank-4 floating array",
                        loc_of(inst), name, names[i], HL_SHAPE_STR(&inst->operands[i]->shape));
  f->B = dim_of(q, &f->q, ROLE_B);
  f->N = dim_of(q, &f->q, ROLE_N);
  f->T = dim_of(q, &f->q, ROLE_SEQ);
  f->H = dim_of(q, &f->q, ROLE_H);
  f->Nk = dim_of(k, &f->k, ROLE_N);
  f->S = dim_of(k, &f->k, ROLE_SEQ);
  f->Hv = dim_of(v, &f->v, ROLE_H);
  if (dim_of(k, &f->k, ROLE_B) != f->B || dim_of(k, &f->k, ROLE_H) != f->H ||
      dim_of(v, &f->v, ROLE_B) != f->B || dim_of(v, &f->v, ROLE_N) != f->Nk ||
      dim_of(v, &f->v, ROLE_SEQ) != f->S || f->Nk == 0 || f->N % f->Nk != 0)
    return HL_INVALID("%s: custom-call \"%s\": Q %s, K %s, V %s do not fit together (batch, "
                      "heads dividing Q's heads, sequence and head dims)", loc_of(inst), name,
                      HL_SHAPE_STR(q), HL_SHAPE_STR(k), HL_SHAPE_STR(v));
  const hl_shape_t *rs = &inst->shape;
  if (rs->dtype != HL_TUPLE || rs->tuple_count < 2)
    return HL_INVALID("%s: custom-call \"%s\" result %s, expected a tuple ending in a u8 "
                      "workspace", loc_of(inst), name, HL_SHAPE_STR(rs));
  const hl_shape_t *ws = &rs->tuple[rs->tuple_count - 1];
  if (ws->dtype != HL_U8 || ws->rank != 1)
    return HL_INVALID("%s: custom-call \"%s\" last result is %s, expected the u8 workspace",
                      loc_of(inst), name, HL_SHAPE_STR(ws));
  int nres = rs->tuple_count - 1;
  if (f->has_bias) {
    const hl_shape_t *bs = &inst->operands[f->backward ? 5 : 3]->shape;
    bool ok = bs->dtype != HL_TUPLE && bs->rank == 4 && hl_dtype_is_float(bs->dtype) &&
              (bs->dims[0] == 1 || bs->dims[0] == f->B) &&
              (bs->dims[1] == 1 || bs->dims[1] == f->N) && bs->dims[2] == f->T &&
              bs->dims[3] == f->S;
    if (!ok)
      return HL_INVALID("%s: custom-call \"%s\" bias is %s, expected [B or 1, N or 1, %lld, %lld]",
                        loc_of(inst), name, HL_SHAPE_STR(bs), (long long)f->T, (long long)f->S);
  }
  int64_t o_dims[4] = {f->B, f->N, f->T, f->Hv};
  int64_t stats_dims[3] = {f->B, f->N, f->T};
  if (!f->backward) {
    if (nres != 1 && nres != 2)
      return HL_INVALID("%s: custom-call \"%s\" result %s, expected (O, [stats], workspace)",
                        loc_of(inst), name, HL_SHAPE_STR(rs));
    HL_RETURN_IF_ERROR(expect_shape(inst, name, "output O", &rs->tuple[0], 4, o_dims));
    if (nres == 2) {
      HL_RETURN_IF_ERROR(expect_shape(inst, name, "softmax stats", &rs->tuple[1], 3, stats_dims));
      if (rs->tuple[1].dtype != HL_F32)
        return HL_INVALID("%s: custom-call \"%s\" softmax stats are %s, expected f32",
                          loc_of(inst), name, HL_SHAPE_STR(&rs->tuple[1]));
    }
    return NULL;
  }
  HL_RETURN_IF_ERROR(expect_shape(inst, name, "stats operand", &inst->operands[3]->shape, 3,
                                  stats_dims));
  const hl_shape_t *dout = &inst->operands[4]->shape;
  const hl_shape_t *o = &inst->operands[5 + f->has_bias]->shape;
  if (!is_float4(dout) || dim_of(dout, &f->dout, ROLE_B) != f->B ||
      dim_of(dout, &f->dout, ROLE_N) != f->N || dim_of(dout, &f->dout, ROLE_SEQ) != f->T ||
      dim_of(dout, &f->dout, ROLE_H) != f->Hv)
    return HL_INVALID("%s: custom-call \"%s\" dO is %s, which does not fit Q and V", loc_of(inst),
                      name, HL_SHAPE_STR(dout));
  if (!is_float4(o) || !hl_shape_same_dims(o, dout))
    return HL_INVALID("%s: custom-call \"%s\" O is %s, expected the dimensions of dO %s",
                      loc_of(inst), name, HL_SHAPE_STR(o), HL_SHAPE_STR(dout));
  if (nres != 3 && !(nres == 4 && f->has_bias))
    return HL_INVALID("%s: custom-call \"%s\" result %s, expected (dQ, dK, dV, %sworkspace)",
                      loc_of(inst), name, HL_SHAPE_STR(rs), f->has_bias ? "[dbias], " : "");
  int64_t dq[4] = {f->B, f->N, f->T, f->H}, dk[4] = {f->B, f->Nk, f->S, f->H},
          dv[4] = {f->B, f->Nk, f->S, f->Hv};
  HL_RETURN_IF_ERROR(expect_shape(inst, name, "dQ", &rs->tuple[0], 4, dq));
  HL_RETURN_IF_ERROR(expect_shape(inst, name, "dK", &rs->tuple[1], 4, dk));
  HL_RETURN_IF_ERROR(expect_shape(inst, name, "dV", &rs->tuple[2], 4, dv));
  if (nres == 4 &&
      !hl_shape_same_dims(&rs->tuple[3], &inst->operands[5]->shape))
    return HL_INVALID("%s: custom-call \"%s\" dbias is %s, expected the bias's dimensions %s",
                      loc_of(inst), name, HL_SHAPE_STR(&rs->tuple[3]),
                      HL_SHAPE_STR(&inst->operands[5]->shape));
  return NULL;
}

static bool target_backward(const char *name) { return strstr(name, "Backward") != NULL; }
static bool target_bias(const char *name) { return strstr(name, "ScaleBias") != NULL; }

static hl_status_t prepare(const hl_instruction_t *inst, const char *name, fmha_t *f) {
  memset(f, 0, sizeof(*f));
  f->backward = target_backward(name);
  f->has_bias = target_bias(name);
  const char *cfg = inst->attrs.backend_config;
  if (!cfg || !*cfg)
    return HL_INVALID("%s: custom-call \"%s\" needs its backend_config (cudnn_fmha_backend_config)",
                      loc_of(inst), name);
  hl_json_t root;
  HL_RETURN_IF_ERROR_CTX(hl_json_parse(cfg, &root), "%s: custom-call \"%s\"", loc_of(inst), name);
  hl_status_t st = read_config(inst, name, &root, f);
  hl_json_free(&root);
  if (!st) st = check_shapes(inst, name, f);
  return st;
}

hl_status_t hl_custom_calls_cudnn_fmha_check(const hl_instruction_t *inst, const char *name) {
  fmha_t f;
  return prepare(inst, name, &f);
}

// Row-major strides of a literal's logical dims.
static void strides_of(const hl_shape_t *s, int64_t st[4]) {
  int64_t acc = 1;
  for (int a = s->rank - 1; a >= 0; a--) {
    st[a] = acc;
    acc *= s->dims[a];
  }
}

// Reads a rank-4 literal into a dense double array in [B][N][L][H] order.
static double *load(const hl_literal_t *lit, const roles_t *r) {
  const hl_shape_t *s = &lit->shape;
  int64_t st[4], d[4];
  strides_of(s, st);
  for (int i = 0; i < 4; i++) d[i] = s->dims[r->axis[i]];
  double *out = hl_malloc((size_t)(d[0] * d[1] * d[2] * d[3] + 1) * sizeof(double));
  if (!out) return NULL;
  int64_t o = 0;
  for (int64_t b = 0; b < d[0]; b++)
    for (int64_t n = 0; n < d[1]; n++)
      for (int64_t l = 0; l < d[2]; l++)
        for (int64_t h = 0; h < d[3]; h++)
          out[o++] = hl_literal_get_f64(lit, b * st[r->axis[0]] + n * st[r->axis[1]] +
                                                 l * st[r->axis[2]] + h * st[r->axis[3]]);
  return out;
}

static hl_status_t store(const hl_shape_t *s, const double *v, hl_literal_t **out) {
  HL_RETURN_IF_ERROR(hl_literal_create_uninitialized(s, out));
  int64_t n = hl_literal_element_count(*out);
  for (int64_t i = 0; i < n; i++) hl_literal_set_f64(*out, i, v[i]);
  return NULL;
}

// S (scaled, biased, masked) for one (b, n) into s_row[T][S]; masked = -inf.
static void scores(const fmha_t *f, const double *q, const double *k, const hl_literal_t *bias,
                   int64_t b, int64_t n, double *s) {
  int64_t kn = n / (f->N / f->Nk);
  const double *qb = q + (b * f->N + n) * f->T * f->H;
  const double *kb = k + (b * f->Nk + kn) * f->S * f->H;
  int64_t bb = 0, bn = 0;
  if (bias) {
    bb = bias->shape.dims[0] == 1 ? 0 : b;
    bn = bias->shape.dims[1] == 1 ? 0 : n;
  }
  for (int64_t t = 0; t < f->T; t++)
    for (int64_t j = 0; j < f->S; j++) {
      double acc = 0;
      for (int64_t h = 0; h < f->H; h++) acc += qb[t * f->H + h] * kb[j * f->H + h];
      acc *= f->scale;
      if (bias)
        acc += hl_literal_get_f64(bias, ((bb * bias->shape.dims[1] + bn) * f->T + t) * f->S + j);
      if (f->causal && j > t) acc = -INFINITY;  // cuDNN's causal mask: top-left aligned
      s[t * f->S + j] = acc;
    }
}

static hl_status_t finish(const hl_shape_t *rs, hl_literal_t **parts, int count,
                          hl_literal_t **out) {
  hl_status_t st = hl_literal_create(&rs->tuple[count], &parts[count]);  // workspace: zero
  if (!st) st = hl_literal_create_tuple(parts, count + 1, out);
  for (int i = 0; i <= count; i++) hl_literal_release(parts[i]);
  return st;
}

static hl_status_t forward(const hl_custom_call_t *call, const fmha_t *f, hl_literal_t **out) {
  const hl_shape_t *rs = &call->inst->shape;
  const hl_literal_t *bias = f->has_bias ? call->operands[3] : NULL;
  double *q = load(call->operands[0], &f->q), *k = load(call->operands[1], &f->k),
         *v = load(call->operands[2], &f->v);
  double *s = hl_malloc((size_t)(f->T * f->S + 1) * sizeof(double));
  double *o = hl_calloc((size_t)(f->B * f->N * f->T * f->Hv + 1), sizeof(double));
  double *lse = hl_malloc((size_t)(f->B * f->N * f->T + 1) * sizeof(double));
  hl_status_t st = NULL;
  if (!q || !k || !v || !s || !o || !lse) st = HL_OOM();
  for (int64_t b = 0; !st && b < f->B; b++)
    for (int64_t n = 0; n < f->N; n++) {
      scores(f, q, k, bias, b, n, s);
      const double *vb = v + (b * f->Nk + n / (f->N / f->Nk)) * f->S * f->Hv;
      for (int64_t t = 0; t < f->T; t++) {
        double *row = s + t * f->S, mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < f->S; j++) mx = row[j] > mx ? row[j] : mx;
        for (int64_t j = 0; j < f->S; j++) sum += row[j] = exp(row[j] - mx);
        lse[(b * f->N + n) * f->T + t] = mx + log(sum);
        double *ot = o + ((b * f->N + n) * f->T + t) * f->Hv;
        for (int64_t j = 0; j < f->S; j++)
          for (int64_t h = 0; h < f->Hv; h++) ot[h] += row[j] / sum * vb[j * f->Hv + h];
      }
    }
  hl_literal_t *parts[3] = {NULL, NULL, NULL};
  int nres = rs->tuple_count - 1;
  if (!st) st = store(&rs->tuple[0], o, &parts[0]);
  if (!st && nres == 2) st = store(&rs->tuple[1], lse, &parts[1]);
  if (!st) st = finish(rs, parts, nres, out);
  else
    for (int i = 0; i < 3; i++) hl_literal_release(parts[i]);
  hl_free(q), hl_free(k), hl_free(v), hl_free(s), hl_free(o), hl_free(lse);
  return st;
}

static hl_status_t backward(const hl_custom_call_t *call, const fmha_t *f, hl_literal_t **out) {
  const hl_shape_t *rs = &call->inst->shape;
  const hl_literal_t *stats = call->operands[3];
  const hl_literal_t *bias = f->has_bias ? call->operands[5] : NULL;
  double *q = load(call->operands[0], &f->q), *k = load(call->operands[1], &f->k),
         *v = load(call->operands[2], &f->v), *dout = load(call->operands[4], &f->dout),
         *o = load(call->operands[5 + f->has_bias], &f->dout);
  int64_t ts = f->T * f->S;
  double *p = hl_malloc((size_t)(ts + 1) * sizeof(double));
  double *ds = hl_malloc((size_t)(ts + 1) * sizeof(double));
  double *dq = hl_calloc((size_t)(f->B * f->N * f->T * f->H + 1), sizeof(double));
  double *dk = hl_calloc((size_t)(f->B * f->Nk * f->S * f->H + 1), sizeof(double));
  double *dv = hl_calloc((size_t)(f->B * f->Nk * f->S * f->Hv + 1), sizeof(double));
  int nres = rs->tuple_count - 1;
  bool want_dbias = nres == 4;
  int64_t dbias_n = want_dbias ? hl_shape_element_count(&rs->tuple[3]) : 0;
  double *dbias = hl_calloc((size_t)(dbias_n + 1), sizeof(double));
  hl_status_t st = NULL;
  if (!q || !k || !v || !dout || !o || !p || !ds || !dq || !dk || !dv || !dbias) st = HL_OOM();
  int64_t group = f->N / f->Nk;
  for (int64_t b = 0; !st && b < f->B; b++)
    for (int64_t n = 0; n < f->N; n++) {
      int64_t kn = n / group;
      scores(f, q, k, bias, b, n, p);
      const double *qb = q + (b * f->N + n) * f->T * f->H;
      const double *kb = k + (b * f->Nk + kn) * f->S * f->H;
      const double *vb = v + (b * f->Nk + kn) * f->S * f->Hv;
      const double *dob = dout + (b * f->N + n) * f->T * f->Hv;
      const double *ob = o + (b * f->N + n) * f->T * f->Hv;
      double *dqb = dq + (b * f->N + n) * f->T * f->H;
      double *dkb = dk + (b * f->Nk + kn) * f->S * f->H;
      double *dvb = dv + (b * f->Nk + kn) * f->S * f->Hv;
      for (int64_t t = 0; t < f->T; t++) {
        double l = hl_literal_get_f64(stats, (b * f->N + n) * f->T + t), dsum = 0;
        for (int64_t h = 0; h < f->Hv; h++) dsum += dob[t * f->Hv + h] * ob[t * f->Hv + h];
        for (int64_t j = 0; j < f->S; j++) {
          double pj = p[t * f->S + j] = exp(p[t * f->S + j] - l);  // P from the stats
          double dp = 0;
          for (int64_t h = 0; h < f->Hv; h++) dp += dob[t * f->Hv + h] * vb[j * f->Hv + h];
          ds[t * f->S + j] = pj * (dp - dsum);
        }
      }
      for (int64_t t = 0; t < f->T; t++)
        for (int64_t j = 0; j < f->S; j++) {
          double pj = p[t * f->S + j], dsj = ds[t * f->S + j];
          for (int64_t h = 0; h < f->Hv; h++) dvb[j * f->Hv + h] += pj * dob[t * f->Hv + h];
          for (int64_t h = 0; h < f->H; h++) {
            dqb[t * f->H + h] += f->scale * dsj * kb[j * f->H + h];
            dkb[j * f->H + h] += f->scale * dsj * qb[t * f->H + h];
          }
        }
      if (want_dbias) {
        const hl_shape_t *bs = &rs->tuple[3];
        int64_t bb = bs->dims[0] == 1 ? 0 : b, bn = bs->dims[1] == 1 ? 0 : n;
        double *db = dbias + (bb * bs->dims[1] + bn) * ts;
        for (int64_t i = 0; i < ts; i++) db[i] += ds[i];
      }
    }
  hl_literal_t *parts[5] = {NULL, NULL, NULL, NULL, NULL};
  if (!st) st = store(&rs->tuple[0], dq, &parts[0]);
  if (!st) st = store(&rs->tuple[1], dk, &parts[1]);
  if (!st) st = store(&rs->tuple[2], dv, &parts[2]);
  if (!st && want_dbias) st = store(&rs->tuple[3], dbias, &parts[3]);
  if (!st) st = finish(rs, parts, nres, out);
  else
    for (int i = 0; i < 5; i++) hl_literal_release(parts[i]);
  hl_free(q), hl_free(k), hl_free(v), hl_free(dout), hl_free(o), hl_free(p), hl_free(ds);
  hl_free(dq), hl_free(dk), hl_free(dv), hl_free(dbias);
  return st;
}

static hl_status_t cudnn_fmha(const hl_custom_call_t *call, hl_literal_t **out) {
  *out = NULL;
  fmha_t f;
  HL_RETURN_IF_ERROR(prepare(call->inst, call->name, &f));
  return f.backward ? backward(call, &f, out) : forward(call, &f, out);
}

const hl_custom_call_target_t hl_custom_calls_cudnn_fmha[] = {
    {"__cudnn$fmhaSoftmax", cudnn_fmha, NULL},
    {"__cudnn$fmhaScaleBiasSoftmax", cudnn_fmha, NULL},
    {"__cudnn$fmhaSoftmaxDropout", cudnn_fmha, NULL},
    {"__cudnn$fmhaScaleBiasSoftmaxDropout", cudnn_fmha, NULL},
    {"__cudnn$fmhaSoftmaxBackward", cudnn_fmha, NULL},
    {"__cudnn$fmhaScaleBiasSoftmaxBackward", cudnn_fmha, NULL},
    {"__cudnn$fmhaSoftmaxDropoutBackward", cudnn_fmha, NULL},
    {"__cudnn$fmhaScaleBiasSoftmaxDropoutBackward", cudnn_fmha, NULL},
    {NULL, NULL, NULL},
};
