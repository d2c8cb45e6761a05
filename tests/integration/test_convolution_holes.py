"""Convolutions with holes through hlo-launch against a NumPy direct
convolution written from the spec (StableHLO convolution: dilate the lhs,
pad it, reverse the window where asked, slide a dilated window with strides,
split features / batch into groups). Random shapes with lhs_dilate 1..4,
rhs_dilate 1..3, strides 1..5, padding -2..4 (negative crops),
window_reversal, feature_group_count and batch_group_count, in f32, f64,
s32, c64 and f16, in both feature-major (bf01) and pixel-major (b01f)
layouts. lhs_dilate > 1 takes the kernel's per-phase path (only the taps that meet real input in
each GEMM); lhs_dilate = 1 the plain im2col path, so both are checked by the
same oracle. A transposed-convolution shape like XLA's multihost runner test
(lhs_dilate = stride + 1, one real tap per output) is included, scaled down,
also in the runner's own 0bf1_0oi1->0bf1 layout.
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hl_testlib import (launch, main, read_outputs, require_binaries, tempdir,  # noqa: E402
                        write_args)

HLO_TYPE = {np.float32: "f32", np.float64: "f64", np.int32: "s32", np.complex64: "c64",
            np.float16: "f16"}


def num_windows(n, k, stride, lo, hi, ld, rd):
    padded = lo + (n - 1) * ld + 1 + hi
    dk = (k - 1) * rd + 1
    if padded <= 0 or dk > padded:
        return 0
    return (padded - dk) // stride + 1


def oracle(x, w, case):
    """x [N, C, H, W], w [O, Ig, KH, KW] (float64 or int64); returns
    (result [N/B, O, OH, OW], sum of |terms|) in float64 / int64."""
    n, c, _, _ = x.shape
    o, ig, kh, kw = w.shape
    fg, bg = case["fgc"], case["bgc"]
    xd = x
    for d in range(2):  # lhs dilation
        ld = case["ld"][d]
        shp = list(xd.shape)
        shp[2 + d] = (shp[2 + d] - 1) * ld + 1
        z = np.zeros(shp, dtype=xd.dtype)
        idx = [slice(None)] * 4
        idx[2 + d] = slice(None, None, ld)
        z[tuple(idx)] = xd
        xd = z
    for d in range(2):  # padding, negative crops
        lo, hi = case["pad"][d]
        shp = list(xd.shape)
        size = shp[2 + d]
        z_shape = list(shp)
        z_shape[2 + d] = max(lo, 0) + size + max(hi, 0)
        z = np.zeros(z_shape, dtype=xd.dtype)
        idx = [slice(None)] * 4
        idx[2 + d] = slice(max(lo, 0), max(lo, 0) + size)
        z[tuple(idx)] = xd
        idx[2 + d] = slice(max(-lo, 0), z_shape[2 + d] - max(-hi, 0))
        xd = z[tuple(idx)]
    if case["rev"][0]:
        w = w[:, :, ::-1, :]
    if case["rev"][1]:
        w = w[:, :, :, ::-1]
    s, rd = case["stride"], case["rd"]
    oh = (xd.shape[2] - ((kh - 1) * rd[0] + 1)) // s[0] + 1
    ow = (xd.shape[3] - ((kw - 1) * rd[1] + 1)) // s[1] + 1
    nout = n // bg
    groups = fg * bg
    og = o // groups
    out = np.zeros((nout, o, oh, ow), dtype=x.dtype)
    mag = np.zeros((nout, o, oh, ow), dtype=np.float64)
    for g in range(groups):
        xs = xd[g * nout:(g + 1) * nout] if bg > 1 else xd
        xs = xs[:, g * ig:(g + 1) * ig] if fg > 1 else xs
        wg = w[g * og:(g + 1) * og]
        for a in range(kh):
            for b in range(kw):
                y0, x0 = a * rd[0], b * rd[1]
                patch = xs[:, :, y0:y0 + (oh - 1) * s[0] + 1:s[0], x0:x0 + (ow - 1) * s[1] + 1:s[1]]
                out[:, g * og:(g + 1) * og] += np.einsum("ncyx,oc->noyx", patch, wg[:, :, a, b])
                mag[:, g * og:(g + 1) * og] += np.einsum(
                    "ncyx,oc->noyx", np.abs(patch).astype(np.float64),
                    np.abs(wg[:, :, a, b]).astype(np.float64))
    return out, mag


def random_case(rng, i):
    while True:
        dtype = [np.float32, np.float64, np.int32, np.complex64, np.float16][i % 5]
        fgc, bgc = 1, 1
        r = rng.integers(0, 4)
        if r == 1:
            fgc = int(rng.integers(2, 4))
        elif r == 2:
            bgc = int(rng.integers(2, 4))
        groups = fgc * bgc
        case = {
            "dtype": dtype, "fgc": fgc, "bgc": bgc,
            "n": bgc * int(rng.integers(1, 3)), "c": fgc * int(rng.integers(1, 4)),
            "o": groups * int(rng.integers(1, 4)),
            "hw": [int(rng.integers(1, 9)), int(rng.integers(1, 9))],
            "k": [int(rng.integers(1, 5)), int(rng.integers(1, 5))],
            "stride": [int(rng.integers(1, 6)), int(rng.integers(1, 6))],
            "pad": [(int(rng.integers(-2, 5)), int(rng.integers(-2, 5))) for _ in range(2)],
            "ld": [int(rng.integers(1, 5)), int(rng.integers(1, 5))],
            "rd": [int(rng.integers(1, 4)), int(rng.integers(1, 4))],
            "rev": [bool(rng.integers(0, 2)), bool(rng.integers(0, 2))],
            "pixel_major": bool(rng.integers(0, 2)),
        }
        if i % 4 == 0:  # at least a quarter with holes in both dimensions
            case["ld"] = [int(rng.integers(2, 5)), int(rng.integers(2, 5))]
        if all(num_windows(case["hw"][d], case["k"][d], case["stride"][d], case["pad"][d][0],
                           case["pad"][d][1], case["ld"][d], case["rd"][d]) > 0
               for d in range(2)):
            return case


# Scaled-down shape of XLA's multihost runner convolution: lhs_dilate 8x1,
# stride 7, a window of 8 taps, so each output meets exactly one real tap.
RUNNER_LIKE = {
    "dtype": np.float32, "fgc": 1, "bgc": 1, "n": 2, "c": 5, "o": 6, "hw": [9, 3],
    "k": [8, 2], "stride": [7, 1], "pad": [(7, 7), (0, 0)], "ld": [8, 1], "rd": [1, 1],
    "rev": [False, False], "pixel_major": False,
}
# The runner's own layout (dim_labels=0bf1_0oi1->0bf1, window 8x4 over a
# 9x4 input: one output column), where each phase's kernel is a contiguous
# block of the rhs that the GEMM reads in place.
RUNNER_LAYOUT = dict(RUNNER_LIKE, hw=[9, 4], k=[8, 4], pad=[(0, 0), (0, 0)], stride=[7, 1],
                     xla_runner_layout=True)


def make_inputs(rng, case):
    n, c, o = case["n"], case["c"], case["o"]
    ig = c // case["fgc"]
    xs = (n, c) + tuple(case["hw"])
    ws = (o, ig) + tuple(case["k"])
    if case["dtype"] == np.int32:
        return rng.integers(-9, 10, xs).astype(np.int32), rng.integers(-9, 10, ws).astype(np.int32)
    if case["dtype"] == np.complex64:
        return ((rng.standard_normal(xs) + 1j * rng.standard_normal(xs)).astype(np.complex64),
                (rng.standard_normal(ws) + 1j * rng.standard_normal(ws)).astype(np.complex64))
    return (rng.standard_normal(xs).astype(case["dtype"]),
            rng.standard_normal(ws).astype(case["dtype"]))


def hlo_instruction(i, case, out_shape):
    t = HLO_TYPE[case["dtype"]]
    n, c, o = case["n"], case["c"], case["o"]
    ig = c // case["fgc"]
    h, w = case["hw"]
    kh, kw = case["k"]
    nout, oh, ow = out_shape[0], out_shape[2], out_shape[3]
    if case.get("xla_runner_layout"):
        xs, ws, ys = [h, n, c, w], [kh, o, ig, kw], [oh, nout, o, ow]
        labels = "0bf1_0oi1->0bf1"
    elif case["pixel_major"]:
        xs, ws, ys = [n, h, w, c], [kh, kw, ig, o], [nout, oh, ow, o]
        labels = "b01f_01io->b01f"
    else:
        xs, ws, ys = [n, c, h, w], [o, ig, kh, kw], [nout, o, oh, ow]
        labels = "bf01_oi01->bf01"

    def shp(d):
        return "%s[%s]" % (t, ",".join(str(v) for v in d))

    window = "size=%dx%d stride=%dx%d pad=%d_%dx%d_%d lhs_dilate=%dx%d rhs_dilate=%dx%d" % (
        kh, kw, case["stride"][0], case["stride"][1], case["pad"][0][0], case["pad"][0][1],
        case["pad"][1][0], case["pad"][1][1], case["ld"][0], case["ld"][1], case["rd"][0],
        case["rd"][1])
    if any(case["rev"]):
        window += " rhs_reversal=%dx%d" % (int(case["rev"][0]), int(case["rev"][1]))
    lines = ["  x%d = %s parameter(%d)" % (i, shp(xs), 2 * i),
             "  w%d = %s parameter(%d)" % (i, shp(ws), 2 * i + 1),
             "  y%d = %s convolution(x%d, w%d), window={%s}, dim_labels=%s, "
             "feature_group_count=%d, batch_group_count=%d" % (
                 i, shp(ys), i, i, window, labels, case["fgc"], case["bgc"])]
    return lines, shp(ys)


def test_random_convolutions():
    require_binaries("hlo-launch")
    rng = np.random.default_rng(20261124)
    cases = [random_case(rng, i) for i in range(120)] + [RUNNER_LIKE, RUNNER_LAYOUT]
    return check_cases(rng, cases)


# Shapes large enough that the kernel splits its work: an NCHW transposed
# convolution whose batch goes through the per-phase gather in several
# chunks (runs of real input and padding zeros), an NHWC 3x3 convolution
# whose im2col rows go in several cache-sized chunks of several thread-pool
# tasks, and an NHWC transposed one. Run on 1 and 2 threads: both match the
# oracle and give the same bits.
LARGE_CASES = [
    {"dtype": np.float32, "fgc": 1, "bgc": 1, "n": 12, "c": 24, "o": 8, "hw": [14, 13],
     "k": [4, 4], "stride": [1, 1], "pad": [(2, 2), (2, 1)], "ld": [2, 2], "rd": [1, 1],
     "rev": [False, False], "pixel_major": False},
    {"dtype": np.float32, "fgc": 1, "bgc": 1, "n": 3, "c": 200, "o": 16, "hw": [23, 21],
     "k": [3, 3], "stride": [1, 1], "pad": [(1, 1), (1, 1)], "ld": [1, 1], "rd": [1, 1],
     "rev": [False, False], "pixel_major": True},
    {"dtype": np.float64, "fgc": 1, "bgc": 1, "n": 4, "c": 16, "o": 8, "hw": [9, 11],
     "k": [4, 3], "stride": [1, 1], "pad": [(2, 2), (1, 1)], "ld": [2, 2], "rd": [1, 1],
     "rev": [False, True], "pixel_major": True},
]


def test_large_convolutions_threads():
    require_binaries("hlo-launch")
    got = {}
    for threads in ("1", "2"):
        err = check_cases(np.random.default_rng(20261125), LARGE_CASES,
                          extra=("--threads", threads), got_out=got.setdefault(threads, []))
        if err:
            return "--threads %s: %s" % (threads, err)
    for i, (a, b) in enumerate(zip(got["1"], got["2"])):
        if a.tobytes() != b.tobytes():
            return "case %d: --threads 1 and --threads 2 differ in bits" % i
    print("  %d large cases match the oracle, the same bits on 1 and 2 threads" % len(LARGE_CASES))
    return None


def check_cases(rng, cases, extra=(), got_out=None):
    body, results, args, wants = [], [], [], []
    for i, case in enumerate(cases):
        x, w = make_inputs(rng, case)
        wide = {np.int32: np.int64, np.complex64: np.complex128}.get(case["dtype"], np.float64)
        want, mag = oracle(x.astype(wide), w.astype(wide), case)
        lines, rshape = hlo_instruction(i, case, want.shape)
        body += lines
        results.append((i, rshape))
        if case.get("xla_runner_layout"):
            x, w = x.transpose(2, 0, 1, 3), w.transpose(2, 0, 1, 3)
        elif case["pixel_major"]:
            x, w = x.transpose(0, 2, 3, 1), w.transpose(2, 3, 1, 0)
        args += [np.ascontiguousarray(x), np.ascontiguousarray(w)]
        wants.append((want, mag))
    body.append("  ROOT r = (%s) tuple(%s)" % (", ".join(s for _, s in results),
                                                ", ".join("y%d" % i for i, _ in results)))
    text = "HloModule convolution_holes\nENTRY main {\n%s\n}\n" % "\n".join(body)
    with tempdir("conv-holes") as d:
        prog = os.path.join(d, "conv.hlo")
        with open(prog, "w") as f:
            f.write(text)
        write_args(os.path.join(d, "args"), args)
        res = launch(prog, args_dir=os.path.join(d, "args"), output_dir=os.path.join(d, "out"),
                     extra=extra)
        if res.returncode != 0:
            return res.describe()
        got = read_outputs(os.path.join(d, "out"), 0, 0, len(cases))
    if got_out is not None:
        got_out.extend(got)
    bad = []
    for i, case in enumerate(cases):
        want, mag = wants[i]
        g = got[i]
        if case.get("xla_runner_layout"):
            g = g.transpose(1, 2, 0, 3)
        elif case["pixel_major"]:
            g = g.transpose(0, 3, 1, 2)
        if g.shape != want.shape or g.dtype != case["dtype"]:
            bad.append("case %d %r: shape/dtype %s %s, expected %s %s" % (
                i, case, g.shape, g.dtype, want.shape, np.dtype(case["dtype"])))
            continue
        if case["dtype"] == np.int32:
            ok = np.array_equal(g.astype(np.int64), want)
        else:
            # f32 / c64: accumulation in f32; f16: computed in f32, rounded once.
            eps = {np.float64: 1e-13, np.float16: 1e-5}.get(case["dtype"], 1e-5)
            rel = 2.0 ** -11 if case["dtype"] == np.float16 else 0
            err = np.abs(g.astype(want.dtype) - want)
            ok = np.all(err <= eps * mag + rel * np.abs(want) + 1e-30)
        if not ok:
            bad.append("case %d %r:\ngot\n%s\nexpected\n%s" % (i, case, g, want))
    if bad:
        return "%d of %d cases differ:\n%s" % (len(bad), len(cases), "\n".join(bad[:3]))
    n_holes = sum(1 for c in cases if max(c["ld"]) > 1)
    print("  %d cases (%d with lhs_dilate > 1) match the oracle" % (len(cases), n_holes))
    return None


if __name__ == "__main__":
    main([("random_convolutions", test_random_convolutions),
          ("large_convolutions_threads", test_large_convolutions_threads)])
