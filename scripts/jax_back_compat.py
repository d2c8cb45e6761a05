#!/usr/bin/env python3
"""Runs JAX's export back-compatibility data through hlo-launch.

JAX keeps, for every custom-call target it promises to support for six
months, a Python file of test data (jax/_src/internal_test_util/
export_back_compat_test_data/*.py in jax-ml/jax): `data_YYYY_MM_DD[...] =
dict(platform=..., inputs=(array(...),), expected_outputs=(...),
mlir_module_text=r\"\"\"module ...\"\"\", ...)`. This script reads those files
WITHOUT executing them (Python's ast and a small evaluator that knows only
literals, `array(...)`, the numpy dtypes, `nan` / `inf` and `datetime.date`),
runs each case's StableHLO text on its inputs with hlo-launch, and compares
the results as JAX's tests/export_back_compat_test.py does for that file:
`assertAllClose` with the test's rtol / atol (rtol 1e-7 unless the test gives
its own), and for decompositions the identities the test checks (P A = L U,
A V = V diag(w), U S V^H = A, S T S^H = A, ...).

Outcomes per case:
  pass              ran and matched
  WRONG             ran, exit 0, but the numbers do not match: always a failure
  error             hlo-launch stopped with an error (its message is shown)
  expected refusal  a TPU case stopped with an error saying it cannot run on a
                    CPU (TPU kernels have no CPU meaning)

Usage: jax_back_compat.py [--hlo-launch PATH] [--known-failures FILE]
                          [--filter SUBSTRING] [-v] DIR [DIR ...]
Exit status: 1 when any case is WRONG, or fails without being listed in
--known-failures (lines `CASE  reason`); 0 otherwise.
"""

import argparse
import ast
import datetime
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

# ---------------------------------------------------------------------------
# Reading the data files (no code is executed)
# ---------------------------------------------------------------------------

_DTYPES = {
    "bool_": np.bool_, "int8": np.int8, "int16": np.int16, "int32": np.int32,
    "int64": np.int64, "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32,
    "uint64": np.uint64, "float16": np.float16, "float32": np.float32,
    "float64": np.float64, "complex64": np.complex64, "complex128": np.complex128,
}
_CONSTANTS = {"nan": float("nan"), "inf": float("inf"), "True": True, "False": False,
              "None": None}


class DataError(Exception):
    pass


def _where(node, path):
    return "%s:%d" % (path, getattr(node, "lineno", 0))


