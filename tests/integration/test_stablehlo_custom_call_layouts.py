"""StableHLO custom_call as jax.export writes it: operand_layouts / result_layouts,
typed-FFI attributes in mhlo.backend_config, output_operand_aliases.

jaxlib's LAPACK kernels read and write column-major buffers; JAX says so with
`operand_layouts = [dense<[1, 2, 0]> : tensor<3xindex>]` (minor-to-major) and
lowers the attributes as a dictionary `mhlo.backend_config = {uplo = 76 : ui8}`
beside api_version 1 (jax/_src/interpreters/mlir.py custom_call). Ignoring the
layouts factors the transpose and returns wrong numbers with exit status 0.
NumPy is the oracle, through the identities: P A = L U, L L^H = A.
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hl_testlib as hl  # noqa: E402

MLIR = {np.float32: "f32", np.float64: "f64", np.complex64: "complex<f32>",
        np.complex128: "complex<f64>"}
LETTER = {np.float32: "s", np.float64: "d", np.complex64: "c", np.complex128: "z"}
TOL = {np.float32: 1e-4, np.float64: 1e-11, np.complex64: 1e-4, np.complex128: 1e-11}


def run_mlir(tag, text, args, nresults):
    r, outs = hl.launch_text(tag, text, args, nresults, name="p.mlir")
    return r, outs[0] if outs else None


def getrf_program(dtype, b, n, in_layout, out_layout):
    t = "tensor<%dx%dx%dx%s>" % (b, n, n, MLIR[dtype])
    return """module @jit_lu attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%%arg0: %(t)s) -> (%(t)s, tensor<%(b)dx%(n)dxi32>, tensor<%(b)dxi32>) {
    %%0:3 = stablehlo.custom_call @lapack_%(l)sgetrf_ffi(%%arg0) {mhlo.backend_config = {}, mhlo.frontend_attributes = {num_batch_dims = "1"}, operand_layouts = [dense<%(il)s> : tensor<3xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>], result_layouts = [dense<%(ol)s> : tensor<3xindex>, dense<[1, 0]> : tensor<2xindex>, dense<0> : tensor<1xindex>]} : (%(t)s) -> (%(t)s, tensor<%(b)dx%(n)dxi32>, tensor<%(b)dxi32>)
    return %%0#0, %%0#1, %%0#2 : %(t)s, tensor<%(b)dx%(n)dxi32>, tensor<%(b)dxi32>
  }
}
""" % dict(t=t, b=b, n=n, l=LETTER[dtype], il=list(in_layout), ol=list(out_layout))


def random_matrix(rng, dtype, shape):
    a = rng.standard_normal(shape)
    if np.iscomplexobj(np.zeros((), dtype)):
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def permuted(a, ipiv):
    """Applies LAPACK's 1-based row interchanges to a copy of a."""
    p = a.copy()
    for i, k in enumerate(ipiv):
        p[[i, k - 1]] = p[[k - 1, i]]
    return p


def check_lu(name, a, lu, ipiv, tol):
    n = a.shape[-1]
    for k in range(a.shape[0]):
        l = np.tril(lu[k], -1) + np.eye(n, dtype=a.dtype)
        u = np.triu(lu[k])
        err = np.max(np.abs(permuted(a[k], ipiv[k]) - l @ u)) / np.max(np.abs(a[k]))
        if not err < tol:
            return "%s batch %d: |P A - L U| / |A| = %g (tolerance %g)\nlu=\n%s" % (
                name, k, err, tol, lu[k])
    return None


def lu_column_major():
    # jax's own form: column-major matrices ({1, 2, 0} with one batch dim).
    rng = np.random.default_rng(7)
    for dtype in (np.float32, np.float64, np.complex64, np.complex128):
        a = random_matrix(rng, dtype, (2, 4, 4))
        r, outs = run_mlir("lu", getrf_program(dtype, 2, 4, (1, 2, 0), (1, 2, 0)), [a], 3)
        if outs is None:
            return r.describe()
        lu, ipiv, info = outs
        if not np.array_equal(info, [0, 0]):
            return "info %s" % info
        msg = check_lu("getrf %s" % dtype.__name__, a, lu, ipiv, TOL[dtype])
        if msg:
            return msg
    return None


def lu_row_major_layouts():
    # Row-major layouts hand LAPACK the transpose (as XLA does), and the result
    # comes back through the same layout: P A^T = L U with LU = result^T.
    rng = np.random.default_rng(8)
    a = random_matrix(rng, np.float64, (1, 5, 5))
    r, outs = run_mlir("lu-rm", getrf_program(np.float64, 1, 5, (2, 1, 0), (2, 1, 0)), [a], 3)
    if outs is None:
        return r.describe()
    lu, ipiv, info = outs
    return check_lu("getrf of the transpose", np.swapaxes(a, -1, -2),
                    np.swapaxes(lu, -1, -2), ipiv, 1e-11)


