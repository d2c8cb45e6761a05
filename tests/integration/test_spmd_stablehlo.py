"""The SPMD partitioner on StableHLO input, in the two forms
`jax.jit(f, in_shardings=..., out_shardings=...).lower(...).as_text()` prints:
GSPMD (`mhlo.sharding = "{devices=...}"` on arguments and results,
`stablehlo.custom_call @Sharding`, shard_map as SPMDFullToShardShape / call /
SPMDShardToFullShape) and Shardy (`sdy.mesh`, `#sdy.sharding<@mesh, ...>`,
`sdy.sharding_constraint`, `sdy.manual_computation`).

Metamorphic: each program runs on the grids 1x2, 1x4, 2x2, 2x4 with random
shardings (Shardy: axes in random order per dimension, sub-axes, open
dimensions, replicated={...}, permuted device_ids; GSPMD: every form XLA
prints) through hlo-launch on real ranks with --global-args /
--global-output, and must equal NumPy's global computation (bit-exact for
integers, 1e-5 relative for f32 dots). The tile each partition holds under a
Shardy sharding is checked shard by shard against this file's own reading of
the Shardy definition (--output-dir).
"""

import os
import random
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hl_testlib as hl  # noqa: E402
from test_spmd_partitioner import MESHES, mesh_sharding  # noqa: E402


# --- Shardy shardings and their meaning -------------------------------------