def _eval(node, path, env):
    """Evaluates a literal expression of a data file."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Tuple):
        return tuple(_eval(e, path, env) for e in node.elts)
    if isinstance(node, ast.List):
        return [_eval(e, path, env) for e in node.elts]
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise DataError("%s: '**' in a dict literal is not supported" % _where(node, path))
        return {_eval(k, path, env): _eval(v, path, env) for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _eval(node.operand, path, env)
        if not isinstance(v, (int, float, complex)):
            raise DataError("%s: sign of a non-number" % _where(node, path))
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
        a, b = _eval(node.left, path, env), _eval(node.right, path, env)
        if not all(isinstance(v, (int, float, complex)) for v in (a, b)):
            raise DataError("%s: arithmetic on non-numbers" % _where(node, path))
        return a + b if isinstance(node.op, ast.Add) else a - b if isinstance(node.op, ast.Sub) else a * b
    if isinstance(node, (ast.Name, ast.Attribute)):
        name = _dotted(node)
        short = name.split(".")[-1]
        if name in env:
            return env[name]
        if short in _CONSTANTS and name in (short, "np." + short, "numpy." + short):
            return _CONSTANTS[short]
        if short in _DTYPES and name in (short, "np." + short, "numpy." + short):
            return _DTYPES[short]
        raise DataError("%s: unknown name %s" % (_where(node, path), name))
    if isinstance(node, ast.Call):
        fn = _dotted(node.func)
        args = [_eval(a, path, env) for a in node.args]
        kwargs = {k.arg: _eval(k.value, path, env) for k in node.keywords if k.arg}
        if any(k.arg is None for k in node.keywords):
            raise DataError("%s: '**' in a call is not supported" % _where(node, path))
        if fn == "dict":
            return dict(*args, **kwargs)
        if fn == "bytearray" and len(args) == 1 and isinstance(args[0], bytes):
            return bytearray(args[0])
        if fn in ("array", "np.array", "numpy.array", "np.asarray"):
            dtype = kwargs.pop("dtype", None)
            if kwargs:
                raise DataError("%s: array(...) with %s" % (_where(node, path), sorted(kwargs)))
            return np.array(args[0], dtype=dtype)
        if fn in ("datetime.date", "date"):
            return datetime.date(*args)
        short = fn.split(".")[-1]
        if short in _DTYPES and fn in (short, "np." + short, "numpy." + short) and len(args) == 1:
            return _DTYPES[short](args[0])  # a numpy scalar: float32(1.5)
        raise DataError("%s: call of %s is not a data literal" % (_where(node, path), fn))
    raise DataError("%s: %s is not a data literal" % (_where(node, path), type(node).__name__))


def _dotted(node):
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return _dotted(node.value) + "." + node.attr
    raise DataError("line %d: not a name" % getattr(node, "lineno", 0))


def load_data_file(path):
    """Returns {variable: value} of the data_* assignments of a data file."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), filename=path)
    env = {}  # aliases like `array = np.array` need nothing: the names are known
    data = {}
    for stmt in tree.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.Expr)):
            continue  # imports; the docstring
        if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
            raise DataError("%s: unexpected statement %s" % (_where(stmt, path), type(stmt).__name__))
        target = stmt.targets[0]
        if isinstance(target, ast.Name):
            if target.id in _DTYPES or target.id in ("array", "datetime"):
                continue  # `float32 = np.float32`: the evaluator knows these names
            data[target.id] = _eval(stmt.value, path, env)
            continue
        # data_X['f32'] = ... / data_X['qr']['f32'] = ...
        keys = []
        while isinstance(target, ast.Subscript):
            keys.append(_eval(target.slice, path, env))
            target = target.value
        if not isinstance(target, ast.Name) or target.id not in data:
            raise DataError("%s: assignment into an unknown name" % _where(stmt, path))
        obj = data[target.id]
        for k in reversed(keys[1:]):
            obj = obj[k]
        obj[keys[0]] = _eval(stmt.value, path, env)
    return data


def cases_of(value, name):
    """The test-data dicts (those with testdata_version) under value, named."""
    if isinstance(value, dict) and "testdata_version" in value:
        yield name, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from cases_of(v, "%s[%s]" % (name, k))
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from cases_of(v, "%s[%d]" % (name, i))


# ---------------------------------------------------------------------------
# Checks: tests/export_back_compat_test.py, per data file
# ---------------------------------------------------------------------------

_DEFAULT_TOL = {np.dtype(np.bool_): 0, np.dtype(np.float16): 1e-3, np.dtype(np.float32): 1e-6,
                np.dtype(np.float64): 1e-15, np.dtype(np.complex64): 1e-6,
                np.dtype(np.complex128): 1e-15}


class Mismatch(Exception):
    pass


def _tol(dtype, given):
    if given is not None:
        return given
    dtype = np.dtype(dtype)
    return _DEFAULT_TOL.get(dtype, 0)


