"""cuDNN layer norm (`__cudnn$norm`) from XLA GPU dumps, replayed on CPU ranks.

The programs have the form XLA's cudnn_norm_rewriter.cc leaves (its tests in
cudnn_norm_rewriter_test.cc): x bitcast to [rows, normalized dims..., 1s],
scale and bias to [normalized..., 1s], a (y, workspace) tuple for
LAYER_FWD_INFER, (y, expectation, norm_factor, workspace) for LAYER_FWD_TRAIN
and (dx, dscale, dbias, workspace) from (x, scale, dy, expectation, norm_factor)
for LAYER_BWD, with the GpuBackendConfig JSON's cudnn_norm_backend_config.
NumPy in float64 is the oracle; its gradients are first checked against central
differences.
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hl_testlib as hl  # noqa: E402

RANKS = 2


def config(kind, epsilon, workspace):
    return json.dumps({"operation_queue_id": "0", "wait_on_operation_queues": [],
                       "cudnn_norm_backend_config": {
                           "epsilon": epsilon,
                           "algorithm": {"algo_id": "0", "math_type": "TENSOR_OP_MATH",
                                         "tuning_knobs": {}, "is_cudnn_frontend": True,
                                         "workspace_size": str(workspace)},
                           "kind": kind},
                       "force_earliest_schedule": False}, separators=(",", ":"))


def shp(t, shape):
    return "%s[%s]{%s}" % (t, ",".join(map(str, shape)),
                           ",".join(map(str, range(len(shape) - 1, -1, -1))))


def layer_norm(x, scale, bias, eps):
    """x [rows, cols] -> y, mean, norm factor."""
    m = x.mean(axis=1, keepdims=True)
    nf = 1 / np.sqrt(((x - m) ** 2).mean(axis=1, keepdims=True) + eps)
    return (x - m) * nf * scale + bias, m[:, 0], nf[:, 0]


def layer_norm_grad(x, scale, dy, eps):
    m = x.mean(axis=1, keepdims=True)
    nf = 1 / np.sqrt(((x - m) ** 2).mean(axis=1, keepdims=True) + eps)
    xhat = (x - m) * nf
    g = dy * scale
    dx = nf * (g - g.mean(axis=1, keepdims=True) -
               xhat * (g * xhat).mean(axis=1, keepdims=True))
    return dx, (dy * xhat).sum(axis=0), dy.sum(axis=0)


def oracle_matches_finite_differences():
    rng = np.random.default_rng(5)
    x, scale, bias, dy = (rng.standard_normal(s) for s in ((3, 5), (5,), (5,), (3, 5)))
    f = lambda xx, ss, bb: np.sum(layer_norm(xx, ss, bb, 1e-3)[0] * dy)
    dx, ds, db = layer_norm_grad(x, scale, dy, 1e-3)
    for i, (arg, want) in enumerate(((x, dx), (scale, ds), (bias, db))):
        num = np.zeros_like(arg)
        for idx in np.ndindex(*arg.shape):
            args = [x, scale, bias]
            hi, lo = arg.copy(), arg.copy()
            hi[idx] += 1e-6
            lo[idx] -= 1e-6
            args[i] = hi
            fp = f(*args)
            args[i] = lo
            num[idx] = (fp - f(*args)) / 2e-6
        if not np.allclose(num, want, rtol=1e-5, atol=1e-7):
            return "oracle gradient %d disagrees with finite differences" % i
    return None


def run(name, text, args, nresults):
    return hl.run_hlo_text("norm-" + name, text, args, nresults, RANKS)


def check_all(name, per_rank, wants, tol):
    for rep, got in enumerate(per_rank):
        for j, (g, w) in enumerate(zip(got, wants)):
            msg = hl.compare("%s rank %d result %d" % (name, rep, j), g, w, tol)
            if msg:
                return msg
    return None


def rand(shape, seed, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def infer_2d():
    """LayerNorm2D1's rewritten form: f32[2,4] -> [2,4,1,1], scale f32[4,1,1,1]."""
    x, s, b = rand((2, 4), 1), rand((4,), 2), rand((4,), 3)
    text = """HloModule test

ENTRY test {
  input = f32[2,4]{1,0} parameter(0)
  bitcast = f32[2,4,1,1]{3,2,1,0} bitcast(input)
  scale = f32[4]{0} parameter(1)
  bitcast.1 = f32[4,1,1,1]{3,2,1,0} bitcast(scale)
  bias = f32[4]{0} parameter(2)
  bitcast.2 = f32[4,1,1,1]{3,2,1,0} bitcast(bias)
  custom-call = (f32[2,4,1,1]{3,2,1,0}, u8[1212]{0}) custom-call(bitcast, bitcast.1, bitcast.2), custom_call_target="__cudnn$norm", backend_config=%s
  get-tuple-element = f32[2,4,1,1]{3,2,1,0} get-tuple-element(custom-call), index=0
  ROOT bitcast.3 = f32[2,4]{1,0} bitcast(get-tuple-element)
}
""" % config("LAYER_FWD_INFER", 0.001, 1212)
    y, _, _ = layer_norm(x.astype(np.float64), s, b, 0.001)
    return check_all("infer", run("infer", text, [x, s, b], 1), [y.astype(np.float32)],
                     (1e-5, 1e-5))


