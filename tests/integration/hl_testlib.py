"""Shared helpers for the integration tests (not a test itself).

The tests run the real binaries on real files. ctest passes
HLO_LAUNCH=<path of hlo-launch> and HL_SOURCE_DIR=<repository root>;
hlo-convert is found next to hlo-launch (or through HLO_CONVERT).
NumPy is the oracle: expected values are computed in the tests, never taken
from this project's output.
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mpi_session  # noqa: E402,F401  (a private Open MPI session directory)

SOURCE_DIR = os.environ.get(
    "HL_SOURCE_DIR",
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
HLO_LAUNCH = os.environ.get("HLO_LAUNCH", "")
HLO_CONVERT = os.environ.get(
    "HLO_CONVERT",
    os.path.join(os.path.dirname(HLO_LAUNCH), "hlo-convert") if HLO_LAUNCH else "")
PROGRAMS_DIR = os.path.join(SOURCE_DIR, "tests", "programs")
EXAMPLES_DIR = os.path.join(SOURCE_DIR, "examples")

# Every launch is bounded: a hung rank must fail the test, not the CI job.
LAUNCH_TIMEOUT_S = int(os.environ.get("HL_LAUNCH_TIMEOUT", "120"))


_MPI_FAMILY = None


def mpi_family():
    """"openmpi" or "mpich": the MPI hlo-launch was built with (it says so
    in --version; MPICH stands for its derivatives too)."""
    global _MPI_FAMILY
    if _MPI_FAMILY is None:
        out = subprocess.run([HLO_LAUNCH, "--version"], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, timeout=60).stdout
        _MPI_FAMILY = "openmpi" if "family: Open MPI" in out else "mpich"
    return _MPI_FAMILY


def mpi_starter(n, env=(), bind_none=True):
    """The argv prefix that starts `n` processes with the built-with MPI's own
    mpiexec (what a user's `mpiexec -n N` is), passing the (name, value) pairs
    of `env` to every rank."""
    if mpi_family() == "mpich":
        argv = ["mpiexec.hydra" if shutil.which("mpiexec.hydra") else "mpiexec.mpich"]
        if bind_none:
            argv += ["-bind-to", "none"]
        for name, value in env:
            argv += ["-genv", name, value]
    else:
        argv = ["mpiexec", "--oversubscribe"]
        if os.geteuid() == 0:
            argv.append("--allow-run-as-root")
        if bind_none:
            argv += ["--bind-to", "none"]
        for name, value in env:
            argv += ["-x", "%s=%s" % (name, value)]
    return argv + ["-n", str(n)]


def require_binaries(*names):
    """Exits with a message when a binary the test needs is missing."""
    paths = {"hlo-launch": HLO_LAUNCH, "hlo-convert": HLO_CONVERT}
    for name in names:
        path = paths[name]
        if not path or not os.access(path, os.X_OK):
            sys.exit("FAIL: %s not found (HLO_LAUNCH=%r); run through ctest" % (name, HLO_LAUNCH))


class Result:
    def __init__(self, argv, returncode, stdout, stderr, timed_out, seconds):
        self.argv = argv
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.timed_out = timed_out
        self.seconds = seconds

    def describe(self):
        return "$ %s\nexit %s%s after %.1f s\n--- stdout ---\n%s\n--- stderr ---\n%s" % (
            " ".join(self.argv), self.returncode, " (TIMED OUT)" if self.timed_out else "",
            self.seconds, self.stdout[-4000:], self.stderr[-4000:])


def run(argv, timeout=LAUNCH_TIMEOUT_S, stdin_bytes=None, cwd=None, env=None):
    """Runs argv in its own process group; on timeout the whole group is killed."""
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE if stdin_bytes is not None
                            else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, cwd=cwd, env=env)
    timed_out = False
    try:
        out, err = proc.communicate(stdin_bytes, timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                out, err = proc.communicate(timeout=5)
                break
            except subprocess.TimeoutExpired:
                continue
        else:
            out, err = b"", b""
    return Result(argv, proc.returncode, out.decode("utf-8", "replace"),
                  err.decode("utf-8", "replace"), timed_out, time.monotonic() - start)


def convert(src, dst, *options):
    return run([HLO_CONVERT] + list(options) + [src, dst])


def launch(program, replicas=1, partitions=1, args_dir=None, output_dir=None, extra=(),
           env=None):
    argv = [HLO_LAUNCH, "-np", str(replicas * partitions),
            "--replicas", str(replicas), "--partitions", str(partitions),
            "--timeout", str(LAUNCH_TIMEOUT_S - 15)]
    if args_dir:
        argv += ["--args-dir", args_dir]
    if output_dir:
        argv += ["--output-dir", output_dir, "--quiet"]
    argv += list(extra) + [program]
    return run(argv, env=env)


# --- hlo-launch's file layout (see hlo-launch --help) ----------------------------
# Inputs: <args-dir>/arg<i>.npy for entry parameter i, the same for every process.
# Outputs: <output-dir>/replica<r>_partition<p>/result<j>.npy for leaf j of the
# result (nested tuples flattened depth-first; a non-tuple result is leaf 0).


def write_args(args_dir, arrays):
    os.makedirs(args_dir, exist_ok=True)
    for i, a in enumerate(arrays):
        np.save(os.path.join(args_dir, "arg%d.npy" % i), a)


def output_path(output_dir, replica, partition, leaf):
    return os.path.join(output_dir, "replica%d_partition%d" % (replica, partition),
                        "result%d.npy" % leaf)


def read_outputs(output_dir, replica, partition, count):
    return [np.load(output_path(output_dir, replica, partition, j)) for j in range(count)]


def tempdir(prefix):
    return tempfile.TemporaryDirectory(prefix="hl-%s-" % prefix)


def write_text(d, name, text):
    """Writes `text` to d/name; returns the path."""
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def launch_np(np_, program, *extra, timeout=60, env=None):
    """hlo-launch -np np_ [extra] program, its own --timeout 10 s below ours."""
    argv = [HLO_LAUNCH, "-np", str(np_), "--timeout", str(timeout - 10)] + list(extra) + [program]
    return run(argv, timeout=timeout, env=env)


def launch_file(tag, program, args, nresults, replicas=1, partitions=1, extra=()):
    """Runs `program` on replicas x partitions ranks with `args` as arg<i>.npy;
    returns (the launch's Result, each replica's first `nresults` result
    leaves of partition 0, or None when the launch failed)."""
    with tempdir(tag) as d:
        write_args(os.path.join(d, "args"), args)
        out = os.path.join(d, "out")
        r = launch(program, replicas=replicas, partitions=partitions,
                   args_dir=os.path.join(d, "args"), output_dir=out, extra=extra)
        if r.returncode != 0:
            return r, None
        return r, [read_outputs(out, rep, 0, nresults) for rep in range(replicas)]


def launch_text(tag, text, args, nresults, replicas=1, partitions=1, extra=(), name="p.hlo"):
    """launch_file of program text, written as `name`."""
    with tempdir(tag) as d:
        return launch_file(tag, write_text(d, name, text), args, nresults, replicas, partitions,
                           extra)


def run_hlo_text(tag, text, args, nresults, replicas=1, partitions=1, name="p.hlo"):
    """launch_text that raises when the launch fails; returns each replica's
    first `nresults` result leaves."""
    r, outs = launch_text(tag, text, args, nresults, replicas, partitions, name=name)
    if outs is None:
        raise AssertionError("hlo-launch failed\n%s\n%s" % (text, r.describe()))
    return outs


def expect_failure(res, *patterns, flags=0):
    """None when the job failed (non-zero exit, no hang) and its output
    matches every regular expression in `patterns`; else a message."""
    if res.timed_out:
        return "hung (a rank did not exit)\n" + res.describe()
    if res.returncode == 0:
        return "expected a non-zero exit\n" + res.describe()
    text = res.stderr + res.stdout
    for pat in patterns:
        if not re.search(pat, text, flags):
            return "error output does not match %r\n%s" % (pat, res.describe())
    return None


# --- inputs and program text -------------------------------------------------------


def rand_normal(shape, dtype, seed):
    """Standard normal values of `dtype` (both parts of a complex one)."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    if np.issubdtype(dtype, np.complexfloating):
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def hexf32(values):
    """f32 values as HLO / MLIR hexadecimal literals (exact bits)."""
    return ", ".join("0x%08X" % v for v in np.asarray(values, np.float32).view(np.uint32))


def varint(n):
    """A protobuf base-128 varint."""
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


# --- comparisons -----------------------------------------------------------------

# (rtol, atol) per dtype: exact for integers and pred; f32 allows a few ulps
# of libm difference in transcendental functions; f16 one ulp (2^-10);
# bf16 values come back in f32 and are compared with one bf16 ulp (2^-7).
TOLERANCES = {
    np.dtype(np.float64): (1e-12, 1e-300),
    np.dtype(np.float32): (2e-6, 1e-6),
    np.dtype(np.float16): (1e-3, 1e-3),
}


def compare(name, got, want, tol=None):
    """Returns None when equal within tolerance, else a message."""
    want = np.asarray(want)
    if got.dtype != want.dtype:
        return "%s: dtype %s, expected %s" % (name, got.dtype, want.dtype)
    if got.shape != want.shape:
        return "%s: shape %s, expected %s" % (name, got.shape, want.shape)
    if want.dtype.kind in "biu":
        if not np.array_equal(got, want):
            return "%s: got\n%s\nexpected\n%s" % (name, got, want)
        return None
    rtol, atol = tol or TOLERANCES[want.dtype]
    if not np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True):
        return "%s: got\n%s\nexpected\n%s\n(rtol=%g atol=%g)" % (name, got, want, rtol, atol)
    return None


