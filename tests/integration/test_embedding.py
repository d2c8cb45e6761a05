#!/usr/bin/env python3
"""libhlo_runtime as an application sees it: `cmake --install` into a
temporary prefix, then the examples (examples/embed) and the API's error
test (tests/integration/embed/api_errors.c) are built against that prefix
with pkg-config (mpicc, mpif90) and with find_package(HloRuntime) (the
static library too), and run as real 4- and 6-rank MPI jobs. NumPy computes
the expected numbers."""

import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hl_testlib as hl  # noqa: E402  (also a private Open MPI session directory)

SOURCE_DIR = os.environ["HL_SOURCE_DIR"]
BINARY_DIR = os.environ["HL_BINARY_DIR"]
EMBED = os.path.join(SOURCE_DIR, "examples", "embed")
TIMEOUT = 180
# The compiler wrappers of the MPI the tree was built with (Debian installs
# MPICH's beside Open MPI's as *.mpich).
MPICH = hl.mpi_family() == "mpich"
MPICC, MPICXX, MPIF90 = (("mpicc.mpich", "mpicxx.mpich", "mpif90.mpich") if MPICH
                         else ("mpicc", "mpicxx", "mpif90"))


def run(argv, env=None, cwd=None):
    try:
        res = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                             timeout=TIMEOUT, env=env, cwd=cwd)
    except subprocess.TimeoutExpired:
        sys.exit("FAIL: timed out: %s" % " ".join(argv))
    if res.returncode != 0:
        sys.exit("FAIL: exit %d: %s\n--- stdout ---\n%s\n--- stderr ---\n%s" % (
            res.returncode, " ".join(argv), res.stdout[-4000:], res.stderr[-4000:]))
    return res


def mpiexec_argv(n, argv):
    return hl.mpi_starter(n) + argv


def mpiexec(n, argv, env):
    return run(mpiexec_argv(n, argv), env=env)


def check_stuck(errors, model, env):
    """Rank 2 fails while the others wait in a collective for it: the job
    must end (MPI_Abort after stuck_seconds = 2) with its message, not hang."""
    argv = mpiexec_argv(4, [errors, "--stuck", model])
    try:
        res = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                             timeout=60, env=env)
    except subprocess.TimeoutExpired:
        sys.exit("FAIL: the stuck run hung: %s" % " ".join(argv))
    want = ["rank 2 (replica 2, partition 0): check.expect_eq failed",
            "hlo_runtime: the other processes wait in a collective that needs this one"]
    if res.returncode == 0 or any(w not in res.stderr for w in want) or "FAILED" in res.stderr:
        sys.exit("FAIL: stuck run: exit %d\n%s" % (res.returncode, res.stderr[-3000:]))


def check_relax(out, ranks, steps):
    """relax_step.mlir in NumPy (float32): u <- tanh(u + k (mean - u))."""
    u = np.array([[0.25 * (8 * r + i) - 3 for i in range(8)] for r in range(ranks)],
                 dtype=np.float32)
    k = np.float32(0.3)
    sums = []
    for _ in range(steps):
        total = u.sum(dtype=np.float32)
        sums.append(total)
        u = np.tanh(u + k * (total / np.float32(32) - u)).astype(np.float32)
    for r in range(ranks):
        lines = open("%s.%d.txt" % (out, r)).read().split("\n")
        got_sums = np.array([float(x) for x in lines[:steps]], dtype=np.float32)
        got_u = np.array([float(x) for x in lines[steps].split()], dtype=np.float32)
        np.testing.assert_allclose(got_sums, sums, rtol=1e-5, atol=1e-5,
                                   err_msg="%s rank %d: sums" % (out, r))
        np.testing.assert_allclose(got_u, u[r], rtol=1e-5, atol=1e-6,
                                   err_msg="%s rank %d: u" % (out, r))


