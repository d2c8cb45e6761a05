"""The training steps of bench/training as JAX lowers them (unfused StableHLO
text, bench/training/gen_training_jax.py: MLP + Adam, transformer block +
SGD) at small shapes through hlo-launch: fused by the pass (1 and 2 threads)
they give the same bits as run op by op (--no-fusion-pass), and match a NumPy
float64 computation of the step.
"""

import importlib.util
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hl_testlib import (SOURCE_DIR, compare, convert, launch, main,  # noqa: E402
                        read_outputs, require_binaries, tempdir, write_args)


def generator():
    path = os.path.join(SOURCE_DIR, "bench", "training", "gen_training_jax.py")
    spec = importlib.util.spec_from_file_location("gen_training_jax", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


MLP = dict(B=24, D=40, H=72, O=16)
TRANSFORMER = dict(B=2, S=12, D=32, NH=4, F=48)
LR = 1e-2


def mlp_inputs(rng, B, D, H, O):
    f = np.float32
    shapes = [(D, H), (H,), (H, O), (O,)]
    params = [(rng.standard_normal(s) / np.sqrt(s[0])).astype(f) for s in shapes]
    opt = []
    for s in shapes:
        opt.append(rng.uniform(-1e-2, 1e-2, s).astype(f))  # m
        opt.append(rng.uniform(1e-4, 1e-3, s).astype(f))   # v > 0
    return params + opt + [rng.standard_normal((B, D)).astype(f),
                           rng.standard_normal((B, O)).astype(f), np.array(LR, f)]


def mlp_numpy(args, B, D, H, O):
    a = [x.astype(np.float64) for x in args]
    w1, b1, w2, b2, opt, x, y, lr = a[0], a[1], a[2], a[3], a[4:12], a[12], a[13], a[14]
    z1 = x @ w1 + b1
    a1 = np.maximum(z1, 0)
    d = a1 @ w2 + b2 - y
    loss = (d * d).mean()
    g = 2 * d / d.size
    gz = np.where(z1 > 0, g @ w2.T, 0)
    outs = []
    for i, (w, gr) in enumerate(((w1, x.T @ gz), (b1, gz.sum(0)), (w2, a1.T @ g), (b2, g.sum(0)))):
        m = 0.9 * opt[2 * i] + 0.1 * gr
        v = 0.999 * opt[2 * i + 1] + 0.001 * gr * gr
        outs += [w - lr * m / (np.sqrt(v) + 1e-8), m, v]
    return outs + [loss]


def transformer_inputs(rng, B, S, D, NH, F):
    f = np.float32
    shapes = [(D, 3 * D), (D, D), (D, F), (F,), (F, D), (D,)]
    params = [(rng.standard_normal(s) / np.sqrt(s[0])).astype(f) for s in shapes]
    return params + [rng.standard_normal((B * S, D)).astype(f),
                     rng.standard_normal((B * S, D)).astype(f), np.array(LR, f)]


def gelu(z):
    k, c = np.sqrt(2 / np.pi), 0.044715
    th = np.tanh(k * (z + c * z ** 3))
    dg = 0.5 * (1 + th) + 0.5 * z * (1 - th * th) * k * (1 + 3 * c * z * z)
    return 0.5 * z * (1 + th), dg


def transformer_numpy(args, B, S, D, NH, F):
    wqkv, wo, w1, b1, w2, b2, x, y, lr = [a.astype(np.float64) for a in args]
    dh, N = D // NH, B * S
    scale = 1 / np.sqrt(dh)

    def heads(t):  # [N, D] -> [B, NH, S, dh]
        return t.reshape(B, S, NH, dh).transpose(0, 2, 1, 3)

    def unheads(t):
        return t.transpose(0, 2, 1, 3).reshape(N, D)
    qkv = x @ wqkv
    q, k, v = (heads(qkv[:, i * D:(i + 1) * D]) for i in range(3))
    q = q * scale
    sc = q @ k.transpose(0, 1, 3, 2)
    e = np.exp(sc - sc.max(-1, keepdims=True))
    p = e / e.sum(-1, keepdims=True)
    o2 = unheads(p @ v)
    r1 = x + o2 @ wo
    z = r1 @ w1 + b1
    hg, dg = gelu(z)
    d = hg @ w2 + b2 + r1 - y
    loss = (d * d).mean()
    g = 2 * d / d.size
    gu = (g @ w2.T) * dg
    gr1 = g + gu @ w1.T
    go = heads(gr1 @ wo.T)
    dp = go @ v.transpose(0, 1, 3, 2)
    dv = p.transpose(0, 1, 3, 2) @ go
    ds = p * (dp - (p * dp).sum(-1, keepdims=True))
    dq = (ds @ k) * scale
    dk = ds.transpose(0, 1, 3, 2) @ q
    gqkv = np.concatenate([unheads(t) for t in (dq, dk, dv)], axis=1)
    grads = [x.T @ gqkv, o2.T @ gr1, r1.T @ gu, gu.sum(0), hg.T @ g, g.sum(0)]
    return [w - lr * gr for w, gr in zip((wqkv, wo, w1, b1, w2, b2), grads)] + [loss]


def run_step(name, text, args, want):
    with tempdir("training-jax") as d:
        prog = os.path.join(d, name + ".mlir")
        with open(prog, "w") as f:
            f.write(text)
        adir = os.path.join(d, "args")
        write_args(adir, args)
        r = convert(prog, os.path.join(d, "fused.hlo"), "--explain-fusion")
        if r.returncode != 0 or "kind=kInput" not in open(os.path.join(d, "fused.hlo")).read():
            return "hlo-convert --explain-fusion formed no reduce fusion:\n" + r.describe()
        got = {}
        for tag, extra in (("fused", ()), ("fused_2_threads", ("--threads", "2")),
                           ("op_by_op", ("--no-fusion-pass",))):
            out = os.path.join(d, "out_" + tag)
            res = launch(prog, args_dir=adir, output_dir=out, extra=extra)
            if res.returncode != 0 or res.timed_out:
                return "%s: %s" % (tag, res.describe())
            got[tag] = read_outputs(out, 0, 0, len(want))
        for tag in ("fused", "fused_2_threads"):
            for i, (a, b) in enumerate(zip(got[tag], got["op_by_op"])):
                if a.shape != b.shape or a.tobytes() != b.tobytes():
                    bad = np.flatnonzero(a.ravel() != b.ravel())[:5]
                    return "%s result %d: bits differ from --no-fusion-pass at %s: %s vs %s" % (
                        tag, i, bad, a.ravel()[bad], b.ravel()[bad])
        for i, w in enumerate(want):
            msg = compare("%s result %d" % (name, i), got["fused"][i], np.asarray(w, np.float32),
                          tol=(2e-4, 2e-5))
            if msg:
                return msg
    return None


def test_mlp_adam():
    rng = np.random.default_rng(24)
    args = mlp_inputs(rng, **MLP)
    return run_step("mlp", generator().mlp(**MLP), args, mlp_numpy(args, **MLP))


def test_transformer_sgd():
    rng = np.random.default_rng(25)
    args = transformer_inputs(rng, **TRANSFORMER)
    return run_step("transformer", generator().transformer(**TRANSFORMER), args,
                    transformer_numpy(args, **TRANSFORMER))


if __name__ == "__main__":
    require_binaries("hlo-launch", "hlo-convert")
    main([(n[5:], f) for n, f in sorted(globals().items()) if n.startswith("test_")])