def round_to_bf16(a):
    """f32 -> nearest bf16 (ties to even), returned as f32."""
    u = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    return u.astype(np.uint32).view(np.float32)


def main(tests):
    """Runs (name, fn) pairs, prints one line each with its time, exits
    non-zero on any failure. Names given on the command line select tests.

    fn returns None on success, a message on failure, or "SKIP: why".
    """
    if not HLO_LAUNCH or not os.access(HLO_LAUNCH, os.X_OK):
        sys.exit("FAIL: HLO_LAUNCH=%r is not an executable; run through ctest" % HLO_LAUNCH)
    only = sys.argv[1:]
    tests = [(name, fn) for name, fn in tests if not only or name in only]
    failures = []
    for name, fn in tests:
        start = time.monotonic()
        try:
            msg = fn()
        except Exception as e:  # a test's own crash is a failure too
            import traceback
            msg = "exception: %r\n%s" % (e, traceback.format_exc())
        took = time.monotonic() - start
        if msg and msg.startswith("SKIP"):
            print("skip %s: %s" % (name, msg), flush=True)
        elif msg:
            failures.append(name)
            print("FAIL %s (%.1f s)\n%s\n" % (name, took, msg), flush=True)
        else:
            print("ok   %s (%.1f s)" % (name, took), flush=True)
    print("%d passed, %d failed" % (len(tests) - len(failures), len(failures)))
    if failures:
        print("failed: " + ", ".join(failures))
        sys.exit(1)