def assert_all_close(x, y, rtol=None, atol=None, what="result"):
    """jax._src.test_util.assertAllClose: shapes, dtypes, then np allclose."""
    x, y = np.asarray(x), np.asarray(y)
    if x.shape != y.shape:
        raise Mismatch("%s: shape %s, expected %s" % (what, x.shape, y.shape))
    if x.dtype != y.dtype:
        raise Mismatch("%s: dtype %s, expected %s" % (what, x.dtype, y.dtype))
    atol_ = max(_tol(x.dtype, atol), _tol(y.dtype, atol))
    rtol_ = max(_tol(x.dtype, rtol), _tol(y.dtype, rtol))
    try:
        np.testing.assert_allclose(x, y, rtol=rtol_, atol=atol_, equal_nan=True)
    except AssertionError as e:
        raise Mismatch("%s: %s" % (what, str(e).strip().replace("\n", " | ")[:600]))


def _assert(cond, msg):
    if not cond:
        raise Mismatch(msg)


def _dtype_tols(dname, atol_table=None):
    rtol = dict(f32=1e-3, f64=1e-5, c64=1e-3, c128=1e-5)[dname]
    atol = (atol_table or dict(f32=1e-4, f64=1e-12, c64=1e-4, c128=1e-12))[dname]
    return rtol, atol


_NP = dict(f32=np.float32, f64=np.float64, c64=np.complex64, c128=np.complex128)


def _dname_of(case_name):
    m = re.search(r"\[(f32|f64|c64|c128)[\]_]", case_name)
    return m.group(1) if m else None


def check_direct(run, exp, rtol=None, atol=None, **_):
    _assert(len(run) == len(exp), "%d results, expected %d" % (len(run), len(exp)))
    for i, (r, e) in enumerate(zip(run, exp)):
        assert_all_close(r, e, rtol=1e-7 if rtol is None else rtol, atol=atol,
                         what="result %d" % i)


def check_lu(operand, run, exp, rtol, atol, **_):
    lu, pivots = run[0], run[1]
    n, m = operand.shape
    _assert(n == m, "LU of a non-square operand")
    l = np.tril(lu, -1) + np.eye(n, dtype=operand.dtype)
    u = np.triu(lu)
    a = operand.copy()
    for i in range(n):
        a[[i, pivots[i]], ] = a[[pivots[i], i], ]
    assert_all_close(a, np.matmul(l, u), rtol=rtol, atol=atol, what="P A vs L U")


def check_eigh(operand, run, exp, rtol, atol, **_):
    v, w = run[0], run[1]
    _, w_exp = exp[0], exp[1]
    n = operand.shape[0]
    _assert(v.shape == operand.shape and w.shape == (n,), "eigh result shapes %s %s" % (v.shape, w.shape))
    err = np.linalg.norm(np.eye(n) - np.matmul(np.conj(np.swapaxes(v, -1, -2)), v))
    _assert(err <= rtol, "V^H V - I norm %g > %g" % (err, rtol))
    wv = w[np.newaxis, :].astype(v.dtype)
    err = np.linalg.norm(np.matmul(operand, v) - wv * v)
    _assert(err <= rtol * np.linalg.norm(operand), "A V - V diag(w) norm %g" % err)
    assert_all_close(w, w_exp, rtol=rtol, atol=atol, what="eigenvalues")


def eigh_input(n, dtype):
    a = np.reshape(np.arange(n * n, dtype=dtype), (n, n))
    return (a + np.conj(np.swapaxes(a, -1, -2))) / dtype(2)


def check_eig(operand, run, exp, rtol, atol, **_):
    dtype = operand.dtype
    n = operand.shape[-1]
    eps = np.finfo(dtype).eps

    def norm(x):
        return np.linalg.norm(x, axis=(-2, -1)) / ((n + 1) * eps)

    def right(a, w, vr):
        _assert(np.all(norm(np.matmul(a, vr) - w[..., None, :] * vr) < 100),
                "A V - V diag(w) too large")

    w_run, w_exp = run[0], exp[0]
    for i in range(n):
        d = min(abs(w_exp - w_run[i]))
        assert_all_close(d, np.array(0.0, d.dtype), rtol=rtol, atol=atol, what="eigenvalue %d" % i)
        d = min(abs(w_run - w_exp[i]))
        assert_all_close(d, np.array(0.0, d.dtype), rtol=rtol, atol=atol, what="eigenvalue %d" % i)
    right(np.conj(operand.T), np.conj(w_run), run[1])  # left eigenvectors
    right(operand, w_run, run[2])


