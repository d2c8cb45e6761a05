#!/usr/bin/env python3
"""Hostile and careless input files (issue 10, section 3): each case once made
hlo-launch or hlo-convert crash, hang, exhaust memory or succeed silently.
Every one must now stop quickly with a message that says what is wrong.

Run by ctest (integration.hostile_inputs), which sets HLO_LAUNCH.
"""

import gzip
import os
import signal
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hl_testlib as hl  # noqa: E402

# Each case is small and must finish in seconds; a hang or a runaway
# allocation fails at this bound.
QUICK_S = 30


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def sanitized_build():
    """ASan reserves terabytes of shadow address space: no ulimit -v there."""
    cache = os.path.join(os.environ.get("HL_BINARY_DIR", ""), "CMakeCache.txt")
    try:
        with open(cache) as f:
            return "HL_SANITIZE:BOOL=ON" in f.read()
    except OSError:
        return False


def launch(*args, limit_as_kib=None, **kw):
    kw.setdefault("timeout", QUICK_S)
    argv = [hl.HLO_LAUNCH] + [str(a) for a in args]
    if limit_as_kib and not sanitized_build():
        argv = ["/bin/sh", "-c", 'ulimit -v %d && exec "$@"' % limit_as_kib, "sh"] + argv
    return hl.run(argv, **kw)


def expect_error(res, code, *needles):
    """Failed with `code` (not a signal, not a hang); stderr holds every needle."""
    if res.timed_out:
        return "hung\n" + res.describe()
    if res.returncode != code:
        return "exit %s, expected %s\n%s" % (res.returncode, code, res.describe())
    for n in needles:
        if n not in res.stderr:
            return "stderr lacks %r\n%s" % (n, res.describe())
    return None


def test_shape_overflow_in_text():
    # 2^62+1 rows of 4 elements: 2^64+4 elements. A slice of it used to segfault.
    with hl.tempdir("overflow") as d:
        prog = write(os.path.join(d, "big.hlo"), """HloModule big

ENTRY main {
  p = f32[4611686018427387905,4] parameter(0)
  ROOT s = f32[1,4] slice(p), slice={[0:1], [0:4]}
}
""")
        return expect_error(launch("-np", 1, prog), 1, "big.hlo:4:", "too large",
                            "overflows int64")


def test_zero_size_huge_outer_dim_prints_fast():
    with hl.tempdir("zerosize") as d:
        prog = write(os.path.join(d, "z.hlo"), """HloModule z

ENTRY main {
  ROOT c = f32[1000000000000,0] constant({})
}
""")
        res = launch("-np", 1, prog)
        if res.timed_out or res.returncode != 0:
            return res.describe()
        if "f32[1000000000000,0] {}" not in res.stdout:
            return "result not printed as '{}'\n" + res.describe()
        # The same constant through a binary proto (about 115 bytes) and back.
        pb = os.path.join(d, "z.pb")
        res = hl.run([hl.HLO_CONVERT, prog, pb], timeout=QUICK_S)
        if res.returncode != 0 or os.path.getsize(pb) > 200:
            return res.describe()
        back = os.path.join(d, "back.hlo")
        res = hl.run([hl.HLO_CONVERT, pb, back], timeout=QUICK_S)
        if res.timed_out or res.returncode != 0:
            return res.describe()
        with open(back) as f:
            if "f32[1000000000000,0] constant({})" not in f.read():
                return "converted text lacks the constant"
    return None


def test_npy_truncated_huge_declared_shape():
    # 128 bytes that declare 15 GB of float32: "truncated data", no allocation.
    with hl.tempdir("npy") as d:
        prog = write(os.path.join(d, "p.hlo"), """HloModule p

ENTRY main {
  p = f32[3750000000] parameter(0)
  ROOT s = f32[2] slice(p), slice={[0:2]}
}
""")
        args = os.path.join(d, "args")
        os.makedirs(args)
        h = b"{'descr': '<f4', 'fortran_order': False, 'shape': (3750000000,), }"
        h = h + b" " * (117 - len(h)) + b"\n"
        with open(os.path.join(args, "arg0.npy"), "wb") as f:
            f.write(b"\x93NUMPY\x01\x00" + bytes([len(h), 0]) + h)
        # Under a 4 GB address-space limit an attempt to allocate the 15 GB
        # fails as "out of memory" instead of passing unnoticed.
        res = launch("-np", 1, "--args-dir", args, prog, limit_as_kib=4000000)
        return expect_error(res, 1, "arg0.npy", "truncated data", "needs 15000000000 bytes")


