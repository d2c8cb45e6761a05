"""jaxlib's GPU SVD / syrk / tridiagonal-solve targets from GPU dumps, on CPU ranks.

The custom-calls are written as jax/_src/lax/linalg.py lowers them for CUDA
(_svd_gpu_sub_lowering, _symmetric_product_gpu_lowering,
_tridiagonal_solve_gpu_lowering): typed FFI, operand_layout_constraints with
column-major matrices ({r-2, r-1, batch...}) or, for gesvd with transposed=true
and for syrk, row-major ones, and the attributes jaxlib's handlers bind
(jaxlib/gpu/solver_kernels_ffi.cc). NumPy is the oracle: singular values
against np.linalg.svd, singular vectors by reconstruction and unitarity
(their signs are the implementation's choice), syrk and gtsv2 exactly.
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hl_testlib as hl  # noqa: E402

RANKS = 2
TYPES = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64",
         np.dtype(np.complex64): "c64", np.dtype(np.complex128): "c128"}


def layout(rank, col_major):
    if col_major and rank >= 2:
        return (rank - 2, rank - 1) + tuple(range(rank - 3, -1, -1))
    return tuple(range(rank - 1, -1, -1))


def shp(t, dims, col_major=False):
    if not dims:
        return "%s[]" % t
    return "%s[%s]{%s}" % (t, ",".join(map(str, dims)),
                           ",".join(map(str, layout(len(dims), col_major))))


def program(target, operands, results, attrs, aliases=""):
    """operands / results: (type, dims, col_major) triples."""
    params = "\n".join("  p%d = %s parameter(%d)" % (i, shp(*o), i) for i, o in enumerate(operands))
    return ("HloModule jit_solver\n\nENTRY main {\n%s\n  ROOT r = (%s) custom-call(%s), "
            "custom_call_target=\"%s\", operand_layout_constraints={%s}, %s"
            "api_version=API_VERSION_TYPED_FFI, backend_config={%s}\n}\n" % (
                params, ", ".join(shp(*r) for r in results),
                ", ".join("p%d" % i for i in range(len(operands))), target,
                ", ".join(shp(*o) for o in operands),
                aliases, attrs))


def run(name, text, args, nresults):
    got = hl.run_hlo_text("gpusolver-" + name, text, args, nresults, RANKS)
    for j in range(nresults):  # every rank computes the same
        if not np.array_equal(got[0][j], got[1][j], equal_nan=True):
            raise AssertionError("%s: ranks disagree on result %d" % (name, j))
    return got[0]


rand = hl.rand_normal  # (shape, dtype, seed)


def real_of(dtype):
    return np.dtype(np.float32) if dtype in (np.float32, np.complex64) else np.dtype(np.float64)


def tol(dtype):
    return (2e-4, 2e-4) if real_of(dtype) == np.float32 else (1e-10, 1e-10)


def check_svd(name, a, s, u, vt, dtype):
    """a = u[:, :k] diag(s) vt[:k], u and vt unitary on their k leading vectors."""
    k = min(a.shape[-2:])
    msg = hl.compare(name + " singular values", s,
                     np.linalg.svd(a.astype(np.complex128), compute_uv=False).astype(real_of(dtype)),
                     tol(dtype))
    if msg:
        return msg
    uk, vk = u[..., :, :k].astype(np.complex128), vt[..., :k, :].astype(np.complex128)
    rec = uk @ (s[..., :, None] * vk)
    msg = hl.compare(name + " U S Vt", rec, a.astype(np.complex128), tol(dtype))
    if msg:
        return msg
    for label, q in (("U", u), ("Vt", vt)):
        q = q.astype(np.complex128)
        g = np.conj(np.swapaxes(q, -1, -2)) @ q if label == "U" else q @ np.conj(np.swapaxes(q, -1, -2))
        msg = hl.compare(name + " " + label + " unitary", g, np.broadcast_to(np.eye(g.shape[-1]), g.shape).astype(np.complex128),
                         tol(dtype))
        if msg:
            return msg
    return None


def gesvdj():
    """cusolver_gesvdj_ffi: full and economy, real and complex; v comes back as V."""
    for dtype, full, shape in ((np.float64, True, (2, 3, 4)), (np.complex64, False, (2, 5, 3))):
        a = rand(shape, dtype, 1)
        t, rt = TYPES[np.dtype(dtype)], TYPES[real_of(dtype)]
        b, m, n = shape
        k = min(m, n)
        res = [(t, shape, True), (rt, (b, k)), (t, (b, m, m if full else k), True),
               (t, (b, n, n if full else k), True), ("s32", (b,))]
        text = program("cusolver_gesvdj_ffi", [(t, shape, True)], res,
                       "compute_uv = true, full_matrices = %s" % ("true" if full else "false"),
                       "output_to_operand_aliasing={{0}: (0, {})}, ")
        _, s, u, v, info = run("gesvdj", text, [a], 5)
        if list(info) != [0] * b:
            return "gesvdj info %s" % info
        msg = check_svd("gesvdj %s" % t, a, s, u, np.conj(np.swapaxes(v, -1, -2)), dtype)
        if msg:
            return msg
    return None


def gesvd():
    """cusolver_gesvd_ffi: m >= n column-major, and m < n through transposed=true with
    row-major layouts and u / vt swapped, as jax lowers it."""
    a = rand((2, 5, 3), np.float32, 2)
    res = [("f32", (2, 5, 3), True), ("f32", (2, 3)), ("f32", (2, 5, 3), True),
           ("f32", (2, 3, 3), True), ("s32", (2,))]
    text = program("cusolver_gesvd_ffi", [("f32", (2, 5, 3), True)], res,
                   "compute_uv = true, full_matrices = false, transposed = false",
                   "output_to_operand_aliasing={{0}: (0, {})}, ")
    _, s, u, vt, info = run("gesvd", text, [a], 5)
    msg = check_svd("gesvd", a, s, u, vt, np.float32)
    if msg or list(info) != [0, 0]:
        return msg or "gesvd info %s" % info
    a = rand((3, 6), np.complex128, 3)  # rows < cols
    res = [("c128", (3, 6)), ("f64", (3,)), ("c128", (6, 6)), ("c128", (3, 3)), ("s32", ())]
    text = program("cusolver_gesvd_ffi", [("c128", (3, 6))], res,
                   "compute_uv = true, full_matrices = true, transposed = true",
                   "output_to_operand_aliasing={{0}: (0, {})}, ")
    _, s, vt, u, info = run("gesvd-t", text, [a], 5)
    if int(info) != 0:
        return "gesvd transposed info %s" % info
    return check_svd("gesvd transposed", a, s, u, vt, np.complex128)


def gesvd_values_only():
    a = rand((4, 4), np.float64, 4)
    res = [("f64", (4, 4), True), ("f64", (4,)), ("f64", (4, 4), True), ("f64", (4, 4), True),
           ("s32", ())]
    text = program("cusolver_gesvd_ffi", [("f64", (4, 4), True)], res,
                   "compute_uv = false, full_matrices = true, transposed = false")
    _, s, _, _, info = run("gesvd-n", text, [a], 5)
    return hl.compare("singular values", s, np.linalg.svd(a, compute_uv=False), (1e-12, 1e-12))


def syrk():
    """cusolver_syrk_ffi: cuBLAS fills the upper triangle of the column-major c, which is
    the lower triangle of the row-major logical result; the rest keeps c_in."""
    msgs = []
    for transpose in (False, True):
        n = 4 if transpose else 3
        a, c = rand((2, 3, 4), np.float64, 5), rand((2, n, n), np.float64, 6)
        alpha, beta = np.float64(0.5), np.float64(-2.0)
        text = program("cusolver_syrk_ffi",
                       [("f64", a.shape), ("f64", c.shape), ("f64", ()), ("f64", ())],
                       [("f64", c.shape)], "transpose = %s" % ("true" if transpose else "false"),
                       "output_to_operand_aliasing={{}: (1, {})}, ")
        text = text.replace("ROOT r = (f64[2,%d,%d]{2,1,0})" % (n, n),
                            "ROOT r = f64[2,%d,%d]{2,1,0}" % (n, n))
        got, = run("syrk", text, [a, c, alpha, beta], 1)
        prod = np.swapaxes(a, 1, 2) @ a if transpose else a @ np.swapaxes(a, 1, 2)
        full = alpha * prod + beta * c
        lower = np.tril(np.ones((n, n), bool))
        want = np.where(lower, full, c)
        msgs.append(hl.compare("syrk transpose=%s" % transpose, got, want, (1e-12, 1e-12)))
    return next((m for m in msgs if m), None)


def unpack_pairs(w, v):
    """LAPACK's packing of real eigenvectors: a conjugate pair j, j+1 is re, im columns."""
    out = v.astype(np.complex128)
    j = 0
    while j < len(w):
        if w[j].imag != 0:
            out[:, j] = v[:, j] + 1j * v[:, j + 1]
            out[:, j + 1] = v[:, j] - 1j * v[:, j + 1]
            j += 2
        else:
            j += 1
    return out


