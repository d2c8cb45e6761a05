// cuDNN layer norm of XLA GPU dumps, replayed on the CPU: `__cudnn$norm`
// (xla/service/gpu/transforms/cudnn_norm_rewriter.cc, CudnnNormBackendConfig).
//
// The rewriter reshapes the input so that dimension 0 holds every
// non-normalized element and dimensions 1.. the normalized ones (rank >= 4,
// padded with 1s); scale and bias hold the normalized elements (f32[4,1,1,1]
// or f32[1,4,1,1]: the same elements once degenerate dimensions are dropped).
// cudnn_norm_backend_config.kind picks the form:
//   LAYER_FWD_INFER: (x, scale, bias) -> (y, workspace)
//   LAYER_FWD_TRAIN: (x, scale, bias) -> (y, expectation, norm_factor, workspace)
//   LAYER_BWD:       (x, scale, dy, expectation, norm_factor)
//                        -> (dx, dscale, dbias, workspace)
// with y = (x - mean) * norm_factor * scale + bias, norm_factor =
// (var + epsilon)^-1/2 (population variance), expectation and norm_factor of
// shape [rows,1,1,1]; dx = nf * (g - mean(g) - xhat * mean(g * xhat)) where
// g = dy * scale and xhat = (x - expectation) * nf, dscale = sum over rows of
// dy * xhat, dbias = sum over rows of dy. The backward uses the expectation
// and norm factor it is given, as cuDNN does. Computed in double, rounded once.
#include <math.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/custom_calls/json.h"
#include "runtime/custom_calls/registry.h"
#include "runtime/kernels/element_access.h"

typedef enum norm_kind { FWD_INFER, FWD_TRAIN, BWD } norm_kind_t;

typedef struct norm {
  norm_kind_t kind;
  double epsilon;
  int64_t rows, cols;  // x as [rows, cols]
} norm_t;

static const char *loc_of(const hl_instruction_t *inst) { return hl_instruction_location(inst); }

// Dims without the 1s.
static int squeeze(const int64_t *dims, int rank, int64_t *out) {
  int n = 0;
  for (int i = 0; i < rank; i++)
    if (dims[i] != 1) out[n++] = dims[i];
  return n;
}

static bool same_squeezed(const int64_t *a, int ra, const int64_t *b, int rb) {
  int64_t sa[HL_MAX_RANK], sb[HL_MAX_RANK];
  int na = squeeze(a, ra, sa), nb = squeeze(b, rb, sb);
  return na == nb && memcmp(sa, sb, (size_t)na * sizeof(int64_t)) == 0;
}

static hl_status_t want_float(const hl_instruction_t *inst, const char *name, const char *what,
                              const hl_shape_t *s) {
  if (s->dtype == HL_TUPLE || !hl_dtype_is_float(s->dtype))
    return HL_INVALID("%s: custom-call \"%s\" %s is %s, expected a floating array", loc_of(inst),
                      name, what, HL_SHAPE_STR(s));
  return NULL;
}

// scale-like: the normalized elements of x.
static hl_status_t want_norm_vector(const hl_instruction_t *inst, const char *name,
                                    const char *what, const hl_shape_t *s, const hl_shape_t *x) {
  HL_RETURN_IF_ERROR(want_float(inst, name, what, s));
  if (!same_squeezed(s->dims, s->rank, x->dims + 1, x->rank - 1))
    return HL_INVALID("%s: custom-call \"%s\" %s is %s, expected the normalized dimensions of x "
                      "%s", loc_of(inst), name, what, HL_SHAPE_STR(s), HL_SHAPE_STR(x));
  return NULL;
}

// expectation / norm factor: [rows, 1, 1, 1].
static hl_status_t want_row_vector(const hl_instruction_t *inst, const char *name,
                                   const char *what, const hl_shape_t *s, int64_t rows) {
  HL_RETURN_IF_ERROR(want_float(inst, name, what, s));
  if (s->rank < 1 || s->dims[0] != rows || hl_shape_element_count(s) != rows)
    return HL_INVALID("%s: custom-call \"%s\" %s is %s, expected [%lld,1,1,1]", loc_of(inst),
                      name, what, HL_SHAPE_STR(s), (long long)rows);
  return NULL;
}