def cholesky_attribute():
    # uplo = 76 : ui8 ('L'): the lower factor; column-major buffers.
    rng = np.random.default_rng(9)
    for dtype in (np.float32, np.complex128):
        m = random_matrix(rng, dtype, (3, 3))
        a = (m @ np.conj(m.T) + 3 * np.eye(3)).astype(dtype)
        t = "tensor<3x3x%s>" % MLIR[dtype]
        text = """module @jit_cholesky {
  func.func public @main(%%arg0: %(t)s) -> (%(t)s, tensor<i32>) {
    %%0:2 = stablehlo.custom_call @lapack_%(l)spotrf_ffi(%%arg0) {mhlo.backend_config = {uplo = 76 : ui8}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<> : tensor<0xindex>]} : (%(t)s) -> (%(t)s, tensor<i32>)
    return %%0#0, %%0#1 : %(t)s, tensor<i32>
  }
}
""" % dict(t=t, l=LETTER[dtype])
        r, outs = run_mlir("potrf", text, [a], 2)
        if outs is None:
            return r.describe()
        l = np.tril(outs[0])
        err = np.max(np.abs(l @ np.conj(l.T) - a)) / np.max(np.abs(a))
        if outs[1] != 0 or not err < TOL[dtype]:
            return "potrf %s: info %s, |L L^H - A| / |A| = %g\n%s" % (dtype.__name__, outs[1], err, outs[0])
    return None


def program_file():
    # tests/stablehlo/jax_custom_call_layouts.mlir: LU of A, Cholesky of A A^T + 4 I.
    rng = np.random.default_rng(10)
    a = rng.standard_normal((2, 4, 4))
    with open(os.path.join(hl.SOURCE_DIR, "tests", "stablehlo", "jax_custom_call_layouts.mlir")) as f:
        r, outs = run_mlir("file", f.read(), [a], 5)
    if outs is None:
        return r.describe()
    lu, ipiv, info, chol, cinfo = outs
    msg = check_lu("file getrf", a, lu, ipiv, 1e-11)
    if msg or info.any() or cinfo.any():
        return msg or "info %s %s" % (info, cinfo)
    spd = a @ np.swapaxes(a, -1, -2) + 4 * np.eye(4)
    l = np.tril(chol)
    err = np.max(np.abs(l @ np.swapaxes(l, -1, -2) - spd)) / np.max(np.abs(spd))
    return None if err < 1e-12 else "file potrf: |L L^T - A| / |A| = %g" % err


HLO_QR = """HloModule m

ENTRY main {
  p0 = f32[3,3]{1,0} parameter(0)
  ROOT r = (f32[3,3]{0,1}, f32[3]{0}) custom-call(p0), custom_call_target="lapack_sgeqrf_ffi", operand_layout_constraints={f32[3,3]{0,1}}, api_version=API_VERSION_TYPED_FFI, output_to_operand_aliasing={{0}: (0, {})}
}
"""


def hlo_aliasing():
    # The HLO path's spelling of output_operand_aliases: kept through text ->
    # proto -> text, and a nested shape index is an error naming the attribute.
    with hl.tempdir("alias") as d:
        src, pb, back = (os.path.join(d, n) for n in ("a.hlo", "a.pb", "b.hlo"))
        with open(src, "w") as f:
            f.write(HLO_QR)
        for a, b in ((src, pb), (pb, back)):
            r = hl.convert(a, b)
            if r.returncode != 0:
                return r.describe()
        with open(back) as f:
            text = f.read()
        if "output_to_operand_aliasing={{0}: (0, {})}" not in text:
            return "aliasing lost in the round trip:\n" + text
        with open(src, "w") as f:
            f.write(HLO_QR.replace("(0, {})}", "(0, {1})}"))
        r = hl.launch(src, extra=["--zeros"])
        if r.returncode == 0 or "output_to_operand_aliasing" not in r.stdout + r.stderr:
            return "expected an error naming output_to_operand_aliasing\n" + r.describe()
    return None


def bad_attributes_are_named():
    # Attributes with no typed-FFI form, and layouts that are not permutations,
    # stop before launch with an error naming them.
    base = """module @m {
  func.func public @main(%%arg0: tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<i32>) {
    %%0:2 = stablehlo.custom_call @lapack_spotrf_ffi(%%arg0) {%s} : (tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<i32>)
    return %%0#0, %%0#1 : tensor<2x2xf32>, tensor<i32>
  }
}
"""
    cases = [
        ("mhlo.backend_config = {uplo = dense<76> : tensor<ui8>}", "uplo"),
        ("mhlo.backend_config = {uplo = 76 : ui8}, operand_layouts = [dense<[0, 0]> : tensor<2xindex>]",
         "not a permutation"),
        ("mhlo.backend_config = {uplo = 76 : ui8}, result_layouts = [dense<[0, 1]> : tensor<2xindex>]",
         "result_layouts for 1 results but 2 results"),
        ("mhlo.backend_config = {uplo = 76 : ui8}, api_version = 2 : i32", "api_version 2"),
    ]
    for attrs, want in cases:
        r, _ = run_mlir("bad", base % attrs, [np.eye(2, dtype=np.float32)], 2)
        out = r.stdout + r.stderr
        if r.returncode == 0 or want not in out or "custom_call" not in out:
            return "expected an error naming %r for {%s}\n%s" % (want, attrs, r.describe())
    return None


if __name__ == "__main__":
    hl.require_binaries("hlo-launch", "hlo-convert")
    hl.main([
        ("lu_column_major", lu_column_major),
        ("lu_row_major_layouts", lu_row_major_layouts),
        ("cholesky_attribute", cholesky_attribute),
        ("program_file", program_file),
        ("hlo_aliasing", hlo_aliasing),
        ("bad_attributes_are_named", bad_attributes_are_named),
    ])
