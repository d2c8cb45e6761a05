"""A rank's memory across runs and when it runs out (issue 26).

Out of memory: a rank whose address space (ulimit -v) cannot take a 16 GiB
array says which instruction asked for how much, what it held, and the
largest values alive (here the 16 MiB 'e'), on every rank.

--repeat N holds one run's results at a time: a rank's peak resident memory
(its ru_maxrss, as the kernel counts it) after 6 runs of a program with a
128 MiB result stays within half the result of its peak after 1 run. Before
the fix the launcher's never-trimmed heap grew by the result per run
(glibc's memalign could not reuse the previous run's chunk): 1 / 6 runs of
these programs peaked at 158 / 670 MiB.
"""
import os
import re
import shlex
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hl_testlib import main, run  # noqa: E402  (timeout, process group)

HLO_LAUNCH = os.environ.get("HLO_LAUNCH", "")
RESULT_MIB = 128
N = RESULT_MIB * (1 << 20) // 4

# The result straight from a kernel (broadcast) and from an element-wise
# chain whose operand it may reuse (exponential of a broadcast).
PROGRAMS = {
    "broadcast": """HloModule bc

ENTRY main {
  c = f32[] constant(1)
  ROOT b = f32[%d] broadcast(c), dimensions={}
}
""" % N,
    "exponential": """HloModule ex

ENTRY main {
  c = f32[] constant(1)
  b = f32[%d] broadcast(c), dimensions={}
  ROOT e = f32[%d] exponential(b)
}
""" % (N, N),
}

# Runs hlo-launch in a fresh Python so that RUSAGE_CHILDREN is this launch's
# alone: the largest resident set of any process of it (the rank).
MEASURE = ("import resource, subprocess, sys\n"
           "r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
           "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")


def peak_kib(program, runs):
    res = run([sys.executable, "-c", MEASURE, HLO_LAUNCH, "-np", "1", "-q", "--repeat",
               str(runs), program], timeout=120)
    if res.timed_out:
        return None, "hung\n" + res.describe()
    fields = res.stdout.split()
    if res.returncode != 0 or len(fields) != 2 or fields[0] != "0":
        return None, "launch failed\n" + res.describe()
    return int(fields[1]), None


def test_repeat_holds_one_result():
    with tempfile.TemporaryDirectory(prefix="hl-run-memory-") as d:
        for name, text in PROGRAMS.items():
            path = os.path.join(d, name + ".hlo")
            with open(path, "w") as f:
                f.write(text)
            one, err = peak_kib(path, 1)
            if err:
                return err
            six, err = peak_kib(path, 6)
            if err:
                return err
            print("  %s: peak %d MiB at 1 run, %d MiB at 6" % (name, one >> 10, six >> 10))
            if six - one > (RESULT_MIB << 10) // 2:
                return "%s: peak grew from %d KiB (1 run) to %d KiB (6 runs)" % (name, one, six)
    return None


OOM_PROGRAM = """HloModule huge

ENTRY main {
  c = f32[] constant(1)
  b = f32[4194304] broadcast(c), dimensions={}
  e = f32[4194304] exponential(b)
  s = f32[1] slice(e), slice={[0:1]}
  r = f32[] reshape(s)
  d = f32[4294967296] broadcast(r), dimensions={}
  ROOT t = (f32[4194304], f32[4294967296]) tuple(e, d)
}
"""
# 4194304 * 4 bytes = 16 MiB; 4294967296 * 4 bytes = 16 GiB.
OOM_LINE = re.compile(r"^hlo-launch: (all 2 ranks|rank [01] \(replica [01], partition 0\)): "
                      r"instruction 'd' \(broadcast\) in computation 'main' at [^ ]*huge.hlo:9:3: "
                      r"out of memory: asked for 16\.0 GiB; the rank held ([0-9.]+) (MiB|GiB) "
                      r"\(largest values alive: 'e' 16\.0 MiB")


def test_out_of_memory_names_bytes():
    with tempfile.TemporaryDirectory(prefix="hl-run-memory-") as d:
        path = os.path.join(d, "huge.hlo")
        with open(path, "w") as f:
            f.write(OOM_PROGRAM)
        cmd = "ulimit -v 4000000 && exec %s -np 2 -q --no-fusion-pass %s" % (
            shlex.quote(HLO_LAUNCH), shlex.quote(path))
        res = run(["bash", "-c", cmd], timeout=120)
        if res.timed_out or res.returncode == 0:
            return "no failure or hung\n" + res.describe()
        lines = [l for l in res.stderr.splitlines() if l.startswith("hlo-launch:")]
        matched = [OOM_LINE.match(l) for l in lines]
        ranks = sum(2 if m.group(1) == "all 2 ranks" else 1 for m in matched if m)
        if ranks != 2 or len(lines) != sum(1 for m in matched if m):
            return "expected the out-of-memory line of both ranks\n" + res.describe()
        for m in matched:
            held = float(m.group(2)) * (1024 if m.group(3) == "GiB" else 1)
            if held < 16:
                return "the rank held %s MiB, less than 'e' alone\n%s" % (held, res.describe())
    return None


TESTS = [(name[5:], fn) for name, fn in sorted(globals().items())
         if name.startswith("test_") and callable(fn)]


if __name__ == "__main__":
    main(TESTS)