def train_and_backward_4d():
    """LAYER_FWD_TRAIN on x [6, 3, 5, 1] (two normalized dims, scale [1,3,5,1]) feeding
    LAYER_BWD with its expectation and norm factor, as the rewriter chains them."""
    x, s, b, dy = rand((6, 3, 5), 4), rand((3, 5), 5), rand((3, 5), 6), rand((6, 3, 5), 7)
    text = """HloModule test

ENTRY test {
  x = f32[6,3,5]{2,1,0} parameter(0)
  x4 = f32[6,3,5,1]{3,2,1,0} bitcast(x)
  scale = f32[3,5]{1,0} parameter(1)
  scale4 = f32[1,3,5,1]{3,2,1,0} bitcast(scale)
  bias = f32[3,5]{1,0} parameter(2)
  bias4 = f32[1,3,5,1]{3,2,1,0} bitcast(bias)
  fwd = (f32[6,3,5,1]{3,2,1,0}, f32[6,1,1,1]{3,2,1,0}, f32[6,1,1,1]{3,2,1,0}, u8[1184]{0}) custom-call(x4, scale4, bias4), custom_call_target="__cudnn$norm", backend_config=%s
  y = f32[6,3,5,1]{3,2,1,0} get-tuple-element(fwd), index=0
  mean = f32[6,1,1,1]{3,2,1,0} get-tuple-element(fwd), index=1
  nf = f32[6,1,1,1]{3,2,1,0} get-tuple-element(fwd), index=2
  dy = f32[6,3,5]{2,1,0} parameter(3)
  dy4 = f32[6,3,5,1]{3,2,1,0} bitcast(dy)
  bwd = (f32[6,3,5,1]{3,2,1,0}, f32[1,3,5,1]{3,2,1,0}, f32[1,3,5,1]{3,2,1,0}, u8[1224]{0}) custom-call(x4, scale4, dy4, mean, nf), custom_call_target="__cudnn$norm", backend_config=%s
  dx = f32[6,3,5,1]{3,2,1,0} get-tuple-element(bwd), index=0
  dscale = f32[1,3,5,1]{3,2,1,0} get-tuple-element(bwd), index=1
  dbias = f32[1,3,5,1]{3,2,1,0} get-tuple-element(bwd), index=2
  y3 = f32[6,3,5]{2,1,0} bitcast(y)
  dx3 = f32[6,3,5]{2,1,0} bitcast(dx)
  dscale2 = f32[3,5]{1,0} bitcast(dscale)
  dbias2 = f32[3,5]{1,0} bitcast(dbias)
  mean1 = f32[6]{0} bitcast(mean)
  nf1 = f32[6]{0} bitcast(nf)
  ROOT t = (f32[6,3,5]{2,1,0}, f32[6]{0}, f32[6]{0}, f32[6,3,5]{2,1,0}, f32[3,5]{1,0}, f32[3,5]{1,0}) tuple(y3, mean1, nf1, dx3, dscale2, dbias2)
}
""" % (config("LAYER_FWD_TRAIN", 0.01, 1184), config("LAYER_BWD", 0, 1224))
    x2 = x.astype(np.float64).reshape(6, 15)
    y, m, nf = layer_norm(x2, s.reshape(15), b.reshape(15), 0.01)
    # The backward gets the f32 expectation / norm factor; the oracle's exact ones
    # differ by f32 rounding only.
    dx, ds, db = layer_norm_grad(x2, s.reshape(15), dy.reshape(6, 15), 0.01)
    wants = [y.reshape(6, 3, 5), m, nf, dx.reshape(6, 3, 5), ds.reshape(3, 5), db.reshape(3, 5)]
    return check_all("train+bwd", run("train", text, [x, s, b, dy], 6),
                     [w.astype(np.float32) for w in wants], (1e-5, 2e-5))


