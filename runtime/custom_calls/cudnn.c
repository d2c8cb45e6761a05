// cuDNN convolution targets of XLA's GPU compiler, replayed on the CPU
// (xla/service/gpu/cublas_cudnn.cc names them; conv_rewriter.cc and
// cudnn_fused_conv_rewriter.cc make them):
//   __cudnn$convForward                 (input, filter) -> (output, u8 workspace)
//   __cudnn$convBackwardInput           (output_grad, filter) -> (input_grad, ...)
//   __cudnn$convBackwardFilter          (input, output_grad) -> (filter_grad, ...)
//   __cudnn$convBiasActivationForward   (input, filter, bias[, side_input]) -> (output, ...)
// window, dim_labels and feature_group_count on the custom-call describe the
// forward convolution in all three directions; the backend_config's
// cudnn_conv_backend_config gives conv_result_scale, side_input_scale,
// activation_mode and leakyrelu_alpha. Values:
//   forward:  scale * conv(input, filter)
//   fused:    act(scale * conv(input, filter) + side_scale * side_input + bias[feature])
//   backward: the input / filter gradient of the forward convolution (scaled)
// accumulated in f64 and rounded once.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/custom_calls/json.h"
#include "runtime/custom_calls/registry.h"
#include "runtime/kernels/element_access.h"

typedef enum direction { FORWARD, BACKWARD_INPUT, BACKWARD_FILTER, FUSED } direction_t;

typedef enum activation {
  ACT_NONE, ACT_RELU, ACT_RELU6, ACT_ELU, ACT_LEAKY_RELU, ACT_TANH, ACT_SIGMOID, ACT_GELU_EXACT,
} activation_t;

static const struct {
  const char *name;
  activation_t a;
} kActivations[] = {
    {"kNone", ACT_NONE}, {"kRelu", ACT_RELU}, {"kRelu6", ACT_RELU6}, {"kElu", ACT_ELU},
    {"kLeakyRelu", ACT_LEAKY_RELU}, {"kTanh", ACT_TANH}, {"kSigmoid", ACT_SIGMOID},
    {"kGeluExact", ACT_GELU_EXACT},
};

typedef struct conv_config {
  double scale, side_scale, leaky_alpha;
  activation_t act;
} conv_config_t;

static double activate(const conv_config_t *c, double x) {
  switch (c->act) {
    case ACT_RELU: return x > 0 ? x : 0;
    case ACT_RELU6: return x < 0 ? 0 : x > 6 ? 6 : x;
    case ACT_ELU: return x > 0 ? x : expm1(x);
    case ACT_LEAKY_RELU: return x > 0 ? x : c->leaky_alpha * x;
    case ACT_TANH: return tanh(x);
    case ACT_SIGMOID: return 1 / (1 + exp(-x));
    case ACT_GELU_EXACT: return 0.5 * x * (1 + erf(x / sqrt(2.0)));
    default: return x;
  }
}

static hl_status_t read_config(const hl_custom_call_t *call, conv_config_t *c) {
  const char *loc = hl_instruction_location(call->inst);
  *c = (conv_config_t){1, 0, 0, ACT_NONE};
  const char *text = call->inst->attrs.backend_config;
  if (!text || !*text) return NULL;  // proto defaults would zero the scale: XLA always prints it
  hl_json_t root;
  HL_RETURN_IF_ERROR_CTX(hl_json_parse(text, &root), "%s: custom-call \"%s\"", loc, call->name);
  hl_status_t st = NULL;
  const hl_json_t *cfg = hl_json_get(&root, "cudnn_conv_backend_config");
  if (!cfg) cfg = &root;  // older dumps: the CudnnConvBackendConfig itself
  if (!hl_json_number(hl_json_get(cfg, "conv_result_scale"), &c->scale))
    st = HL_INVALID("%s: custom-call \"%s\" backend_config has no conv_result_scale", loc,
                    call->name);
  if (!hl_json_number(hl_json_get(cfg, "side_input_scale"), &c->side_scale)) c->side_scale = 0;
  if (!hl_json_number(hl_json_get(cfg, "leakyrelu_alpha"), &c->leaky_alpha)) c->leaky_alpha = 0;
  const hl_json_t *a = hl_json_get(cfg, "activation_mode");
  if (!st && a) {
    // A name, or (older dumps) the number of stream_executor.dnn.ActivationMode
    // (tsl/protobuf/dnn.proto): kNone 0, kSigmoid 1, kRelu 2, kRelu6 3,
    // kReluX 4, kTanh 5, kBandPass 6, kElu 7, kLeakyRelu 8, kGeluExact 9.
    static const char *const kByNumber[] = {"kNone", "kSigmoid", "kRelu",  "kRelu6", "kReluX",
                                            "kTanh", "kBandPass", "kElu", "kLeakyRelu",
                                            "kGeluExact"};
    const char *name = a->kind == HL_JSON_STRING ? a->string : NULL;
    double num;
    char shown[32] = "(not a name or number)";
    if (!name && hl_json_number(a, &num)) {
      snprintf(shown, sizeof(shown), "%g", num);
      if (num >= 0 && num < 10 && num == (int)num) name = kByNumber[(int)num];
    }
    bool known = false;
    for (size_t i = 0; name && i < sizeof(kActivations) / sizeof(kActivations[0]); i++)
      if (strcmp(name, kActivations[i].name) == 0) {
        c->act = kActivations[i].a;
        known = true;
      }
    if (!known)
      st = HL_UNIMPL("%s: custom-call \"%s\" activation_mode %s is not supported (supported: "
                     "kNone, kRelu, kRelu6, kElu, kLeakyRelu, kTanh, kSigmoid, kGeluExact)", loc,
                     call->name, name ? name : shown);
  }
  hl_json_free(&root);
  return st;
}