static hl_status_t prepare(const hl_instruction_t *inst, const char *name, norm_t *n) {
  memset(n, 0, sizeof(*n));
  const char *cfg = inst->attrs.backend_config;
  if (!cfg || !*cfg)
    return HL_INVALID("%s: custom-call \"%s\" needs its backend_config (cudnn_norm_backend_config)",
                      loc_of(inst), name);
  hl_json_t root;
  HL_RETURN_IF_ERROR_CTX(hl_json_parse(cfg, &root), "%s: custom-call \"%s\"", loc_of(inst), name);
  const hl_json_t *c = hl_json_get(&root, "cudnn_norm_backend_config");
  if (!c) c = &root;
  hl_status_t st = NULL;
  if (!hl_json_number(hl_json_get(c, "epsilon"), &n->epsilon)) n->epsilon = 0;  // proto3 default
  const hl_json_t *k = hl_json_get(c, "kind");
  const char *kind = k && k->kind == HL_JSON_STRING ? k->string : k ? NULL : "LAYER_FWD_INFER";
  if (kind && strcmp(kind, "LAYER_FWD_INFER") == 0) n->kind = FWD_INFER;
  else if (kind && strcmp(kind, "LAYER_FWD_TRAIN") == 0) n->kind = FWD_TRAIN;
  else if (kind && strcmp(kind, "LAYER_BWD") == 0) n->kind = BWD;
  else
    st = HL_UNIMPL("%s: custom-call \"%s\" cudnn_norm_backend_config.kind %s is not supported "
                   "(supported: LAYER_FWD_INFER, LAYER_FWD_TRAIN, LAYER_BWD)", loc_of(inst), name,
                   kind ? kind : "(not a string)");
  hl_json_free(&root);
  HL_RETURN_IF_ERROR(st);

  int want_ops = n->kind == BWD ? 5 : 3;
  int want_res = n->kind == FWD_INFER ? 2 : 4;
  const hl_shape_t *rs = &inst->shape;
  if (inst->operand_count != want_ops || rs->dtype != HL_TUPLE || rs->tuple_count != want_res)
    return HL_INVALID("%s: custom-call \"%s\" kind %s takes %d operands and gives a %d-tuple, got "
                      "%d operands and %s", loc_of(inst), name, kind, want_ops, want_res,
                      inst->operand_count, HL_SHAPE_STR(rs));
  const hl_shape_t *x = &inst->operands[0]->shape;
  HL_RETURN_IF_ERROR(want_float(inst, name, "x", x));
  if (x->rank < 2)
    return HL_INVALID("%s: custom-call \"%s\" x is %s, expected [rows, normalized dims...]",
                      loc_of(inst), name, HL_SHAPE_STR(x));
  n->rows = x->dims[0];
  n->cols = n->rows ? hl_shape_element_count(x) / n->rows : 0;
  const hl_shape_t *ws = &rs->tuple[want_res - 1];
  if (ws->dtype != HL_U8 || ws->rank != 1)
    return HL_INVALID("%s: custom-call \"%s\" last result is %s, expected the u8 workspace",
                      loc_of(inst), name, HL_SHAPE_STR(ws));
  if (!hl_shape_same_dims(&rs->tuple[0], x))
    return HL_INVALID("%s: custom-call \"%s\" result 0 is %s, expected the dimensions of x %s",
                      loc_of(inst), name, HL_SHAPE_STR(&rs->tuple[0]), HL_SHAPE_STR(x));
  HL_RETURN_IF_ERROR(want_float(inst, name, "result 0", &rs->tuple[0]));
  HL_RETURN_IF_ERROR(want_norm_vector(inst, name, "scale", &inst->operands[1]->shape, x));
  if (n->kind != BWD) {
    HL_RETURN_IF_ERROR(want_norm_vector(inst, name, "bias", &inst->operands[2]->shape, x));
    if (n->kind == FWD_TRAIN) {
      HL_RETURN_IF_ERROR(want_row_vector(inst, name, "expectation", &rs->tuple[1], n->rows));
      HL_RETURN_IF_ERROR(want_row_vector(inst, name, "norm factor", &rs->tuple[2], n->rows));
    }
    return NULL;
  }
  const hl_shape_t *dy = &inst->operands[2]->shape;
  HL_RETURN_IF_ERROR(want_float(inst, name, "dy", dy));
  if (!hl_shape_same_dims(dy, x))
    return HL_INVALID("%s: custom-call \"%s\" dy is %s, expected the dimensions of x %s",
                      loc_of(inst), name, HL_SHAPE_STR(dy), HL_SHAPE_STR(x));
  HL_RETURN_IF_ERROR(want_row_vector(inst, name, "expectation", &inst->operands[3]->shape,
                                     n->rows));
  HL_RETURN_IF_ERROR(want_row_vector(inst, name, "norm factor", &inst->operands[4]->shape,
                                     n->rows));
  HL_RETURN_IF_ERROR(want_norm_vector(inst, name, "dscale", &rs->tuple[1], x));
  return want_norm_vector(inst, name, "dbias", &rs->tuple[2], x);
}

