"""--custom-call-library: XLA typed-FFI handlers from a plugin built here.

tests/integration/plugins/ffi_test_plugin.c is plain C against the XLA FFI
C ABI (runtime/custom_calls/xla_ffi_api.h); this test compiles it into a
shared library and runs programs whose custom-calls it handles, with NumPy
as the oracle. Unknown targets stop before launch, naming the target and
the flag.
"""

import os
import shutil
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hl_testlib as hl  # noqa: E402

PLUGIN_SRC = os.path.join(hl.SOURCE_DIR, "tests", "integration", "plugins", "ffi_test_plugin.c")
BUILD = hl.tempdir("ffi-plugin")
LIB = os.path.join(BUILD.name, "libffi_test_plugin.so")


def build_plugin():
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    r = subprocess.run([cc, "-std=c11", "-Wall", "-Werror", "-shared", "-fPIC", "-O1",
                        "-I", hl.SOURCE_DIR, PLUGIN_SRC, "-o", LIB],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError("building the plugin failed:\n%s" % r.stderr)


def launch(text, args, libs, nresults=None, np_=1):
    d = hl.tempdir("ffi-run")
    path = os.path.join(d.name, "p.hlo")
    with open(path, "w") as f:
        f.write(text)
    hl.write_args(os.path.join(d.name, "args"), args)
    extra = []
    for lib in libs:
        extra += ["--custom-call-library", lib]
    r = hl.launch(path, replicas=np_, args_dir=os.path.join(d.name, "args"),
                  output_dir=os.path.join(d.name, "out") if nresults else None, extra=extra)
    outs = None
    if nresults and r.returncode == 0:
        outs = [hl.read_outputs(os.path.join(d.name, "out"), rep, 0, nresults) for rep in range(np_)]
    d.cleanup()
    return r, outs


SCALE_ADD = """HloModule m

ENTRY main {
  x = f32[2,3]{1,0} parameter(0)
  y = f32[2,3]{1,0} parameter(1)
  ROOT r = f32[2,3]{1,0} custom-call(x, y), custom_call_target="my_scale_add", api_version=API_VERSION_TYPED_FFI, backend_config={alpha = 2.500000e+00 : f32}
}
"""


def registered_by_init():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.full((2, 3), 0.5, np.float32)
    r, outs = launch(SCALE_ADD, [x, y], [LIB], 1, np_=2)
    if r.returncode != 0:
        return r.describe()
    for rep in range(2):
        msg = hl.compare("replica %d" % rep, outs[rep][0], 2.5 * x + y)
        if msg:
            return msg
    return None


def symbol_mapping_and_layout():
    """TARGET=SYMBOL, and the handler sees the operand in its declared layout."""
    text = """HloModule m

ENTRY main {
  x = f32[3,4]{1,0} parameter(0)
  ROOT r = f32[4]{0} custom-call(x), custom_call_target="column_sums", operand_layout_constraints={f32[3,4]{0,1}}, api_version=API_VERSION_TYPED_FFI
}
"""
    x = np.arange(12, dtype=np.float32).reshape(3, 4) ** 2
    r, outs = launch(text, [x], [LIB + ":column_sums=ColumnSums"], 1)
    if r.returncode != 0:
        return r.describe()
    return hl.compare("column sums", outs[0][0], x.sum(axis=0))


def attributes():
    text = """HloModule m

ENTRY main {
  x = f32[1]{0} parameter(0)
  ROOT r = s64[8]{0} custom-call(x), custom_call_target="my_describe", api_version=API_VERSION_TYPED_FFI, backend_config={mode = 86 : ui8, label = "hello", flag = true, dims = array<i64: 3, 4, 5>, count = 7 : i32}
}
"""
    r, outs = launch(text, [np.zeros(1, np.float32)], [LIB], 1)
    if r.returncode != 0:
        return r.describe()
    # count, sum(dims), len(label), flag, #attrs, names sorted, mode, 64-byte aligned memory
    return hl.compare("attributes", outs[0][0], np.array([7, 12, 5, 1, 5, 1, 86, 1], np.int64))


def stablehlo_attributes():
    # jax.export's form: the typed-FFI attributes as the dictionary
    # mhlo.backend_config beside api_version 1 (jax/_src/interpreters/mlir.py),
    # every scalar width and signedness, bool, floats, a non-ASCII string, dense
    # arrays and a nested dictionary; the handler reports what it received.
    text = """module @m {
  func.func public @main(%arg0: tensor<1xf32>) -> tensor<3x16xf64> {
    %0 = stablehlo.custom_call @my_attr_dump(%arg0) {mhlo.backend_config = {a_i8 = -5 : i8, b_i16 = -300 : i16, c_i32 = 70000 : i32, d_i64 = -5000000000 : i64, e_ui8 = 200 : ui8, f_ui16 = 60000 : ui16, g_ui32 = 4000000000 : ui32, h_ui64 = 9000000000 : ui64, i_bool = true, j_f32 = 2.500000e+00 : f32, k_f64 = -1.250000e-01 : f64, l_str = "h\C3\A9llo", m_arr = array<i32: 1, 2, 3>, n_dict = {x = 4 : i32, y = 5 : i64}, o_farr = array<f64: 5.000000e-01, 1.500000e+00>}, api_version = 1 : i32} : (tensor<1xf32>) -> tensor<3x16xf64>
    return %0 : tensor<3x16xf64>
  }
}
"""
    r, outs = launch(text, [np.zeros(1, np.float32)], [LIB], 1)
    if r.returncode != 0:
        return r.describe()
    S, A, D, T = 3, 1, 2, 4  # XLA_FFI_AttrType
    kinds = [S] * 11 + [T, A, D, A]
    dtypes = [2, 3, 4, 5, 6, 7, 8, 9, 1, 11, 12, -1, 4, -1, 12]
    values = [-5, -300, 70000, -5e9, 200, 60000, 4e9, 9e9, 1, 2.5, -0.125, 6, 6, 2009, 2.0]
    want = np.full((3, 16), -7.0)
    want[0, :15], want[1, :15], want[2, :15] = kinds, dtypes, values
    return hl.compare("attributes", outs[0][0], want)


def handler_error():
    text = """HloModule m

ENTRY main {
  x = f32[3]{0} parameter(0)
  ROOT r = f32[3]{0} custom-call(x), custom_call_target="reject", api_version=API_VERSION_TYPED_FFI
}
"""
    r, _ = launch(text, [np.array([1, -2, 3], np.float32)], [LIB + ":reject=RejectNegative"])
    out = r.stdout + r.stderr
    if r.returncode == 0 or "RejectNegative: negative input" not in out or "reject" not in out:
        return "expected the handler's error\n" + r.describe()
    return None


def unknown_target_before_launch():
    # Without the library (and for the CUDA-only registration) the target is
    # unknown: the launcher stops before any rank starts (no rank in the message).
    for libs, target in (([], "my_scale_add"), ([LIB], "my_gpu_only")):
        text = SCALE_ADD.replace("my_scale_add", target)
        r, _ = launch(text, [np.zeros((2, 3), np.float32)] * 2, libs)
        out = r.stdout + r.stderr
        if r.returncode != 1 or ('custom-call target "%s"' % target) not in out or \
                "--custom-call-library" not in out or "rank" in out:
            return "expected a pre-launch error naming %s and the flag\n%s" % (target, r.describe())
    return None


def bad_library_specs():
    cases = [("/nonexistent/lib.so", "/nonexistent/lib.so"),
             (LIB + ":t=NoSuchSymbol", "exports no symbol NoSuchSymbol"),
             (LIB + ":oops", "expected TARGET=SYMBOL")]
    for spec, want in cases:
        r, _ = launch(SCALE_ADD, [np.zeros((2, 3), np.float32)] * 2, [spec])
        if r.returncode == 0 or want not in r.stdout + r.stderr:
            return "spec %r: expected %r\n%s" % (spec, want, r.describe())
    return None


def wrong_api_version():
    text = SCALE_ADD.replace(", api_version=API_VERSION_TYPED_FFI", "")
    r, _ = launch(text, [np.zeros((2, 3), np.float32)] * 2, [LIB])
    if r.returncode == 0 or "API_VERSION_TYPED_FFI" not in r.stdout + r.stderr:
        return "expected an api_version error\n" + r.describe()
    return None


if __name__ == "__main__":
    hl.require_binaries("hlo-launch")
    build_plugin()
    try:
        hl.main([
            ("registered_by_init_two_ranks", registered_by_init),
            ("symbol_mapping_and_layout", symbol_mapping_and_layout),
            ("attributes", attributes),
            ("stablehlo_attributes", stablehlo_attributes),
            ("handler_error", handler_error),
            ("unknown_target_before_launch", unknown_target_before_launch),
            ("bad_library_specs", bad_library_specs),
            ("wrong_api_version", wrong_api_version),
        ])
    finally:
        BUILD.cleanup()