static double *to_f64(const hl_literal_t *l) {
  int64_t n = hl_literal_element_count(l);
  double *d = hl_malloc((size_t)(n ? n : 1) * sizeof(double));
  if (d)
    for (int64_t i = 0; i < n; i++) d[i] = hl_literal_get_f64(l, i);
  return d;
}

// The forward convolution's geometry in terms of the three arrays.
typedef struct geometry {
  int ns;                       // spatial dimensions
  const hl_shape_t *in, *ker, *out;
  int64_t in_stride[HL_MAX_RANK], ker_stride[HL_MAX_RANK], out_stride[HL_MAX_RANK];
} geometry_t;

// Walks every (output position, kernel position) pair that meets an input
// element and calls back with the three flat indices.
typedef void (*visit_fn)(void *ctx, int64_t in, int64_t ker, int64_t out);

static void walk(const hl_instruction_t *inst, const geometry_t *g, void *ctx, visit_fn visit) {
  const hl_conv_dims_t *dn = &inst->attrs.convolution_dimension_numbers;
  const hl_window_dim_t *w = inst->attrs.window.dims;
  int64_t batch = g->in->dims[dn->input_batch_dimension];
  int64_t fin = g->in->dims[dn->input_feature_dimension];
  int64_t fout = g->out->dims[dn->output_feature_dimension];
  int64_t groups = inst->attrs.feature_group_count > 0 ? inst->attrs.feature_group_count : 1;
  int64_t fin_g = fin / groups, fout_g = fout / groups;
  int64_t out_sp = 1, ker_sp = 1;
  for (int s = 0; s < g->ns; s++) {
    out_sp *= g->out->dims[dn->output_spatial_dimensions.v[s]];
    ker_sp *= g->ker->dims[dn->kernel_spatial_dimensions.v[s]];
  }
  for (int64_t b = 0; b < batch; b++)
    for (int64_t fo = 0; fo < fout; fo++) {
      int64_t grp = fo / fout_g;
      for (int64_t op = 0; op < out_sp; op++)
        for (int64_t kp = 0; kp < ker_sp; kp++) {
          int64_t in_off = b * g->in_stride[dn->input_batch_dimension];
          int64_t out_off = b * g->out_stride[dn->output_batch_dimension] +
                            fo * g->out_stride[dn->output_feature_dimension];
          int64_t ker_off = fo * g->ker_stride[dn->kernel_output_feature_dimension];
          bool inside = true;
          int64_t orest = op, krest = kp;
          for (int s = g->ns - 1; s >= 0 && inside; s--) {
            int64_t od = g->out->dims[dn->output_spatial_dimensions.v[s]];
            int64_t kd = g->ker->dims[dn->kernel_spatial_dimensions.v[s]];
            int64_t o = orest % od, k = krest % kd;
            orest /= od;
            krest /= kd;
            int64_t i = o * w[s].stride - w[s].padding_low + k * w[s].window_dilation;
            if (i < 0 || i >= g->in->dims[dn->input_spatial_dimensions.v[s]]) inside = false;
            in_off += i * g->in_stride[dn->input_spatial_dimensions.v[s]];
            out_off += o * g->out_stride[dn->output_spatial_dimensions.v[s]];
            ker_off += k * g->ker_stride[dn->kernel_spatial_dimensions.v[s]];
          }
          if (!inside) continue;
          for (int64_t fk = 0; fk < fin_g; fk++)
            visit(ctx, in_off + (grp * fin_g + fk) * g->in_stride[dn->input_feature_dimension],
                  ker_off + fk * g->ker_stride[dn->kernel_input_feature_dimension], out_off);
        }
    }
}

typedef struct {
  double *in, *ker, *out;
  direction_t dir;
} acc_t;