hl_status_t hl_custom_calls_cudnn_norm_check(const hl_instruction_t *inst, const char *name) {
  norm_t n;
  return prepare(inst, name, &n);
}

static double *load(const hl_literal_t *lit) {
  int64_t count = hl_literal_element_count(lit);
  double *v = hl_malloc((size_t)(count + 1) * sizeof(double));
  for (int64_t i = 0; v && i < count; i++) v[i] = hl_literal_get_f64(lit, i);
  return v;
}

static hl_status_t store(const hl_shape_t *s, const double *v, hl_literal_t **out) {
  HL_RETURN_IF_ERROR(hl_literal_create_uninitialized(s, out));
  int64_t count = hl_literal_element_count(*out);
  for (int64_t i = 0; i < count; i++) hl_literal_set_f64(*out, i, v[i]);
  return NULL;
}

static hl_status_t cudnn_norm(const hl_custom_call_t *call, hl_literal_t **out) {
  *out = NULL;
  norm_t n;
  HL_RETURN_IF_ERROR(prepare(call->inst, call->name, &n));
  const hl_shape_t *rs = &call->inst->shape;
  int64_t R = n.rows, C = n.cols;
  double *x = load(call->operands[0]), *scale = load(call->operands[1]),
         *third = load(call->operands[2]);  // bias, or dy for the backward
  double *r0 = hl_calloc((size_t)(R * C + 1), sizeof(double));
  double *mean = hl_calloc((size_t)(R + 1), sizeof(double));
  double *nf = hl_calloc((size_t)(R + 1), sizeof(double));
  double *dscale = hl_calloc((size_t)(C + 1), sizeof(double));
  double *dbias = hl_calloc((size_t)(C + 1), sizeof(double));
  hl_status_t st = NULL;
  if (!x || !scale || !third || !r0 || !mean || !nf || !dscale || !dbias) st = HL_OOM();
  for (int64_t r = 0; !st && r < R; r++) {
    const double *xr = x + r * C;
    double *yr = r0 + r * C;
    if (n.kind != BWD) {
      double m = 0, var = 0;
      for (int64_t c = 0; c < C; c++) m += xr[c];
      m /= (double)C;
      for (int64_t c = 0; c < C; c++) var += (xr[c] - m) * (xr[c] - m);
      var /= (double)C;
      mean[r] = m;
      nf[r] = 1 / sqrt(var + n.epsilon);
      for (int64_t c = 0; c < C; c++) yr[c] = (xr[c] - m) * nf[r] * scale[c] + third[c];
      continue;
    }
    const double *dy = third + r * C;
    double m = hl_literal_get_f64(call->operands[3], r), f = hl_literal_get_f64(call->operands[4], r);
    double mg = 0, mgx = 0;
    for (int64_t c = 0; c < C; c++) {
      double xhat = (xr[c] - m) * f, g = dy[c] * scale[c];
      mg += g;
      mgx += g * xhat;
      dscale[c] += dy[c] * xhat;
      dbias[c] += dy[c];
    }
    mg /= (double)C;
    mgx /= (double)C;
    for (int64_t c = 0; c < C; c++) {
      double xhat = (xr[c] - m) * f;
      yr[c] = f * (dy[c] * scale[c] - mg - xhat * mgx);
    }
  }
  hl_literal_t *parts[4] = {NULL, NULL, NULL, NULL};
  int nres = rs->tuple_count;
  if (!st) st = store(&rs->tuple[0], r0, &parts[0]);
  if (!st && n.kind == FWD_TRAIN) st = store(&rs->tuple[1], mean, &parts[1]);
  if (!st && n.kind == FWD_TRAIN) st = store(&rs->tuple[2], nf, &parts[2]);
  if (!st && n.kind == BWD) st = store(&rs->tuple[1], dscale, &parts[1]);
  if (!st && n.kind == BWD) st = store(&rs->tuple[2], dbias, &parts[2]);
  if (!st) st = hl_literal_create(&rs->tuple[nres - 1], &parts[nres - 1]);  // workspace: zero
  if (!st) st = hl_literal_create_tuple(parts, nres, out);
  for (int i = 0; i < 4; i++) hl_literal_release(parts[i]);
  hl_free(x), hl_free(scale), hl_free(third), hl_free(r0), hl_free(mean), hl_free(nf);
  hl_free(dscale), hl_free(dbias);
  return st;
}

const hl_custom_call_target_t hl_custom_calls_cudnn_norm[] = {
    {"__cudnn$norm", cudnn_norm, NULL},
    {NULL, NULL, NULL},
};