class Mesh:
    def __init__(self, rng, mesh):
        self.sizes = {"x": mesh[0], "y": mesh[1]}
        n = mesh[0] * mesh[1]
        self.ids = list(range(n))
        if rng.random() < 0.4:
            rng.shuffle(self.ids)
            self.explicit = True
        else:
            self.explicit = False

    def text(self):
        ids = ", device_ids=[%s]" % ", ".join(map(str, self.ids)) if self.explicit else ""
        return 'sdy.mesh @mesh = <["x"=%d, "y"=%d]%s>' % (self.sizes["x"], self.sizes["y"], ids)

    def coords(self, pos):
        """Mesh position (row-major) -> coordinate per axis."""
        return {"x": pos // self.sizes["y"], "y": pos % self.sizes["y"]}


def sdy_sharding(rng, mesh, shape, even=True):
    """A random Shardy sharding: (text inside <...>, per dim list of (axis, pre, size))."""
    while True:
        # Units: whole axes, or an axis of 4 split into its two sub-axes of 2.
        units = []
        for a, s in mesh.sizes.items():
            if s == 4 and rng.random() < 0.3:
                units += [(a, 1, 2), (a, 2, 2)]
            elif s > 1:
                units.append((a, 1, s))
        dims = [[] for _ in shape]
        unused = []
        for u in units:
            d = rng.randrange(-1, len(shape))
            (dims[d] if d >= 0 else unused).append(u)
        for d in dims:
            rng.shuffle(d)
        tiles = [int(np.prod([u[2] for u in d])) for d in dims]
        if not even or all(s % t == 0 for s, t in zip(shape, tiles)):
            break

    def ref(u):
        a, pre, size = u
        return '"%s"' % a if size == mesh.sizes[a] else '"%s":(%d)%d' % (a, pre, size)
    parts = []
    for d in dims:
        refs = [ref(u) for u in d]
        if rng.random() < 0.2:
            refs.append("?")  # open: the partitioner may not split it further here
        parts.append("{%s}%s" % (", ".join(refs), "p%d" % rng.randrange(3) if rng.random() < 0.1 else ""))
    text = "@mesh, [%s]" % ", ".join(parts)
    whole_unused = [u[0] for u in unused if u[2] == mesh.sizes[u[0]]]
    if whole_unused and rng.random() < 0.5:
        text += ", replicated={%s}" % ", ".join('"%s"' % a for a in whole_unused)
    return text, dims


def shard_of(mesh, dims, global_array, partition):
    """The block of `global_array` that `partition` holds: its mesh position's
    coordinates, per dimension the mixed-radix tile index over the
    dimension's axes (major first), sub-axes (pre)size reading (c // pre) % size."""
    pos = mesh.ids.index(partition)
    c = mesh.coords(pos)
    index = []
    for d, refs in enumerate(dims):
        t, idx = 1, 0
        for a, pre, size in refs:
            idx = idx * size + (c[a] // pre) % size
            t *= size
        n = global_array.shape[d] // t
        index.append(slice(idx * n, (idx + 1) * n))
    return global_array[tuple(index)]


# --- programs ----------------------------------------------------------------

def tensor(dt, shape):
    return "tensor<%s%s>" % ("".join("%dx" % s for s in shape), dt)


def module(mesh_pair, body, mesh_text=""):
    n = mesh_pair[0] * mesh_pair[1]
    return ("module @jit_f attributes {mhlo.num_partitions = %d : i32, mhlo.num_replicas = 1 : i32} {\n"
            "%s%s}\n" % (n, "  %s\n" % mesh_text if mesh_text else "", body))


def arg(form, t, sh):
    if form == "sdy":
        return "%s {sdy.sharding = #sdy.sharding<%s>}" % (t, sh)
    return '%s {mhlo.layout_mode = "default", mhlo.sharding = "%s"}' % (t, sh)


def res(form, t, sh):
    if form == "sdy":
        return '%s {jax.result_info = "result", sdy.sharding = #sdy.sharding<%s>}' % (t, sh)
    return '%s {jax.result_info = "", mhlo.layout_mode = "default", mhlo.sharding = "%s"}' % (t, sh)


def constraint(form, value, t, sh):
    if form == "sdy":
        return "sdy.sharding_constraint %s <%s> : %s" % (value, sh, t)
    return 'stablehlo.custom_call @Sharding(%s) {backend_config = "", mhlo.sharding = "%s"} : (%s) -> %s' % (
        value, sh, t, t)


def draw(rng, form, mesh, mesh_pair, shape, even=True):
    if form == "sdy":
        return sdy_sharding(rng, mesh, shape, even)[0]
    if even:
        from test_spmd_partitioner import even_sharding
        return even_sharding(rng, shape, mesh_pair)
    return mesh_sharding(rng, len(shape), mesh_pair)


def rand_array(rng, shape, dt):
    g = np.random.default_rng(rng.randrange(1 << 30))
    if dt == "i32":
        return g.integers(-50, 50, size=shape).astype(np.int32)
    return g.standard_normal(shape).astype(np.float32)


def elementwise(rng, form, mesh_pair):
    mesh = Mesh(rng, mesh_pair)
    t = tensor("i32", (8, 16))
    x, y = rand_array(rng, (8, 16), "i32"), rand_array(rng, (8, 16), "i32")
    s = lambda even=True: draw(rng, form, mesh, mesh_pair, (8, 16), even)  # noqa: E731
    body = """  func.func public @main(%%arg0: %(a0)s, %%arg1: %(a1)s) -> (%(r)s) {
    %%0 = stablehlo.add %%arg0, %%arg1 : %(t)s
    %%1 = %(c)s
    %%2 = stablehlo.multiply %%1, %%arg0 : %(t)s
    %%3 = stablehlo.subtract %%2, %%arg1 : %(t)s
    return %%3 : %(t)s
  }
""" % dict(t=t, a0=arg(form, t, s(False)), a1=arg(form, t, s(False)), r=res(form, t, s()),
           c=constraint(form, "%0", t, s(False)))
    return module(mesh_pair, body, mesh.text() if form == "sdy" else ""), [x, y], (x + y) * x - y, None


def mlp(rng, form, mesh_pair):
    mesh = Mesh(rng, mesh_pair)
    x, w1, w2 = (rand_array(rng, s, "f32") for s in ((8, 16), (16, 32), (32, 16)))
    tx, t1, t2, th = (tensor("f32", s) for s in ((8, 16), (16, 32), (32, 16), (8, 32)))
    s = lambda shape, even=False: draw(rng, form, mesh, mesh_pair, shape, even)  # noqa: E731
    body = """  func.func public @main(%%arg0: %(a0)s, %%arg1: %(a1)s, %%arg2: %(a2)s) -> (%(r)s) {
    %%0 = stablehlo.dot_general %%arg0, %%arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (%(tx)s, %(t1)s) -> %(th)s
    %%cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %%1 = stablehlo.broadcast_in_dim %%cst, dims = [] : (tensor<f32>) -> %(th)s
    %%2 = stablehlo.maximum %%0, %%1 : %(th)s
    %%3 = stablehlo.dot_general %%2, %%arg2, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (%(th)s, %(t2)s) -> %(tx)s
    return %%3 : %(tx)s
  }
""" % dict(tx=tx, t1=t1, t2=t2, th=th, a0=arg(form, tx, s((8, 16))), a1=arg(form, t1, s((16, 32))),
           a2=arg(form, t2, s((32, 16))), r=res(form, tx, s((8, 16), True)))
    want = (np.maximum(x @ w1, 0) @ w2).astype(np.float32)
    return module(mesh_pair, body, mesh.text() if form == "sdy" else ""), [x, w1, w2], want, (1e-5, 1e-4)


def reduce_sum(rng, form, mesh_pair):
    mesh = Mesh(rng, mesh_pair)
    x = rand_array(rng, (8, 16), "i32")
    t = tensor("i32", (8, 16))
    dim = rng.randrange(2)
    out_shape = (16,) if dim == 0 else (8,)
    to = tensor("i32", out_shape)
    body = """  func.func public @main(%%arg0: %(a0)s) -> (%(r)s) {
    %%c = stablehlo.constant dense<0> : tensor<i32>
    %%0 = stablehlo.reduce(%%arg0 init: %%c) applies stablehlo.add across dimensions = [%(d)d] : (%(t)s, tensor<i32>) -> %(to)s
    return %%0 : %(to)s
  }
""" % dict(t=t, to=to, d=dim, a0=arg(form, t, draw(rng, form, mesh, mesh_pair, (8, 16), False)),
           r=res(form, to, draw(rng, form, mesh, mesh_pair, out_shape)))
    return module(mesh_pair, body, mesh.text() if form == "sdy" else ""), [x], x.sum(axis=dim).astype(np.int32), None


def manual(rng, form, mesh_pair):
    """A shard_map body with a psum over every partition: each partition's
    block b becomes sum over all blocks of b*b, plus b."""
    mesh = Mesh(rng, mesh_pair)
    n = mesh_pair[0] * mesh_pair[1]
    x = rand_array(rng, (8, 4), "i32")
    t, tl = tensor("i32", (8, 4)), tensor("i32", (8 // n, 4))
    groups = "dense<[[%s]]> : tensor<1x%dxi64>" % (", ".join(map(str, range(n))), n)
    psum = """"stablehlo.all_reduce"(%%m) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = %(g)s, use_global_device_ids}> ({
      ^bb0(%%p: tensor<i32>, %%q: tensor<i32>):
        %%s = stablehlo.add %%p, %%q : tensor<i32>
        stablehlo.return %%s : tensor<i32>
      }) : (%(tl)s) -> %(tl)s""" % dict(g=groups, tl=tl)
    if form == "sdy":
        split = '@mesh, [{"x", "y"}, {}]'
        body = """  func.func public @main(%%arg0: %(a0)s) -> (%(r)s) {
    %%0 = sdy.manual_computation(%%arg0) in_shardings=[<%(sp)s>] out_shardings=[<%(sp)s>] manual_axes={"x", "y"} (%%arg1: %(tl)s) {
      %%m = stablehlo.multiply %%arg1, %%arg1 : %(tl)s
      %%1 = %(psum)s
      %%2 = stablehlo.add %%1, %%arg1 : %(tl)s
      sdy.return %%2 : %(tl)s
    } : (%(t)s) -> %(t)s
    return %%0 : %(t)s
  }
""" % dict(t=t, tl=tl, sp=split, psum=psum, a0=arg(form, t, sdy_sharding(rng, mesh, (8, 4), False)[0]),
           r=res(form, t, sdy_sharding(rng, mesh, (8, 4))[0]))
        # Tile k of dim 0 is mesh position k ("x" major, "y" minor); the
        # partitions holding it are device ids of that position.
    else:
        split = "{devices=[%d,1]<=[%d]}" % (n, n)
        body = """  func.func public @main(%%arg0: %(a0)s) -> (%(r)s) {
    %%0 = stablehlo.custom_call @Sharding(%%arg0) {backend_config = "", mhlo.sharding = "%(sp)s"} : (%(t)s) -> %(t)s
    %%1 = stablehlo.custom_call @SPMDFullToShardShape(%%0) {backend_config = "", mhlo.sharding = "{manual}"} : (%(t)s) -> %(tl)s
    %%2 = call @shmap_body(%%1) : (%(tl)s) -> %(tl)s
    %%3 = stablehlo.custom_call @Sharding(%%2) {backend_config = "", mhlo.sharding = "{manual}"} : (%(tl)s) -> %(tl)s
    %%4 = stablehlo.custom_call @SPMDShardToFullShape(%%3) {backend_config = "", mhlo.sharding = "%(sp)s"} : (%(tl)s) -> %(t)s
    return %%4 : %(t)s
  }
  func.func private @shmap_body(%%arg1: %(tl)s) -> (%(tl)s) {
    %%m = stablehlo.multiply %%arg1, %%arg1 : %(tl)s
    %%1 = %(psum)s
    %%2 = stablehlo.add %%1, %%arg1 : %(tl)s
    return %%2 : %(tl)s
  }
""" % dict(t=t, tl=tl, sp=split, psum=psum, a0=arg(form, t, mesh_sharding(rng, 2, mesh_pair)),
           r=res(form, t, draw(rng, form, mesh, mesh_pair, (8, 4))))
    b = x.reshape(n, 8 // n, 4)
    want = ((b * b).sum(axis=0)[None] + b).reshape(8, 4).astype(np.int32)
    return module(mesh_pair, body, mesh.text() if form == "sdy" else ""), [x], want, None


CORPUS = [("elementwise", elementwise), ("mlp", mlp), ("reduce_sum", reduce_sum), ("manual", manual)]


def run_global(tmp, tag, text, inputs, n, extra=("--global-program",)):
    prog = os.path.join(tmp, tag + ".mlir")
    with open(prog, "w") as f:
        f.write(text)
    args = []
    for i, a in enumerate(inputs):
        p = os.path.join(tmp, "%s_arg%d.npy" % (tag, i))
        np.save(p, a)
        args.append(p)
    out = os.path.join(tmp, tag + "_out.npy")
    r = hl.run([hl.HLO_LAUNCH, "-np", str(n), "--quiet"] + list(extra) +
               ["--global-args", ",".join(args), "--global-output", out, prog])
    return prog, out, r


def corpus_test(name, build):
    def test():
        rng = random.Random("spmd-stablehlo-" + name)
        failures = []
        with hl.tempdir("spmd-shlo") as tmp:
            for form in ("sdy", "gspmd"):
                for mesh_pair in MESHES:
                    text, inputs, want, tol = build(rng, form, mesh_pair)
                    tag = "%s_%s_%dx%d" % (name, form, mesh_pair[0], mesh_pair[1])
                    prog, out, r = run_global(tmp, tag, text, inputs, mesh_pair[0] * mesh_pair[1])
                    if r.returncode != 0:
                        failures.append("%s: hlo-launch failed\n%s\n%s" % (tag, text, r.describe()))
                        continue
                    got = np.load(out)
                    if tol is None:
                        msg = None if got.dtype == want.dtype and np.array_equal(got, want) else \
                            "%s: got\n%s\nexpected\n%s" % (tag, got, want)
                    else:
                        msg = hl.compare(tag, got, want, tol)
                    if msg:
                        failures.append("%s\n%s" % (msg, text))
                    if not re.search(r'(?<!replicated=)\{"[xy]"|devices=|maximal', text):
                        continue  # all replicated: nothing is partitioned
                    e = hl.run([hl.HLO_LAUNCH, "--explain-partitioning", prog])
                    if e.returncode != 0 or "fallback:" in e.stdout:
                        failures.append("%s: explanation failed or fell back\n%s\n%s" % (tag, text, e.describe()))
        return "\n\n".join(failures) or None
    return test


def test_shardy_tiles():
    """Each partition holds the tile the Shardy sharding names (sub-axes,
    axis order, replicated={...}, permuted device_ids), checked per rank."""
    rng = random.Random("spmd-stablehlo-tiles")
    failures = []
    with hl.tempdir("spmd-shlo-tiles") as tmp:
        for mesh_pair in MESHES:
            for k in range(2):
                mesh = Mesh(rng, mesh_pair)
                n = mesh_pair[0] * mesh_pair[1]
                x = np.arange(8 * 16, dtype=np.int32).reshape(8, 16)
                t = tensor("i32", (8, 16))
                in_text, _ = sdy_sharding(rng, mesh, (8, 16), False)
                out_text, out_dims = sdy_sharding(rng, mesh, (8, 16))
                body = """  func.func public @main(%%arg0: %(a)s) -> (%(r)s) {
    %%0 = stablehlo.negate %%arg0 : %(t)s
    return %%0 : %(t)s
  }
""" % dict(t=t, a=arg("sdy", t, in_text), r=res("sdy", t, out_text))
                text = module(mesh_pair, body, mesh.text())
                tag = "tiles_%dx%d_%d" % (mesh_pair[0], mesh_pair[1], k)
                prog = os.path.join(tmp, tag + ".mlir")
                with open(prog, "w") as f:
                    f.write(text)
                xp = os.path.join(tmp, tag + "_x.npy")
                np.save(xp, x)
                out = os.path.join(tmp, tag + "_out")
                r = hl.run([hl.HLO_LAUNCH, "-np", str(n), "--quiet", "--global-program", "--global-args", xp,
                            "--output-dir", out, prog])
                if r.returncode != 0:
                    failures.append("%s: hlo-launch failed\n%s\n%s" % (tag, text, r.describe()))
                    continue
                for p in range(n):
                    got = hl.read_outputs(out, 0, p, 1)[0]
                    want = shard_of(mesh, out_dims, -x, p)
                    if got.shape != want.shape or not np.array_equal(got, want):
                        failures.append("%s partition %d: got\n%s\nexpected\n%s\n%s" % (tag, p, got, want, text))
                        break
    return "\n\n".join(failures) or None


def test_megatron_bytes_shardy():
    """The Megatron MLP written as JAX's Shardy output moves what the HLO form
    moves on the 2x4 grid (one all-gather of x, one reduce-scatter: 320 bytes,
    XLA's all-gather + all-reduce move 512)."""
    t = {s: tensor("f32", s) for s in ((8, 16), (16, 32), (32, 16), (8, 32))}
    body = """  func.func public @main(%%arg0: %(x)s {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}, %%arg1: %(w1)s {sdy.sharding = #sdy.sharding<@mesh, [{}, {"tp"}]>}, %%arg2: %(w2)s {sdy.sharding = #sdy.sharding<@mesh, [{"tp"}, {}]>}) -> (%(x)s {jax.result_info = "result", sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}) {
    %%0 = stablehlo.dot_general %%arg0, %%arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (%(x)s, %(w1)s) -> %(h)s
    %%cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %%1 = stablehlo.broadcast_in_dim %%cst, dims = [] : (tensor<f32>) -> %(h)s
    %%2 = stablehlo.maximum %%0, %%1 : %(h)s
    %%3 = stablehlo.dot_general %%2, %%arg2, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (%(h)s, %(w2)s) -> %(x)s
    return %%3 : %(x)s
  }
""" % dict(x=t[(8, 16)], w1=t[(16, 32)], w2=t[(32, 16)], h=t[(8, 32)])
    text = module((2, 4), body, 'sdy.mesh @mesh = <["dp"=2, "tp"=4]>')
    with hl.tempdir("spmd-shlo-mlp") as tmp:
        prog = os.path.join(tmp, "mlp.mlir")
        with open(prog, "w") as f:
            f.write(text)
        r = hl.run([hl.HLO_LAUNCH, "--explain-partitioning", prog])
        if r.returncode != 0:
            return r.describe()
        if "total: 2 channel collectives, 320 bytes per partition" not in r.stdout or \
                "reduce-scatter dim 1 over 4 partitions" not in r.stdout:
            return "expected an all-gather and a reduce-scatter (320 bytes):\n" + r.stdout
    return None


def test_refusals():
    """Shardy constructs without a partitioning are refused by name."""
    cases = [
        ('@mesh, [{"x"}, {}], unreduced={"y"}', "unreduced"),
        ('@nomesh, [{"x"}, {}]', "does not define"),
        ('@mesh, [{"z"}, {}]', "does not have"),
        ('@mesh, [{"x"}]', "rank 2"),
    ]
    failures = []
    with hl.tempdir("spmd-shlo-refuse") as tmp:
        for sh, words in cases:
            t = tensor("i32", (8, 4))
            body = """  func.func public @main(%%arg0: %(a)s) -> %(t)s {
    return %%arg0 : %(t)s
  }
""" % dict(t=t, a=arg("sdy", t, sh))
            prog = os.path.join(tmp, "r.mlir")
            with open(prog, "w") as f:
                f.write(module((2, 2), body, 'sdy.mesh @mesh = <["x"=2, "y"=2]>'))
            r = hl.run([hl.HLO_LAUNCH, "--explain-partitioning", prog])
            if r.returncode == 0 or words not in r.stderr:
                failures.append("%s: expected a refusal naming '%s'\n%s" % (sh, words, r.describe()))
        # A manual computation over part of the mesh (manual subgroups).
        t, tl = tensor("i32", (8, 4)), tensor("i32", (4, 4))
        body = """  func.func public @main(%%arg0: %(t)s) -> %(t)s {
    %%0 = sdy.manual_computation(%%arg0) in_shardings=[<@mesh, [{"x"}, {}]>] out_shardings=[<@mesh, [{"x"}, {}]>] manual_axes={"x"} (%%arg1: %(tl)s) {
      sdy.return %%arg1 : %(tl)s
    } : (%(t)s) -> %(t)s
    return %%0 : %(t)s
  }
""" % dict(t=t, tl=tl)
        prog = os.path.join(tmp, "m.mlir")
        with open(prog, "w") as f:
            f.write(module((2, 2), body, 'sdy.mesh @mesh = <["x"=2, "y"=2]>'))
        r = hl.run([hl.HLO_LAUNCH, "--explain-partitioning", prog])
        if r.returncode == 0 or "manual subgroups" not in r.stderr:
            failures.append("partial manual axes: expected a refusal\n" + r.describe())
    return "\n\n".join(failures) or None


def test_constraint_detected_as_global():
    """A Shardy program with a sharding constraint is partitioned without
    --global-program (sdy.sharding_constraint is a Sharding custom-call)."""
    x = np.arange(32, dtype=np.int32).reshape(8, 4)
    t = tensor("i32", (8, 4))
    body = """  func.func public @main(%%arg0: %(a)s) -> (%(r)s) {
    %%0 = stablehlo.multiply %%arg0, %%arg0 : %(t)s
    %%1 = %(c)s
    return %%1 : %(t)s
  }
""" % dict(t=t, a=arg("sdy", t, '@mesh, [{"x"}, {}]'), r=res("sdy", t, '@mesh, [{}, {"x"}]'),
           c=constraint("sdy", "%0", t, '@mesh, [{}, {"x"}]'))
    with hl.tempdir("spmd-shlo-detect") as tmp:
        prog, out, r = run_global(tmp, "d", module((1, 2), body, 'sdy.mesh @mesh = <["x"=2]>'), [x], 2, extra=())
        if r.returncode != 0:
            return r.describe()
        return hl.compare("detected", np.load(out), x * x)


def test_reshard_cheapest_plan_gspmd():
    """The reshards of test_spmd_partitioner.RESHARD_CASES written as StableHLO
    with mhlo.sharding (argument, @Sharding constraint, result) pick the same
    cheapest plan with the same bytes, and move the values right."""
    from test_spmd_partitioner import RESHARD_CASES
    failures = []
    with hl.tempdir("spmd-shlo-reshard") as tmp:
        for k, (n, shape, src, dst, plan, nbytes, _) in enumerate(RESHARD_CASES):
            t = tensor("i32", shape)
            body = """  func.func public @main(%%arg0: %(a)s) -> (%(r)s) {
    %%0 = %(c)s
    %%1 = stablehlo.negate %%0 : %(t)s
    return %%1 : %(t)s
  }
""" % dict(t=t, a=arg("gspmd", t, src), r=res("gspmd", t, dst), c=constraint("gspmd", "%arg0", t, dst))
            text = module((1, n), body)
            x = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape) - 7
            prog, out, r = run_global(tmp, "r%d" % k, text, [x], n)
            if r.returncode != 0:
                failures.append("case %d:\n%s\n%s" % (k, text, r.describe()))
                continue
            msg = hl.compare("case %d" % k, np.load(out), -x)
            if msg:
                failures.append(msg)
            e = hl.run([hl.HLO_LAUNCH, "--explain-partitioning", prog])
            m = re.search(r"reshard plans \(bytes per partition\):(.*); chosen: (\S+)", e.stdout)
            if e.returncode != 0 or not m or m.group(2) != plan or " %s %d" % (plan, nbytes) not in m.group(1):
                failures.append("case %d: expected %s moving %d bytes\n%s" % (k, plan, nbytes, e.describe()))
    return "\n\n".join(failures) or None


TESTS = [(name, corpus_test(name, build)) for name, build in CORPUS] + [
    ("shardy_tiles", test_shardy_tiles),
    ("megatron_bytes_shardy", test_megatron_bytes_shardy),
    ("refusals", test_refusals),
    ("constraint_detected_as_global", test_constraint_detected_as_global),
    ("reshard_cheapest_plan_gspmd", test_reshard_cheapest_plan_gspmd),
]

if __name__ == "__main__":
    hl.require_binaries("hlo-launch", "hlo-convert")
    hl.main(TESTS)
