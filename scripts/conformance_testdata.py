#!/usr/bin/env python3
"""Runs StableHLO's testdata corpus (stablehlo/testdata: JAX-lowered programs,
each a @main that checks its result against @expected through
custom_call @check.expect_*; kept outside this tree) through hlo-launch.

  scripts/conformance_testdata.py [--shard K/N] [--jobs J] [--dir DIR]
                                  [--build BUILD_DIR] [--log FILE]

DIR defaults to ../shared/conformance/stablehlo-testdata next to the tree (or
next to its worktree folder). --shard K/N runs every N-th program starting at
the K-th (0-based) of the sorted list, so that ctest -j balances the shards.
A program passes when hlo-launch exits 0 (a failing check.expect_* fails it);
a file of several `// -----` cases (upstream's -split-input-file) runs with
--split-input-file and passes when every case does. The `dynamic/` programs
take arguments of dynamic shape and hold no checks (upstream only round-trips
them); they run on hlo-launch's default arguments.
When hlo-launch has a batch mode (--programs LISTFILE: one MPI job, one line
`hlo-launch: program LABEL: passed|FAILED: reason` per program or case) the
shard runs as one job; a program the job did not report is rerun alone.
Without it, one hlo-launch per program, J at a time (default 1); a launch
that failed before hlo-launch said anything (an MPI start-up race) is retried.
Failures listed in scripts/conformance_testdata_known_failures.txt (path
relative to DIR, then its reason) are counted apart.
Exit status: 0 when every other program passed, 1 otherwise, 77 when DIR is
absent, 2 on a usage error.
"""
import argparse
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KNOWN = os.path.join(HERE, "scripts", "conformance_testdata_known_failures.txt")
TIMEOUT_S = 300
MPI_STARTUP_FAILURE = re.compile(r"orte_init|ORTE_ERROR_LOG|session_dir|A call to mkdir was unable|"
                                 r"^Error:\s+(File exists|No such file or directory)", re.M)


def default_dir():
    for up in ("..", os.path.join("..", "..")):
        d = os.path.normpath(os.path.join(HERE, up, "shared", "conformance",
                                          "stablehlo-testdata"))
        if os.path.isdir(d):
            return d
    return os.path.normpath(os.path.join(HERE, "..", "shared", "conformance",
                                         "stablehlo-testdata"))


def read_known():
    known = {}
    if os.path.exists(KNOWN):
        with open(KNOWN) as f:
            for line in f:
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                path, _, reason = line.partition(" ")
                known[path] = reason.strip()
    return known


