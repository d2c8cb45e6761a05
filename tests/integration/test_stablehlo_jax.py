#!/usr/bin/env python3
"""StableHLO programs in the forms JAX and MLIR tools print them, on real ranks.

- tests/stablehlo/collectives_8.mlir: a pmap-style program (8 replicas, inputs
  and expected values baked in, check ops after every collective) on 8 ranks
  started by hlo-launch (localhost) and by the user's own mpirun (srun: see
  test_cluster_slurm.py); its results are also compared with NumPy here, and a
  copy with one wrong expected value must fail.
- tests/stablehlo/generic_conv.mlir: the generic op form (--mlir-print-op-generic)
  with a #stablehlo.conv<raw ...> convolution, against a NumPy convolution.
"""

import os

import numpy as np

import hl_testlib as hl

SRC = os.environ.get("HL_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
PROGRAMS = os.path.join(SRC, "tests", "stablehlo")
COLLECTIVES = os.path.join(PROGRAMS, "collectives_8.mlir")

A = np.array([0.5, -1.25, 2, 3.5, -4, 0.25, 1, -0.75], np.float32)  # @inputs() of the program


def collectives_want():
    return [
        8 * A + 28,
        np.concatenate([A + r for r in range(8)]),
        np.concatenate([A + (r - 1) % 8 for r in range(8)]),
        8 * A + 28,
        np.concatenate([A[r] + np.arange(8, dtype=np.float32) for r in range(8)]),
        A + 7,
    ]


def check_collective_outputs(out):
    want = [np.asarray(w, np.float32) for w in collectives_want()]
    for rank in range(8):
        got = hl.read_outputs(out, rank, 0, len(want))
        for k, (g, w) in enumerate(zip(got, want)):
            msg = hl.compare("rank %d result %d" % (rank, k), g, w)
            if msg:
                return msg
    return None


def collectives_localhost():
    """Every collective on 8 ranks started by hlo-launch; checks pass on every rank."""
    with hl.tempdir("shlo-jax") as d:
        out = os.path.join(d, "out")
        r = hl.launch(COLLECTIVES, replicas=8, output_dir=out)
        if r.returncode != 0:
            return r.describe()
        return check_collective_outputs(out)


def collectives_mpirun():
    """The same program on 8 ranks of the user's own mpirun."""
    argv = hl.mpi_starter(8, bind_none=False)
    with hl.tempdir("shlo-jax") as d:
        out = os.path.join(d, "out")
        r = hl.run(argv + [hl.HLO_LAUNCH, "--output-dir", out, "--quiet", COLLECTIVES])
        if r.returncode != 0:
            return r.describe()
        return check_collective_outputs(out)


def collectives_check_fails():
    """One wrong expected value (ppermute's first element): the job fails naming it."""
    with open(COLLECTIVES) as f:
        text = f.read()
    wrong = (A[0] + 7).item()  # rank 0 receives from rank 7: a[0] + 7
    good = "check.expect_eq_const %%gp, dense<[%.6e" % wrong
    if good not in text:
        return "the program should check ppermute's first value %r" % good
    text = text.replace(good, "check.expect_eq_const %%gp, dense<[%.6e" % (wrong + 1))
    with hl.tempdir("shlo-jax") as d:
        prog = os.path.join(d, "bad.mlir")
        with open(prog, "w") as f:
            f.write(text)
        r = hl.launch(prog, replicas=8)
        needle = "element [0] is 7.5, expected 8.5"
        if r.returncode == 0 or "check.expect_eq" not in r.stderr or needle not in r.stderr:
            return "expected a failing check with %r\n%s" % (needle, r.describe())
    return None


def conv_nhwc_hwio(x, w, pad):
    n, h, wd, c = x.shape
    kh, kw, _, o = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    oh, ow = h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1
    out = np.zeros((n, oh, ow, o))
    for i in range(oh):
        for j in range(ow):
            out[:, i, j, :] = np.einsum("nhwc,hwco->no", xp[:, i:i + kh, j:j + kw, :], w)
    return out


def generic_form_conv():
    """Generic module / func.func / func.call and a raw-form convolution, times two."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 4, 5, 2)).astype(np.float32)
    w = rng.standard_normal((3, 3, 2, 3)).astype(np.float32)
    with hl.tempdir("shlo-jax") as d:
        args = os.path.join(d, "args")
        hl.write_args(args, [x, w])
        out = os.path.join(d, "out")
        r = hl.launch(os.path.join(PROGRAMS, "generic_conv.mlir"), args_dir=args, output_dir=out)
        if r.returncode != 0:
            return r.describe()
        want = (2 * conv_nhwc_hwio(x, w.astype(np.float64), 1)).astype(np.float32)
        msg = hl.compare("conv", hl.read_outputs(out, 0, 0, 1)[0], want, tol=(1e-5, 1e-5))
        if msg:
            return msg
        # A raw dimension number outside the kernel's rank is an error at the op.
        with open(os.path.join(PROGRAMS, "generic_conv.mlir")) as f:
            text = f.read().replace("kernel_spatial_dimensions = [0, 1]",
                                    "kernel_spatial_dimensions = [0, 9]")
        bad = os.path.join(d, "bad.mlir")
        with open(bad, "w") as f:
            f.write(text)
        r = hl.launch(bad, args_dir=args)
        needle = "'stablehlo.convolution' has kernel spatial dimension 9 outside the rank-4 kernel"
        if r.returncode == 0 or needle not in r.stderr:
            return "expected %r\n%s" % (needle, r.describe())
    return None


if __name__ == "__main__":
    hl.require_binaries("hlo-launch")
    hl.main([
        ("collectives_localhost", collectives_localhost),
        ("collectives_mpirun", collectives_mpirun),
        ("collectives_check_fails", collectives_check_fails),
        ("generic_form_conv", generic_form_conv),
    ])
