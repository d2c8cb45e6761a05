#!/usr/bin/env python3
"""StableHLO text (.mlir) through hlo-launch and hlo-convert on real ranks.

Programs are written in the form `jax.jit(f).lower(...).as_text()` prints
(tests/stablehlo/); expected values come from NumPy here. Also: the check
dialect passes and fails when it should (naming function, index and values),
--split-input-file reports each case, and parse errors are MLIR diagnostics.
"""

import os
import re

import numpy as np

import hl_testlib as hl

SRC = os.environ.get("HL_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
PROGRAMS = os.path.join(SRC, "tests", "stablehlo")
rng = np.random.default_rng(20261124)


def psum_on_8_ranks():
    """all_reduce over 8 replicas: every rank holds 8 * x * y and tanh of its sum."""
    x = rng.standard_normal((4, 3)).astype(np.float32)
    y = rng.standard_normal(3).astype(np.float32)
    with hl.tempdir("shlo") as d:
        args = os.path.join(d, "args")
        hl.write_args(args, [x, y])
        out = os.path.join(d, "out")
        r = hl.launch(os.path.join(PROGRAMS, "psum_8.mlir"), replicas=8, args_dir=args,
                      output_dir=out)
        if r.returncode != 0:
            return r.describe()
        prod = (x * y[None, :]).astype(np.float32)
        want0 = (prod * np.float32(8)).astype(np.float32)
        want1 = np.tanh(want0.astype(np.float64).sum()).astype(np.float32)
        for rank in range(8):
            got = hl.read_outputs(out, rank, 0, 2)
            for name, g, w in (("sum", got[0], want0), ("tanh", got[1], np.asarray(want1))):
                msg = hl.compare("rank %d %s" % (rank, name), g, w, tol=(1e-5, 1e-5))
                if msg:
                    return msg
    return None


def chlo_unary():
    """CHLO ops JAX emits, against NumPy / math.erf in double, rounded to f32."""
    import math
    x = np.array([-0.9, -0.3, 0.0, 0.25, 0.8], np.float32)
    xd = x.astype(np.float64)
    want = [np.sinh(xd), np.cosh(xd), np.tan(xd), np.arcsin(xd), np.arccos(xd), np.arctan(xd),
            np.array([math.erf(v) for v in xd])]
    with hl.tempdir("shlo") as d:
        args = os.path.join(d, "args")
        hl.write_args(args, [x])
        out = os.path.join(d, "out")
        r = hl.launch(os.path.join(PROGRAMS, "chlo_unary.mlir"), args_dir=args, output_dir=out)
        if r.returncode != 0:
            return r.describe()
        got = hl.read_outputs(out, 0, 0, 7)
        names = ["sinh", "cosh", "tan", "asin", "acos", "atan", "erf"]
        for name, g, w in zip(names, got, want):
            msg = hl.compare(name, g, w.astype(np.float32))
            if msg:
                return msg
    return None


OUTFEED = """func.func @main(%x: tensor<2x3xi32>) -> tensor<2x3xi32> {
  %t = stablehlo.after_all : !stablehlo.token
  %y = stablehlo.multiply %x, %x : tensor<2x3xi32>
  %t2 = "stablehlo.outfeed"(%y, %t) <{outfeed_config = ""}> : (tensor<2x3xi32>, !stablehlo.token) -> !stablehlo.token
  return %x : tensor<2x3xi32>
}
"""


def outfeed_file():
    """stablehlo.outfeed writes its inputs to --outfeed-dir as .npy."""
    x = np.arange(-3, 3, dtype=np.int32).reshape(2, 3)
    with hl.tempdir("shlo") as d:
        prog = os.path.join(d, "o.mlir")
        with open(prog, "w") as f:
            f.write(OUTFEED)
        args = os.path.join(d, "args")
        hl.write_args(args, [x])
        feed = os.path.join(d, "feed")
        r = hl.launch(prog, args_dir=args, extra=["--outfeed-dir", feed, "--quiet"])
        if r.returncode != 0:
            return r.describe()
        got = np.load(os.path.join(feed, "replica0_partition0", "outfeed0.npy"))
        return hl.compare("outfeed", got, x * x)


def run_parallel_grid():
    """interpreter.run_parallel's 2x2 programs grid as 4 ranks: results reach every rank."""
    x = rng.standard_normal((4, 2)).astype(np.float32)
    gathered = x.reshape(-1)
    want = [(gathered * np.float32(k % 2 + 1)).astype(np.float32) for k in range(4)]
    with open(os.path.join(PROGRAMS, "run_parallel_2x2.mlir")) as f:
        text = f.read()
    for k in range(4):
        text = text.replace("INPUT_%d]" % k, hl.hexf32(x[k]) + "]")
        text = text.replace("EXPECTED_%d]" % k, hl.hexf32(want[k]) + "]")
    with hl.tempdir("shlo") as d:
        prog = os.path.join(d, "rp.mlir")
        with open(prog, "w") as f:
            f.write(text)
        out = os.path.join(d, "out")
        # No grid options: the programs grid gives 2 replicas x 2 partitions.
        r = hl.run([hl.HLO_LAUNCH, "--output-dir", out, "--quiet", prog])
        if r.returncode != 0:
            return r.describe()
        for rank in range(4):
            got = hl.read_outputs(out, rank // 2, rank % 2, 4)
            for k in range(4):
                msg = hl.compare("rank %d result %d" % (rank, k), got[k], want[k])
                if msg:
                    return msg
    return None


def started_by_mpirun():
    """The psum program on 8 ranks of the user's own mpirun."""
    x = np.arange(12, dtype=np.float32).reshape(4, 3) / 7
    y = np.array([0.5, -1.0, 3.0], np.float32)
    argv = hl.mpi_starter(8, bind_none=False)
    with hl.tempdir("shlo") as d:
        args = os.path.join(d, "args")
        hl.write_args(args, [x, y])
        out = os.path.join(d, "out")
        r = hl.run(argv + [hl.HLO_LAUNCH, "--args-dir", args, "--output-dir", out, "--quiet",
                           os.path.join(PROGRAMS, "psum_8.mlir")])
        if r.returncode != 0:
            return r.describe()
        want = (x * y[None, :]).astype(np.float32) * np.float32(8)
        for rank in range(8):
            msg = hl.compare("rank %d" % rank, hl.read_outputs(out, rank, 0, 1)[0], want,
                             tol=(1e-5, 1e-5))
            if msg:
                return msg
    return None


def testdata_program(expected):
    with open(os.path.join(PROGRAMS, "testdata_reduce_max.mlir")) as f:
        text = f.read()
    vals = ", ".join("0x%08X" % v for v in np.asarray(expected, np.float32).view(np.uint32))
    return text.replace("EXPECTED", vals)


def testdata_check_passes_and_fails():
    x = np.array([[1.5, -2.0, 3.25], [0.5, 7.0, -1.0]], np.float32)
    want = np.exp(x.max(axis=1).astype(np.float64)).astype(np.float32)
    with hl.tempdir("shlo") as d:
        good = os.path.join(d, "good.mlir")
        with open(good, "w") as f:
            f.write(testdata_program(want))
        r = hl.launch(good)
        if r.returncode != 0:
            return "correct expected values failed:\n" + r.describe()
        wrong = want.copy()
        wrong[1] = np.nextafter(np.nextafter(np.nextafter(np.nextafter(
            wrong[1], np.float32(np.inf)), np.float32(np.inf)), np.float32(np.inf)),
            np.float32(np.inf))  # 4 ULP away: beyond expect_close's 0..3
        bad = os.path.join(d, "bad.mlir")
        with open(bad, "w") as f:
            f.write(testdata_program(wrong))
        r = hl.launch(bad)
        if r.returncode == 0:
            return "a 4-ULP difference passed check.expect_close"
        if not re.search(r"check\.expect_close failed in .*'main'.*element \[1\]", r.stderr):
            return "failure message lacks function / index:\n" + r.stderr
    return None


CASES = """func.func @ok() {
  %0 = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
  %1 = stablehlo.add %0, %0 : tensor<2xi32>
  check.expect_eq_const %1, dense<[2, 4]> : tensor<2xi32>
  func.return
}

// -----

func.func @wrong() {
  %0 = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %1 = stablehlo.multiply %0, %0 : tensor<2xf32>
  check.expect_almost_eq_const %1, dense<[1.0, 4.5]> : tensor<2xf32>
  func.return
}

// -----

func.func @broken() {
  %0 = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
  %1 = stablehlo.add %0, %nope : tensor<2xi32>
  func.return
}
"""


def split_input_file():
    with hl.tempdir("shlo") as d:
        path = os.path.join(d, "cases.mlir")
        with open(path, "w") as f:
            f.write(CASES)
        r = hl.run([hl.HLO_LAUNCH, "--split-input-file", path])
        if r.returncode == 0:
            return "a file with failing cases exited 0:\n" + r.describe()
        # Batch mode: one line per case named by the user's file and the
        # case's first line, then the summary.
        lines = [l for l in r.stdout.splitlines() if l.startswith("hlo-launch: program ")]
        names = [l[len("hlo-launch: program "):].split(": ")[0] for l in lines]
        if names != ["%s:%d" % (path, n) for n in (1, 9, 18)]:
            return "per-case names %s:\n%s" % (names, r.describe())
        status = [l.split(": ")[2] for l in lines]
        if status != ["passed", "FAILED", "FAILED"]:
            return "per-case results %s:\n%s" % (status, r.describe())
        if "1 passed, 2 failed" not in r.stdout:
            return "no total:\n" + r.stdout
        if "check.expect_almost_eq failed" not in lines[1]:
            return "the failed check is not the case's reason:\n" + lines[1]
        # The undefined value: an MLIR diagnostic naming the user's file at its line 21.
        if not re.search(re.escape(path) + r":21:\d+: error: use of undefined value %nope",
                         r.stderr + lines[2]):
            return "no %s:21:col diagnostic for the undefined value:\n%s" % (path, r.describe())
        if not re.search(r"check\.expect_almost_eq failed in .*'wrong'.*element \[1\] is 4, "
                         r"expected 4\.5", r.stderr):
            return "almost_eq failure message:\n" + r.stderr
    return None


def convert_to_hlo():
    """hlo-convert turns StableHLO text into HLO text that runs to the same result."""
    with hl.tempdir("shlo") as d:
        hlo = os.path.join(d, "psum.hlo")
        r = hl.convert(os.path.join(PROGRAMS, "psum_8.mlir"), hlo)
        if r.returncode != 0:
            return r.describe()
        text = open(hlo).read()
        if "all-reduce(" not in text or "replica_count=8" not in text:
            return "converted text lacks all-reduce / replica_count:\n" + text
        pb = os.path.join(d, "psum.pb")
        r = hl.convert(os.path.join(PROGRAMS, "psum_8.mlir"), pb)
        if r.returncode != 0:
            return r.describe()
        x = np.arange(12, dtype=np.float32).reshape(4, 3)
        y = np.array([1, -1, 2], np.float32)
        args = os.path.join(d, "args")
        hl.write_args(args, [x, y])
        out = os.path.join(d, "out")
        r = hl.launch(pb, replicas=8, args_dir=args, output_dir=out)
        if r.returncode != 0:
            return r.describe()
        got = hl.read_outputs(out, 3, 0, 1)[0]
        return hl.compare("converted", got, (x * y * 8).astype(np.float32))


def hostile_nesting():
    """An alias defined by itself (a fuzzer's find) and 5000 nested '[' stop
    with a diagnostic, not a stack overflow."""
    with hl.tempdir("shlo") as d:
        cases = {
            "self_alias.mlir": ("#0 =#0 =", "an alias refers to itself"),
            "deep_type.mlir": ("!t = " + "tuple<" * 5000 + "f32" + ">" * 5000 + "\n",
                               "nest more than"),
            "deep_attr.mlir": ("#a = " + "[" * 5000 + "1" + "]" * 5000 + "\n"
                               "module attributes {x = #a} {}\n", "nest more than"),
        }
        for name, (text, needle) in cases.items():
            path = os.path.join(d, name)
            with open(path, "w") as f:
                f.write(text)
            r = hl.launch(path)
            if r.returncode != 1 or needle not in r.stderr or (name + ":1:") not in r.stderr:
                return "%s: expected exit 1 and a diagnostic with %r\n%s" % (
                    name, needle, r.describe())
    return None


if __name__ == "__main__":
    hl.require_binaries("hlo-launch", "hlo-convert")
    hl.main([
        ("psum_on_8_ranks", psum_on_8_ranks),
        ("testdata_check_passes_and_fails", testdata_check_passes_and_fails),
        ("split_input_file", split_input_file),
        ("convert_to_hlo", convert_to_hlo),
        ("run_parallel_grid", run_parallel_grid),
        ("chlo_unary", chlo_unary),
        ("outfeed_file", outfeed_file),
        ("started_by_mpirun", started_by_mpirun),
        ("hostile_nesting", hostile_nesting),
    ])