def check_svd(a, run, exp, rtol, atol, **_):
    tol = 80 * np.finfo(a.dtype).eps
    out = list(run)
    out[1] = out[1].astype(out[0].dtype)
    b, m, n = a.shape
    T = lambda x: np.swapaxes(x, -1, -2)

    def backward_error(rec):
        return np.amax(np.linalg.norm(a - rec, axis=(-2, -1)) / np.linalg.norm(a, axis=(-2, -1)))

    k = min(m, n)
    if m < n:
        err = backward_error(np.matmul(out[1][..., None, :] * out[0], out[2][..., :k, :]))
    else:
        err = backward_error(np.matmul(out[1][..., None, :] * out[0][..., :, :k], out[2]))
    _assert(err < 2 * tol, "U S V^H backward error %g >= %g" % (err, 2 * tol))
    u = np.real(np.matmul(np.conj(T(out[0])), out[0]))
    eye = np.eye(out[0].shape[-1], dtype=u.dtype)
    assert_all_close(np.broadcast_to(eye, (b,) + eye.shape), u, rtol=tol, atol=tol, what="U^H U")
    if m >= n:
        v = np.real(np.matmul(np.conj(T(out[2])), out[2]))
        eye = np.eye(out[2].shape[-1], dtype=v.dtype)
    else:
        v = np.real(np.matmul(out[2], np.conj(T(out[2]))))
        eye = np.eye(out[2].shape[-2], dtype=v.dtype)
    assert_all_close(np.broadcast_to(eye, (b,) + eye.shape), v, rtol=tol, atol=tol, what="V V^H")


def check_qr(run, exp, rtol, atol, **_):
    """The test compares Q and R with the GPU's own output (rtol only). For a
    rank-deficient input (JAX's arange matrices) the last pivot of R is
    roundoff, which two correct Householder QRs need not share; when the direct
    comparison fails there, Q R = A, Q^H Q = I and R upper triangular decide,
    within 80 eps as the test's SVD check allows."""
    try:
        return check_direct(run, exp, rtol=rtol, atol=atol)
    except Mismatch as direct:
        q, r = run[0], run[1]
        a = np.arange(r.size, dtype=r.dtype).reshape(r.shape)
        tol = 80 * np.finfo(r.dtype).eps
        err = np.amax(np.linalg.norm(a - q @ r, axis=(-2, -1)) / np.linalg.norm(a, axis=(-2, -1)))
        orth = np.amax(np.abs(np.conj(np.swapaxes(q, -1, -2)) @ q - np.eye(q.shape[-1])))
        if err < tol and orth < tol and np.all(np.tril(r, -1) == 0):
            raise IdentityPass("direct comparison: %s; Q R = A (%.2g), Q^H Q = I (%.2g)" % (
                direct, err, orth))
        raise


class IdentityPass(Exception):
    """Matched through the decomposition's identities, not element-wise."""


def check_schur(a, run, exp, rtol, atol, **_):
    t, s = run[0], run[1]
    assert_all_close(a, s @ t @ np.conj(s.T), rtol=rtol, atol=atol, what="S T S^H vs A")


def check_trsm(a, b, run, exp, rtol, atol, **_):
    y = np.matmul(a.astype(np.complex128 if np.iscomplexobj(a) else np.float64),
                  run[0]).astype(a.dtype)
    assert_all_close(y, np.broadcast_to(b, y.shape), rtol=rtol, atol=atol, what="A X vs B")