def has_batch_mode(launch):
    try:
        out = subprocess.run([launch, "--help"], capture_output=True, text=True,
                             timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return "--programs" in out


def last_error(text):
    lines = [l for l in text.splitlines() if l.strip()]
    for l in lines:  # the first line that names an error is the cause
        if "error" in l.lower() or "fail" in l.lower() or "mismatch" in l.lower():
            return l.strip()[:300]
    return (lines[-1].strip()[:300] if lines else "exit status non-zero")


def is_split(path):
    """A file of several cases (`// -----` lines, upstream's -split-input-file)."""
    with open(path, errors="replace") as f:
        return any(line.startswith("// -----") for line in f)


def run_one(launch, path):
    argv = [launch, "--quiet"] + (["--split-input-file"] if is_split(path) else []) + [path]
    for attempt in range(3):
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S,
                               stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return path, False, "timed out after %d s" % TIMEOUT_S
        except OSError as e:
            return path, False, "cannot run %s: %s" % (launch, e)
        if p.returncode == 0:
            return path, True, ""
        out = p.stderr + p.stdout
        # Open MPI's start-up failed (a session directory race under load),
        # not the program: try again.
        if not MPI_STARTUP_FAILURE.search(out):
            break
    return path, False, "exit %d: %s" % (p.returncode, last_error(out))


def run_batch(launch, paths):
    """One MPI job for all paths (--split-input-file: a file's `// -----`
    cases are reported as PATH:LINE); returns {path: (ok, reason)} for the
    files it reported: passed when every case of the file passed."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as lf:
        lf.write("".join(p + "\n" for p in paths))
        listfile = lf.name
    try:
        p = subprocess.run([launch, "--quiet", "--split-input-file", "--programs", listfile],
                           capture_output=True, text=True,
                           timeout=TIMEOUT_S + 10 * len(paths),
                           stdin=subprocess.DEVNULL)
        out = p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) \
            else (e.stdout or "")
    finally:
        os.unlink(listfile)
    got = {}
    known = set(paths)
    pat = re.compile(r"^hlo-launch: program (.*?): (passed|FAILED(?:: (.*))?)$")
    for line in out.splitlines():
        m = pat.match(line)
        if not m:
            continue
        label, ok, why = m.group(1), m.group(2) == "passed", m.group(3) or ""
        path = label if label in known else re.sub(r":\d+$", "", label)
        if path not in known:
            continue
        was_ok, was_why = got.get(path, (True, ""))
        got[path] = (was_ok and ok, was_why or ("" if ok else "%s: %s" % (label, why)))
    return got, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default=None)
    ap.add_argument("--build", default=os.path.join(HERE, "build"))
    ap.add_argument("--shard", default="0/1")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--log", default=None)
    ap.add_argument("--no-batch", action="store_true",
                    help="one hlo-launch per program even when batch mode exists")
    a = ap.parse_args()
    d = a.dir or default_dir()
    if not os.path.isdir(d):
        print("conformance: corpus directory %s not found; skipped" % d)
        return 77
    launch = os.path.join(a.build, "launcher", "hlo-launch")
    if not os.access(launch, os.X_OK):
        print("conformance: %s not built" % launch, file=sys.stderr)
        return 2
    m = re.fullmatch(r"(\d+)/(\d+)", a.shard)
    if not m or int(m.group(1)) >= int(m.group(2)):
        print("conformance: --shard wants K/N with 0 <= K < N", file=sys.stderr)
        return 2
    k, n = int(m.group(1)), int(m.group(2))
    os.environ.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                      OMPI_MCA_btl_vader_single_copy_mechanism="none",
                      OMPI_MCA_pml="ob1")
    rels = []
    for root, _, files in os.walk(d):
        for f in files:
            if f.endswith(".mlir"):
                rels.append(os.path.relpath(os.path.join(root, f), d))
    rels.sort()
    rels = rels[k::n]
    paths = [os.path.join(d, r) for r in rels]

    results = {}
    if not a.no_batch and has_batch_mode(launch):
        got, _ = run_batch(launch, paths)
        results.update({p: got[p] for p in paths if p in got})
    todo = [p for p in paths if p not in results]
    with concurrent.futures.ThreadPoolExecutor(max(1, a.jobs)) as ex:
        for path, ok, why in ex.map(lambda p: run_one(launch, p), todo):
            results[path] = (ok, why)

    known = read_known()
    passed = known_failed = 0
    unexpected, fixed = [], []
    log = open(a.log, "w") if a.log else None
    for rel, path in zip(rels, paths):
        ok, why = results[path]
        if log:
            log.write("%s %s%s\n" % (rel, "passed" if ok else "FAILED",
                                     "" if ok else ": " + why))
        if ok:
            passed += 1
            if rel in known:
                fixed.append(rel)
        elif rel in known:
            known_failed += 1
        else:
            unexpected.append((rel, why))
    if log:
        log.close()
    for rel, why in unexpected:
        print("UNEXPECTED FAILURE %s: %s" % (rel, why))
    for rel in fixed:
        print("now passes (remove it from %s): %s" % (os.path.basename(KNOWN), rel))
    print("stablehlo-testdata shard %d/%d: %d of %d programs passed; %d known failures "
          "(%s); %d unexpected" % (k, n, passed, len(rels), known_failed,
                                   os.path.relpath(KNOWN, HERE), len(unexpected)))
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