# --- batch mode: many programs in one MPI job (hlo-launch --help) ------------------


class BatchResult:
    """One batch run: per program its verdict ("passed" or "FAILED: reason"),
    its stderr (the lines that name it, with their continuation lines) and
    its output directory under --output-dir."""

    def __init__(self, result, verdicts, stderr_of, output_dir):
        self.result = result
        self.verdicts = verdicts
        self.stderr_of = stderr_of
        self.output_dir = output_dir

    def passed(self, program):
        return self.verdicts.get(program) == "passed"

    def program_output_dir(self, program):
        return os.path.join(self.output_dir, os.path.basename(program))


def run_batch(programs, np_=1, output_dir=None, extra=(), timeout=None, env=None):
    """Runs `programs` (paths) with hlo-launch in one job: -np np_ (None:
    each program's own grid), --output-dir output_dir (results of program P
    under output_dir/<P's file name>/). The list goes through --programs."""
    fd, listfile = tempfile.mkstemp(prefix="hl-batch-", suffix=".list")
    with os.fdopen(fd, "w") as f:
        f.write("".join(p + "\n" for p in programs))
    argv = [HLO_LAUNCH, "--quiet", "--programs", listfile]
    if np_:
        argv += ["-np", str(np_)]
    if output_dir:
        argv += ["--output-dir", output_dir]
    argv += list(extra)
    try:
        r = run(argv, timeout=timeout or max(LAUNCH_TIMEOUT_S, 30 + 5 * len(programs)), env=env)
    finally:
        os.remove(listfile)
    verdicts = {}
    for line in r.stdout.splitlines():
        if line.startswith("hlo-launch: program "):
            rest = line[len("hlo-launch: program "):]
            for p in programs:  # a path may itself hold ": "
                if rest.startswith(p + ": "):
                    verdicts[p] = rest[len(p) + 2:]
                    break
    stderr_of, current = {}, None
    for line in r.stderr.splitlines():
        if line.startswith("hlo-launch: program "):
            rest = line[len("hlo-launch: program "):]
            current = next((p for p in programs if rest.startswith(p + ": ")), None)
        if current:
            stderr_of[current] = stderr_of.get(current, "") + line + "\n"
    return BatchResult(r, verdicts, stderr_of, output_dir)