def check_jacobi(out, steps):
    """jacobi.f90 + jacobi_step.mlir in NumPy: U[i, j] is Fortran's u(i, j)."""
    nx, ny, ranks = 16, 16, 4
    g = np.zeros((nx + 2, ny + 2))
    for i in range(1, nx + 1):
        for j in range(1, ny + 1):
            g[i, j] = 0.01 * (i + 2 * j)
    g[0, :] = 1
    changes = []
    for _ in range(steps):
        new = 0.25 * (g[:-2, 1:-1] + g[2:, 1:-1] + g[1:-1, :-2] + g[1:-1, 2:])
        changes.append(((new - g[1:-1, 1:-1]) ** 2).sum())
        g[1:-1, 1:-1] = new
    nyl = ny // ranks
    for r in range(ranks):
        lines = open("%s.%d.txt" % (out, r)).read().split("\n")
        got_changes = [float(x) for x in lines[:steps]]
        block = np.array([[float(x) for x in lines[steps + j].split()] for j in range(nyl)]).T
        np.testing.assert_allclose(got_changes, changes, rtol=1e-12,
                                   err_msg="%s rank %d: changes" % (out, r))
        np.testing.assert_allclose(block, g[1:nx + 1, r * nyl + 1:(r + 1) * nyl + 1],
                                   rtol=1e-12, atol=1e-15, err_msg="%s rank %d: block" % (out, r))


def check_global(out):
    """api_global.c on global_matmul.mlir: rows of x @ w and the global sum."""
    x = np.array([[0.5 * i - 0.25 * j for j in range(4)] for i in range(8)], dtype=np.float32)
    w = np.array([[i + 2 * j for j in range(4)] for i in range(4)], dtype=np.float32)
    y = x @ w
    for r in range(4):
        lines = open("%s.%d.txt" % (out, r)).read().split("\n")
        if lines[0].split() != ["11", "2", "2", "4"]:
            sys.exit("FAIL: rank %d: the runner says argument 0 is %r, want f32 (11) [2,4]"
                     % (r, lines[0]))
        got = np.array([[float(v) for v in lines[1 + i].split()] for i in range(2)])
        np.testing.assert_allclose(got, y[2 * r:2 * r + 2], rtol=1e-6,
                                   err_msg="global_matmul rank %d" % r)
        np.testing.assert_allclose(float(lines[3]), y.sum(), rtol=1e-6,
                                   err_msg="global_matmul sum, rank %d" % r)


def gelu_numpy():
    """gelu_layer.mlir on api_options.c's arguments, in NumPy (float64)."""
    w = np.array([[0.05 * (i - j) + 0.01 * (i * j) for j in range(8)] for i in range(8)],
                 dtype=np.float32).astype(np.float64)
    b = np.array([0.2 * j - 0.7 for j in range(8)], dtype=np.float32).astype(np.float64)
    gs = []
    for r in range(4):
        x = np.array([[0.125 * (4 * r + i) - 0.1 * j for j in range(8)] for i in range(4)],
                     dtype=np.float32).astype(np.float64)
        y = x @ w + b
        gs.append(0.5 * y * (1 + np.tanh(0.7978845608 * (y + 0.044715 * y ** 3))))
    return gs, sum(g.sum() for g in gs)