def test_constant_counted_before_allocating():
    with hl.tempdir("const") as d:
        prog = write(os.path.join(d, "c.hlo"), """HloModule c

ENTRY main {
  ROOT c = f32[100000000000] constant({1, 2})
}
""")
        res = launch("-np", 1, prog, limit_as_kib=4000000)
        return expect_error(res, 1, "c.hlo:4:", "expected 100000000000 elements",
                            "but found 2")


def test_gzip_bomb_capped():
    # A valid program followed by 8 MiB of blanks, gzip'd to a few KiB.
    text = ("HloModule pad\n\nENTRY main {\n  p = s32[3] parameter(0)\n"
            "  ROOT n = s32[3] negate(p)\n}\n")
    with hl.tempdir("gzip") as d:
        bomb = os.path.join(d, "bomb.hlo.gz")
        with open(bomb, "wb") as f:
            f.write(gzip.compress(text.encode() + b" " * (8 << 20)))
        res = launch("-np", 1, "--max-inflated-size", "4M", bomb)
        msg = expect_error(res, 1, "bomb.hlo.gz: the gzip data inflates to more than 4.0 MiB",
                           "--max-inflated-size")
        if msg:
            return msg
        res = hl.run([hl.HLO_CONVERT, "--max-inflated-size=1K", bomb, os.path.join(d, "o.hlo")],
                     timeout=QUICK_S)
        msg = expect_error(res, 1, "inflates to more than 1.0 KiB")
        if msg:
            return msg
        res = launch("-np", 1, "--max-inflated-size", "lots", bomb)
        msg = expect_error(res, 2, "--max-inflated-size needs a positive size")
        if msg:
            return msg
        # Under a limit it fits in, the program runs: -[1 2 3] from --args.
        args = os.path.join(d, "x.npy")
        np.save(args, np.array([1, 2, 3], np.int32))
        res = launch("-np", 1, "--max-inflated-size", "9M", "--args", args, bomb)
        if res.returncode != 0 or "{-1, -2, -3}" not in res.stdout:
            return res.describe()
    return None


SPIN = """HloModule spin

cond {
  c = s32[] parameter(0)
  ROOT t = pred[] constant(true)
}

body {
  b = s32[] parameter(0)
  one = s32[] constant(1)
  ROOT a = s32[] add(b, one)
}

ENTRY main {
  z = s32[] constant(0)
  ROOT w = s32[] while(z), condition=cond, body=body
}
"""


def worker_running(marker):
    """A rank (hlo-launch --worker) whose command line holds `marker` exists."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if b"--worker" in argv and any(marker.encode() in a for a in argv):
            return True
    return False


def stop_with(sig, want_code, want_text):
    with hl.tempdir("signal") as d:
        prog = write(os.path.join(d, "spin.hlo"), SPIN)
        proc = subprocess.Popen([hl.HLO_LAUNCH, "-np", "2", prog], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
        try:
            deadline = time.monotonic() + QUICK_S
            while not worker_running(prog) and time.monotonic() < deadline:
                if proc.poll() is not None:
                    break
                time.sleep(0.1)
            if not worker_running(prog):
                return "the ranks never started (exit %s)" % proc.poll()
            time.sleep(0.5)  # let the ranks reach the loop
            proc.send_signal(sig)
            out, err = proc.communicate(timeout=QUICK_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return "hlo-launch did not stop after the signal"
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
        err = err.decode("utf-8", "replace")
        if proc.returncode != want_code or want_text not in err:
            return "exit %s (expected %s), stderr:\n%s" % (proc.returncode, want_code, err)
        # No rank is left behind.
        time.sleep(0.5)
        if worker_running(prog):
            return "a rank still runs after hlo-launch exited"
    return None


def test_sigterm_exits_143():
    return stop_with(signal.SIGTERM, 143, "hlo-launch: terminated: SIGTERM received; the job "
                     "was stopped")


def test_sigint_exits_130():
    return stop_with(signal.SIGINT, 130, "hlo-launch: interrupted: SIGINT received; the job "
                     "was stopped")


TESTS = [
    ("sigterm_exits_143", test_sigterm_exits_143),
    ("sigint_exits_130", test_sigint_exits_130),
    ("gzip_bomb_capped", test_gzip_bomb_capped),
    ("constant_counted_before_allocating", test_constant_counted_before_allocating),
    ("npy_truncated_huge_declared_shape", test_npy_truncated_huge_declared_shape),
    ("shape_overflow_in_text", test_shape_overflow_in_text),
    ("zero_size_huge_outer_dim_prints_fast", test_zero_size_huge_outer_dim_prints_fast),
]

if __name__ == "__main__":
    hl.require_binaries("hlo-launch", "hlo-convert")
    hl.main(TESTS)
