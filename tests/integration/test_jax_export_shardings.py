#!/usr/bin/env python3
"""jax.export's stored shardings (in_shardings / out_shardings of the
`Exported` flatbuffer) drive --global-args and --global-output on real ranks.
The exports are encoded by flatc from jax_export_test.fbs (skipped when flatc
is absent) around modules JAX itself wrote (skipped when
../shared/conformance is absent):

- JAX's back-compat case tpu_Sharding.py 'gspmd' (a shard_map that swaps the
  row shards of f32[2,4] with a ppermute, 2 devices; the module states no grid):
  with HloSharding protos (serialization before version 6), NamedShardings
  (version 6..9) and the unique tables of version 10, the global arrays are
  cut per in_shardings and the result assembled per out_shardings (tiled in
  either device order, or replicated) on 2 ranks, against JAX's own expected
  output and NumPy on other inputs;
- StableHLO's vhlo_emit_version_api.1_1_0.mlir.bc (x + x on f32[]) exported
  for a 2x2 mesh runs on 4 partitions (the grid from nr_devices);
- named shardings on a 2x2 mesh (tiled, partial, several axes on one
  dimension, axis order) on an export for 4 devices become the HloSharding JAX's
  named_sharding_to_xla_hlo_sharding makes, computed here with NumPy
  (iota devices reshaped to the mesh, transposed, reshaped);
- a module annotation that disagrees with the export, unreduced axes, a spec
  axis the mesh lacks and a mesh of another size stop with their reason.
"""

import ast
import json
import os
import shutil
import subprocess

import numpy as np

import hl_testlib as hl

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("HL_SOURCE_DIR", os.path.join(HERE, "..", ".."))
SCHEMA = os.path.join(HERE, "jax_export_test.fbs")
SHARED = next((d for d in (os.path.join(SRC, "..", "shared", "conformance"),
                           os.path.join(SRC, "..", "..", "shared", "conformance"))
               if os.path.isdir(d)), None)
FLATC = shutil.which("flatc")
TIMEOUT_S = 90


def skip_reason():
    if not FLATC:
        return "SKIP: no flatc (apt-get install flatbuffers-compiler)"
    if not SHARED:
        return "SKIP: no ../shared/conformance"
    return None


