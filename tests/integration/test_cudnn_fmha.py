"""cuDNN fused attention (`__cudnn$fmha*`) from XLA GPU dumps, replayed on CPU ranks.

The custom-calls are written as JAX's cuDNN attention lowers them
(jax/_src/cudnn/fused_attention_stablehlo.py: operands Q, K, V[, bias] / Q, K, V,
stats, dO[, bias], O; results (O[, stats], u8 workspace) / (dQ, dK, dV[, dbias],
workspace); the output in [B,N,T,H] with layout {3,1,2,0} for BTNH inputs) and
with the GpuBackendConfig JSON of its create_dot_product_attention_backend_config
(cudnn_fmha_backend_config fields in proto field order). After XLA's layout
assignment the BTNH transpose of the result is a bitcast, as in compiled dumps.

The oracle is NumPy in float64: softmax(scale * Q K^T + bias, masked) V, the
row log-sum-exp as cuDNN's softmax stats, and the analytic gradients, which the
test first checks against central differences of the NumPy forward.
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hl_testlib as hl  # noqa: E402

RANKS = 2
F16_TOL = (2e-3, 2e-3)


# --- the backend_config --------------------------------------------------------

def dims(lc, rc, lb, rb):
    return {"lhs_contracting_dimensions": [str(lc)], "rhs_contracting_dimensions": [str(rc)],
            "lhs_batch_dimensions": [str(d) for d in lb],
            "rhs_batch_dimensions": [str(d) for d in rb]}


def fmha_config(B, N, T, S, scale, layout, backward, mask="NO_MASK", dropout=0.0, **extra):
    if layout == "BNTH":
        d = [dims(3, 3, (0, 1), (0, 1)), dims(3, 2, (0, 1), (0, 1)), dims(2, 2, (0, 1), (0, 1)),
             dims(3, 2, (0, 1), (0, 1)), dims(2, 2, (0, 1), (0, 1)), dims(3, 3, (0, 1), (0, 1))]
    else:
        d = [dims(3, 3, (0, 2), (0, 2)), dims(3, 1, (0, 1), (0, 2)), dims(2, 1, (0, 1), (0, 2)),
             dims(3, 1, (0, 1), (0, 2)), dims(2, 1, (0, 1), (0, 2)), dims(3, 3, (0, 2), (0, 2))]
    c = {"algorithm": {"algo_id": "0", "math_type": "TENSOR_OP_MATH",
                       "tuning_knobs": {"17": "1", "24": "0"}, "is_cudnn_frontend": True,
                       "workspace_size": "0"},
         "fmha_scale": scale}
    if not backward:
        c["bmm1_dot_dimension_numbers"] = d[0]
        c["bmm2_dot_dimension_numbers"] = d[1]
    c["dropout_rate"] = dropout
    c["intermediate_tensor_shape"] = {
        "element_type": "F16", "dimensions": [str(B), str(N), str(T), str(S)],
        "tuple_shapes": [],
        "layout": {"dim_level_types": [], "dim_unique": [], "dim_ordered": [],
                   "minor_to_major": ["3", "2", "1", "0"], "tiles": [],
                   "element_size_in_bits": "0", "memory_space": "0",
                   "index_primitive_type": "PRIMITIVE_TYPE_INVALID",
                   "pointer_primitive_type": "PRIMITIVE_TYPE_INVALID",
                   "dynamic_shape_metadata_prefix_bytes": "0"},
        "is_dynamic_dimension": [False, False, False, False]}
    c["seed"] = "42"
    if backward:
        for key, dd in zip(["bmm1_grad_gemm1", "bmm1_grad_gemm2", "bmm2_grad_gemm1",
                            "bmm2_grad_gemm2"], d[2:]):
            c[key + "_dot_dimension_numbers"] = dd
    c["is_flash_attention"] = True
    c["mask_type"] = mask
    c["sliding_window_length"] = 0
    c["max_seg_per_batch"] = 1
    c["is_paged_attention"] = False
    c.update(extra)
    return json.dumps({"operation_queue_id": "0", "wait_on_operation_queues": [],
                       "cudnn_fmha_backend_config": c, "force_earliest_schedule": False},
                      separators=(",", ":"))


# --- the NumPy oracle ------------------------------------------------------------

def to_bnth(x, layout):
    return x if layout == "BNTH" else x.transpose(0, 2, 1, 3)


def expand_heads(x, n):
    return np.repeat(x, n // x.shape[1], axis=1)


def scores(q, k, bias, scale, causal):
    s = scale * np.einsum("bnth,bnsh->bnts", q, expand_heads(k, q.shape[1]))
    if bias is not None:
        s = s + bias
    if causal:
        t, sk = s.shape[2], s.shape[3]
        s = np.where(np.arange(sk)[None, :] > np.arange(t)[:, None], -np.inf, s)
    return s


def forward_oracle(q, k, v, bias, scale, causal):
    """q, k, v in BNTH float64 -> (O [B,N,T,Hv], lse [B,N,T])."""
    s = scores(q, k, bias, scale, causal)
    m = s.max(axis=-1, keepdims=True)
    e = np.exp(s - m)
    p = e / e.sum(axis=-1, keepdims=True)
    o = np.einsum("bnts,bnsh->bnth", p, expand_heads(v, q.shape[1]))
    return o, (m + np.log(e.sum(axis=-1, keepdims=True)))[..., 0]


def group_sum(x, nk):
    b, n = x.shape[:2]
    return x.reshape(b, nk, n // nk, *x.shape[2:]).sum(axis=2)


def backward_oracle(q, k, v, bias, do, scale, causal, bias_shape=None):
    s = scores(q, k, bias, scale, causal)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    n, nk = q.shape[1], k.shape[1]
    ve, ke = expand_heads(v, n), expand_heads(k, n)
    o = np.einsum("bnts,bnsh->bnth", p, ve)
    dv = group_sum(np.einsum("bnts,bnth->bnsh", p, do), nk)
    dp = np.einsum("bnth,bnsh->bnts", do, ve)
    ds = p * (dp - np.sum(do * o, axis=-1, keepdims=True))
    dq = scale * np.einsum("bnts,bnsh->bnth", ds, ke)
    dk = group_sum(scale * np.einsum("bnts,bnth->bnsh", ds, q), nk)
    db = None
    if bias_shape is not None:
        db = ds.sum(axis=tuple(a for a in (0, 1) if bias_shape[a] == 1), keepdims=True)
    return dq, dk, dv, db


def oracle_matches_finite_differences():
    """The analytic gradients above against central differences of the forward."""
    rng = np.random.default_rng(99)
    q, k, v = (rng.standard_normal(sh) for sh in ((1, 4, 3, 2), (1, 2, 5, 2), (1, 2, 5, 3)))
    bias = rng.standard_normal((1, 4, 3, 5))
    do = rng.standard_normal((1, 4, 3, 3))
    scale = 0.7
    f = lambda qq, kk, vv, bb: np.sum(forward_oracle(qq, kk, vv, bb, scale, True)[0] * do)
    grads = backward_oracle(q, k, v, bias, do, scale, True, bias.shape)
    for i, x in enumerate((q, k, v, bias)):
        num = np.zeros_like(x)
        for idx in np.ndindex(*x.shape):
            args = [q, k, v, bias]
            hi, lo = x.copy(), x.copy()
            hi[idx] += 1e-6
            lo[idx] -= 1e-6
            args[i] = hi
            fp = f(*args)
            args[i] = lo
            num[idx] = (fp - f(*args)) / 2e-6
        if not np.allclose(num, grads[i], rtol=1e-5, atol=1e-7):
            return "oracle gradient %d disagrees with finite differences" % i
    return None


# --- programs --------------------------------------------------------------------

def shp(dtype, shape, layout=None):
    layout = layout or tuple(range(len(shape) - 1, -1, -1))
    return "%s[%s]{%s}" % (dtype, ",".join(map(str, shape)), ",".join(map(str, layout)))


def run(name, text, args, nresults):
    return hl.run_hlo_text("fmha-" + name, text, args, nresults, RANKS)


def check_all(name, per_rank, wants, tols):
    for rep, got in enumerate(per_rank):
        for j, (g, w) in enumerate(zip(got, wants)):
            msg = hl.compare("%s rank %d result %d" % (name, rep, j), g, w, tols[j])
            if msg:
                return msg
    return None


def rand(shape, seed, dtype=np.float16):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def out_layout(layout):
    # The result is [B,N,T,H]; for BTNH inputs JAX gives it layout {3,1,2,0}.
    return (3, 1, 2, 0) if layout == "BTNH" else (3, 2, 1, 0)


def forward_program(target, layout, q, k, v, bias, cfg, with_stats, workspace):
    B, N, T, H = to_bnth(q, layout).shape
    Hv = to_bnth(v, layout).shape[3]
    ops = [q, k, v] + ([bias] if bias is not None else [])
    params = "\n".join("  p%d = %s parameter(%d)" % (i, shp("f16", a.shape), i)
                       for i, a in enumerate(ops))
    o_shape = shp("f16", (B, N, T, Hv), out_layout(layout))
    results = [o_shape] + ([shp("f32", (B, N, T))] if with_stats else []) + \
        [shp("u8", (workspace,))]
    oper = ", ".join("%s p%d" % (shp("f16", a.shape), i) for i, a in enumerate(ops))
    lines = ["HloModule jit__dot_product_attention, entry_computation_layout={(%s)->(%s)}" % (
        ", ".join(shp("f16", a.shape) for a in ops),
        ", ".join([shp("f16", to_bnth_shape((B, N, T, Hv), layout))] +
                  ([shp("f32", (B, N, T))] if with_stats else []))),
        "", "ENTRY main {", params,
        "  custom-call.1 = (%s) custom-call(%s), custom_call_target=\"%s\", "
        "operand_layout_constraints={%s}, backend_config=%s" % (
            ", ".join(results), oper, target, ", ".join(shp("f16", a.shape) for a in ops), cfg),
        "  gte.0 = %s get-tuple-element(custom-call.1), index=0" % o_shape]
    # The BNTH -> BTNH transpose JAX adds is a bitcast after layout assignment.
    if layout == "BTNH":
        lines.append("  out = %s bitcast(gte.0)" % shp("f16", (B, T, N, Hv)))
    else:
        lines.append("  out = %s copy(gte.0)" % shp("f16", (B, N, T, Hv)))
    if with_stats:
        lines.append("  gte.1 = %s get-tuple-element(custom-call.1), index=1" %
                     shp("f32", (B, N, T)))
        lines.append("  ROOT t = (%s, %s) tuple(out, gte.1)" % (
            shp("f16", to_bnth_shape((B, N, T, Hv), layout)), shp("f32", (B, N, T))))
    else:
        lines.append("  ROOT t = (%s) tuple(out)" % shp("f16", to_bnth_shape((B, N, T, Hv), layout)))
    lines.append("}")
    return "\n".join(lines) + "\n"


def to_bnth_shape(bnth, layout):
    b, n, t, h = bnth
    return (b, t, n, h) if layout == "BTNH" else (b, n, t, h)


def forward_case(name, layout, B, N, Nk, T, S, H, Hv, scale, causal, with_bias, with_stats,
                 workspace=0, dropout_target=False):
    sh = lambda n, l, h: (B, l, n, h) if layout == "BTNH" else (B, n, l, h)
    q, k, v = rand(sh(N, T, H), 1), rand(sh(Nk, S, H), 2), rand(sh(Nk, S, Hv), 3)
    bias = rand((1, N, T, S), 4) if with_bias else None
    target = "__cudnn$fmha%sSoftmax%s" % ("ScaleBias" if with_bias else "",
                                          "Dropout" if dropout_target else "")
    cfg = fmha_config(B, N, T, S, scale, layout, False, "CAUSAL" if causal else "NO_MASK")
    text = forward_program(target, layout, q, k, v, bias, cfg, with_stats, workspace)
    f64 = lambda a: to_bnth(a.astype(np.float64), layout)
    o, lse = forward_oracle(f64(q), f64(k), f64(v),
                            None if bias is None else bias.astype(np.float64), scale, causal)
    o = o if layout == "BNTH" else o.transpose(0, 2, 1, 3)
    wants = [o.astype(np.float16)] + ([lse.astype(np.float32)] if with_stats else [])
    got = run(name, text, [q, k, v] + ([bias] if bias is not None else []), len(wants))
    return check_all(name, got, wants, [F16_TOL, (1e-5, 1e-5)])


def forward_btnh_training():
    return forward_case("fwd-btnh", "BTNH", 2, 4, 4, 8, 8, 16, 16, 0.25, False, False, True,
                        workspace=0)


def forward_bnth_causal_bias_gqa():
    """ScaleBias + CAUSAL, BNTH, K/V with half the heads of Q, T != S, inference form."""
    return forward_case("fwd-bias-causal", "BNTH", 1, 4, 2, 6, 10, 8, 8, 0.125, True, True,
                        False, workspace=1024)


def forward_dropout_target_rate_zero():
    """The ...Dropout target with dropout_rate 0 is the plain attention."""
    return forward_case("fwd-dropout0", "BTNH", 1, 2, 2, 4, 4, 8, 8, 0.5, True, False, True,
                        dropout_target=True)


def backward_case(name, layout, B, N, Nk, T, S, H, scale, causal, with_bias, with_dbias):
    sh = lambda n, l, h: (B, l, n, h) if layout == "BTNH" else (B, n, l, h)
    q, k, v = rand(sh(N, T, H), 11), rand(sh(Nk, S, H), 12), rand(sh(Nk, S, H), 13)
    do = rand(sh(N, T, H), 14)
    bias = rand((1, N, T, S), 15) if with_bias else None
    f64 = lambda a: to_bnth(a.astype(np.float64), layout)
    b64 = None if bias is None else bias.astype(np.float64)
    o, lse = forward_oracle(f64(q), f64(k), f64(v), b64, scale, causal)
    o16 = (o if layout == "BNTH" else o.transpose(0, 2, 1, 3)).astype(np.float16)
    lse32 = lse.astype(np.float32)
    # The oracle's gradients from the same (rounded) O and stats cuDNN would be given.
    dq, dk, dv, db = backward_oracle(f64(q), f64(k), f64(v), b64, f64(do), scale, causal,
                                     bias.shape if with_dbias else None)
    target = "__cudnn$fmha%sSoftmaxBackward" % ("ScaleBias" if with_bias else "")
    cfg = fmha_config(B, N, T, S, scale, layout, True, "CAUSAL" if causal else "NO_MASK")
    ops = [q, k, v, lse32, do] + ([bias] if with_bias else []) + [o16]
    dts = ["f16", "f16", "f16", "f32", "f16"] + (["f16"] if with_bias else []) + ["f16"]
    gl = out_layout(layout)
    res = [shp("f16", (B, N, T, H), gl), shp("f16", (B, Nk, S, H), gl),
           shp("f16", (B, Nk, S, H), gl)] + ([shp("f16", bias.shape)] if with_dbias else []) + \
        [shp("u8", (0,))]
    params = "\n".join("  p%d = %s parameter(%d)" % (i, shp(t, a.shape), i)
                       for i, (t, a) in enumerate(zip(dts, ops)))
    oper = ", ".join("%s p%d" % (shp(t, a.shape), i) for i, (t, a) in enumerate(zip(dts, ops)))
    lines = ["HloModule jit__dot_product_attention_bwd", "", "ENTRY main {", params,
             "  custom-call.2 = (%s) custom-call(%s), custom_call_target=\"%s\", "
             "operand_layout_constraints={%s}, backend_config=%s" % (
                 ", ".join(res), oper, target,
                 ", ".join(shp(t, a.shape) for t, a in zip(dts, ops)), cfg)]
    outs = []
    for i, logical in enumerate([(B, N, T, H), (B, Nk, S, H), (B, Nk, S, H)]):
        lines.append("  g%d = %s get-tuple-element(custom-call.2), index=%d" % (
            i, shp("f16", logical, gl), i))
        if layout == "BTNH":
            lines.append("  r%d = %s bitcast(g%d)" % (i, shp("f16", to_bnth_shape(logical, layout)),
                                                    i))
        else:
            lines.append("  r%d = %s copy(g%d)" % (i, shp("f16", logical), i))
        outs.append((shp("f16", to_bnth_shape(logical, layout)), "r%d" % i))
    if with_dbias:
        lines.append("  g3 = %s get-tuple-element(custom-call.2), index=3" % shp("f16", bias.shape))
        outs.append((shp("f16", bias.shape), "g3"))
    lines.append("  ROOT t = (%s) tuple(%s)" % (", ".join(s for s, _ in outs),
                                               ", ".join(n for _, n in outs)))
    lines.append("}")
    back = (lambda a: a) if layout == "BNTH" else (lambda a: a.transpose(0, 2, 1, 3))
    wants = [back(dq).astype(np.float16), back(dk).astype(np.float16),
             back(dv).astype(np.float16)] + ([db.astype(np.float16)] if with_dbias else [])
    # O was rounded to f16 before cuDNN sees it; the oracle used the exact O, so
    # allow a little more than one f16 ulp.
    got = run(name, "\n".join(lines) + "\n", ops, len(wants))
    return check_all(name, got, wants, [(5e-3, 5e-3)] * 4)


def backward_btnh():
    return backward_case("bwd-btnh", "BTNH", 2, 2, 2, 8, 8, 8, 0.35, False, False, False)


def backward_bnth_causal_bias_dbias_gqa():
    return backward_case("bwd-bias", "BNTH", 1, 4, 2, 6, 6, 8, 0.25, True, True, True)


def errors():
    """Unsupported config values stop before launch, naming the field."""
    q = rand((1, 4, 2, 8), 21)
    cases = [
        ("__cudnn$fmhaSoftmaxDropout", dict(dropout=0.1), "dropout_rate=0.1"),
        ("__cudnn$fmhaSoftmax", dict(mask="PADDING"), "mask_type PADDING"),
        ("__cudnn$fmhaSoftmax", dict(mask="ALIBI"), "mask_type ALIBI"),
        ("__cudnn$fmhaSoftmax", dict(sliding_window_length=4), "sliding_window_length=4"),
        ("__cudnn$fmhaSoftmax", dict(is_flash_attention=False), "is_flash_attention=false"),
    ]
    with hl.tempdir("fmha-err") as d:
        for target, kw, want in cases:
            kw = dict(kw)
            mask, dropout = kw.pop("mask", "NO_MASK"), kw.pop("dropout", 0.0)
            cfg = fmha_config(1, 2, 4, 4, 0.5, "BTNH", False, mask, dropout, **kw)
            text = forward_program(target, "BTNH", q, q, q, None, cfg, True, 0)
            path = os.path.join(d, "p.hlo")
            with open(path, "w") as f:
                f.write(text)
            r = hl.launch(path, replicas=RANKS, extra=("--zeros",))
            out = r.stdout + r.stderr
            # Pre-launch errors come from hlo-launch itself, before any rank runs.
            if r.returncode == 0 or want not in out or target not in out or \
                    "hlo-launch: " not in out or "rank 0" in out:
                return "%s %r: expected a pre-launch error containing %r\n%s" % (
                    target, kw, want, r.describe())
    return None


if __name__ == "__main__":
    hl.require_binaries("hlo-launch")
    hl.main([
        ("oracle_gradients_match_finite_differences", oracle_matches_finite_differences),
        ("fmha_forward_btnh_with_stats", forward_btnh_training),
        ("fmha_forward_bnth_causal_bias_gqa", forward_bnth_causal_bias_gqa),
        ("fmha_forward_dropout_target_rate_zero", forward_dropout_target_rate_zero),
        ("fmha_backward_btnh", backward_btnh),
        ("fmha_backward_bnth_causal_bias_dbias_gqa", backward_bnth_causal_bias_dbias_gqa),
        ("fmha_unsupported_fields_fail_before_launch", errors),
    ])