def geev():
    """cusolver_geev_ffi (jax's default GPU eig with cuSOLVER >= 11.7.1): right vectors only
    for real input (packed), left and right for complex."""
    for dtype, left in ((np.float64, False), (np.complex64, True)):
        a = rand((2, 4, 4), dtype, 11)
        t = TYPES[np.dtype(dtype)]
        ct = "c128" if t == "f64" else "c64"
        res = [(t, (2, 4, 4), True), (ct, (2, 4)), (t, (2, 4, 4), True), (t, (2, 4, 4), True),
               ("s32", (2,))]
        text = program("cusolver_geev_ffi", [(t, (2, 4, 4), True)], res,
                       "left = %s, right = true" % ("true" if left else "false"))
        _, w, vl, vr, info = run("geev", text, [a], 5)
        if list(info) != [0, 0]:
            return "geev info %s" % info
        for i in range(2):
            a128 = a[i].astype(np.complex128)
            want = np.linalg.eigvals(a128)
            dist = np.abs(w[i][:, None].astype(np.complex128) - want[None, :]).min(axis=0)
            if np.any(dist > tol(dtype)[0] * (1 + np.abs(want))):
                return "eigenvalues %s, expected %s" % (w[i], want)
            v = unpack_pairs(w[i], vr[i]) if t == "f64" else vr[i].astype(np.complex128)
            msg = hl.compare("A vr = vr w", a128 @ v, v * w[i][None, :].astype(np.complex128),
                             tol(dtype))
            if msg:
                return msg
            if left:
                u = np.conj(vl[i].astype(np.complex128)).T
                msg = hl.compare("vl^H A = w vl^H", u @ a128,
                                 w[i][:, None].astype(np.complex128) * u, tol(dtype))
                if msg:
                    return msg
    return None