def gspmd_case():
    """JAX's tpu_Sharding 'gspmd' case: (bytecode, inputs, expected outputs)."""
    with open(os.path.join(SHARED, "jax-export-back-compat", "tpu_Sharding.py")) as f:
        tree = ast.parse(f.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and \
                ast.unparse(node.targets[0]).endswith("['gspmd']"):
            kw = {k.arg: k.value for k in node.value.keywords}
            arr = lambda n: np.array(ast.literal_eval(n.elts[0].args[0]), np.float32)
            return (ast.literal_eval(kw["mlir_module_serialized"]), arr(kw["inputs"]),
                    arr(kw["expected_outputs"]))
    raise ValueError("no gspmd case in tpu_Sharding.py")


# --- encodings -----------------------------------------------------------------

def varint(n):
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def op_sharding(type_=3, dims=(), devices=(), last_tile_dim_replicate=False):
    """An encoded xla.OpSharding (type 0 replicated, 3 other)."""
    out = varint(1 << 3) + varint(type_)
    if dims:
        body = b"".join(varint(d) for d in dims)
        out += varint(3 << 3 | 2) + varint(len(body)) + body
    if devices:
        body = b"".join(varint(d) for d in devices)
        out += varint(4 << 3 | 2) + varint(len(body)) + body
    if last_tile_dim_replicate:
        out += varint(6 << 3) + varint(1)
    return {"hlo_sharding_proto": list(out)}


def mesh(**axes):
    return {"axis_sizes": list(axes.values()), "axis_names": list(axes.keys()),
            "axis_types": [1] * len(axes)}


def named(m, *spec, unreduced=()):
    parts = [{"axes": [] if s is None else ([s] if isinstance(s, str) else list(s))} for s in spec]
    return {"mesh": m, "spec": {"partitions": parts, "unreduced": list(unreduced)}}


def make_export(d, name, module, nr_devices, ins, outs, shape=(2, 4), unique=False):
    """ins / outs: Sharding tables; with unique, NamedShardings through the
    unique tables and 1-based indices of serialization version 10."""
    aval = {"kind": 0, "shape": [str(n) for n in shape], "dtype": 10}
    doc = {"serialization_version": 10 if unique else 9, "function_name": "f",
           "in_avals": [aval] * len(ins), "out_avals": [aval] * len(outs),
           "nr_devices": nr_devices, "platforms": ["cpu"],
           "mlir_module_serialized": [b - 256 if b > 127 else b for b in module],
           "calling_convention_version": 9, "module_kept_var_idx": list(range(len(ins)))}
    if unique:
        table = []
        def idx(s):
            if s is None:
                return 0
            if s not in table:
                table.append(s)
            return table.index(s) + 1
        doc["in_shardings_idxs"] = [idx(s) for s in ins]
        doc["out_shardings_idxs"] = [idx(s) for s in outs]
        meshes = []
        for s in table:
            if s["mesh"] not in meshes:
                meshes.append(s["mesh"])
        doc["unique_abstract_meshes"] = meshes
        doc["unique_named_shardings"] = [dict(s, abstract_mesh_idx=meshes.index(s["mesh"]))
                                         for s in table]
    else:
        table = lambda s: {} if s is None else {"named_sharding": s} if "mesh" in s else s
        doc["in_shardings"] = [table(s) for s in ins]
        doc["out_shardings"] = [table(s) for s in outs]
    src = os.path.join(d, name + ".json")
    with open(src, "w") as f:
        json.dump(doc, f)
    subprocess.run([FLATC, "-b", "-o", d, SCHEMA, src], check=True)
    out = os.path.join(d, name + ".jax_exported")
    os.rename(os.path.join(d, name + ".bin"), out)
    return out


def run_global(prog, np_, d, args=()):
    files = []
    for k, a in enumerate(args):
        files.append(os.path.join(d, "arg%d.npy" % k))
        np.save(files[-1], a)
    out = os.path.join(d, "out.npy")
    if os.path.exists(out):
        os.remove(out)
    argv = [hl.HLO_LAUNCH, "-np", str(np_), "--quiet", "--global-output", out]
    if files:
        argv += ["--global-args", ",".join(files)]
    r = hl.run(argv + [prog], timeout=TIMEOUT_S)
    return r, (np.load(out) if r.returncode == 0 and os.path.exists(out) else None)


# --- JAX's gspmd module on 2 ranks -----------------------------------------------

REP = op_sharding(0)
ROWS = op_sharding(3, (2, 1), (0, 1))
ROWS_REVERSED = op_sharding(3, (2, 1), (1, 0))
M2 = mesh(a=2)


def check_gspmd(name, ins, outs, unique=False):
    if skip_reason():
        return skip_reason()
    module, x, want = gspmd_case()
    with hl.tempdir("jaxsh") as d:
        prog = make_export(d, name, module, 2, ins, outs, unique=unique)
        for k, arg in enumerate((x, np.random.default_rng(7).standard_normal((2, 4)).astype(
                np.float32))):
            r, got = run_global(prog, 2, d, [arg])
            if got is None:
                return r.describe()
            expected = want if k == 0 else np.roll(arg, 1, axis=0)  # the row shards swapped
            msg = hl.compare("%s input %d" % (name, k), got, expected)
            if msg:
                return msg
    return None


def describe_gspmd_export():
    if skip_reason():
        return skip_reason()
    module, _, _ = gspmd_case()
    with hl.tempdir("jaxsh") as d:
        r = hl.run([hl.HLO_LAUNCH, "--describe",
                    make_export(d, "desc", module, 2, [REP], [ROWS_REVERSED])])
        lines = r.stdout.splitlines()
        for want in ("grid: 1 replica x 2 partitions", "  0: f32[2,4]  sharding {replicated}",
                     "  0: f32[2,4]  sharding {devices=[2,1]1,0}"):
            if want not in lines:
                return "missing %r\n%s" % (want, r.describe())
    return None


def expect_error(name, want, ins, outs, module=None, nr_devices=2, shape=(2, 4), unique=False):
    if skip_reason():
        return skip_reason()
    with hl.tempdir("jaxsh") as d:
        prog = make_export(d, name, module or gspmd_case()[0], nr_devices, ins, outs, shape,
                           unique)
        r, _ = run_global(prog, nr_devices, d, [np.zeros(shape, np.float32)] if ins else [])
        if r.returncode == 0 or r.timed_out or want not in r.stderr:
            return "expected a failure naming %r\n%s" % (want, r.describe())
    return None


# --- named shardings as JAX turns them into HloShardings ----------------------------

def jax_hlo_sharding(axes, spec, rank):
    """named_sharding_to_xla_hlo_sharding (jax/_src/named_sharding.py) with
    NumPy: the text of the HloSharding for an abstract mesh `axes` (name ->
    size, devices 0..n-1) and a PartitionSpec."""
    names, sizes = list(axes), list(axes.values())
    mapping = []  # (axis, dim) in spec order
    for dim, s in enumerate(spec):
        for a in ([] if s is None else [s] if isinstance(s, str) else s):
            mapping.append((a, dim))
    used = {a for a, _ in mapping}
    replicated = [i for i, n in enumerate(names) if n not in used and sizes[i] > 1]
    if not mapping or all(sizes[names.index(a)] == 1 for a, _ in mapping):
        return "{replicated}"
    shape, perm = [1] * rank, []
    for a, dim in sorted(mapping, key=lambda m: m[1]):
        shape[dim] *= axes[a]
        perm.append(names.index(a))
    if replicated:
        shape.append(int(np.prod([sizes[i] for i in replicated])))
        perm += replicated
    perm += [i for i in range(len(names)) if i not in perm]  # size-1 axes
    ids = np.arange(int(np.prod(sizes))).reshape(sizes).transpose(perm).reshape(shape)
    text = "{devices=[%s]%s" % (",".join(map(str, shape)), ",".join(map(str, ids.flatten())))
    return text + (" last_tile_dim_replicate}" if replicated else "}")


def named_conversions():
    if skip_reason():
        return skip_reason()
    module = gspmd_case()[0]
    m = {"x": 2, "y": 2}
    specs = [("x",), ("y",), (None, "x"), ("x", "y"), ("y", "x"), (("x", "y"),), (("y", "x"),),
             (None, ("y", "x")), (), (None, None)]
    with hl.tempdir("jaxsh") as d:
        for k, spec in enumerate(specs):
            prog = make_export(d, "named%d" % k, module, 4, [None],
                               [named(mesh(**m), *spec)], unique=k % 2 == 1)
            r = hl.run([hl.HLO_LAUNCH, "--describe", prog])
            want = "  0: f32[2,4]  sharding " + jax_hlo_sharding(m, spec, 2)
            if r.returncode != 0 or want not in r.stdout.splitlines():
                return "spec %r: expected %r\n%s" % (spec, want, r.describe())
    return None


def replicated_on_4_ranks():
    """StableHLO's vhlo_emit_version_api.1_1_0.mlir.bc (@main: x + x on f32[],
    no grid stated) exported for 4 devices of a 2x2 mesh: 4 partitions, the
    argument and result replicated by named shardings."""
    if skip_reason():
        return skip_reason()
    with open(os.path.join(SHARED, "stablehlo-vhlo", "vhlo_emit_version_api.1_1_0.mlir.bc"),
              "rb") as f:
        module = f.read()
    m = mesh(x=2, y=2)
    with hl.tempdir("jaxsh") as d:
        prog = make_export(d, "rep4", module, 4, [named(m)], [named(m)], shape=(), unique=True)
        r = hl.run([hl.HLO_LAUNCH, "--describe", prog])
        if "grid: 1 replica x 4 partitions" not in r.stdout.splitlines():
            return r.describe()
        x = np.array(-1.25, np.float32)
        r, got = run_global(prog, 4, d, [x])
        if got is None:
            return r.describe()
        return hl.compare("x + x", got, x + x)


if __name__ == "__main__":
    hl.require_binaries("hlo-launch")
    hl.main([
        ("proto_tiled_result", lambda: check_gspmd("proto", [REP], [ROWS])),
        ("proto_reversed_result", lambda: check_gspmd("reversed", [REP], [ROWS_REVERSED])),
        ("proto_replicated_result", lambda: check_gspmd("replicated", [REP], [REP])),
        ("named_shardings", lambda: check_gspmd("named", [named(M2)], [named(M2, "a")])),
        ("named_unique_tables", lambda: check_gspmd("unique", [named(M2)], [named(M2, "a")],
                                                    unique=True)),
        ("unspecified_input", lambda: check_gspmd("unspecified", [None], [ROWS])),
        ("describe", describe_gspmd_export),
        ("named_conversions", named_conversions),
        ("replicated_on_4_ranks", replicated_on_4_ranks),
        ("disagreeing_module", lambda: expect_error(
            "disagree", "annotated {replicated} in the module, but the export's in_shardings "
            "say {devices=[2,1]0,1}", [ROWS], [ROWS])),
        ("unreduced_axes", lambda: expect_error(
            "unreduced", "unreduced axes", [REP], [named(M2, unreduced=["a"])])),
        ("unknown_axis", lambda: expect_error(
            "unknown", "names the axis 'b', which its mesh does not have", [REP],
            [named(M2, "b")])),
        ("mesh_size", lambda: expect_error(
            "meshsize", "its mesh has 4 devices, the export 2", [REP],
            [named(mesh(a=2, b=2), "a")])),
    ])
