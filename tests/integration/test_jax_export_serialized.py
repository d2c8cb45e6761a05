#!/usr/bin/env python3
"""jax.export programs serialized by JAX itself, run on real ranks: JAX's own
serialization back-compat data (jax/_src/internal_test_util/
export_back_compat_test_data/export_with_*.py upstream, read by
tests/export_serialization_back_compat_test.py), kept outside the tree in
../shared/conformance/jax-export-serialized/ (or the directory
$HL_JAX_EXPORT_DATA names; skipped when neither is there). Each file holds
`serializations = [dict(serialization_version=N, exported_serialized=...)]`
with one export per serialization version JAX wrote (6 .. 12 today), all
lowered for 2 CPU devices. The checks are those of JAX's test:

- export_with_specified_sharding (f(b) = b * 2. over f32[16,4], in_shardings
  P('x', None), out_shardings P(None, 'x') on a mesh x=2): the global array is
  cut by rows into the 2 ranks, the result is a * 2 and rank k holds its
  columns 2k:2k+2 (JAX asserts the shard indices);
- export_with_unspecified_sharding (the same, out sharding unspecified): the
  result is a * 2, rank k holds rows 8k:8k+8 (what XLA propagates, as JAX
  asserts);
- export_with_multiple_meshes (8 arguments on two meshes, 4 matmul results,
  exported for cpu, tpu, cuda and rocm with uses_global_constants: the
  platform index bound to cpu's, a tensor<i64> here): each result i @ w
  against NumPy;
- export_with_memory_space (exported for tpu, cuda and rocm only) is refused
  naming the platforms.
NumPy is the oracle throughout.
"""

import ast
import glob
import os

import numpy as np

import hl_testlib as hl

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("HL_SOURCE_DIR", os.path.join(HERE, "..", ".."))
DATA = os.environ.get("HL_JAX_EXPORT_DATA") or next(
    (d for d in (os.path.join(SRC, "..", "shared", "conformance", "jax-export-serialized"),
                 os.path.join(SRC, "..", "..", "shared", "conformance", "jax-export-serialized"))
     if os.path.isdir(d)), None)
TIMEOUT_S = 90


def serializations(name):
    """[(version, bytes)] of JAX's data file `name`.py."""
    path = os.path.join(DATA, name + ".py") if DATA else None
    if not path or not os.path.exists(path):
        return None
    with open(path) as f:
        tree = ast.parse(f.read())
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "dict":
            kw = {k.arg: k.value for k in node.keywords}
            if "exported_serialized" in kw:
                blob = kw["exported_serialized"]
                if isinstance(blob, ast.Call):  # bytearray(b"...")
                    blob = blob.args[0]
                out.append((ast.literal_eval(kw["serialization_version"]),
                            bytes(ast.literal_eval(blob))))
    return out


def with_exports(name, check):
    exports = serializations(name)
    if exports is None:
        return "SKIP: no %s.py in ../shared/conformance/jax-export-serialized" % name
    if not exports:
        return "no serializations in %s.py" % name
    with hl.tempdir("jaxser") as d:
        for version, blob in exports:
            prog = os.path.join(d, "%s.v%d.jax_exported" % (name, version))
            with open(prog, "wb") as f:
                f.write(blob)
            msg = check(d, prog)
            if msg:
                return "serialization version %d: %s" % (version, msg)
    return None


def run(d, prog, args, np_=2, global_output=True):
    files = []
    for k, a in enumerate(args):
        files.append(os.path.join(d, "arg%d.npy" % k))
        np.save(files[-1], a)
    out, out_dir = os.path.join(d, "out.npy"), os.path.join(d, "out")
    for p in glob.glob(os.path.join(out_dir, "*", "*")) + glob.glob(out):
        os.remove(p)
    argv = [hl.HLO_LAUNCH, "-np", str(np_), "--quiet", "--global-args", ",".join(files),
            "--output-dir", out_dir]
    if global_output:
        argv += ["--global-output", out]
    r = hl.run(argv + [prog], timeout=TIMEOUT_S)
    return r, out, out_dir


def doubling(name, shard_of):
    """f(b) = b * 2. over f32[16,4] on 2 ranks; rank k holds shard_of(k)."""
    def check(d, prog):
        for a in (np.arange(16 * 4, dtype=np.float32).reshape(16, 4),  # JAX's input
                  np.random.default_rng(3).standard_normal((16, 4)).astype(np.float32)):
            r, out, out_dir = run(d, prog, [a])
            if r.returncode != 0:
                return r.describe()
            msg = hl.compare("global result", np.load(out), a * 2)
            for k in range(2):
                msg = msg or hl.compare("rank %d's shard" % k,
                                        hl.read_outputs(out_dir, 0, k, 1)[0], (a * 2)[shard_of(k)])
            if msg:
                return msg
        return None
    return lambda: with_exports(name, check)


def describe_specified():
    def check(d, prog):
        r = hl.run([hl.HLO_LAUNCH, "--describe", prog])
        lines = r.stdout.splitlines()
        for want in ("grid: 1 replica x 2 partitions", "  0: f32[16,4]  sharding {devices=[2,1]0,1}",
                     "  0: f32[16,4]  sharding {devices=[1,2]0,1}", "platforms: cpu"):
            if want not in lines:
                return "missing %r\n%s" % (want, r.describe())
        return None
    return with_exports("export_with_specified_sharding", check)


def multiple_meshes():
    rng = np.random.default_rng(5)
    inputs = [rng.standard_normal((4, 8)).astype(np.float32) for _ in range(4)]
    weights = [rng.standard_normal((8, 2)).astype(np.float32) for _ in range(4)]

    def check(d, prog):
        r, _, out_dir = run(d, prog, inputs + weights, global_output=False)
        if r.returncode != 0:
            return r.describe()
        for k in range(2):  # the results are replicated: each rank holds them whole
            got = hl.read_outputs(out_dir, 0, k, 4)
            for j in range(4):
                want = (inputs[j].astype(np.float64) @ weights[j]).astype(np.float32)
                msg = hl.compare("rank %d result %d" % (k, j), got[j], want, tol=(1e-5, 1e-5))
                if msg:
                    return msg
        return None
    return with_exports("export_with_multiple_meshes", check)


def memory_space_refused():
    def check(d, prog):
        r, _, _ = run(d, prog, [np.ones((2, 3), np.float32)], global_output=False)
        want = "exported for platform(s) [tpu, cuda, rocm], not cpu"
        if r.returncode == 0 or r.timed_out or want not in r.stderr:
            return "expected a failure naming %r\n%s" % (want, r.describe())
        return None
    return with_exports("export_with_memory_space", check)


if __name__ == "__main__":
    hl.require_binaries("hlo-launch")
    hl.main([
        ("specified_sharding", doubling("export_with_specified_sharding",
                                        lambda k: (slice(None), slice(2 * k, 2 * k + 2)))),
        ("unspecified_sharding", doubling("export_with_unspecified_sharding",
                                          lambda k: (slice(8 * k, 8 * k + 8), slice(None)))),
        ("describe_specified", describe_specified),
        ("multiple_meshes", multiple_meshes),
        ("memory_space_refused", memory_space_refused),
    ])