def check_options(api_options, tests, env, tmp):
    """api_options.c: fused and unfused runners of one program agree bitwise
    (the program exits 2 otherwise) and with NumPy; the profile shows the
    fusion (and its absence); the profile with the first run apart, the trace
    of 4 ranks, the agreed misuse errors; the hang watchdog ends a job whose
    rank 2 never calls the run."""
    out = os.path.join(tmp, "options")
    res = mpiexec(4, [api_options, os.path.join(tests, "gelu_layer.mlir"), out], env)
    print(res.stdout.rstrip())
    gs, total = gelu_numpy()
    for r in range(4):
        lines = open("%s.%d.txt" % (out, r)).read().split("\n")
        got = np.array([[float(v) for v in lines[i].split()] for i in range(4)])
        np.testing.assert_allclose(got, gs[r], rtol=2e-6, atol=2e-6,
                                   err_msg="gelu_layer rank %d" % r)
        np.testing.assert_allclose(float(lines[4]), total, rtol=1e-5,
                                   err_msg="gelu_layer sum, rank %d" % r)
    profile = open(out + ".profile.txt").read()
    fused = profile[profile.index("fused:"):profile.index("unfused:")]
    unfused = profile[profile.index("unfused:"):profile.index("debug:")]
    debug = profile[profile.index("debug:"):]

    def ops(text):
        return {l.split()[1] for l in text.split("\n") if l.startswith("  ") and
                len(l.split()) > 2 and l.split()[2].isdigit()}
    if "fusion" not in ops(fused) or "tanh" in ops(fused):
        sys.exit("FAIL: the API's default runner did not fuse:\n" + fused[:3000])
    if "fusion" in ops(unfused) or "tanh" not in ops(unfused):
        sys.exit("FAIL: no_fusion_pass still fused:\n" + unfused[:3000])
    for want in ["profile of rank %d" % k for k in range(4)] + ["first run (cold", "runs 2-3"]:
        if want not in debug:
            sys.exit("FAIL: the profile lacks %r:\n%s" % (want, debug[:3000]))
    trace = json.load(open(out + ".trace.json"))
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    if sorted({e.get("pid") for e in events if "pid" in e}) != [0, 1, 2, 3]:
        sys.exit("FAIL: the trace lacks a rank: %r" % sorted({e.get("pid") for e in events}))
    print("ok   fused (default) and no_fusion_pass runners of one program: bitwise equal, "
          "NumPy's values; profile (first run apart) and a trace of %d events on 4 ranks"
          % len(events))
    argv = mpiexec_argv(4, [api_options, os.path.join(tests, "gelu_layer.mlir"), out, "--hang"])
    try:
        res = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                             timeout=60, env=env)
    except subprocess.TimeoutExpired:
        sys.exit("FAIL: the watchdog did not end the hung job: %s" % " ".join(argv))
    want = ["made no collective or channel progress for 3 s", "never arrived: rank 2",
            "rank 2 had not started the program"]
    if res.returncode == 0 or any(w not in res.stderr for w in want) or not os.path.exists(
            os.path.join(out + ".debug", "hang-report.txt")):
        sys.exit("FAIL: hang: exit %d\n%s" % (res.returncode, res.stderr[-3000:]))
    print("ok   hang_timeout_seconds: rank 2 skips a run, the watchdog reports it and ends the job")


# JAX's own lowerings (README "stablehlo-testdata"), outside the tree: ../shared
# next to the checkout, or next to its worktree folder.
TESTDATA = next((d for d in (os.path.join(SOURCE_DIR, "..", "shared", "conformance",
                                          "stablehlo-testdata"),
                             os.path.join(SOURCE_DIR, "..", "..", "shared", "conformance",
                                          "stablehlo-testdata")) if os.path.isdir(d)), None)
# Programs of that corpus the API runs and checks today (1995 of 2005; the other
# 10 fail in hlo-launch too, each listed with its reason in
# scripts/conformance_testdata_known_failures.txt). Raise it as gaps close; a
# drop is a regression.
TESTDATA_FLOOR = 1995


def check_corpus(api_corpus, env, tmp):
    """Every program of the corpus through the API on MPI_COMM_SELF, its results
    allocated by the runtime and checked against the shapes the runner states
    (api_corpus exits 2 otherwise); the values by the programs' own check ops."""
    files = sorted(os.path.join(TESTDATA, f) for f in os.listdir(TESTDATA) if f.endswith(".mlir"))
    listing = os.path.join(tmp, "corpus.txt")
    with open(listing, "w") as f:
        f.write("\n".join(files) + "\n")
    try:
        res = subprocess.run([api_corpus, "@" + listing], stdin=subprocess.DEVNULL,
                             capture_output=True, text=True, timeout=600, env=env)
    except subprocess.TimeoutExpired:
        sys.exit("FAIL: api_corpus timed out")
    summary = res.stdout.strip().split("\n")[-1]
    if res.returncode not in (0, 1) or not summary.endswith(" failed"):
        sys.exit("FAIL: api_corpus exit %d\n%s\n%s" % (res.returncode, res.stdout[-3000:],
                                                       res.stderr[-3000:]))
    passed = int(summary.split()[0])
    if passed < TESTDATA_FLOOR:
        fails = [l for l in res.stdout.split("\n") if l.startswith("FAIL")]
        sys.exit("FAIL: %s (at least %d expected):\n%s" % (summary, TESTDATA_FLOOR,
                                                          "\n".join(fails)[-6000:]))
    return summary