static void accumulate(void *p, int64_t i, int64_t k, int64_t o) {
  acc_t *a = p;
  if (a->dir == BACKWARD_INPUT) a->in[i] += a->out[o] * a->ker[k];
  else if (a->dir == BACKWARD_FILTER) a->ker[k] += a->in[i] * a->out[o];
  else a->out[o] += a->in[i] * a->ker[k];
}

static hl_status_t check_geometry(const hl_custom_call_t *call, const geometry_t *g) {
  const hl_instruction_t *inst = call->inst;
  const char *loc = hl_instruction_location(inst);
  const hl_conv_dims_t *dn = &inst->attrs.convolution_dimension_numbers;
  if (!inst->attrs.has_convolution_dimension_numbers)
    return HL_INVALID("%s: custom-call \"%s\" needs dim_labels", loc, call->name);
  if (inst->attrs.batch_group_count > 1)
    return HL_UNIMPL("%s: custom-call \"%s\" with batch_group_count %lld", loc, call->name,
                     (long long)inst->attrs.batch_group_count);
  int ns = dn->input_spatial_dimensions.n;
  if ((inst->attrs.window.n != ns && !(ns == 0 && inst->attrs.window.n == 0)) ||
      g->in->rank != ns + 2 || g->ker->rank != ns + 2 || g->out->rank != ns + 2)
    return HL_INVALID("%s: custom-call \"%s\": window, dim_labels and shapes %s, %s, %s disagree",
                      loc, call->name, HL_SHAPE_STR(g->in), HL_SHAPE_STR(g->ker),
                      HL_SHAPE_STR(g->out));
  for (int s = 0; s < ns; s++) {
    const hl_window_dim_t *w = &inst->attrs.window.dims[s];
    if (w->base_dilation != 1 || w->window_reversal)
      return HL_UNIMPL("%s: custom-call \"%s\": base dilation / window reversal (cuDNN has "
                       "neither)", loc, call->name);
    int64_t in = g->in->dims[dn->input_spatial_dimensions.v[s]];
    int64_t k = g->ker->dims[dn->kernel_spatial_dimensions.v[s]];
    int64_t padded = in + w->padding_low + w->padding_high;
    int64_t eff = (k - 1) * w->window_dilation + 1;
    int64_t want = padded < eff ? 0 : (padded - eff) / w->stride + 1;
    if (k != w->size || g->out->dims[dn->output_spatial_dimensions.v[s]] != want)
      return HL_INVALID("%s: custom-call \"%s\": spatial dimension %d: input %lld, window %lld, "
                        "output %lld do not form the forward convolution (expected output %lld)",
                        loc, call->name, s, (long long)in, (long long)k,
                        (long long)g->out->dims[dn->output_spatial_dimensions.v[s]],
                        (long long)want);
  }
  int64_t groups = inst->attrs.feature_group_count > 0 ? inst->attrs.feature_group_count : 1;
  int64_t fin = g->in->dims[dn->input_feature_dimension];
  int64_t fout = g->out->dims[dn->output_feature_dimension];
  if (fin % groups || fout % groups ||
      g->ker->dims[dn->kernel_input_feature_dimension] != fin / groups ||
      g->ker->dims[dn->kernel_output_feature_dimension] != fout ||
      g->in->dims[dn->input_batch_dimension] != g->out->dims[dn->output_batch_dimension])
    return HL_INVALID("%s: custom-call \"%s\": features or batch of %s, %s, %s do not match "
                      "(feature_group_count %lld)", loc, call->name, HL_SHAPE_STR(g->in),
                      HL_SHAPE_STR(g->ker), HL_SHAPE_STR(g->out), (long long)groups);
  return NULL;
}

