"""GPU custom-calls from XLA dumps, replayed on CPU through real hlo-launch runs.

The programs are written the way XLA's GPU compiler prints them after its
gemm rewriter (xla/service/gpu/transforms/gemm_rewriter.cc and its tests
gemm_rewrite_test.cc, stream_attribute_annotator_test.cc): `__cublas$gemm` /
`__cublas$lt$matmul` with a (result, s8 workspace) tuple and a
GpuBackendConfig JSON backend_config, or the older quoted GemmBackendConfig.
NumPy is the oracle.
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hl_testlib as hl  # noqa: E402


def gemm_config(alpha=1, beta=0, lc=(1,), rc=(0,), lb=(), rb=(), epilogue="DEFAULT",
                alpha_imag=0, wrapped=True):
    # Field order and spelling as XLA prints GemmBackendConfig (int64 as strings).
    g = {"alpha_real": alpha, "alpha_imag": alpha_imag, "beta": beta,
         "dot_dimension_numbers": {
             "lhs_contracting_dimensions": [str(d) for d in lc],
             "rhs_contracting_dimensions": [str(d) for d in rc],
             "lhs_batch_dimensions": [str(d) for d in lb],
             "rhs_batch_dimensions": [str(d) for d in rb]},
         "precision_config": {"operand_precision": ["DEFAULT", "DEFAULT"],
                              "algorithm": "ALG_UNSET"},
         "epilogue": epilogue, "damax_output": False, "lhs_stride": "0", "rhs_stride": "0",
         "grad_x": False, "grad_y": False}
    if not wrapped:
        return g
    return {"operation_queue_id": "0", "wait_on_operation_queues": [],
            "gemm_backend_config": g, "force_earliest_schedule": False}


def run(name, text, args, nresults):
    return hl.run_hlo_text("gpu-" + name, text, args, nresults)[0]


def fails(text, args, want):
    with hl.tempdir("gpu-err") as d:
        path = os.path.join(d, "p.hlo")
        with open(path, "w") as f:
            f.write(text)
        hl.write_args(os.path.join(d, "args"), args)
        r = hl.launch(path, args_dir=os.path.join(d, "args"))
        if r.returncode == 0 or want not in r.stdout + r.stderr:
            return "expected an error containing %r\n%s" % (want, r.describe())
    return None


rand = hl.rand_normal  # (shape, dtype, seed)


def gemm_workspace_tuple():
    """The form of stream_attribute_annotator_test.cc: (f32[16,16], s8[1028]) tuple."""
    x, y = rand((16, 32), np.float32, 1), rand((32, 16), np.float32, 2)
    text = """HloModule m

ENTRY entry {
  p1_32 = f32[16,32]{1,0} parameter(0)
  p2_32 = f32[32,16]{1,0} parameter(1)
  custom-call.3 = (f32[16,16]{1,0}, s8[1028]{0}) custom-call(p1_32, p2_32), custom_call_target="__cublas$gemm", backend_config=%s
  gte = f32[16,16]{1,0} get-tuple-element(custom-call.3), index=0
  ws = s8[1028]{0} get-tuple-element(custom-call.3), index=1
  ROOT t = (f32[16,16]{1,0}, s8[1028]{0}) tuple(gte, ws)
}
""" % json.dumps(gemm_config(), separators=(",", ":"))
    d, ws = run("gemm", text, [x, y], 2)
    return hl.compare("gemm", d, x @ y, (1e-5, 1e-5)) or \
        hl.compare("workspace", ws, np.zeros(1028, np.int8))


def gemm_batched_quoted():
    """The older quoted form (gemm_rewrite_test.cc), batch dims and a transposed rhs."""
    x, y = rand((3, 2, 4), np.float64, 3), rand((3, 5, 4), np.float64, 4)
    cfg = json.dumps(gemm_config(lc=(2,), rc=(2,), lb=(0,), rb=(0,), wrapped=False),
                     separators=(",", ":"))
    text = """HloModule m

