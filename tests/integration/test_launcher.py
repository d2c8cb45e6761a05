#!/usr/bin/env python3
"""hlo-launch itself: options, the process grid, inputs, outputs and error
handling, with real MPI jobs on localhost and NumPy as the oracle.

Run by ctest (integration.launcher), which sets HLO_LAUNCH and HL_SOURCE_DIR.
Every command runs under a timeout in its own process group, so a hung rank
fails the test instead of hanging it.
"""

import os
import re
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hl_testlib import main, mpi_family, mpi_starter, run  # noqa: E402  (timeout, process group)

SOURCE_DIR = os.environ.get(
    "HL_SOURCE_DIR",
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
HLO_LAUNCH = os.environ.get("HLO_LAUNCH", "")
PROGRAMS = os.path.join(SOURCE_DIR, "tests", "programs")
SCALE = os.path.join(PROGRAMS, "launcher_replica_scale.hlo")
GRID_IDS = os.path.join(PROGRAMS, "launcher_grid_ids.hlo")
UNSUPPORTED = os.path.join(PROGRAMS, "launcher_unsupported.hlo")
TIMEOUT_S = 60


def launch(*args, **kw):
    kw.setdefault("timeout", TIMEOUT_S)
    return run([HLO_LAUNCH] + [str(a) for a in args], **kw)


def error_lines(res):
    return [l for l in res.stderr.splitlines() if l.startswith("hlo-launch:")]


def expect_one_error(res, pattern, code=1):
    """The command failed with `code`, within the timeout, printing exactly one
    hlo-launch line that matches `pattern`."""
    if res.timed_out:
        return "hung\n" + res.describe()
    if res.returncode != code:
        return "exit %s, expected %s\n%s" % (res.returncode, code, res.describe())
    lines = error_lines(res)
    if len(lines) != 1:
        return "expected one hlo-launch error line, got %d\n%s" % (len(lines), res.describe())
    if not re.search(pattern, lines[0]):
        return "error line does not match %r\n%s" % (pattern, res.describe())
    return None


# --- the random-argument oracle: the algorithm documented in --help ---------
M64 = (1 << 64) - 1


def splitmix_stream(seed, k):
    state = (seed + (k + 1) * 0xD1B54A32D192ED03) & M64
    while True:
        state = (state + 0x9E3779B97F4A7C15) & M64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        yield z ^ (z >> 31)


def random_floats(seed, k, n, dtype):
    g = splitmix_stream(seed, k)
    return np.array([2.0 * ((next(g) >> 11) * 2.0 ** -53) - 1.0 for _ in range(n)]).astype(dtype)


def random_ints(seed, k, n, lo, hi, dtype):
    g = splitmix_stream(seed, k)
    return np.array([lo + next(g) % (hi - lo + 1) for _ in range(n)]).astype(dtype)


def result_path(out_dir, r, p, i):
    return os.path.join(out_dir, "replica%d_partition%d" % (r, p), "result%d.npy" % i)


def compare(what, got, want):
    if got.dtype != want.dtype or got.shape != want.shape:
        return "%s: %s %s, expected %s %s" % (what, got.dtype, got.shape, want.dtype, want.shape)
    if not np.array_equal(got, want):
        return "%s: got\n%s\nexpected\n%s" % (what, got, want)
    return None


# --- tests -----------------------------------------------------------------------
def test_help_and_version():
    res = launch("--help")
    if res.returncode != 0:
        return res.describe()
    for needle in ["Usage: hlo-launch [-np N] [options] PROGRAM", "--replicas R", "--partitions P",
                   "--args A.npy,B.npy", "--args-dir DIR", "replica<r>_partition<p>/arg<i>.npy",
                   "--seed S", "--zeros", "--output-dir DIR", "result<i>.npy", "--quiet",
                   "--dry-run", "--mpiexec PATH", "--timeout", "r * P + p", "P = 1 and R = N",
                   "0x9E3779B97F4A7C15", "0xD1B54A32D192ED03", "Exit status", "Examples",
                   "--version"]:
        if needle not in res.stdout:
            return "--help lacks %r\n%s" % (needle, res.stdout)
    res = launch("--version")
    if res.returncode != 0 or not re.match(r"hlo-launch \d+\.\d+", res.stdout):
        return res.describe()
    return None


def test_usage_errors():
    for args, pattern in [((), "no PROGRAM given"),
                          (("--bogus", SCALE), "unknown option '--bogus'"),
                          (("-np", "x", SCALE), "-np needs a positive integer"),
                          (("--zeros", "--seed", "1", SCALE), "both choose the inputs")]:
        res = launch(*args)
        msg = expect_one_error(res, pattern, code=2)
        if msg:
            return msg
        if "--help" not in res.stderr:
            return "usage error without a pointer to --help\n" + res.describe()
    return None


def test_errors_before_spawn():
    """Found by the launcher itself: one line, exit 1, no rank started."""
    with tempfile.TemporaryDirectory(prefix="hl-launcher-") as d:
        cases = [
            (("-np", 8, "--replicas", 2, "--partitions", 2, SCALE),
             r"^hlo-launch: the grid 2 replicas x 2 partitions needs 4 processes, but -np is 8$"),
            (("-np", 2, GRID_IDS),
             r"needs 4 processes, but -np is 2 \(the program says replica_count=2, "
             r"num_partitions=2"),
            (("-np", 2, os.path.join(d, "missing.hlo")), r"missing\.hlo"),
            (("--args-dir", d, "--output-dir", d, SCALE), r"is the --args-dir"),
        ]
        bad = os.path.join(d, "bad.hlo")
        with open(bad, "w") as f:
            f.write("HloModule bad\n\nENTRY main {\n  ROOT x = f32[2 parameter(0)\n}\n")
        cases.append((("-np", 2, bad), r"bad\.hlo:4:\d+"))
        for args, pattern in cases:
            res = launch(*args)
            msg = expect_one_error(res, pattern)
            if msg:
                return msg
            if "rank" in res.stderr:
                return "a rank ran before the error was found\n" + res.describe()
    return None


def test_dry_run():
    res = launch("-np", 4, "--dry-run", "--mpiexec", "/opt/x/mpiexec", "--mpiexec-arg=--tag-output",
                 "--zeros", SCALE)
    if res.returncode != 0:
        return res.describe()
    words = res.stdout.split()
    # A starter that is not there cannot say its family: it gets the flags of
    # the MPI hlo-launch was built with (tests/integration/test_mpi_families.py).
    if mpi_family() == "mpich":
        want = ["/opt/x/mpiexec", "-bind-to", "none"]
    else:
        want = ["/opt/x/mpiexec"] + (["--allow-run-as-root"] if os.geteuid() == 0 else []) + [
            "--oversubscribe", "--bind-to", "none"]
    if words[:len(want)] != want:
        return "unexpected mpiexec options\n" + res.stdout
    for needle in ["--tag-output", "-n 4", "--worker", "--zeros", SCALE]:
        if needle not in res.stdout:
            return "dry run lacks %r\n%s" % (needle, res.stdout)
    if "--dry-run" in res.stdout:
        return "--dry-run passed on to the ranks\n" + res.stdout
    return None


def scale_case(np_count):
    """x * (replica_id + 1) with per-process inputs from --args-dir."""
    with tempfile.TemporaryDirectory(prefix="hl-launcher-") as d:
        args, out = os.path.join(d, "args"), os.path.join(d, "out")
        inputs = {}
        for r in range(np_count):
            sub = os.path.join(args, "replica%d_partition0" % r)
            os.makedirs(sub)
            x = (np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5) * (r + 0.25)
            np.save(os.path.join(sub, "arg0.npy"), x)
            inputs[r] = x
        res = launch("-np", np_count, "--args-dir", args, "--output-dir", out, SCALE)
        if res.returncode != 0 or res.timed_out:
            return res.describe()
        for r in range(np_count):
            got = np.load(result_path(out, r, 0, 0))
            msg = compare("replica %d" % r, got, inputs[r] * np.float32(r + 1))
            if msg:
                return msg + "\n" + res.describe()
        headers = re.findall(r"^== replica (\d+), partition (\d+) \(rank (\d+)\) ==$", res.stdout,
                             re.M)
        want = [(str(r), "0", str(r)) for r in range(np_count)]
        if headers != want:
            return "printed headers %s, expected %s\n%s" % (headers, want, res.describe())
        if res.stderr.strip():
            return "unexpected stderr\n" + res.describe()
    return None


def test_np1():
    return scale_case(1)


def test_np2():
    return scale_case(2)


def test_np8():
    return scale_case(8)


def test_output_dir_round_trip():
    """2 x 2 grid from the program; shared --args files; nested tuple leaves."""
    with tempfile.TemporaryDirectory(prefix="hl-launcher-") as d:
        x = np.array([1.5, -2.0, 0.25, 8.0], np.float32)
        n = np.array([7, -9], np.int32)
        xf, nf = os.path.join(d, "x.npy"), os.path.join(d, "n.npy")
        np.save(xf, x)
        np.save(nf, n)
        out = os.path.join(d, "out", "deeper")  # created by hlo-launch
        res = launch("--args", "%s,%s" % (xf, nf), "--output-dir", out, "--quiet", GRID_IDS)
        if res.returncode != 0:
            return res.describe()
        if res.stdout.strip():
            return "--quiet printed results\n" + res.describe()
        for r in range(2):
            for p in range(2):
                want = [x * np.float32(r + 1), n + np.int32(p), np.array(r, np.uint32)]
                files = sorted(os.listdir(os.path.join(out, "replica%d_partition%d" % (r, p))))
                if files != ["result0.npy", "result1.npy", "result2.npy"]:
                    return "replica %d partition %d: files %s" % (r, p, files)
                for i, w in enumerate(want):
                    msg = compare("replica %d partition %d result%d" % (r, p, i),
                                  np.load(result_path(out, r, p, i)), w)
                    if msg:
                        return msg
    return None


def test_random_and_zero_inputs():
    with tempfile.TemporaryDirectory(prefix="hl-launcher-") as d:
        out = os.path.join(d, "out")
        res = launch("-np", 2, "--seed", 12345, "--output-dir", out, "-q", SCALE)
        if res.returncode != 0:
            return res.describe()
        x = random_floats(12345, 0, 6, np.float32).reshape(2, 3)
        for r in range(2):
            msg = compare("seed 12345 replica %d" % r, np.load(result_path(out, r, 0, 0)),
                          x * np.float32(r + 1))
            if msg:
                return msg
        # No input option: seed 0, on a grid of the program's own.
        res = launch("--output-dir", out, "-q", GRID_IDS)
        if res.returncode != 0:
            return res.describe()
        x0 = random_floats(0, 0, 4, np.float32)
        n0 = random_ints(0, 1, 2, -10, 10, np.int32)
        for r, p in [(0, 1), (1, 0)]:
            for i, w in enumerate([x0 * np.float32(r + 1), n0 + np.int32(p)]):
                msg = compare("seed 0 replica %d partition %d result%d" % (r, p, i),
                              np.load(result_path(out, r, p, i)), w)
                if msg:
                    return msg
        res = launch("-np", 1, "--zeros", "--output-dir", out, "-q", SCALE)
        if res.returncode != 0:
            return res.describe()
        return compare("zeros", np.load(result_path(out, 0, 0, 0)), np.zeros((2, 3), np.float32))


def test_bad_npy_names_the_rank():
    """One process's input has the wrong shape: that rank is named, exit 1."""
    with tempfile.TemporaryDirectory(prefix="hl-launcher-") as d:
        for r in range(4):
            sub = os.path.join(d, "replica%d_partition0" % r)
            os.makedirs(sub)
            a = np.zeros((3, 2)) if r == 2 else np.zeros((2, 3), np.float32)
            np.save(os.path.join(sub, "arg0.npy"), a)
        res = launch("-np", 4, "--args-dir", d, SCALE)
        return expect_one_error(
            res, r"^hlo-launch: rank 2 \(replica 2, partition 0\): .*replica2_partition0/arg0\.npy: "
                 r"expected f32\[2,3\] for parameter 0, file has float64 \(3, 2\)$")


def test_same_error_everywhere_is_reported_once():
    with tempfile.TemporaryDirectory(prefix="hl-launcher-") as d:
        bad = os.path.join(d, "x.npy")
        np.save(bad, np.zeros(5, np.int8))
        res = launch("-np", 8, "--args", bad, SCALE)
        return expect_one_error(res, r"^hlo-launch: all 8 ranks: .*x\.npy: expected f32\[2,3\] "
                                     r"for parameter 0, file has int8 \(5,\)$")


def test_same_error_on_some_ranks_is_merged():
    """Ranks 0 and 1 have their own inputs; 2 and 3 fall back to the shared
    DIR/arg0.npy, which is bad: one line for ranks 2-3."""
    with tempfile.TemporaryDirectory(prefix="hl-launcher-") as d:
        for r in range(2):
            sub = os.path.join(d, "replica%d_partition0" % r)
            os.makedirs(sub)
            np.save(os.path.join(sub, "arg0.npy"), np.zeros((2, 3), np.float32))
        np.save(os.path.join(d, "arg0.npy"), np.zeros((2, 3), np.float16))
        res = launch("-np", 4, "--args-dir", d, SCALE)
        return expect_one_error(res, r"^hlo-launch: ranks 2-3: .*/arg0\.npy: expected f32\[2,3\] "
                                     r"for parameter 0, file has float16 \(2, 3\)$")


def test_unsupported_op_names_the_instruction():
    # A known target that refuses its operands at run time: every rank names
    # the instruction. (An unknown target stops before launch: that case is
    # in test_custom_call_plugins.py.)
    res = launch("-np", 2, "--zeros", UNSUPPORTED)
    return expect_one_error(res, r"^hlo-launch: all 2 ranks: .*strange\.3")


def test_failure_while_others_block_ends_the_job():
    """A rank fails during execution while the others wait for it in a
    collective (simulated by a test hook: they block in a barrier). The
    failed rank names itself and aborts the job; nothing hangs. (No
    --timeout: only the abort can end the job, and the bound here only
    catches a hang. It was also a 20 s limit on the job's time, which the
    abort's grace (3 s) plus MPICH's start and end of 3 ranks on a loaded
    2-core machine come near.)"""
    env = dict(os.environ, HL_TEST_EXEC_FAIL_RANK="1")
    res = launch("-np", 3, "--zeros", SCALE, env=env, timeout=90)
    if res.timed_out:
        return "hung\n" + res.describe()
    if res.returncode == 0:
        return "exit 0 after a failure\n" + res.describe()
    lines = error_lines(res)
    want = "hlo-launch: rank 1 (replica 1, partition 0): injected execution failure"
    if len(lines) != 1 or not lines[0].startswith(want):
        return "expected one line starting %r\n%s" % (want, res.describe())
    return None


REPEAT_LINE = re.compile(r"^hlo-launch: 3 runs on 2 processes: first ([0-9.]+) ms; runs 2-3: "
                         r"min ([0-9.]+) ms, median ([0-9.]+) ms, max ([0-9.]+) ms$")


def test_repeat_times_runs_and_keeps_last_result():
    """--repeat 3: one report line on stderr, ordered figures, correct results."""
    with tempfile.TemporaryDirectory(prefix="hl-launcher-") as d:
        x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5
        xf, out = os.path.join(d, "x.npy"), os.path.join(d, "out")
        np.save(xf, x)
        res = launch("-np", 2, "--repeat", 3, "--args", xf, "--output-dir", out, "-q", SCALE)
        if res.returncode != 0 or res.timed_out:
            return res.describe()
        lines = [l for l in res.stderr.splitlines() if l.strip()]
        m = REPEAT_LINE.match(lines[0]) if len(lines) == 1 else None
        if not m:
            return "expected one timing line\n" + res.describe()
        lo, med, hi = (float(m.group(i)) for i in (2, 3, 4))
        if not lo <= med <= hi:
            return "min %g, median %g, max %g are not ordered" % (lo, med, hi)
        for r in range(2):
            msg = compare("replica %d" % r, np.load(result_path(out, r, 0, 0)),
                          x * np.float32(r + 1))
            if msg:
                return msg
    return None


def test_repeat_failure_ends_the_job():
    """A rank failing in a repeated run ends the job like a single run does."""
    env = dict(os.environ, HL_TEST_EXEC_FAIL_RANK="1")
    res = launch("-np", 2, "--repeat", 5, "--zeros", SCALE, env=env, timeout=90)  # a hang bound
    if res.timed_out or res.returncode == 0:
        return "no failure or hung\n" + res.describe()
    return expect_one_error(res, r"^hlo-launch: rank 1 \(replica 1, partition 0\): injected")


# --- a hand-encoded HloSnapshot (protobuf wire format) ------------------------
def pb_varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def pb_len(field, payload):
    return pb_varint(field << 3 | 2) + pb_varint(len(payload)) + payload


def pb_literal(a):
    """xla.LiteralProto of an f32 or s32 array (row-major, layout {rank-1..0})."""
    types = {np.dtype(np.float32): (11, 8), np.dtype(np.int32): (4, 4)}
    element_type, data_field = types[a.dtype]
    dims = b"".join(pb_varint(d) for d in a.shape)
    layout = pb_len(1, b"".join(pb_varint(d) for d in reversed(range(a.ndim))))
    shape = pb_varint(2 << 3) + pb_varint(element_type) + pb_len(3, dims) + pb_len(5, layout)
    if a.dtype == np.float32:
        data = a.astype("<f4").tobytes()
    else:  # packed varints; negative int32 are sign-extended to 64 bits
        data = b"".join(pb_varint(int(v) & ((1 << 64) - 1)) for v in a.ravel())
    return pb_len(1, shape) + pb_len(data_field, data)


def test_snapshot_arguments():
    convert = os.path.join(os.path.dirname(HLO_LAUNCH), "hlo-convert")
    if not os.access(convert, os.X_OK):
        print("skip snapshot_arguments: no hlo-convert next to hlo-launch")
        return None
    with tempfile.TemporaryDirectory(prefix="hl-launcher-") as d:
        pb = os.path.join(d, "scale.pb")
        res = run([convert, SCALE, pb])
        if res.returncode != 0:
            return res.describe()
        hlo = open(pb, "rb").read()
        x = np.array([[1.5, -2, 3], [0.25, 8, -0.5]], np.float32)
        snap = os.path.join(d, "snapshot.pb")
        with open(snap, "wb") as f:
            f.write(pb_len(1, hlo) + pb_len(2, pb_literal(x)))
        out = os.path.join(d, "out")
        res = launch("-np", 2, "--output-dir", out, "-q", snap)
        if res.returncode != 0:
            return res.describe()
        for r in range(2):
            msg = compare("snapshot replica %d" % r, np.load(result_path(out, r, 0, 0)),
                          x * np.float32(r + 1))
            if msg:
                return msg
        # --seed overrides the snapshot's arguments.
        res = launch("-np", 1, "--seed", 4, "--output-dir", out, "-q", snap)
        if res.returncode != 0:
            return res.describe()
        msg = compare("seed over snapshot", np.load(result_path(out, 0, 0, 0)),
                      random_floats(4, 0, 6, np.float32).reshape(2, 3))
        if msg:
            return msg
        bad = os.path.join(d, "bad_snapshot.pb")
        with open(bad, "wb") as f:
            f.write(pb_len(1, hlo) + pb_len(2, pb_literal(np.array([[1, -2, 3], [4, 5, 6]],
                                                                     np.int32))))
        res = launch("-np", 2, bad)
        return expect_one_error(res, r"^hlo-launch: all 2 ranks: HloSnapshot argument 0 is "
                                     r"s32\[2,3\], but parameter 0 is f32\[2,3\]$")


def test_never_overwrites_inputs():
    with tempfile.TemporaryDirectory(prefix="hl-launcher-") as d:
        sub = os.path.join(d, "replica0_partition0")
        os.makedirs(sub)
        x = np.ones((2, 3), np.float32)
        victim = os.path.join(sub, "result0.npy")
        np.save(victim, x)
        res = launch("-np", 1, "--args", victim, "--output-dir", d, SCALE)
        msg = expect_one_error(res, r"refusing to overwrite the input file")
        if msg:
            return msg
        return compare("input after refusal", np.load(victim), x)


def test_started_by_mpiexec_directly():
    """Under the user's own mpiexec, hlo-launch runs as one rank each."""
    argv = mpi_starter(2, bind_none=False)
    with tempfile.TemporaryDirectory(prefix="hl-launcher-") as d:
        res = run(argv + [HLO_LAUNCH, "--seed", "3", "--output-dir", d, SCALE])
        if res.returncode != 0:
            return res.describe()
        x = random_floats(3, 0, 6, np.float32).reshape(2, 3)
        return compare("replica 1", np.load(result_path(d, 1, 0, 0)), x * np.float32(2))


def test_timeout_and_missing_mpiexec():
    # The fake starter outlives the test's own bound (60 s), so a launcher
    # that waited for it instead of stopping it fails as a hang; no
    # wall-clock limit on the stop itself (it was 10 s).
    with tempfile.TemporaryDirectory(prefix="hl-launcher-") as d:
        fake = os.path.join(d, "slow-mpiexec")
        with open(fake, "w") as f:
            f.write("#!/bin/sh\nexec sleep 600\n")
        os.chmod(fake, 0o755)
        res = launch("-np", 1, "--mpiexec", fake, "--timeout", "1", SCALE)
        msg = expect_one_error(res, r"did not finish within --timeout 1 s", code=124)
        if msg:
            return msg
        res = launch("-np", 1, "--mpiexec", os.path.join(d, "nope"), SCALE)
        return expect_one_error(res, r"cannot run '.*nope': No such file")


TESTS = [(name[5:], fn) for name, fn in sorted(globals().items())
         if name.startswith("test_") and callable(fn)]


if __name__ == "__main__":
    main(TESTS)
