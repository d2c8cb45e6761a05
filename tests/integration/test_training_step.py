"""The f32 MLP training step of bench/training (dots, kLoop / kInput /
multi-output fusions, layout-copy transposes, Adam as multi-output fusions)
through hlo-launch on 2 ranks against a NumPy float64 oracle of the same
math; blocked fusions and chains must equal --no-fusion-blocking bit for bit.
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hl_testlib import (SOURCE_DIR, compare, launch, main, read_outputs,  # noqa: E402
                        require_binaries, tempdir, write_args)

PROGRAM = os.path.join(SOURCE_DIR, "bench", "training", "mlp_f32.hlo")
B, D, H, O = 256, 512, 1024, 256
LR_T = 1e-3


def inputs():
    rng = np.random.default_rng(7)
    f = np.float32
    w1 = (rng.standard_normal((D, H)) / np.sqrt(D)).astype(f)
    b1 = rng.uniform(-0.1, 0.1, H).astype(f)
    w2 = (rng.standard_normal((H, O)) / np.sqrt(H)).astype(f)
    b2 = rng.uniform(-0.1, 0.1, O).astype(f)
    opt = []
    for shape in ((D, H), (H,), (H, O), (O,)):
        opt.append(rng.uniform(-1e-3, 1e-3, shape).astype(f))  # m
        opt.append(rng.uniform(1e-4, 1e-3, shape).astype(f))   # v (> 0: a stable update)
    x = rng.standard_normal((B, D)).astype(f)
    y = rng.standard_normal((B, O)).astype(f)
    return [w1, b1, w2, b2] + opt + [x, y, np.array(LR_T, f)]


def numpy_step(args):
    w1, b1, w2, b2 = (a.astype(np.float64) for a in args[:4])
    opt = [a.astype(np.float64) for a in args[4:12]]
    x, y = args[12].astype(np.float64), args[13].astype(np.float64)
    n = B * O
    a1 = np.maximum(x @ w1 + b1, 0)
    d = a1 @ w2 + b2 - y
    loss = (d * d).sum() / n
    g = d * (2.0 / n)
    db2, dw2 = g.sum(0), a1.T @ g
    gz = np.where(a1 > 0, g @ w2.T, 0)
    db1, dw1 = gz.sum(0), x.T @ gz
    outs = []
    for i, (w, gr) in enumerate(((w1, dw1), (b1, db1), (w2, dw2), (b2, db2))):
        m = 0.9 * opt[2 * i] + 0.1 * gr
        v = 0.999 * opt[2 * i + 1] + 0.001 * gr * gr
        outs += [w - LR_T * m / (np.sqrt(v) + 1e-8), m, v]
    return [o.astype(np.float32) for o in outs] + [np.float32(loss)]


def test_mlp_step_matches_numpy_and_reference_mode():
    args = inputs()
    with tempdir("training-step") as d:
        adir = os.path.join(d, "args")
        write_args(adir, args)
        got = {}
        for name, extra in (("blocked", ()), ("reference", ("--no-fusion-blocking",))):
            out = os.path.join(d, "out_" + name)
            res = launch(PROGRAM, replicas=2, args_dir=adir, output_dir=out, extra=extra)
            if res.returncode != 0 or res.timed_out:
                return "%s: %s" % (name, res.describe())
            got[name] = [read_outputs(out, r, 0, 13) for r in range(2)]
        for r in range(2):
            for i in range(13):
                if got["blocked"][r][i].tobytes() != got["reference"][0][i].tobytes():
                    return "replica %d result %d: blocked differs from --no-fusion-blocking" % (r, i)
        want = numpy_step(args)
        names = ["%s %s" % (p, s) for p in ("w1", "b1", "w2", "b2") for s in ("W'", "m'", "v'")]
        for i, name in enumerate(names + ["loss"]):
            tol = (1e-4, 1e-7) if i % 3 != 0 or i == 12 else (1e-5, 1e-6)
            msg = compare(name, got["blocked"][0][i], np.asarray(want[i]), tol=tol)
            if msg:
                return msg
    return None


if __name__ == "__main__":
    require_binaries("hlo-launch")
    main([(n[5:], f) for n, f in sorted(globals().items()) if n.startswith("test_")])
