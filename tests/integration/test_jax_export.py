#!/usr/bin/env python3
"""jax.export's serialized programs (the `Exported` flatbuffer around a
StableHLO portable artifact) through hlo-launch and hlo-convert. The exports
are encoded here by flatc (the FlatBuffers project's encoder; skipped when it
is absent) from jax_export_test.fbs, around StableHLO's own artifact
vhlo_emit_version_api.1_1_0.mlir.bc (@main: x + x) from
../shared/conformance/stablehlo-vhlo (skipped when absent):

- a CPU export runs on its rank and matches NumPy; hlo-convert lowers it;
- an export around JAX's dynamic reduce_window artifact ('?' shapes) refines
  from its argument and matches NumPy on two shapes;
- an export for other platforms only, one whose @main lacks the platform-index
  argument a multi-platform export must take, one whose nr_devices disagrees
  with the grid its module states, and one with ordered effects each stop with
  their reason.
"""

import json
import os
import shutil
import subprocess

import numpy as np

import hl_testlib as hl

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("HL_SOURCE_DIR", os.path.join(HERE, "..", ".."))
SCHEMA = os.path.join(HERE, "jax_export_test.fbs")
CANDIDATES = [os.path.join(SRC, "..", "shared", "conformance", "stablehlo-vhlo"),
              os.path.join(SRC, "..", "..", "shared", "conformance", "stablehlo-vhlo")]
VHLO = next((d for d in CANDIDATES if os.path.isdir(d)), None)
FLATC = shutil.which("flatc")


def make_export(d, name, platforms=("cpu",), nr_devices=1, effects=(), module=None,
                shape=(), function="add"):
    if module is None:
        with open(os.path.join(VHLO, "vhlo_emit_version_api.1_1_0.mlir.bc"), "rb") as f:
            module = f.read()
    aval = {"kind": 0, "shape": list(shape), "dtype": 10}  # f32
    doc = {
        "serialization_version": 9, "function_name": function, "in_avals": [aval],
        "out_avals": [aval], "nr_devices_short": nr_devices, "nr_devices": nr_devices,
        "platforms": list(platforms),
        "ordered_effects": [{"type_name": e} for e in effects],
        "mlir_module_serialized": [b - 256 if b > 127 else b for b in module],
        "calling_convention_version": 9, "module_kept_var_idx": [0],
        "uses_global_constants": False,
    }
    src = os.path.join(d, name + ".json")
    with open(src, "w") as f:
        json.dump(doc, f)
    subprocess.run([FLATC, "-b", "-o", d, SCHEMA, src], check=True)
    out = os.path.join(d, name + ".jax_exported")
    os.rename(os.path.join(d, name + ".bin"), out)
    return out


def skip_reason():
    if not FLATC:
        return "SKIP: no flatc (apt-get install flatbuffers-compiler)"
    if not VHLO:
        return "SKIP: no ../shared/conformance/stablehlo-vhlo"
    return None


def test_cpu_export_runs():
    if skip_reason():
        return skip_reason()
    x = np.array(-2.5, np.float32)
    with hl.tempdir("jaxexp") as d:
        prog = make_export(d, "add")
        hl.write_args(os.path.join(d, "args"), [x])
        r = hl.launch(prog, args_dir=os.path.join(d, "args"), output_dir=os.path.join(d, "out"))
        if r.returncode != 0:
            return r.describe()
        msg = hl.compare("result", hl.read_outputs(os.path.join(d, "out"), 0, 0, 1)[0], x + x)
        if msg:
            return msg
        c = hl.convert(prog, "-")
        if c.returncode != 0 or "add(" not in c.stdout:
            return c.describe()
    return None


def test_dynamic_export_runs():
    """An export around JAX's back-compat artifact for the dynamic reduce_window
    (a cumsum over f32[b, 4], '?' types): refined from the argument's shape."""
    if skip_reason():
        return skip_reason()
    import test_shape_poly as poly
    path = poly.shared("jax-export-back-compat", "tpu_stablehlo_dynamic_reduce_window.py")
    if not path:
        return "SKIP: ../shared/conformance/jax-export-back-compat is not here"
    data = poly.load_back_compat(path)["data_unary_2023_06_17"]
    with hl.tempdir("jaxexp") as d:
        prog = make_export(d, "cumsum", module=data["mlir_module_serialized"], shape=("b", "4"),
                           function="func")
        r = hl.run([hl.HLO_LAUNCH, "--describe", prog])
        if r.returncode != 0 or "  0: f32[?,4]" not in r.stdout.splitlines():
            return r.describe()
        for b in (2, 7):
            x = np.random.default_rng(b).standard_normal((b, 4)).astype(np.float32)
            args, out = os.path.join(d, "args%d" % b), os.path.join(d, "out%d" % b)
            hl.write_args(args, [x])
            r = hl.launch(prog, args_dir=args, output_dir=out)
            if r.returncode != 0:
                return r.describe()
            want = np.cumsum(x.astype(np.float64), axis=0).astype(np.float32)
            msg = hl.compare("b=%d" % b, hl.read_outputs(out, 0, 0, 1)[0], want,
                             tol=(1e-5, 1e-5))
            if msg:
                return msg
    return None


def expect_failure(name, want, **kw):
    if skip_reason():
        return skip_reason()
    with hl.tempdir("jaxexp") as d:
        r = hl.launch(make_export(d, name, **kw))
        if r.returncode == 0 or r.timed_out or want not in r.stderr:
            return "expected a failure naming %r\n%s" % (want, r.describe())
    return None


def nr_devices_disagree():
    """JAX's dynamic reduce_window module states 1 replica x 1 partition; an
    export of it claiming 2 devices is refused. (A module that states no grid
    runs on nr_devices partitions: test_jax_export_shardings.py.)"""
    if skip_reason():
        return skip_reason()
    import test_shape_poly as poly
    path = poly.shared("jax-export-back-compat", "tpu_stablehlo_dynamic_reduce_window.py")
    if not path:
        return "SKIP: ../shared/conformance/jax-export-back-compat is not here"
    module = poly.load_back_compat(path)["data_unary_2023_06_17"]["mlir_module_serialized"]
    want = "nr_devices 2, but the module runs on 1 replicas x 1"
    with hl.tempdir("jaxexp") as d:
        prog = make_export(d, "devices", nr_devices=2, module=module, shape=("b", "4"),
                           function="func")
        hl.write_args(os.path.join(d, "args"), [np.zeros((3, 4), np.float32)])
        r = hl.launch(prog, args_dir=os.path.join(d, "args"))
        if r.returncode == 0 or r.timed_out or want not in r.stderr:
            return "expected a failure naming %r\n%s" % (want, r.describe())
    return None


if __name__ == "__main__":
    hl.main([
        ("cpu_export_runs", test_cpu_export_runs),
        ("dynamic_export_runs", test_dynamic_export_runs),
        ("other_platforms", lambda: expect_failure(
            "tpu", "exported for platform(s) [tpu, cuda], not cpu", platforms=("tpu", "cuda"))),
        ("platform_index_missing", lambda: expect_failure(
            "multi", "must take the platform index", platforms=("cuda", "cpu"))),
        ("nr_devices_disagree", nr_devices_disagree),
        ("ordered_effects", lambda: expect_failure(
            "effects", "ordered effects", effects=("Debug",))),
    ])
