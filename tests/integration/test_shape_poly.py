#!/usr/bin/env python3
"""Shape-polymorphic StableHLO (dynamic '?' dimensions, as jax.export writes
symbolic shapes) through hlo-launch: every program runs on several argument
shapes, refined from the .npy files given; expected values come from NumPy.

Programs: tests/stablehlo/shape_poly_export.mlir (JAX's current form: the
dimension read by get_dimension_size, a shape_assertion, calls with
jax.global_constant arguments, real_dynamic_slice, dynamic_iota and the
stablehlo.dynamic_reduce_window custom call), tests/stablehlo/shape_poly_top_k.mlir
(stablehlo.dynamic_top_k and dynamic_approx_top_k); JAX-lowered programs of
../shared/conformance/stablehlo-testdata/dynamic (the older form: the
dimension variable as a leading i64 argument; dynamic_broadcast_in_dim,
dynamic_reshape, dynamic_iota, get_dimension_size, gather, reduce...); and
JAX's own back-compat case for the dynamic reduce_window (its inputs and
expected outputs, then other shapes), also from its portable artifact
(mlir_module_serialized). A failing shape_assertion stops the job
on every rank with the assertion's message filled in.
"""

import ast
import os

import numpy as np

import hl_testlib as hl

SRC = os.environ.get("HL_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
PROGRAMS = os.path.join(SRC, "tests", "stablehlo")
rng = np.random.default_rng(20261129)


def shared(*parts):
    """../shared next to the checkout, or next to its worktree folder."""
    for up in (("..",), ("..", "..")):
        p = os.path.join(SRC, *up, "shared", "conformance", *parts)
        if os.path.exists(p):
            return p
    return None


def run(program, args, nresults, np_=1, extra=()):
    """Runs `program` on args (arg<i>.npy); (launch result, outputs of rank 0)."""
    r, outs = hl.launch_file("poly", program, args, nresults, replicas=np_, extra=extra)
    return r, outs[0] if outs else None


def check_all(name, program, cases):
    """cases: (args, [expected...]) per argument shape."""
    for args, want in cases:
        shapes = "x".join(str(a.shape) for a in args)
        r, got = run(program, args, len(want))
        if got is None:
            return "%s on %s:\n%s" % (name, shapes, r.describe())
        for k, (g, w) in enumerate(zip(got, want)):
            msg = hl.compare("%s on %s result %d" % (name, shapes, k), g, np.asarray(w),
                             tol=(1e-5, 1e-5))
            if msg:
                return msg
    return None


def export_form():
    """JAX's current export form on b = 2, 3, 7 (cumsum, slices, iota, reduce)."""
    cases = []
    for b in (2, 3, 7):
        x = rng.standard_normal((b, 4)).astype(np.float32)
        cs = np.cumsum(x.astype(np.float64), axis=0).astype(np.float32)[:b - 1]
        s = (x.astype(np.float64).sum(axis=1) + np.arange(b)).astype(np.float32)
        cases.append(([x], [cs, s]))
    return check_all("shape_poly_export", os.path.join(PROGRAMS, "shape_poly_export.mlir"), cases)


def top_k():
    """dynamic_top_k and dynamic_approx_top_k (k = b - 1) on b = 2, 5, 9 against a
    NumPy sort (distinct values: ties are the one freedom approx_top_k leaves)."""
    cases = []
    for b in (2, 5, 9):
        x = rng.permutation(3 * b).reshape(3, b).astype(np.float32)
        idx = np.argsort(-x, axis=1, kind="stable")[:, :b - 1].astype(np.int32)
        val = np.take_along_axis(x, idx, axis=1)
        cases.append(([x], [val, idx, val, idx]))
    return check_all("shape_poly_top_k", os.path.join(PROGRAMS, "shape_poly_top_k.mlir"), cases)


def batch_mode():
    """Two dynamic programs in one batch job, each refined from its own
    --args-dir folder (D/<file name>/), against NumPy."""
    b = 5
    x = rng.standard_normal((b, 4)).astype(np.float32)
    cs = np.cumsum(x.astype(np.float64), axis=0).astype(np.float32)[:b - 1]
    s = (x.astype(np.float64).sum(axis=1) + np.arange(b)).astype(np.float32)
    t = rng.permutation(18).reshape(3, 6).astype(np.float32)
    idx = np.argsort(-t, axis=1, kind="stable")[:, :5].astype(np.int32)
    val = np.take_along_axis(t, idx, axis=1)
    programs = [(os.path.join(PROGRAMS, "shape_poly_export.mlir"), [x], [cs, s]),
                (os.path.join(PROGRAMS, "shape_poly_top_k.mlir"), [t], [val, idx, val, idx])]
    with hl.tempdir("polybatch") as d:
        for path, args, _ in programs:
            hl.write_args(os.path.join(d, "args", os.path.basename(path)), args)
        out = os.path.join(d, "out")
        br = hl.run_batch([p for p, _, _ in programs], output_dir=out,
                          extra=("--args-dir", os.path.join(d, "args")))
        if br.result.returncode != 0 or "2 passed, 0 failed" not in br.result.stdout:
            return br.result.describe()
        for path, _, want in programs:
            got = hl.read_outputs(br.program_output_dir(path), 0, 0, len(want))
            for k, (g, w) in enumerate(zip(got, want)):
                msg = hl.compare("batch %s result %d" % (os.path.basename(path), k), g, w)
                if msg:
                    return msg
    return None


def global_program():
    """A sharded program refined from --global-args (b = 4, 6), then partitioned
    over 2 partitions: each gets its rows of x + iota(b)."""
    program = os.path.join(PROGRAMS, "shape_poly_global.mlir")
    for b in (4, 6):
        x = rng.standard_normal((b, 4)).astype(np.float32)
        want = (x + np.arange(b, dtype=np.float32)[:, None]).astype(np.float32)
        with hl.tempdir("poly") as d:
            arg = os.path.join(d, "x.npy")
            np.save(arg, x)
            out = os.path.join(d, "out")
            r = hl.launch(program, partitions=2, output_dir=out,
                          extra=("--global-args", arg, "--global-program"))
            if r.returncode != 0:
                return r.describe()
            for p in range(2):
                got = hl.read_outputs(out, 0, p, 1)[0]
                msg = hl.compare("b=%d partition %d" % (b, p), got,
                                 want[p * b // 2:(p + 1) * b // 2])
                if msg:
                    return msg
    return None


def failing_shape_assertion():
    """b = 1 breaks `b >= 2`: exit 1 on every rank, the message with b's value."""
    x = np.zeros((1, 4), np.float32)
    want = "'b' = 1 from specification 'b' for dimension args[0].shape[0] (= 1)"
    program = os.path.join(PROGRAMS, "shape_poly_export.mlir")
    r, _ = run(program, [x], 2, np_=2)
    if r.returncode != 1 or "shape assertion failed" not in r.stderr or want not in r.stderr:
        return "expected exit 1 naming the failed shape assertion:\n" + r.describe()
    # Started by the user's own mpiexec (the built-with MPI's), every rank
    # checks and fails alike.
    argv = hl.mpi_starter(2)
    with hl.tempdir("poly") as d:
        hl.write_args(d, [x])
        r = hl.run(argv + [hl.HLO_LAUNCH, "--args-dir", d, "--quiet", program])
        if r.returncode == 0 or want not in r.stderr:
            return "mpiexec -n 2: expected a non-zero exit naming the assertion:\n" + r.describe()
    return None


def bounded_types():
    """Bounded dynamic types, in both spellings (`#stablehlo.bounds<8, ?>` and
    `#stablehlo.type_extensions<bounds = [8, ?]>`): refined from the argument
    up to the bound, and an argument past it refused naming the bounded type."""
    for enc in ("#stablehlo.bounds<8, ?>", "#stablehlo.type_extensions<bounds = [8, ?]>"):
        t = "tensor<?x4xf32, %s>" % enc
        text = ("func.func @main(%%arg0: %s) -> %s {\n"
                "  %%0 = stablehlo.add %%arg0, %%arg0 : %s\n  return %%0 : %s\n}\n" % (t, t, t, t))
        with hl.tempdir("poly") as d:
            path = os.path.join(d, "bounded.mlir")
            with open(path, "w") as f:
                f.write(text)
            for rows in (3, 8):
                x = np.random.default_rng(rows).standard_normal((rows, 4)).astype(np.float32)
                r, got = run(path, [x], 1)
                if got is None:
                    return r.describe()
                msg = hl.compare("%s rows=%d" % (enc, rows), got[0], x + x)
                if msg:
                    return msg
            r, _ = run(path, [np.zeros((9, 4), np.float32)], 1)
            want = "argument 0 is f32[9,4], which does not fit its type f32[<=8,4]"
            if r.returncode != 1 or want not in r.stderr:
                return "%s: expected exit 1 and %r\n%s" % (enc, want, r.describe())
    return None


def refusals():
    """Shapes that cannot be refined stop with an error naming the op (exit 1)."""
    head = "module @m {\n  func.func public @main("
    cases = [
        # A shape read from an array argument's contents is not known before running.
        (head + "%arg0: tensor<1xi32>) -> tensor<?xf32> {\n"
         "    %0 = stablehlo.dynamic_iota %arg0, dim = 0 : (tensor<1xi32>) -> tensor<?xf32>\n"
         "    return %0 : tensor<?xf32>\n  }\n}\n",
         [np.array([3], np.int32)], (),
         ":3:10: error: 'stablehlo.dynamic_iota' needs operand 0 as a value known from the "
         "argument shapes"),
        # A static dimension of the signature that the argument contradicts.
        (head + "%arg0: tensor<?x4xf32>) -> tensor<?x4xf32> {\n"
         "    return %arg0 : tensor<?x4xf32>\n  }\n}\n",
         [np.zeros((2, 5), np.float32)], (), "argument 0 is f32[2,5], which does not fit its type"),
        # Random inputs cannot say a shape.
        (head + "%arg0: tensor<?x4xf32>) -> tensor<?x4xf32> {\n"
         "    return %arg0 : tensor<?x4xf32>\n  }\n}\n",
         None, ("--seed", "1"), "refined from the shapes of its arguments"),
    ]
    with hl.tempdir("poly") as d:
        for k, (text, args, extra, needle) in enumerate(cases):
            path = os.path.join(d, "p%d.mlir" % k)
            with open(path, "w") as f:
                f.write(text)
            if args is None:
                r = hl.launch(path, extra=extra)
            else:
                r, _ = run(path, args, 1, extra=extra)
            if r.returncode != 1 or needle not in r.stderr:
                return "case %d: expected exit 1 and %r\n%s" % (k, needle, r.describe())
    return None


def testdata(name):
    d = shared("stablehlo-testdata", "dynamic")
    return os.path.join(d, name) if d else None


def testdata_programs():
    """JAX-lowered programs of stablehlo-testdata/dynamic, each on b = 1, 3, 6,
    against NumPy (in double, rounded to f32)."""
    if not testdata("add_dynamic.mlir"):
        return "SKIP: ../shared/conformance/stablehlo-testdata/dynamic is not here"
    f32 = np.float32

    def padded(x, c):  # pad low 1, high 1, interior 1 on the last dimension
        out = np.full(x.shape[:-1] + (2 * x.shape[-1] + 1,), c, f32)
        out[..., 1:-1:2] = x
        return out

    # name: (argument shapes after b (None: a scalar), NumPy of the arguments)
    programs = {
        "add_dynamic.mlir": ([("b", 4), (2, "b", 4)], lambda x, y: y + x[None]),
        "iota_dynamic.mlir": ([("b",)], lambda x: x + np.arange(x.shape[0])),
        "slice_in_dim_stride_2_odd_dynamic.mlir": ([("b", 4)], lambda x: x[::2]),
        "pad_dynamic.mlir": ([("b", 2, 5), None], padded),
        "tile_0_dynamic.mlir": ([("b", 3)], lambda x: np.tile(x, (1, 2))),
        "matmul_0_dynamic.mlir": ([("b", 8, 4), ("b", 4, 5)], lambda x, y: x @ y),
    }
    failures = []
    for name, (shapes, fn) in programs.items():
        cases = []
        for b in (1, 3, 6):
            arrays = [rng.standard_normal([b if d == "b" else d for d in s] if s else ())
                      .astype(f32) for s in shapes]
            want = fn(*[a.astype(np.float64) for a in arrays])
            cases.append(([np.array(b, np.int64)] + arrays, [np.asarray(want).astype(f32)]))
        msg = check_all(name, testdata(name), cases)
        if msg:
            failures.append(msg)
    return "\n".join(failures) or None


def dynamic_reduce_window_back_compat():
    """JAX's back-compat case for stablehlo.dynamic_reduce_window (a cumsum):
    its own inputs and expected outputs, then b = 1, 5, 9 against NumPy."""
    path = shared("jax-export-back-compat", "tpu_stablehlo_dynamic_reduce_window.py")
    if not path:
        return "SKIP: ../shared/conformance/jax-export-back-compat is not here"
    data = load_back_compat(path)["data_unary_2023_06_17"]
    with hl.tempdir("poly") as d:
        program = os.path.join(d, "p.mlir")
        with open(program, "w") as f:
            f.write(data["mlir_module_text"])
        cases = [(list(data["inputs"]), list(data["expected_outputs"]))]
        for b in (1, 5, 9):
            x = rng.standard_normal((b, 4)).astype(np.float32)
            cases.append(([x], [np.cumsum(x.astype(np.float64), axis=0).astype(np.float32)]))
        return check_all("dynamic_reduce_window", program, cases)


def dynamic_reduce_window_bytecode():
    """The same case's portable artifact (its mlir_module_serialized, StableHLO
    0.9.0 bytecode with '?' types): refined from the arguments like the text."""
    path = shared("jax-export-back-compat", "tpu_stablehlo_dynamic_reduce_window.py")
    if not path:
        return "SKIP: ../shared/conformance/jax-export-back-compat is not here"
    data = load_back_compat(path)["data_unary_2023_06_17"]
    with hl.tempdir("poly") as d:
        program = os.path.join(d, "p.mlir.bc")
        with open(program, "wb") as f:
            f.write(data["mlir_module_serialized"])
        r = hl.run([hl.HLO_LAUNCH, "--describe", program])
        if r.returncode != 0 or "  0: f32[?,4]" not in r.stdout.splitlines():
            return r.describe()
        cases = [(list(data["inputs"]), list(data["expected_outputs"]))]
        for b in (1, 6):
            x = rng.standard_normal((b, 4)).astype(np.float32)
            cases.append(([x], [np.cumsum(x.astype(np.float64), axis=0).astype(np.float32)]))
        return check_all("dynamic_reduce_window (bytecode)", program, cases)


def load_back_compat(path):
    """The dict literals of a JAX back-compat data file, without running it:
    array(...) / datetime.date(...) calls and literals only."""
    with open(path) as f:
        tree = ast.parse(f.read())

    def ev(node):
        if isinstance(node, ast.Call):
            fn = ast.unparse(node.func)
            args = [ev(a) for a in node.args]
            kw = {k.arg: ev(k.value) for k in node.keywords}
            if fn in ("array", "np.array"):
                return np.array(*args, **kw)
            if fn == "dict":
                return kw
            if fn == "datetime.date":
                return tuple(args)
            raise ValueError("unexpected call %s" % fn)
        if isinstance(node, ast.Name):
            if node.id in ("float16", "float32", "float64", "int8", "int16", "int32", "int64",
                           "uint8", "uint16", "uint32", "uint64", "bool_", "complex64",
                           "complex128"):
                return getattr(np, node.id)
            raise ValueError("unexpected name %s" % node.id)
        if isinstance(node, ast.Attribute):
            return getattr(np, node.attr)
        if isinstance(node, (ast.Tuple, ast.List)):
            return tuple(ev(e) for e in node.elts)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        return ast.literal_eval(node)

    out = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call) and \
                ast.unparse(stmt.value.func) == "dict":
            out[stmt.targets[0].id] = ev(stmt.value)
    return out


if __name__ == "__main__":
    hl.require_binaries("hlo-launch")
    hl.main([
        ("export_form", export_form),
        ("top_k", top_k),
        ("batch_mode", batch_mode),
        ("global_program", global_program),
        ("failing_shape_assertion", failing_shape_assertion),
        ("bounded_types", bounded_types),
        ("refusals", refusals),
        ("testdata_programs", testdata_programs),
        ("dynamic_reduce_window_back_compat", dynamic_reduce_window_back_compat),
        ("dynamic_reduce_window_bytecode", dynamic_reduce_window_bytecode),
    ])
