#!/usr/bin/env python3
"""StableHLO portable artifacts (MLIR bytecode of VHLO) through hlo-launch on
real ranks, from StableHLO's compatibility suite outside the tree
(../shared/conformance/stablehlo-vhlo; skipped when absent):

- vhlo_emit_version_api.1_1_0.mlir.bc (@main: x + x, StableHLO 1.1.0) on 1 and
  2 replicas against NumPy, and converted to HLO text by hlo-convert;
- invalid_vhlo_future.mlir.bc (written by "StableHLO 2.0.0", an op this reader
  cannot know) stops every rank with an error naming both versions;
- JAX's back-compat data (../shared/conformance/jax-export-back-compat) holds
  each case as text (mlir_module_text) and bytecode (mlir_module_serialized):
  every case hlo-convert lowers from text lowers to the same HLO from bytecode.
"""

import ast
import glob
import os

import numpy as np

import hl_testlib as hl

SRC = os.environ.get("HL_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
CANDIDATES = [os.path.join(SRC, "..", "shared", "conformance", "stablehlo-vhlo"),
              os.path.join(SRC, "..", "..", "shared", "conformance", "stablehlo-vhlo")]
VHLO = next((d for d in CANDIDATES if os.path.isdir(d)), None)
BACK_COMPAT = next((os.path.join(os.path.dirname(d), "jax-export-back-compat") for d in CANDIDATES
                    if os.path.isdir(os.path.join(os.path.dirname(d), "jax-export-back-compat"))),
                   None)


def back_compat_cases():
    """(name, text, bytecode) of every dict(...) in the data files holding both."""
    for path in sorted(glob.glob(os.path.join(BACK_COMPAT, "*.py"))):
        with open(path) as f:
            tree = ast.parse(f.read())
        k = 0
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "dict":
                kw = {a.arg: a.value for a in node.keywords}
                if "mlir_module_serialized" in kw and "mlir_module_text" in kw:
                    yield ("%s[%d]" % (os.path.basename(path), k),
                           ast.literal_eval(kw["mlir_module_text"]),
                           ast.literal_eval(kw["mlir_module_serialized"]))
                    k += 1


def test_back_compat_same_hlo():
    if not BACK_COMPAT:
        return "SKIP: no ../shared/conformance/jax-export-back-compat"
    same = text_only = neither = 0
    with hl.tempdir("bc-jax") as d:
        for name, text, code in back_compat_cases():
            t, b = os.path.join(d, "p.mlir"), os.path.join(d, "p.mlirbc")
            with open(t, "w") as f:
                f.write(text)
            with open(b, "wb") as f:
                f.write(code)
            rt, rb = hl.convert(t, "-"), hl.convert(b, "-")
            if rt.returncode != 0:
                neither += rb.returncode != 0
                continue
            if rb.returncode != 0 and "is not a VHLO op" in rb.stderr:
                # A dialect the bytecode reader refuses by name (Shardy's sdy.mesh
                # in a portable artifact) where the text parser reads it.
                text_only += 1
                print("  %s: text only; bytecode: %s" % (name, rb.stderr.strip().splitlines()[-1]))
                continue
            if rb.returncode != 0 or rb.stdout != rt.stdout:
                return "%s: lowers from text but %s from bytecode\n%s" % (
                    name, "not" if rb.returncode else "differently", rb.describe())
            same += 1
    print("  back-compat: %d cases lower to the same HLO from text and bytecode; %d from text "
          "only (refused by name from bytecode); %d fail from both" % (same, text_only, neither))
    return None if same else "no case converted"


def artifact(name):
    return os.path.join(VHLO, name) if VHLO else None


def test_add_runs():
    if not VHLO:
        return "SKIP: no ../shared/conformance/stablehlo-vhlo"
    x = np.array(1.75, np.float32)
    for replicas in (1, 2):
        with hl.tempdir("bc") as d:
            hl.write_args(os.path.join(d, "args"), [x])
            r = hl.launch(artifact("vhlo_emit_version_api.1_1_0.mlir.bc"), replicas=replicas,
                          args_dir=os.path.join(d, "args"), output_dir=os.path.join(d, "out"))
            if r.returncode != 0:
                return r.describe()
            for rep in range(replicas):
                got = hl.read_outputs(os.path.join(d, "out"), rep, 0, 1)[0]
                msg = hl.compare("replica %d" % rep, got, x + x)
                if msg:
                    return msg
    return None


def test_convert_to_hlo_text():
    if not VHLO:
        return "SKIP: no ../shared/conformance/stablehlo-vhlo"
    r = hl.convert(artifact("vhlo_emit_version_api.1_1_0.mlir.bc"), "-")
    if r.returncode != 0 or "add(" not in r.stdout or "ENTRY main" not in r.stdout:
        return r.describe()
    return None


def test_future_refused():
    if not VHLO:
        return "SKIP: no ../shared/conformance/stablehlo-vhlo"
    r = hl.launch(artifact("invalid_vhlo_future.mlir.bc"), replicas=2)
    if r.returncode == 0 or r.timed_out:
        return "expected a clean failure\n" + r.describe()
    for want in ("vhlo.constant_v99", "StableHLO 2.0.0", "1.20"):
        if want not in r.stderr:
            return "message lacks %r\n%s" % (want, r.describe())
    return None


if __name__ == "__main__":
    hl.main([("add_runs", test_add_runs), ("convert_to_hlo_text", test_convert_to_hlo_text),
             ("future_refused", test_future_refused),
             ("back_compat_same_hlo", test_back_compat_same_hlo)])