static hl_status_t run_conv(const hl_custom_call_t *call, direction_t dir, hl_literal_t **out) {
  *out = NULL;
  const hl_instruction_t *inst = call->inst;
  const char *loc = hl_instruction_location(inst);
  const hl_shape_t *rs = &inst->shape;
  const hl_shape_t *res = rs->dtype == HL_TUPLE ? &rs->tuple[0] : rs;
  if (rs->dtype == HL_TUPLE && (rs->tuple_count != 2 || (rs->tuple[1].dtype != HL_U8 &&
                                                          rs->tuple[1].dtype != HL_S8)))
    return HL_UNIMPL("%s: custom-call \"%s\" result %s: only (result, u8 workspace) is supported",
                     loc, call->name, HL_SHAPE_STR(rs));
  int min_ops = 2, max_ops = dir == FUSED ? 4 : 2;
  if (dir == FUSED) min_ops = 3;
  if (inst->operand_count < min_ops || inst->operand_count > max_ops)
    return HL_INVALID("%s: custom-call \"%s\" takes %d%s operands, got %d", loc, call->name,
                      min_ops, max_ops > min_ops ? " or 4" : "", inst->operand_count);
  conv_config_t cfg;
  HL_RETURN_IF_ERROR(read_config(call, &cfg));
  if (dir != FUSED && cfg.act != ACT_NONE)
    return HL_UNIMPL("%s: custom-call \"%s\": an activation outside the fused target", loc,
                     call->name);
  geometry_t g = {0};
  g.ns = inst->attrs.convolution_dimension_numbers.input_spatial_dimensions.n;
  const hl_literal_t *a = call->operands[0], *b = call->operands[1];
  g.in = dir == BACKWARD_INPUT ? res : &a->shape;
  g.ker = dir == BACKWARD_FILTER ? res : dir == BACKWARD_INPUT ? &b->shape : &b->shape;
  g.out = dir == BACKWARD_INPUT ? &a->shape : dir == BACKWARD_FILTER ? &b->shape : res;
  HL_RETURN_IF_ERROR(check_geometry(call, &g));
  hl_shape_strides(g.in, g.in_stride);
  hl_shape_strides(g.ker, g.ker_stride);
  hl_shape_strides(g.out, g.out_stride);
  const hl_conv_dims_t *dn = &inst->attrs.convolution_dimension_numbers;
  int64_t fout = g.out->dims[dn->output_feature_dimension];
  const hl_literal_t *bias = dir == FUSED ? call->operands[2] : NULL;
  const hl_literal_t *side = dir == FUSED && inst->operand_count == 4 ? call->operands[3] : NULL;
  if (bias && hl_literal_element_count(bias) != fout)
    return HL_INVALID("%s: custom-call \"%s\" bias is %s, expected %lld elements (the output "
                      "features)", loc, call->name, HL_SHAPE_STR(&bias->shape), (long long)fout);
  if (side && !hl_shape_same_dims(&side->shape, res))
    return HL_INVALID("%s: custom-call \"%s\" side input is %s, expected the output's dims %s",
                      loc, call->name, HL_SHAPE_STR(&side->shape), HL_SHAPE_STR(res));

  int64_t n_res = hl_shape_element_count(res);
  acc_t acc = {0};
  acc.dir = dir;
  double *r = hl_calloc((size_t)(n_res ? n_res : 1), sizeof(double));
  double *x = to_f64(a), *y = to_f64(b);
  hl_status_t st = (r && x && y) ? NULL : HL_OOM();
  hl_literal_t *result = NULL;
  if (!st) {
    acc.in = dir == BACKWARD_INPUT ? r : x;
    acc.ker = dir == BACKWARD_FILTER ? r : y;
    acc.out = dir == BACKWARD_INPUT ? x : dir == BACKWARD_FILTER ? y : r;
    walk(inst, &g, &acc, accumulate);
    st = hl_literal_create_uninitialized(res, &result);
  }
  int64_t fstride = g.out_stride[dn->output_feature_dimension];
  for (int64_t i = 0; !st && i < n_res; i++) {
    double v = cfg.scale * r[i];
    if (side) v += cfg.side_scale * hl_literal_get_f64(side, i);
    if (bias) v += hl_literal_get_f64(bias, (i / fstride) % fout);
    hl_literal_set_f64(result, i, activate(&cfg, v));
  }
  hl_free(r);
  hl_free(x);
  hl_free(y);
  if (st) {
    hl_literal_release(result);
    return st;
  }
  if (rs->dtype != HL_TUPLE) {
    *out = result;
    return NULL;
  }
  hl_literal_t *parts[2] = {result, NULL};
  st = hl_literal_create(&rs->tuple[1], &parts[1]);
  if (!st) st = hl_literal_create_tuple(parts, 2, out);
  hl_literal_release(parts[0]);
  hl_literal_release(parts[1]);
  return st;
}

static hl_status_t conv_forward(const hl_custom_call_t *call, hl_literal_t **out) {
  return run_conv(call, FORWARD, out);
}
static hl_status_t conv_backward_input(const hl_custom_call_t *call, hl_literal_t **out) {
  return run_conv(call, BACKWARD_INPUT, out);
}
static hl_status_t conv_backward_filter(const hl_custom_call_t *call, hl_literal_t **out) {
  return run_conv(call, BACKWARD_FILTER, out);
}
static hl_status_t conv_fused(const hl_custom_call_t *call, hl_literal_t **out) {
  return run_conv(call, FUSED, out);
}

const hl_custom_call_target_t hl_custom_calls_cudnn[] = {
    {"__cudnn$convForward", conv_forward, NULL},
    {"__cudnn$convBackwardInput", conv_backward_input, NULL},
    {"__cudnn$convBackwardFilter", conv_backward_filter, NULL},
    {"__cudnn$convBiasActivationForward", conv_fused, NULL},
    {NULL, NULL, NULL},
};