def check_top_k(a, run, exp, rtol, atol, **_):
    values, indices = run[0], run[1]
    picked = a[indices] if a.ndim == 1 else a[np.arange(a.shape[0]).reshape(a.shape[0], 1), indices]
    assert_all_close(values, picked, rtol=rtol, atol=atol, what="values vs a[indices]")
    assert_all_close(np.sort(values), np.sort(exp[0]), rtol=rtol, atol=atol, what="sorted values")


def checker_for(file_base, case_name, case):
    """(check function, rtol, atol) as the JAX test of this file uses them."""
    d = _dname_of(case_name)
    inputs = case["inputs"]
    if file_base in ("cpu_cholesky_lapack_potrf", "cuda_cholesky_solver_potrf",
                     "rocm_cholesky_solver_potrf", "cpu_hessenberg_lapack_gehrd",
                     "cpu_tridiagonal_lapack_sytrd_hetrd", "cpu_tridiagonal_solve_lapack_gtsv",
                     "cuda_tridiagonal_cusolver_sytrd", "rocm_tridiagonal_hipsolver_sytrd",
                     "cuda_tridiagonal_solve"):
        return (check_direct,) + _dtype_tols(d)
    if file_base in ("cpu_qr_lapack_geqrf", "cuda_qr_cusolver_geqrf", "rocm_qr_hipsolver_geqrf"):
        return check_qr, _dtype_tols(d)[0], None
    if file_base == "tpu_Qr":
        return check_direct, 1e-3, 1e-3
    if file_base == "cpu_eig_lapack_geev":
        op = np.arange(16, dtype=_NP[d]).reshape(4, 4)
        return (lambda run, exp, rtol, atol: check_eig(op, run, exp, rtol, atol)), *_dtype_tols(d)
    if file_base == "cpu_eigh_lapack_syev":
        op = eigh_input(8, _NP[d])
        return (lambda run, exp, rtol, atol: check_eigh(op, run, exp, rtol, atol)), *_dtype_tols(d)
    if file_base in ("cuda_eigh_cusolver_syev", "gpu_eigh_solver_syev", "rocm_eigh_hipsolver_syev"):
        n = case["expected_outputs"][0].shape[-1]
        op = eigh_input(n, _NP[d])
        tols = _dtype_tols(d, dict(f32=1e-2, f64=1e-10, c64=1e-2, c128=1e-10))
        return (lambda run, exp, rtol, atol: check_eigh(op, run, exp, rtol, atol)), *tols
    if file_base == "tpu_Eigh":
        op = eigh_input(8, np.float32)
        return (lambda run, exp, rtol, atol: check_eigh(op, run, exp, rtol, atol)), 1e-3, None
    if file_base in ("cpu_lu_lapack_getrf", "tpu_Lu"):
        dtype = _NP[d] if d else np.float32
        op = np.arange(9, dtype=dtype).reshape(3, 3)
        tols = _dtype_tols(d) if d else (1e-3, None)
        return (lambda run, exp, rtol, atol: check_lu(op, run, exp, rtol, atol)), *tols
    if file_base in ("cpu_svd_lapack_gesdd", "cuda_svd_cusolver_gesvd", "rocm_svd_hipsolver_gesvd"):
        a = inputs[0]
        return (lambda run, exp, rtol, atol: check_svd(a, run, exp, rtol, atol)), *_dtype_tols(d)
    if file_base == "cpu_schur_lapack_gees":
        a = np.arange(16, dtype=_NP[d]).reshape(4, 4)
        return (lambda run, exp, rtol, atol: check_schur(a, run, exp, rtol, atol)), *_dtype_tols(d)
    if file_base == "cpu_triangular_solve_blas_trsm":
        dt = _NP[d]
        a = np.arange(16, dtype=dt).reshape(4, 4)
        a = np.tril(a + 5 * np.eye(4, dtype=dt))
        b = np.arange(20, dtype=dt).reshape(4, 5)
        return (lambda run, exp, rtol, atol: check_trsm(a, b, run, exp, rtol, atol)), *_dtype_tols(d)
    if file_base == "stablehlo_dynamic_top_k":
        a = np.arange(12, dtype=np.float32).reshape(4, 3)
        return (lambda run, exp, rtol, atol: check_top_k(a, run, exp, rtol, atol)), 1e-7, None
    if file_base == "stablehlo_dynamic_approx_top_k":
        a = inputs[0]
        return (lambda run, exp, rtol, atol: check_top_k(a, run, exp, rtol, atol)), 1e-7, None
    if file_base == "tpu_ApproxTopK" or file_base.startswith("tpu_stablehlo_dynamic_reduce"):
        return check_direct, 1e-7, None
    return check_direct, 1e-7, None  # run_one_test's defaults