ENTRY AddDotsFunc {
  x = f64[3,2,4]{2,1,0} parameter(0)
  y = f64[3,5,4]{2,1,0} parameter(1)
  ROOT cublas-batch-gemm.1 = f64[3,2,5]{2,1,0} custom-call(x, y), custom_call_target="__cublas$gemm", backend_config="%s"
}
""" % cfg.replace('"', '\\"')
    d, = run("gemm-batched", text, [x, y], 1)
    return hl.compare("batched gemm", d, np.einsum("bmk,bnk->bmn", x, y))


def gemm_alpha_beta():
    """beta != 0: c is the third operand (the output aliases it on the GPU)."""
    x, y, c = rand((4, 3), np.float32, 5), rand((3, 6), np.float32, 6), rand((4, 6), np.float32, 7)
    text = """HloModule m, input_output_alias={ {0}: (2, {}, must-alias) }

ENTRY e {
  x = f32[4,3]{1,0} parameter(0)
  y = f32[3,6]{1,0} parameter(1)
  c = f32[4,6]{1,0} parameter(2)
  ROOT gemm = (f32[4,6]{1,0}, s8[4194304]{0}) custom-call(x, y, c), custom_call_target="__cublas$gemm", output_to_operand_aliasing={{0}: (2, {})}, backend_config=%s
}
""" % json.dumps(gemm_config(alpha=2, beta=0.5), separators=(",", ":"))
    d, _ = run("gemm-ab", text, [x, y, c], 2)
    return hl.compare("alpha A B + beta C", d, (2 * (x @ y) + 0.5 * c).astype(np.float32),
                      (1e-5, 1e-5))


def lt_bias_relu():
    """cublasLt with a vector bias and ReLU (CublasLtGemmRewriteTest's VectorBiasRelu form)."""
    x, y, b = rand((2, 3), np.float32, 8), rand((3, 4), np.float32, 9), rand((4,), np.float32, 10)
    text = """HloModule test

ENTRY test {
  p0 = f32[2,3]{1,0} parameter(0)
  p1 = f32[3,4]{1,0} parameter(1)
  p2 = f32[4]{0} parameter(2)
  out = (f32[2,4]{1,0}, s8[33554432]{0}) custom-call(p0, p1, p2), custom_call_target="__cublas$lt$matmul", backend_config=%s
  ROOT gte = f32[2,4]{1,0} get-tuple-element(out), index=0
}
""" % json.dumps(gemm_config(epilogue="BIAS_RELU"), separators=(",", ":"))
    d, = run("lt-bias-relu", text, [x, y, b], 1)
    return hl.compare("relu(A B + bias)", d, np.maximum(x @ y + b, 0), (1e-5, 1e-5))


def lt_gelu_bf16():
    """GELU (tanh approximation) on a bf16 result, lhs contracted on dimension 0."""
    x = hl.round_to_bf16(rand((8, 4), np.float32, 11))
    y = hl.round_to_bf16(rand((8, 6), np.float32, 12))
    text = """HloModule m

ENTRY e {
  a = f32[8,4]{1,0} parameter(0)
  b = f32[8,6]{1,0} parameter(1)
  arg0 = bf16[8,4]{1,0} convert(a)
  arg1 = bf16[8,6]{1,0} convert(b)
  gemm = (bf16[4,6]{1,0}, s8[1024]{0}) custom-call(arg0, arg1), custom_call_target="__cublas$lt$matmul", backend_config=%s
  g = bf16[4,6]{1,0} get-tuple-element(gemm), index=0
  ROOT r = f32[4,6]{1,0} convert(g)
}
""" % json.dumps(gemm_config(lc=(0,), rc=(0,), epilogue="GELU"), separators=(",", ":"))
    d, = run("lt-gelu", text, [x, y], 1)
    z = x.T.astype(np.float64) @ y.astype(np.float64)
    want = 0.5 * z * (1 + np.tanh(np.sqrt(2 / np.pi) * (z + 0.044715 * z ** 3)))
    return hl.compare("gelu(A^T B) in bf16", d, hl.round_to_bf16(want), (2 ** -7, 1e-6))


def gemm_complex_alpha():
    x, y = rand((3, 3), np.complex64, 13), rand((3, 2), np.complex64, 14)
    text = """HloModule m

ENTRY e {
  x = c64[3,3]{1,0} parameter(0)
  y = c64[3,2]{1,0} parameter(1)
  ROOT gemm = c64[3,2]{1,0} custom-call(x, y), custom_call_target="__cublas$gemm", backend_config=%s
}
""" % json.dumps(gemm_config(alpha=0.5, alpha_imag=2), separators=(",", ":"))
    d, = run("gemm-c64", text, [x, y], 1)
    want = ((0.5 + 2j) * (x.astype(np.complex128) @ y)).astype(np.complex64)
    return hl.compare("complex alpha", d.view(np.float32), want.view(np.float32), (1e-5, 1e-5))


def gemm_errors():
    x, y = rand((2, 2), np.float32, 15), rand((2, 2), np.float32, 16)
    base = """HloModule m

ENTRY e {
  x = f32[2,2]{1,0} parameter(0)
  y = f32[2,2]{1,0} parameter(1)
  ROOT gemm = %s custom-call(x, y), custom_call_target="__cublas$lt$matmul", backend_config=%s
}
"""
    aux = base % ("(f32[2,2]{1,0}, f32[2,2]{1,0}, s8[64]{0})",
                  json.dumps(gemm_config(epilogue="RELU_AUX"), separators=(",", ":")))
    missing_c = base % ("f32[2,2]{1,0}", json.dumps(gemm_config(beta=1), separators=(",", ":")))
    return fails(aux, [x, y], "epilogue RELU_AUX is not supported") or \
        fails(missing_c, [x, y], "takes 3 operands, got 2")


def lt_bias_gelu_aux():
    """BIAS_GELU_AUX (FuseGeluActivation with a 5th user): (d, aux = pre-activation, ws)."""
    x, y, b = rand((4, 8), np.float32, 40), rand((8, 5), np.float32, 41), rand((5,), np.float32, 42)
    text = """HloModule test

ENTRY test {
  x = f32[4,8]{1,0} parameter(0)
  y = f32[8,5]{1,0} parameter(1)
  b = f32[5]{0} parameter(2)
  cublas-lt-matmul.2.0 = (f32[4,5]{1,0}, f32[4,5]{1,0}, s8[4194304]{0}) custom-call(x, y, b), custom_call_target="__cublas$lt$matmul", backend_config=%s
  d = f32[4,5]{1,0} get-tuple-element(cublas-lt-matmul.2.0), index=0
  aux = f32[4,5]{1,0} get-tuple-element(cublas-lt-matmul.2.0), index=1
  ROOT t = (f32[4,5]{1,0}, f32[4,5]{1,0}) tuple(d, aux)
}
""" % json.dumps(gemm_config(epilogue="BIAS_GELU_AUX"), separators=(",", ":"))
    d, aux = run("lt-gelu-aux", text, [x, y, b], 2)
    pre = x.astype(np.float64) @ y + b
    gelu = 0.5 * pre * (1 + np.tanh(0.7978845608028654 * (pre + 0.044715 * pre ** 3)))
    return hl.compare("aux = A B + bias", aux, pre.astype(np.float32), (1e-5, 1e-5)) or \
        hl.compare("d = gelu(aux)", d, gelu.astype(np.float32), (1e-5, 1e-5))


def f8_program(result, operands, extra_params, cfg, tail):
    """a, b: f32 parameters converted to f8e4m3fn (values exact in f8), as XLA feeds the call."""
    params = "\n".join("  %s = %s parameter(%d)" % (n, s, i)
                        for i, (n, s) in enumerate([("pa", "f32[16,32]{1,0}"),
                                                    ("pb", "f32[32,16]{1,0}")] + extra_params))
    return """HloModule test

ENTRY test {
%s
  a = f8e4m3fn[16,32]{1,0} convert(pa)
  b.t = f32[16,32]{1,0} transpose(pb), dimensions={1,0}
  b = f8e4m3fn[16,32]{1,0} convert(b.t)
  one = f32[] constant(1)
  cublas-lt-matmul.2.0 = %s custom-call(%s), custom_call_target="__cublas$lt$matmul$f8", backend_config=%s
%s
}
""" % (params, result, operands, cfg, tail)


def f8_inputs():
    rng = np.random.default_rng(43)
    a = rng.integers(-1, 2, (16, 32)).astype(np.float32)
    b = rng.integers(-1, 2, (32, 16)).astype(np.float32)
    return a, b


def lt_f8_scaled():
    """__cublas$lt$matmul$f8, newer XLA form: a, b (b column-major as the rewriter makes
    it: contracting dim 1), a_scale, b_scale; f32 d."""
    a, b = f8_inputs()
    cfg = json.dumps(gemm_config(lc=(1,), rc=(1,)), separators=(",", ":"))
    text = f8_program("(f32[16,16]{1,0}, s8[33554432]{0})", "a, b, sa, sb",
                      [("sa", "f32[]"), ("sb", "f32[]")], cfg,
                      "  ROOT d = f32[16,16]{1,0} get-tuple-element(cublas-lt-matmul.2.0), index=0")
    d, = run("lt-f8", text, [a, b, np.float32(0.5), np.float32(4)], 1)
    return hl.compare("a_scale b_scale A B", d, (2 * (a.astype(np.float64) @ b)).astype(np.float32))


def lt_f8_output_damax():
    """f8 output: d_scale last, saturated to +-448, and damax_output (amax before d_scale)."""
    a, b = f8_inputs()
    a, b = a[:, :4].copy(), b[:4, :].copy()  # |dot| <= 4: d_scale 128 saturates at 512
    a = np.pad(a, ((0, 0), (0, 28)))
    b = np.pad(b, ((0, 28), (0, 0)))
    g = gemm_config(lc=(1,), rc=(1,))
    g["gemm_backend_config"]["damax_output"] = True
    cfg = json.dumps(g, separators=(",", ":"))
    text = f8_program("(f8e4m3fn[16,16]{1,0}, f32[], s8[33554432]{0})", "a, b, one, one, sd",
                      [("sd", "f32[]")], cfg,
                      "  d8 = f8e4m3fn[16,16]{1,0} get-tuple-element(cublas-lt-matmul.2.0), index=0\n"
                      "  amax = f32[] get-tuple-element(cublas-lt-matmul.2.0), index=1\n"
                      "  d = f32[16,16]{1,0} convert(d8)\n"
                      "  ROOT t = (f32[16,16]{1,0}, f32[]) tuple(d, amax)")
    d, amax = run("lt-f8-out", text, [a, b, np.float32(128)], 2)
    dot = a.astype(np.float64) @ b
    if np.abs(dot).max() < 4:
        return "test data does not reach saturation"
    want = np.clip(128 * dot, -448, 448).astype(np.float32)
    return hl.compare("saturated f8 d", d, want) or \
        hl.compare("damax", amax, np.float32(np.abs(dot).max()))


def lt_f8_older_form_bias():
    """Older XLA: a, b, a_scale, b_scale, c_scale, d_scale, bias (EmitCublasLtMatmulThunkF8's
    6-8 operands); f16 bias and d; d_scale does not apply to a non-f8 d."""
    a, b = f8_inputs()
    bias = rand((16,), np.float16, 44)
    cfg = json.dumps(gemm_config(lc=(1,), rc=(1,), epilogue="BIAS"), separators=(",", ":"))
    text = f8_program("(f16[16,16]{1,0}, s8[33554432]{0})", "a, b, sa, one, one, one, bias",
                      [("sa", "f32[]"), ("bias", "f16[16]{0}")], cfg,
                      "  ROOT d = f16[16,16]{1,0} get-tuple-element(cublas-lt-matmul.2.0), index=0")
    d, = run("lt-f8-old", text, [a, b, np.float32(0.25), bias], 1)
    want = (0.25 * (a.astype(np.float64) @ b) + bias.astype(np.float64)).astype(np.float16)
    return hl.compare("a_scale A B + bias", d, want)


# --- cuSOLVER (jax's GPU lowering: jax/_src/lax/linalg.py, column-major layouts) ----------

def solver_program(target, x_shape, results, attrs=""):
    b = len(x_shape) - 2
    lay = "{%s}" % ",".join(map(str, (b, b + 1) + tuple(range(b - 1, -1, -1))))
    def shp(t, dims):
        if not dims:
            return "%s[]" % t
        layout = lay if len(dims) == len(x_shape) else "{%s}" % ",".join(
            map(str, range(len(dims) - 1, -1, -1)))
        return "%s[%s]%s" % (t, ",".join(map(str, dims)), layout)
    t = "f64"
    text = ("HloModule m\n\nENTRY main {\n  x = %s parameter(0)\n  ROOT r = (%s) custom-call(x), "
            "custom_call_target=\"%s\", operand_layout_constraints={%s}, "
            "api_version=API_VERSION_TYPED_FFI" % (
                "%s[%s]{%s}" % (t, ",".join(map(str, x_shape)),
                                ",".join(map(str, range(len(x_shape) - 1, -1, -1)))),
                ", ".join(shp(rt, d) for rt, d in results), target, shp(t, x_shape)))
    if attrs:
        text += ", backend_config={%s}" % attrs
    return text + "\n}\n"


def cusolver_getrf_and_permutation():
    x = rand((2, 3, 3), np.float64, 20)
    lu, piv, info = run("cusolver-getrf", solver_program(
        "cusolver_getrf_ffi", x.shape, [("f64", x.shape), ("s32", (2, 3)), ("s32", (2,))]),
        [x], 3)
    # jax subtracts 1, then cu_lu_pivots_to_permutation (row layout {1,0}).
    text = """HloModule m

ENTRY main {
  p = s32[2,3]{1,0} parameter(0)
  ROOT perm = s32[2,4]{1,0} custom-call(p), custom_call_target="cu_lu_pivots_to_permutation", operand_layout_constraints={s32[2,3]{1,0}}, api_version=API_VERSION_TYPED_FFI
}
"""
    perm, = run("pivots", text, [piv - 1], 1)
    for b in range(2):
        want = np.arange(4)
        for i, pv in enumerate(piv[b] - 1):
            want[[i, pv]] = want[[pv, i]]
        if list(perm[b]) != list(want):
            return "permutation %s, expected %s" % (perm[b], want)
        L = np.tril(lu[b], -1) + np.eye(3)
        msg = hl.compare("P A = L U", L @ np.triu(lu[b]), x[b][perm[b][:3]], (1e-12, 1e-12))
        if msg:
            return msg
    return None if list(info) == [0, 0] else "info %s" % info


def cusolver_potrf_syevd():
    a = rand((2, 4, 4), np.float64, 21)
    spd = a @ np.swapaxes(a, 1, 2) + 4 * np.eye(4)
    out, info = run("cusolver-potrf", solver_program(
        "cusolver_potrf_ffi", spd.shape, [("f64", spd.shape), ("s32", (2,))], "lower = true"),
        [spd], 2)
    msg = hl.compare("cholesky", np.tril(out), np.linalg.cholesky(spd), (1e-12, 1e-12))
    if msg or list(info) != [0, 0]:
        return msg or "info %s" % info
    v, w, info = run("cusolver-syevd", solver_program(
        "cusolver_syevd_ffi", spd.shape, [("f64", spd.shape), ("f64", (2, 4)), ("s32", (2,))],
        "algorithm = 0 : ui8, lower = false"), [spd], 3)
    return hl.compare("eigenvalues", w, np.linalg.eigvalsh(spd), (1e-12, 1e-12)) or \
        hl.compare("A V = V W", spd @ v, v * w[:, None, :], (1e-10, 1e-10))


# --- cuDNN convolutions (conv_rewriter.cc / cudnn_fused_conv_rewriter.cc forms) ------------

CONV_CONFIG = ('{"operation_queue_id":"0","wait_on_operation_queues":[],"cudnn_conv_backend_config":'
               '{"activation_mode":%s,"conv_result_scale":%s,"side_input_scale":%s,'
               '"leakyrelu_alpha":%s},"force_earliest_schedule":false,"reification_cost":[]}')


def conv_nhwc(x, w, stride, pad, dil, groups=1):
    """Forward convolution, x [b,h,w,f] (b01f), w [o,kh,kw,i] (o01i) -> [b,oh,ow,o]."""
    b, h, wd, f = x.shape
    o, kh, kw, i = w.shape
    xp = np.zeros((b, h + pad[0][0] + pad[0][1], wd + pad[1][0] + pad[1][1], f))
    xp[:, pad[0][0]:pad[0][0] + h, pad[1][0]:pad[1][0] + wd, :] = x
    oh = (xp.shape[1] - ((kh - 1) * dil[0] + 1)) // stride[0] + 1
    ow = (xp.shape[2] - ((kw - 1) * dil[1] + 1)) // stride[1] + 1
    out = np.zeros((b, oh, ow, o))
    og = o // groups
    for y in range(oh):
        for z in range(ow):
            for a in range(kh):
                for c in range(kw):
                    patch = xp[:, y * stride[0] + a * dil[0], z * stride[1] + c * dil[1], :]
                    for g in range(groups):
                        out[:, y, z, g * og:(g + 1) * og] += \
                            patch[:, g * i:(g + 1) * i] @ w[g * og:(g + 1) * og, a, c, :].T
    return out


def conv_program(target, operands, result, window, groups=1, act="kNone", scale=1, side=0, alpha=0):
    params = "\n".join("  p%d = %s parameter(%d)" % (k, s, k) for k, s in enumerate(operands))
    return ("HloModule m\n\nENTRY main {\n%s\n  conv = (%s, u8[0]{0}) custom-call(%s), window={%s}, "
            "dim_labels=b01f_o01i->b01f%s, custom_call_target=\"%s\", backend_config=%s\n"
            "  ROOT r = %s get-tuple-element(conv), index=0\n}\n" % (
                params, result, ", ".join("p%d" % k for k in range(len(operands))), window,
                ", feature_group_count=%d" % groups if groups > 1 else "", target,
                CONV_CONFIG % ('"%s"' % act if isinstance(act, str) else act, scale, side, alpha),
                result))


def f32s(shape):
    return "f32[%s]{%s}" % (",".join(map(str, shape)),
                            ",".join(map(str, range(len(shape) - 1, -1, -1))))


def cudnn_conv_forward():
    x, w = rand((2, 6, 5, 4), np.float32, 30), rand((6, 3, 2, 2), np.float32, 31)
    stride, pad, dil = (2, 1), ((1, 1), (0, 1)), (1, 2)
    want = conv_nhwc(x.astype(np.float64), w.astype(np.float64), stride, pad, dil, groups=2)
    text = conv_program("__cudnn$convForward", [f32s(x.shape), f32s(w.shape)], f32s(want.shape),
                        "size=3x2 stride=2x1 pad=1_1x0_1 rhs_dilate=1x2", groups=2, scale=0.5)
    d, = run("cudnn-fwd", text, [x, w], 1)
    return hl.compare("scaled grouped conv", d, (0.5 * want).astype(np.float32), (1e-5, 1e-5))


def cudnn_conv_bias_activation():
    x, w = rand((1, 5, 5, 3), np.float32, 32), rand((4, 3, 3, 3), np.float32, 33)
    bias, side = rand((4,), np.float32, 34), rand((1, 5, 5, 4), np.float32, 35)
    conv = conv_nhwc(x.astype(np.float64), w.astype(np.float64), (1, 1), ((1, 1), (1, 1)), (1, 1))
    ops = [f32s(x.shape), f32s(w.shape), "f32[4]{0}", f32s(side.shape)]
    msgs = []
    # Older dumps write the mode as dnn.proto's number (2 = kRelu, 8 = kLeakyRelu).
    for act, fn in (("kRelu", lambda v: np.maximum(v, 0)),
                    ("kLeakyRelu", lambda v: np.where(v > 0, v, 0.1 * v)),
                    ("kTanh", np.tanh), (2, lambda v: np.maximum(v, 0)),
                    (8, lambda v: np.where(v > 0, v, 0.1 * v)), (0, lambda v: v)):
        text = conv_program("__cudnn$convBiasActivationForward", ops, f32s(conv.shape),
                            "size=3x3 pad=1_1x1_1", act=act, scale=1, side=0.5, alpha=0.1)
        d, = run("cudnn-fused", text, [x, w, bias, side], 1)
        msgs.append(hl.compare(str(act), d, fn(conv + 0.5 * side + bias).astype(np.float32),
                               (1e-5, 1e-5)))
    # kReluX (4) needs a bound the config does not carry: refused by name.
    with hl.tempdir("cudnn-relux") as tmp:
        path = os.path.join(tmp, "p.hlo")
        with open(path, "w") as f:
            f.write(conv_program("__cudnn$convBiasActivationForward", ops, f32s(conv.shape),
                                 "size=3x3 pad=1_1x1_1", act=4, side=0.5))
        r = hl.run([hl.HLO_LAUNCH, "--zeros", "--quiet", path])
        if r.returncode == 0 or "activation_mode kReluX is not supported" not in r.stderr:
            msgs.append("activation_mode 4 (kReluX): expected a refusal naming it\n" + r.describe())
    return next((m for m in msgs if m), None)


def cudnn_conv_backward():
    """Gradients against the adjoint of the forward map, probed one element at a time."""
    x, w = rand((1, 5, 4, 2), np.float64, 36), rand((3, 2, 2, 2), np.float64, 37)
    stride, pad = (2, 1), ((1, 0), (0, 1))
    fwd = lambda xx, ww: conv_nhwc(xx, ww, stride, pad, (1, 1))
    dy = rand(fwd(x, w).shape, np.float64, 38)
    def probe(shape, f):
        g = np.zeros(shape)
        for idx in np.ndindex(*shape):
            e = np.zeros(shape)
            e[idx] = 1
            g[idx] = np.sum(f(e) * dy)
        return g
    dx = probe(x.shape, lambda e: fwd(e, w))
    dw = probe(w.shape, lambda e: fwd(x, e))
    f64s = lambda sh: f32s(sh).replace("f32", "f64")
    window = "size=2x2 stride=2x1 pad=1_0x0_1"
    text = conv_program("__cudnn$convBackwardInput", [f64s(dy.shape), f64s(w.shape)],
                        f64s(x.shape), window)
    gx, = run("cudnn-bwd-in", text, [dy, w], 1)
    text = conv_program("__cudnn$convBackwardFilter", [f64s(x.shape), f64s(dy.shape)],
                        f64s(w.shape), window)
    gw, = run("cudnn-bwd-filter", text, [x, dy], 1)
    return hl.compare("input gradient", gx, dx) or hl.compare("filter gradient", gw, dw)


if __name__ == "__main__":
    hl.require_binaries("hlo-launch")
    hl.main([
        ("cublas_gemm_workspace_tuple", gemm_workspace_tuple),
        ("cublas_gemm_batched_quoted_config", gemm_batched_quoted),
        ("cublas_gemm_alpha_beta_c", gemm_alpha_beta),
        ("cublaslt_bias_relu", lt_bias_relu),
        ("cublaslt_gelu_bf16", lt_gelu_bf16),
        ("cublas_gemm_complex_alpha", gemm_complex_alpha),
        ("cublas_errors", gemm_errors),
        ("cublaslt_bias_gelu_aux", lt_bias_gelu_aux),
        ("cublaslt_f8_scaled", lt_f8_scaled),
        ("cublaslt_f8_output_saturated_damax", lt_f8_output_damax),
        ("cublaslt_f8_older_form_bias", lt_f8_older_form_bias),
        ("cusolver_getrf_lu_pivots_to_permutation", cusolver_getrf_and_permutation),
        ("cusolver_potrf_syevd", cusolver_potrf_syevd),
        ("cudnn_conv_forward_grouped_strided_dilated", cudnn_conv_forward),
        ("cudnn_conv_bias_activation_side_input", cudnn_conv_bias_activation),
        ("cudnn_conv_backward_input_and_filter", cudnn_conv_backward),
    ])