def infer_f16():
    x, s, b = rand((4, 8), 8, np.float16), rand((8,), 9, np.float16), rand((8,), 10, np.float16)
    text = """HloModule test

ENTRY test {
  input = f16[4,8]{1,0} parameter(0)
  bitcast = f16[4,8,1,1]{3,2,1,0} bitcast(input)
  scale = f16[8]{0} parameter(1)
  bitcast.1 = f16[8,1,1,1]{3,2,1,0} bitcast(scale)
  bias = f16[8]{0} parameter(2)
  bitcast.2 = f16[8,1,1,1]{3,2,1,0} bitcast(bias)
  custom-call = (f16[4,8,1,1]{3,2,1,0}, u8[1216]{0}) custom-call(bitcast, bitcast.1, bitcast.2), custom_call_target="__cudnn$norm", backend_config=%s
  get-tuple-element = f16[4,8,1,1]{3,2,1,0} get-tuple-element(custom-call), index=0
  ROOT bitcast.3 = f16[4,8]{1,0} bitcast(get-tuple-element)
}
""" % config("LAYER_FWD_INFER", 1e-5, 1216)
    y, _, _ = layer_norm(x.astype(np.float64), s.astype(np.float64), b.astype(np.float64), 1e-5)
    return check_all("infer f16", run("f16", text, [x, s, b], 1), [y.astype(np.float16)],
                     (1e-3, 1e-3))


def unknown_kind_fails_before_launch():
    text = """HloModule test

ENTRY test {
  input = f32[2,4,1,1]{3,2,1,0} parameter(0)
  scale = f32[4,1,1,1]{3,2,1,0} parameter(1)
  bias = f32[4,1,1,1]{3,2,1,0} parameter(2)
  cc = (f32[2,4,1,1]{3,2,1,0}, u8[16]{0}) custom-call(input, scale, bias), custom_call_target="__cudnn$norm", backend_config=%s
  ROOT g = f32[2,4,1,1]{3,2,1,0} get-tuple-element(cc), index=0
}
""" % config("RMS_FWD_INFER", 0.001, 16)
    with hl.tempdir("norm-err") as d:
        path = os.path.join(d, "p.hlo")
        with open(path, "w") as f:
            f.write(text)
        r = hl.launch(path, replicas=RANKS, extra=("--zeros",))
        out = r.stdout + r.stderr
        if r.returncode == 0 or "kind RMS_FWD_INFER is not supported" not in out or \
                "rank 0" in out:
            return "expected a pre-launch error naming the kind\n" + r.describe()
    return None


if __name__ == "__main__":
    hl.require_binaries("hlo-launch")
    hl.main([
        ("oracle_gradients_match_finite_differences", oracle_matches_finite_differences),
        ("layer_norm_infer_2d", infer_2d),
        ("layer_norm_train_and_backward_two_norm_dims", train_and_backward_4d),
        ("layer_norm_infer_f16", infer_f16),
        ("unknown_kind_fails_before_launch", unknown_kind_fails_before_launch),
    ])