# ---------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------

_CPU_REFUSAL = re.compile(r"cannot run on a CPU")


def _module_grid(text):
    def attr(name):
        m = re.search(name + r"\s*=\s*(\d+)", text)
        return int(m.group(1)) if m else 1
    return attr("mhlo.num_replicas"), attr("mhlo.num_partitions")


def run_case(launch, work, case, timeout):
    """Runs one case; returns (returncode, message, outputs or None)."""
    os.makedirs(work, exist_ok=True)
    prog = os.path.join(work, "module.mlir")
    with open(prog, "w", encoding="utf-8") as f:
        f.write(case["mlir_module_text"])
    args = []
    for i, x in enumerate(case["inputs"]):
        p = os.path.join(work, "arg%d.npy" % i)
        np.save(p, np.asarray(x))
        args.append(p)
    reps, parts = _module_grid(case["mlir_module_text"])
    grid = []
    devices = int(case.get("nr_devices", 1))
    if parts == 1 and reps == 1 and devices > 1 and "mhlo.num_partitions" not in case["mlir_module_text"]:
        # Older exports (jax2tf's GSPMD data) state no grid: JAX's test runs
        # them on nr_devices devices, as a global program XLA partitions.
        parts = devices
        grid = ["--partitions", str(devices), "--global-program"]
    outdir = os.path.join(work, "out")
    argv = [launch, "-q"] + grid
    n_out = len(case["expected_outputs"])
    if parts > 1:
        if n_out != 1:
            return 2, "the runner reads back one global result only (%d results, %d partitions)" % (
                n_out, parts), None
        if args:
            argv += ["--global-args", ",".join(args)]
        argv += ["--global-output", os.path.join(work, "global.npy")]
    else:
        if args:
            argv += ["--args", ",".join(args)]
        argv += ["--output-dir", outdir]
    argv.append(prog)
    env = dict(os.environ)
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return 124, "timed out after %d s" % timeout, None
    except OSError as e:
        return 127, "cannot run %s: %s" % (launch, e), None
    msg = (r.stderr.strip() or r.stdout.strip()).splitlines()
    msg = " / ".join(l for l in msg if "error" in l.lower())[:500] or " / ".join(msg[-3:])[:500]
    if r.returncode != 0:
        return r.returncode, msg, None
    if parts > 1:
        return 0, "", [np.load(os.path.join(work, "global.npy"))]
    d = os.path.join(outdir, "replica0_partition0")
    outs = []
    for i in range(n_out):
        p = os.path.join(d, "result%d.npy" % i)
        if not os.path.exists(p):
            return 0, "hlo-launch wrote %d results, expected %d" % (i, n_out), outs
        outs.append(np.load(p))
    return 0, "", outs


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="+", help="directories of JAX back-compat data files")
    ap.add_argument("--hlo-launch", default=os.environ.get("HLO_LAUNCH", "hlo-launch"))
    ap.add_argument("--known-failures", help="file of `CASE  reason` lines allowed to fail")
    ap.add_argument("--filter", default="", help="only cases whose name contains this")
    ap.add_argument("--timeout", type=int, default=120)
    ap.add_argument("-v", "--verbose", action="store_true")
    opts = ap.parse_args(argv)

    known = {}
    if opts.known_failures:
        with open(opts.known_failures, encoding="utf-8") as f:
            for line in f:
                line = line.split("#", 1)[0].strip()
                if line:
                    name, _, why = line.partition(" ")
                    known[name] = why.strip()

    files, seen = [], set()
    for d in opts.dirs:
        if not os.path.isdir(d):
            print("jax_back_compat: %s is not a directory" % d, file=sys.stderr)
            return 2
        for f in sorted(os.listdir(d)):
            if f.endswith(".py") and f != "__init__.py" and f not in seen:
                seen.add(f)  # the same file in two directories runs once
                files.append(os.path.join(d, f))

    counts = {"pass": 0, "WRONG": 0, "error": 0, "expected refusal": 0}
    by_platform = {}
    unexpected = []
    refusals = []
    identity_passes = []
    tmp = tempfile.mkdtemp(prefix="jax_back_compat_")
    try:
        for path in files:
            base = os.path.basename(path)[:-3]
            try:
                data = load_data_file(path)
            except (DataError, SyntaxError, ValueError, TypeError) as e:
                print("ERROR reading %s: %s" % (path, e))
                unexpected.append(base)
                continue
            if not any(True for var, value in data.items() for _ in cases_of(value, var)):
                print("no back-compat cases in %s (%s)" % (path, ", ".join(sorted(data))))
                continue
            for var, value in data.items():
                for name, case in cases_of(value, "%s.%s" % (base, var)):
                    if opts.filter not in name:
                        continue
                    platform = case.get("platform", "?")
                    work = os.path.join(tmp, re.sub(r"[^A-Za-z0-9_.]", "_", name))
                    rc, msg, outs = run_case(opts.hlo_launch, work, case, opts.timeout)
                    shutil.rmtree(work, ignore_errors=True)
                    if rc == 0 and not msg:
                        try:
                            check, rtol, atol = checker_for(base, name, case)
                            check(outs, [np.asarray(e) for e in case["expected_outputs"]],
                                  rtol=rtol, atol=atol)
                            outcome = "pass"
                        except IdentityPass as e:
                            outcome, msg = "pass", "by identity: %s" % e
                            identity_passes.append("%s: %s" % (name, msg))
                        except Mismatch as e:
                            outcome, msg = "WRONG", str(e)
                        except Exception as e:  # a result of the wrong shape or kind
                            outcome, msg = "WRONG", "%s: %s" % (type(e).__name__, e)
                    elif rc == 0:
                        outcome = "WRONG"
                    elif _CPU_REFUSAL.search(msg):
                        outcome = "expected refusal"
                    else:
                        outcome = "error"
                    counts[outcome] += 1
                    pc = by_platform.setdefault(platform, [0, 0])
                    pc[0] += outcome == "pass"
                    pc[1] += 1
                    if outcome == "expected refusal":
                        refusals.append("%s: %s" % (name, msg))
                    failed = outcome in ("WRONG", "error")
                    if outcome == "WRONG" or (failed and name not in known):
                        unexpected.append(name)
                    if failed or opts.verbose:
                        print("%-16s %s [%s]%s" % (outcome, name, platform,
                                                   (": " + msg) if msg else ""), flush=True)
                    elif outcome == "pass" and name in known:
                        print("pass (listed as a known failure: %s) %s" % (known[name], name))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    total = sum(counts.values())
    print("%d cases: %s" % (total, ", ".join("%d %s" % (v, k) for k, v in counts.items())))
    print("by platform (passed/cases): %s" % ", ".join(
        "%s %d/%d" % (p, c[0], c[1]) for p, c in sorted(by_platform.items())))
    for r in refusals:
        print("expected refusal: %s" % r)
    for r in identity_passes:
        print("pass %s" % r[:400])
    if unexpected:
        print("FAILED (WRONG, or failing and not in --known-failures): %s" % ", ".join(unexpected))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
