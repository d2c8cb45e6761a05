"""jaxlib's `lapack_?geqp3_ffi` (pivoted QR) and `tridiagonal_solve_perturbed_ffi` on CPU ranks.

Programs in the form jax/_src/lax/linalg.py lowers them (_linalg_ffi_lowering:
typed FFI, column-major matrices {r-2, r-1, batch...}, the operand aliased to the
result). NumPy is the oracle: A[:, P] = Q R with Q built from the Householder
vectors and tau, |diag R| non-increasing; tridiagonal solves against
np.linalg.solve, and for an exactly singular system (inverse iteration, what the
perturbed solver is for) a finite solution along the null vector.
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hl_testlib as hl  # noqa: E402

RANKS = 2
TYPES = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64",
         np.dtype(np.complex64): "c64", np.dtype(np.complex128): "c128"}


def shp(t, dims, col_major=False):
    r = len(dims)
    lay = (r - 2, r - 1) + tuple(range(r - 3, -1, -1)) if col_major and r >= 2 else \
        tuple(range(r - 1, -1, -1))
    return "%s[%s]{%s}" % (t, ",".join(map(str, dims)), ",".join(map(str, lay)))


def program(target, operands, results, aliasing):
    params = "\n".join("  p%d = %s parameter(%d)" % (i, shp(*o), i) for i, o in enumerate(operands))
    res = ", ".join(shp(*r) for r in results)
    if len(results) > 1:
        res = "(%s)" % res
    return ("HloModule jit_linalg\n\nENTRY main {\n%s\n  ROOT r = %s custom-call(%s), "
            "custom_call_target=\"%s\", operand_layout_constraints={%s}, "
            "output_to_operand_aliasing={%s}, api_version=API_VERSION_TYPED_FFI\n}\n" % (
                params, res, ", ".join("p%d" % i for i in range(len(operands))), target,
                ", ".join(shp(*o) for o in operands), aliasing))


def run(name, text, args, nresults):
    got = hl.run_hlo_text("qp3-" + name, text, args, nresults, RANKS)
    for j in range(nresults):
        if not np.array_equal(got[0][j], got[1][j], equal_nan=True):
            raise AssertionError("%s: ranks disagree on result %d" % (name, j))
    return got[0]


rand = hl.rand_normal  # (shape, dtype, seed)


def tol(dtype):
    return (1e-4, 1e-4) if dtype in (np.float32, np.complex64) else (1e-10, 1e-10)


def householder_q(qr, tau):
    m, n = qr.shape
    q = np.eye(m, dtype=np.complex128)
    for i in range(len(tau)):
        v = np.zeros(m, dtype=np.complex128)
        v[i] = 1
        v[i + 1:] = qr[i + 1:, i]
        q = q @ (np.eye(m) - tau[i] * np.outer(v, np.conj(v)))
    return q


def geqp3(hybrid=False):
    for dtype, shape in ((np.float64, (2, 5, 4)), (np.complex64, (4, 6))):
        a = rand(shape, dtype, 1)
        t = TYPES[np.dtype(dtype)]
        m, n = shape[-2:]
        k = min(m, n)
        batch = shape[:-2]
        jpvt = np.zeros(batch + (n,), np.int32)
        target = "cu_hybrid_geqp3" if hybrid else \
            "lapack_%sgeqp3_ffi" % {"f32": "s", "f64": "d", "c64": "c", "c128": "z"}[t]
        text = program(target,
                       [(t, shape, True), ("s32", batch + (n,))],
                       [(t, shape, True), ("s32", batch + (n,)), (t, batch + (k,))],
                       "{0}: (0, {}), {1}: (1, {})")
        x, piv, tau = run("geqp3", text, [a, jpvt], 3)
        for idx in np.ndindex(*batch):
            ab, xb, pb, tb = a[idx], x[idx], piv[idx], tau[idx]
            if sorted(pb) != list(range(1, n + 1)):
                return "jpvt %s is not a 1-based permutation" % pb
            r = np.triu(xb[:k, :])
            q = householder_q(xb.astype(np.complex128), tb.astype(np.complex128))[:, :k]
            msg = hl.compare("A P = Q R (%s)" % t, (q @ r).astype(np.complex128),
                             ab[:, pb - 1].astype(np.complex128), tol(dtype))
            if msg:
                return msg
            d = np.abs(np.diag(r))
            if np.any(d[1:] > d[:-1] * (1 + 1e-5)):
                return "|diag R| not non-increasing: %s" % d
    return None


def hybrid_eig():
    """cu_hybrid_eig_real / _comp (jax's GPU eig without cuSOLVER geev): LAPACK geev on the
    host; real: (wr, wi, vl, vr complex, info), complex: (w, vl, vr, info)."""
    for dtype in (np.float64, np.complex64):
        a = rand((2, 4, 4), dtype, 6)
        t = TYPES[np.dtype(dtype)]
        ct = "c128" if t in ("f64", "c128") else "c64"
        real = t in ("f32", "f64")
        res = ([(t, (2, 4)), (t, (2, 4))] if real else [(ct, (2, 4))]) + \
            [(ct, (2, 4, 4), True), (ct, (2, 4, 4), True), ("s32", (2,))]
        text = program("cu_hybrid_eig_%s" % ("real" if real else "comp"), [(t, (2, 4, 4), True)],
                       res, "")
        text = text.replace("output_to_operand_aliasing={}",
                            'backend_config={left = true, magma = "off", right = true}')
        out = run("hybrid-eig", text, [a], len(res))
        w = out[0] + 1j * out[1] if real else out[0]
        vl, vr, info = out[-3], out[-2], out[-1]
        if list(info) != [0, 0]:
            return "info %s" % info
        a128 = a.astype(np.complex128)
        want_w = np.linalg.eigvals(a128)
        for i in range(2):
            dist = np.abs(w[i][:, None].astype(np.complex128) - want_w[i][None, :]).min(axis=0)
            if np.any(dist > tol(dtype)[0] * (1 + np.abs(want_w[i]))):
                return "eigenvalues %s, expected %s" % (w[i], want_w[i])
        msg = hl.compare("A vr = vr w", (a128 @ vr).astype(np.complex128),
                         (vr * w[:, None, :]).astype(np.complex128), tol(dtype)) or \
            hl.compare("vl^H A = w vl^H", (np.conj(np.swapaxes(vl, 1, 2)) @ a128).astype(np.complex128),
                       (w[:, :, None] * np.conj(np.swapaxes(vl, 1, 2))).astype(np.complex128),
                       tol(dtype))
        if msg:
            return msg
    return None


def tridiag(dl, d, du):
    return np.diag(d) + np.diag(dl[1:], -1) + np.diag(du[:-1], 1)


def perturbed_solve():
    msgs = []
    for dtype in (np.float64, np.complex64, np.float32, np.complex128):
        t = TYPES[np.dtype(dtype)]
        n, k = 6, 2
        dl, d, du = rand((3, n), dtype, 2), rand((3, n), dtype, 3), rand((3, n), dtype, 4)
        dl[:, 0] = 0
        du[:, -1] = 0
        b = rand((3, n, k), dtype, 5)
        text = program("tridiagonal_solve_perturbed_ffi",
                       [(t, (3, n)), (t, (3, n)), (t, (3, n)), (t, (3, n, k), True)],
                       [(t, (3, n, k), True)], "")
        text = text.replace(", output_to_operand_aliasing={}", "")
        x, = run("tridiag", text, [dl, d, du, b], 1)
        want = np.stack([np.linalg.solve(tridiag(dl[i].astype(np.complex128), d[i], du[i]),
                                         b[i].astype(np.complex128)) for i in range(3)])
        msgs.append(hl.compare("tridiagonal solve %s" % t, x.astype(np.complex128), want,
                               (5e-4, 5e-4) if dtype in (np.float32, np.complex64)
                               else (1e-10, 1e-10)))
    return next((m for m in msgs if m), None)


def perturbed_singular():
    """T = tridiag(1, 2, 1) shifted by an exact eigenvalue (2 - 2 = 0 for n odd, middle
    mode): singular; the solver perturbs the zero pivot and returns a large, finite x
    along the null vector, as inverse iteration needs."""
    n = 5
    lam = 2.0  # eigenvalue of tridiag(1, 2, 1): 2 + 2 cos(pi j / (n + 1)), j = 3
    dl = np.ones((1, n))
    du = np.ones((1, n))
    d = np.full((1, n), 2.0 - lam)
    dl[0, 0] = du[0, -1] = 0
    b = np.ones((1, n, 1))
    text = program("tridiagonal_solve_perturbed_ffi",
                   [("f64", (1, n)), ("f64", (1, n)), ("f64", (1, n)), ("f64", (1, n, 1), True)],
                   [("f64", (1, n, 1), True)], "")
    text = text.replace(", output_to_operand_aliasing={}", "")
    x, = run("tridiag-singular", text, [dl, d, du, b], 1)
    x = x[0, :, 0]
    if not np.all(np.isfinite(x)) or np.linalg.norm(x) < 1e6:
        return "expected a large finite solution, got %s" % x
    null = np.sin(np.pi * 3 * np.arange(1, n + 1) / (n + 1))
    cos = abs(np.dot(x, null)) / (np.linalg.norm(x) * np.linalg.norm(null))
    if cos < 1 - 1e-8:
        return "solution %s is not along the null vector %s (cos %g)" % (x, null, cos)
    return None


if __name__ == "__main__":
    hl.require_binaries("hlo-launch")
    hl.main([
        ("lapack_geqp3_real_batched_and_complex", geqp3),
        ("cu_hybrid_geqp3", lambda: geqp3(hybrid=True)),
        ("cu_hybrid_eig_real_and_complex", hybrid_eig),
        ("tridiagonal_solve_perturbed_all_types", perturbed_solve),
        ("tridiagonal_solve_perturbed_singular", perturbed_singular),
    ])