def main():
    for tool in (MPICC, "pkg-config", "cmake", hl.mpi_starter(1)[0]):
        if not shutil.which(tool):
            sys.exit("FAIL: %s not found" % tool)
    tmp = tempfile.mkdtemp(prefix="hl_embed_")
    try:
        prefix = os.path.join(tmp, "prefix")
        run(["cmake", "--install", BINARY_DIR, "--prefix", prefix])
        for f in ("include/hlo_runtime.h", "lib/libhlo_runtime.a", "lib/pkgconfig/hlo-runtime.pc",
                  "lib/cmake/HloRuntime/HloRuntimeConfig.cmake", "share/man/man1/hlo-launch.1",
                  "share/man/man1/hlo-convert.1", "bin/hlo-launch", "bin/hlo-convert",
                  "share/bash-completion/completions/hlo-launch"):
            if not os.path.exists(os.path.join(prefix, f)):
                sys.exit("FAIL: %s not installed" % f)
        # The man pages carry the tools' --help; the completion offers its options.
        page = open(os.path.join(prefix, "share", "man", "man1", "hlo-launch.1")).read()
        if not page.startswith(".TH HLO-LAUNCH 1") or "--check-nans" not in page:
            sys.exit("FAIL: hlo-launch.1 lacks its header or the --help text:\n" + page[:500])
        completion = run(["bash", "-c",
                          'source "$1"; COMP_WORDS=("$2" --check-n); COMP_CWORD=1; '
                          '_hlo_launch_complete; echo "${COMPREPLY[@]}"', "-",
                          os.path.join(prefix, "share", "bash-completion", "completions",
                                       "hlo-launch"),
                          os.path.join(prefix, "bin", "hlo-launch")]).stdout.split()
        if completion != ["--check-nans"]:
            sys.exit("FAIL: bash completion of --check-n gave %r" % completion)
        # Only the hlo_ functions are exported.
        syms = run(["nm", "-D", "--defined-only", os.path.join(prefix, "lib",
                                                               "libhlo_runtime.so")]).stdout
        names = [line.split()[-1].split("@")[0] for line in syms.splitlines() if line.strip()]
        leaked = [s for s in names if not s.startswith("hlo_") and s != "HLO_RUNTIME_0"]
        if leaked:
            sys.exit("FAIL: libhlo_runtime.so exports %s" % leaked[:10])
        print("ok   installed; libhlo_runtime.so exports %d hlo_ functions and nothing else"
              % len([s for s in names if s.startswith("hlo_")]))

        env = dict(os.environ)
        env["PKG_CONFIG_PATH"] = os.path.join(prefix, "lib", "pkgconfig")
        env["LD_LIBRARY_PATH"] = os.path.join(prefix, "lib") + ":" + env.get("LD_LIBRARY_PATH", "")
        flags = run(["pkg-config", "--cflags", "--libs", "hlo-runtime"], env=env).stdout.split()
        bin_dir = os.path.join(tmp, "bin")
        os.makedirs(bin_dir)
        relax = os.path.join(bin_dir, "relax_loop")
        errors = os.path.join(bin_dir, "api_errors")
        run([MPICC, "-Wall", "-Werror", os.path.join(EMBED, "c", "relax_loop.c"), "-o", relax]
            + flags, env=env)
        embed_tests = os.path.join(SOURCE_DIR, "tests", "integration", "embed")
        run([MPICC, "-Wall", "-Werror", os.path.join(embed_tests, "api_errors.c"),
             "-o", errors] + flags + ["-lm"], env=env)
        api_corpus = os.path.join(bin_dir, "api_corpus")
        run([MPICC, "-Wall", "-Werror", os.path.join(embed_tests, "api_corpus.c"),
             "-o", api_corpus] + flags, env=env)
        api_options = os.path.join(bin_dir, "api_options")
        run([MPICC, "-Wall", "-Werror", os.path.join(embed_tests, "api_options.c"),
             "-o", api_options] + flags, env=env)
        global_test = os.path.join(bin_dir, "api_global")
        run([MPICC, "-Wall", "-Werror", os.path.join(embed_tests, "api_global.c"),
             "-o", global_test] + flags, env=env)
        # The header is C++ too (where mpicxx has its C++ compiler).
        if shutil.which(MPICXX) and shutil.which("g++"):
            run([MPICXX, "-x", "c++", "-Wall", "-Werror", "-pedantic", "-fsyntax-only",
                 os.path.join(embed_tests, "api_global.c")] + flags, env=env)
        fortran = shutil.which(MPIF90) and os.path.exists(
            os.path.join(prefix, "lib", "pkgconfig", "hlo-runtime-fortran.pc"))
        if fortran:
            fflags = run(["pkg-config", "--cflags", "--libs", "hlo-runtime-fortran"],
                         env=env).stdout.split()
            jacobi = os.path.join(bin_dir, "jacobi")
            run([MPIF90, os.path.join(EMBED, "fortran", "jacobi.f90"), "-o", jacobi] + fflags,
                env=env)
            ferrors = os.path.join(bin_dir, "fortran_errors")
            run([MPIF90, "-O2", os.path.join(SOURCE_DIR, "tests", "integration", "embed",
                                               "fortran_errors.f90"), "-o", ferrors] + fflags,
                env=env)
        print("ok   built with pkg-config (C%s)" % (", Fortran" if fortran else ""))

        cm = os.path.join(tmp, "cmake")
        wrappers = (["-DMPI_C_COMPILER=" + shutil.which(MPICC)] +
                    (["-DMPI_Fortran_COMPILER=" + shutil.which(MPIF90)] if fortran else [])
                    if MPICH else [])
        run(["cmake", "-S", EMBED, "-B", cm, "-DCMAKE_PREFIX_PATH=" + prefix,
             "-DCMAKE_BUILD_TYPE=Release"] + wrappers, env=env)
        run(["cmake", "--build", cm, "-j2"], env=env)
        print("ok   built with find_package(HloRuntime)")

        model = os.path.join(EMBED, "relax_step.mlir")
        out = os.path.join(tmp, "world")
        mpiexec(4, [relax, model, "6", out], env)
        check_relax(out, 4, 6)
        print("ok   C loop on MPI_COMM_WORLD, 4 ranks, 6 steps (pkg-config, shared)")

        out = os.path.join(tmp, "split")
        res = mpiexec(6, [os.path.join(cm, "relax_loop_static"), model, "5", out, "--split",
                          "--profile"], env)
        check_relax(out, 4, 5)
        # hlo_runner_options_t.profile: the 4 model processes' tables, fused.
        if (any("profile of rank %d" % k not in res.stdout for k in range(4))
                or " fusion " not in res.stdout):
            sys.exit("FAIL: relax_loop --profile printed no (fused) profile:\n" + res.stdout)
        want = ("all 2 ranks: the grid 4 replicas x 1 partition needs 4 processes, "
                "but the communicator size is 2")
        if res.stdout.count(want) != 2:
            sys.exit("FAIL: ranks 4 and 5 did not both report %r:\n%s" % (want, res.stdout))
        print("ok   C loop on a 4-rank sub-communicator of 6 (find_package, static), its "
              "profile fused; the other 2 get the size error")

        res = mpiexec(4, [errors, model, os.path.join(embed_tests, "check_after_sum.mlir")], env)
        print(res.stdout.rstrip())
        check_stuck(errors, os.path.join(embed_tests, "check_before_sum.mlir"), env)
        print("ok   a rank failing while the others wait in a collective ends the job "
              "(MPI_Abort after stuck_seconds) instead of hanging")

        check_options(api_options, embed_tests, env, tmp)

        out = os.path.join(tmp, "global")
        mpiexec(4, [global_test, os.path.join(embed_tests, "global_matmul.mlir"), out], env)
        check_global(out)
        print("ok   a global program with GSPMD shardings, partitioned by the runner, 4 ranks")

        if TESTDATA:
            print("ok   stablehlo-testdata (JAX's lowerings) through the API: %s"
                  % check_corpus(api_corpus, env, tmp))
        else:
            print("note: ../shared/conformance/stablehlo-testdata not found: corpus not run")

        if fortran:
            jmodel = os.path.join(EMBED, "jacobi_step.mlir")
            out = os.path.join(tmp, "jacobi")
            mpiexec(4, [jacobi, jmodel, "12", out], env)
            check_jacobi(out, 12)
            out = os.path.join(tmp, "jacobi_cmake")
            mpiexec(4, [os.path.join(cm, "jacobi"), jmodel, "3", out], env)
            check_jacobi(out, 3)
            print("ok   Fortran Jacobi stencil, 4 ranks (pkg-config 12 sweeps, find_package 3)")
            res = mpiexec(4, [ferrors, jmodel, os.path.join(tmp, "fortran.trace.json")], env)
            if not os.path.getsize(os.path.join(tmp, "fortran.trace.json")):
                sys.exit("FAIL: the Fortran runner's trace is empty")
            print(res.stdout.rstrip())
        else:
            print("note: no mpif90 or Fortran module: the Fortran example was not run")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


main()