def gtsv2():
    """cusparse_gtsv2_ffi: dl[0] and du[m-1] are padding; b column-major."""
    m, nrhs = 5, 3
    dl, d, du = rand((2, m), np.float32, 7), rand((2, m), np.float32, 8) + 4, \
        rand((2, m), np.float32, 9)
    dl[:, 0] = 0
    du[:, -1] = 0
    b = rand((2, m, nrhs), np.float32, 10)
    text = program("cusparse_gtsv2_ffi",
                   [("f32", (2, m)), ("f32", (2, m)), ("f32", (2, m)), ("f32", (2, m, nrhs), True)],
                   [("f32", (2, m, nrhs), True)], "",
                   "output_to_operand_aliasing={{}: (3, {})}, ")
    text = text.replace(", backend_config={}", "")
    text = text.replace("ROOT r = (f32[2,5,3]{1,2,0})", "ROOT r = f32[2,5,3]{1,2,0}")
    x, = run("gtsv2", text, [dl, d, du, b], 1)
    want = np.empty_like(b, dtype=np.float64)
    for i in range(2):
        t = np.diag(d[i].astype(np.float64)) + np.diag(dl[i, 1:].astype(np.float64), -1) + \
            np.diag(du[i, :-1].astype(np.float64), 1)
        want[i] = np.linalg.solve(t, b[i])
    return hl.compare("tridiagonal solve", x, want.astype(np.float32), (1e-4, 1e-5))


if __name__ == "__main__":
    hl.require_binaries("hlo-launch")
    hl.main([
        ("cusolver_gesvdj_full_and_economy_real_complex", gesvdj),
        ("cusolver_gesvd_and_transposed", gesvd),
        ("cusolver_gesvd_values_only", gesvd_values_only),
        ("cusolver_syrk_both_transposes", syrk),
        ("cusparse_gtsv2", gtsv2),
        ("cusolver_geev_real_packed_and_complex", geev),
    ])
