"""The SPMD partitioner (runtime/spmd) through the real path: global programs
with shardings run by hlo-launch on real MPI ranks, fed with --global-args
and assembled with --global-output, must equal NumPy's run of the global
program (bit-exact for integers and element-wise programs, a tolerance for
float reductions and dots).

The corpus is generated: every program is run on the grids 1x2, 1x4, 2x2 and
2x4 (mesh axes), each time with random shardings of its parameters, its
result and, where a program has one, a Sharding constraint in the middle.
Shardings come in every form XLA prints: replicated, maximal, iota tile
assignments with transposes, explicit device lists, last_tile_dim_replicate
and last_tile_dims={replicated}. The seed is fixed, so a failure is
reproducible; the failing program text is printed.
"""

import os
import random
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hl_testlib as hl  # noqa: E402

MESHES = [(1, 2), (1, 4), (2, 2), (2, 4)]


def mesh_sharding(rng, rank, mesh, allow_maximal=True):
    """A random sharding of a rank-`rank` array over the mesh, as XLA text."""
    n = mesh[0] * mesh[1]
    roll = rng.random()
    if roll < 0.1:
        return "{replicated}"
    if allow_maximal and roll < 0.17:
        return "{maximal device=%d}" % rng.randrange(n)
    axes = [a for a in range(2) if mesh[a] > 1]
    owner = {a: rng.randrange(-1, rank) for a in axes}  # -1: replicated along the axis
    order = []
    for d in range(rank):
        mine = [a for a in axes if owner[a] == d]
        rng.shuffle(mine)
        order += mine
    repl = [a for a in axes if owner[a] == -1]
    order += repl
    tiles = [int(np.prod([mesh[a] for a in axes if owner[a] == d])) for d in range(rank)]
    rep = int(np.prod([mesh[a] for a in repl]))
    if all(t == 1 for t in tiles):
        return "{replicated}"
    dims = tiles + ([rep] if rep > 1 else [])
    # Devices of the tile assignment in row-major order (iota over the mesh,
    # transposed by `order`, plus the axes of size 1 first).
    full = [a for a in range(2) if a not in order] + order
    devices = np.arange(n).reshape(mesh).transpose(full).reshape(-1)
    if rng.random() < 0.3:  # explicit device list, possibly a random permutation
        if rng.random() < 0.5:
            devices = np.array(rng.sample(range(n), n))
        listing = ",".join(str(int(v)) for v in devices)
    else:
        perm = "" if full == [0, 1] else "T(%s)" % ",".join(map(str, full))
        listing = "<=[%d,%d]%s" % (mesh[0], mesh[1], perm)
    suffix = ""
    if rep > 1:
        suffix = " last_tile_dim_replicate" if rng.random() < 0.7 else " last_tile_dims={replicated}"
    return "{devices=[%s]%s%s}" % (",".join(map(str, dims)), listing, suffix)


def even_sharding(rng, shape, mesh):
    """A random sharding for a result whose split dimensions divide evenly
    (most programs; the `uneven` one draws uneven result shardings too)."""
    while True:
        text = mesh_sharding(rng, len(shape), mesh, False)
        m = re.match(r"\{devices=\[([0-9,]+)\]", text)
        if not m or all(s % int(t) == 0 for s, t in zip(shape, m.group(1).split(","))):
            return text


def hlo_type(a):
    return {np.dtype(np.float32): "f32", np.dtype(np.int32): "s32"}[a.dtype]


def shape_text(dtype, shape):
    return "%s[%s]" % (dtype, ",".join(map(str, shape)))


# --- the corpus: each entry builds (hlo text, inputs, expected, tolerance) ------

def elementwise(rng, mesh, dt):
    x = rand_array(rng, (8, 6), dt)
    y = rand_array(rng, (8, 6), dt)
    t = shape_text(dt, (8, 6))
    text = """
ENTRY main {
  x = %(t)s parameter(0), sharding=%(sx)s
  y = %(t)s parameter(1), sharding=%(sy)s
  s = %(t)s add(x, y)
  c = %(t)s custom-call(s), custom_call_target="Sharding", sharding=%(sc)s
  m = %(t)s multiply(c, x)
  ROOT r = %(t)s subtract(m, y), sharding=%(sr)s
}""" % dict(t=t, sx=mesh_sharding(rng, 2, mesh), sy=mesh_sharding(rng, 2, mesh),
            sc=mesh_sharding(rng, 2, mesh, False), sr=even_sharding(rng, (8, 6), mesh))
    return text, [x, y], (x + y) * x - y, None


def broadcast_transpose(rng, mesh, dt):
    x = rand_array(rng, (4, 8), dt)
    v = rand_array(rng, (4,), dt)
    text = """
ENTRY main {
  x = %(tx)s parameter(0), sharding=%(sx)s
  v = %(tv)s parameter(1), sharding=%(sv)s
  t = %(tt)s transpose(x), dimensions={1,0}
  b = %(tt)s broadcast(v), dimensions={1}
  ROOT r = %(tt)s add(t, b), sharding=%(sr)s
}""" % dict(tx=shape_text(dt, (4, 8)), tv=shape_text(dt, (4,)), tt=shape_text(dt, (8, 4)),
            sx=mesh_sharding(rng, 2, mesh), sv=mesh_sharding(rng, 1, mesh),
            sr=even_sharding(rng, (8, 4), mesh))
    return text, [x, v], x.T + v[None, :], None


def reshape(rng, mesh, dt):
    """Reshapes that keep, split and merge split dimensions (and 1-sized ones)."""
    x = rand_array(rng, (8, 12), dt)
    text = """
ENTRY main {
  x = %(tx)s parameter(0), sharding=%(sx)s
  r1 = %(t3)s reshape(x)
  n = %(t3)s negate(r1)
  c = %(t3)s custom-call(n), custom_call_target="Sharding", sharding=%(sc)s
  r2 = %(t4)s reshape(c)
  a = %(t4)s add(r2, r2)
  r3 = %(t2)s reshape(a)
  ROOT r = %(t2)s custom-call(r3), custom_call_target="Sharding", sharding=%(sr)s
}""" % dict(tx=shape_text(dt, (8, 12)), t3=shape_text(dt, (8, 3, 4)), t4=shape_text(dt, (2, 4, 1, 12)),
            t2=shape_text(dt, (16, 6)), sx=mesh_sharding(rng, 2, mesh),
            sc=mesh_sharding(rng, 3, mesh, False), sr=even_sharding(rng, (16, 6), mesh))
    return text, [x], (-2 * x).reshape(16, 6), None


def reduce_sum(rng, mesh, dt):
    x = rand_array(rng, (8, 12), dt)
    dims = rng.choice([[0], [1], [0, 1]])
    out_shape = tuple(s for i, s in enumerate(x.shape) if i not in dims)
    text = """
add {
  a = %(s)s[] parameter(0)
  b = %(s)s[] parameter(1)
  ROOT c = %(s)s[] add(a, b)
}

ENTRY main {
  x = %(tx)s parameter(0), sharding=%(sx)s
  z = %(s)s[] constant(0)
  ROOT r = %(to)s reduce(x, z), dimensions={%(d)s}, to_apply=add, sharding=%(sr)s
}""" % dict(s=dt, tx=shape_text(dt, (8, 12)), to=shape_text(dt, out_shape),
            d=",".join(map(str, dims)), sx=mesh_sharding(rng, 2, mesh),
            sr=even_sharding(rng, out_shape, mesh) if out_shape else "{replicated}")
    want = x.sum(axis=tuple(dims)).astype(x.dtype)
    return text, [x], want, (1e-5, 1e-5)


def reduce_max(rng, mesh, dt):
    x = rand_array(rng, (6, 8), dt)
    init = "-inf" if dt == "f32" else "-2147483648"
    text = """
max {
  a = %(s)s[] parameter(0)
  b = %(s)s[] parameter(1)
  ROOT c = %(s)s[] maximum(a, b)
}

ENTRY main {
  x = %(tx)s parameter(0), sharding=%(sx)s
  z = %(s)s[] constant(%(init)s)
  ROOT r = %(s)s[8] reduce(x, z), dimensions={0}, to_apply=max, sharding=%(sr)s
}""" % dict(s=dt, tx=shape_text(dt, (6, 8)), init=init, sx=mesh_sharding(rng, 2, mesh),
            sr=even_sharding(rng, (8,), mesh))
    return text, [x], x.max(axis=0), None


def dot(rng, mesh, dt):
    x = rand_array(rng, (8, 16), dt)
    w = rand_array(rng, (16, 12), dt)
    text = """
ENTRY main {
  x = %(tx)s parameter(0), sharding=%(sx)s
  w = %(tw)s parameter(1), sharding=%(sw)s
  ROOT r = %(to)s dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding=%(sr)s
}""" % dict(tx=shape_text(dt, (8, 16)), tw=shape_text(dt, (16, 12)), to=shape_text(dt, (8, 12)),
            sx=mesh_sharding(rng, 2, mesh), sw=mesh_sharding(rng, 2, mesh),
            sr=even_sharding(rng, (8, 12), mesh))
    return text, [x, w], (x @ w).astype(x.dtype), (1e-5, 1e-4)


def batch_dot(rng, mesh, dt):
    a = rand_array(rng, (4, 8, 6), dt)
    b = rand_array(rng, (4, 6, 10), dt)
    text = """
ENTRY main {
  a = %(ta)s parameter(0), sharding=%(sa)s
  b = %(tb)s parameter(1), sharding=%(sb)s
  d = %(to)s dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
  ROOT r = %(to)s add(d, d), sharding=%(sr)s
}""" % dict(ta=shape_text(dt, (4, 8, 6)), tb=shape_text(dt, (4, 6, 10)), to=shape_text(dt, (4, 8, 10)),
            sa=mesh_sharding(rng, 3, mesh), sb=mesh_sharding(rng, 3, mesh),
            sr=even_sharding(rng, (4, 8, 10), mesh))
    d = np.einsum("bij,bjk->bik", a, b).astype(a.dtype)
    return text, [a, b], d + d, (1e-5, 1e-4)


def data_movement(rng, mesh, dt):
    """slice, concatenate, pad, reverse keep splits of the dimensions they leave alone."""
    x = rand_array(rng, (8, 6), dt)
    text = """
ENTRY main {
  x = %(tx)s parameter(0), sharding=%(sx)s
  s = %(ts)s slice(x), slice={[1:7], [0:6]}
  c = %(tc)s concatenate(s, x), dimensions={0}
  z = %(d)s[] constant(0)
  p = %(tp)s pad(c, z), padding=1_1x0_2
  v = %(tp)s reverse(p), dimensions={1}
  i = %(tp)s iota(), iota_dimension=0
  ROOT r = %(tp)s add(v, i), sharding=%(sr)s
}""" % dict(d=dt, tx=shape_text(dt, (8, 6)), ts=shape_text(dt, (6, 6)), tc=shape_text(dt, (14, 6)),
            tp=shape_text(dt, (16, 8)), sx=mesh_sharding(rng, 2, mesh),
            sr=even_sharding(rng, (16, 8), mesh))
    c = np.concatenate([x[1:7], x], axis=0)
    p = np.pad(c, ((1, 1), (0, 2)))[:, ::-1]
    i = np.broadcast_to(np.arange(16)[:, None], (16, 8)).astype(x.dtype)
    return text, [x], p + i, None


def scatter(rng, mesh, dt):
    """A scatter-add of whole rows: the column dimension passes through (operand
    and updates split alike, indices whole)."""
    x = rand_array(rng, (8, 6), dt)
    u = rand_array(rng, (3, 6), dt)
    text = """
add {
  a = %(d)s[] parameter(0)
  b = %(d)s[] parameter(1)
  ROOT c = %(d)s[] add(a, b)
}

ENTRY main {
  x = %(tx)s parameter(0), sharding=%(sx)s
  u = %(tu)s parameter(1), sharding=%(su)s
  idx = s32[3,1] constant({{1},{5},{1}})
  sc = %(tx)s scatter(x, idx, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
  ROOT r = %(tx)s negate(sc), sharding=%(sr)s
}""" % dict(d=dt, tx=shape_text(dt, (8, 6)), tu=shape_text(dt, (3, 6)), sx=mesh_sharding(rng, 2, mesh),
            su=mesh_sharding(rng, 2, mesh), sr=even_sharding(rng, (8, 6), mesh))
    sc = x.copy()
    for k, row in enumerate([1, 5, 1]):
        sc[row] += u[k]
    return text, [x, u], (-sc).astype(x.dtype), None


def fallback_ops(rng, mesh, dt):
    """Ops without a rule run on the replicated value: a scatter of part of
    the rows (no dimension passes through whole)."""
    x = rand_array(rng, (8, 6), dt)
    text = """
add {
  a = %(d)s[] parameter(0)
  b = %(d)s[] parameter(1)
  ROOT c = %(d)s[] add(a, b)
}

ENTRY main {
  x = %(tx)s parameter(0), sharding=%(sx)s
  one = %(d)s[] constant(1)
  idx = s32[2,1] constant({{1},{5}})
  upd = %(d)s[2,3] broadcast(one), dimensions={}
  sc = %(tx)s scatter(x, idx, upd), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
  ROOT r = %(tx)s add(sc, x), sharding=%(sr)s
}""" % dict(d=dt, tx=shape_text(dt, (8, 6)), sx=mesh_sharding(rng, 2, mesh),
            sr=even_sharding(rng, (8, 6), mesh))
    sc = x.copy()
    sc[[1, 5], 0:3] += 1
    return text, [x], (sc + x).astype(x.dtype), None


def local_rules(rng, mesh, dt):
    """Ops that run locally on the dimensions they leave whole: a reduce whose
    init is not the identity, a reduce-window with a window along one
    dimension, dynamic-slice (whole and partial dimensions), sort along a
    dimension, dynamic-update-slice."""
    x = rand_array(rng, (8, 6), dt)
    text = """
add {
  a = %(d)s[] parameter(0)
  b = %(d)s[] parameter(1)
  ROOT c = %(d)s[] add(a, b)
}

lt {
  a = %(d)s[] parameter(0)
  b = %(d)s[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=LT
}

ENTRY main {
  x = %(tx)s parameter(0), sharding=%(sx)s
  one = %(d)s[] constant(1)
  s = %(d)s[8] reduce(x, one), dimensions={1}, to_apply=add
  w = %(tx)s reduce-window(x, one), window={size=1x3 pad=0_0x2_0}, to_apply=add
  two = s32[] constant(2)
  z = s32[] constant(0)
  ds = %(d)s[8,3] dynamic-slice(w, z, two), dynamic_slice_sizes={8,3}
  so = %(d)s[8,3] sort(ds), dimensions={1}, to_apply=lt
  u = %(tx)s dynamic-update-slice(x, so, z, two)
  b = %(tx)s broadcast(s), dimensions={0}
  ub = %(tx)s add(u, b)
  ds2 = %(d)s[4,6] dynamic-slice(x, two, z), dynamic_slice_sizes={4,6}
  ROOT r = %(d)s[12,6] concatenate(ub, ds2), dimensions={0}, sharding=%(sr)s
}""" % dict(d=dt, tx=shape_text(dt, (8, 6)), sx=mesh_sharding(rng, 2, mesh),
            sr=even_sharding(rng, (12, 6), mesh))
    s = x.sum(axis=1) + 1
    xp = np.pad(x, ((0, 0), (2, 0)), constant_values=1)  # reduce-window pads with the init value
    w = xp[:, 0:6] + xp[:, 1:7] + xp[:, 2:8] + 1
    u = x.copy()
    u[:, 2:5] = np.sort(w[:, 2:5], axis=1)
    want = np.concatenate([u + s[:, None], x[2:6]], axis=0).astype(x.dtype)
    return text, [x], want, None


def gather(rng, mesh, dt):
    """An embedding lookup (rows of a table by index, one index out of range,
    which gather clamps): index-parallel along the indices' batch dimension,
    the table's whole second dimension passed through."""
    table = rand_array(rng, (10, 8), dt)
    ids = np.array([rng.randrange(10) for _ in range(7)] + [12], dtype=np.int32).reshape(8, 1)
    text = """
ENTRY main {
  t = %(tt)s parameter(0), sharding=%(st)s
  i = s32[8,1] parameter(1), sharding=%(si)s
  g = %(to)s gather(t, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,8}
  ROOT r = %(to)s add(g, g), sharding=%(sr)s
}""" % dict(tt=shape_text(dt, (10, 8)), to=shape_text(dt, (8, 8)), st=mesh_sharding(rng, 2, mesh),
            si=mesh_sharding(rng, 2, mesh), sr=even_sharding(rng, (8, 8), mesh))
    g = table[np.clip(ids[:, 0], 0, 9)]
    return text, [table, ids], (g + g).astype(table.dtype), None


def gather_batching(rng, mesh, dt):
    """A batched lookup (a gather with operand_batching_dims /
    start_indices_batching_dims: per batch row b, rows of table[b] by index,
    one index out of range): split along the batch dims on the operand and the
    indices alike, each partition gathering from its own table rows (the
    index vector dimension is implicit: indices [4,8])."""
    table = rand_array(rng, (4, 10, 6), dt)
    ids = np.array([rng.randrange(-2, 12) for _ in range(4 * 8)], dtype=np.int32).reshape(4, 8)
    text = """
ENTRY main {
  t = %(tt)s parameter(0), sharding=%(st)s
  i = s32[4,8] parameter(1), sharding=%(si)s
  g = %(to)s gather(t, i), offset_dims={2}, collapsed_slice_dims={1}, start_index_map={1}, operand_batching_dims={0}, start_indices_batching_dims={0}, index_vector_dim=2, slice_sizes={1,1,6}
  ROOT r = %(to)s add(g, g), sharding=%(sr)s
}""" % dict(tt=shape_text(dt, (4, 10, 6)), to=shape_text(dt, (4, 8, 6)), st=mesh_sharding(rng, 3, mesh),
            si=mesh_sharding(rng, 2, mesh), sr=even_sharding(rng, (4, 8, 6), mesh))
    g = np.stack([table[b][np.clip(ids[b], 0, 9)] for b in range(4)])
    return text, [table, ids], (g + g).astype(table.dtype), None


def sort_argmax(rng, mesh, dt):
    """Tuple-valued ops run locally on the dimensions they do not work
    along: a two-operand stable sort (values and their indices, descending:
    top-k's form) and an argmax as a variadic reduce."""
    x = rand_array(rng, (8, 6), dt)
    text = """
gt {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT r = pred[] compare(a, b), direction=GT
}

argmax {
  av = s32[] parameter(0)
  ai = s32[] parameter(1)
  bv = s32[] parameter(2)
  bi = s32[] parameter(3)
  g = pred[] compare(av, bv), direction=GT
  e = pred[] compare(av, bv), direction=EQ
  l = pred[] compare(ai, bi), direction=LT
  tie = pred[] and(e, l)
  pick = pred[] or(g, tie)
  v = s32[] select(pick, av, bv)
  i = s32[] select(pick, ai, bi)
  ROOT t = (s32[], s32[]) tuple(v, i)
}

ENTRY main {
  x = s32[8,6] parameter(0), sharding=%(sx)s
  io = s32[8,6] iota(), iota_dimension=1
  s = (s32[8,6], s32[8,6]) sort(x, io), dimensions={1}, is_stable=true, to_apply=gt
  sv = s32[8,6] get-tuple-element(s), index=0
  si = s32[8,6] get-tuple-element(s), index=1
  minv = s32[] constant(-2147483648)
  zero = s32[] constant(0)
  am = (s32[8], s32[8]) reduce(x, io, minv, zero), dimensions={1}, to_apply=argmax
  ai = s32[8] get-tuple-element(am), index=1
  ab = s32[8,6] broadcast(ai), dimensions={0}
  r1 = s32[8,6] multiply(sv, si)
  ROOT r = s32[8,6] add(r1, ab), sharding=%(sr)s
}""" % dict(sx=mesh_sharding(rng, 2, mesh), sr=even_sharding(rng, (8, 6), mesh))
    order = np.argsort(-x, axis=1, kind="stable")
    sv = np.take_along_axis(x, order, axis=1)
    want = (sv * order + np.argmax(x, axis=1)[:, None]).astype(np.int32)
    return text, [x], want, None


def convolution(rng, mesh, dt):
    """A 3x3 NHWC convolution: batch and output features split locally."""
    x = rand_array(rng, (4, 6, 6, 3), dt)
    k = rand_array(rng, (3, 3, 3, 8), dt)
    text = """
ENTRY main {
  x = %(tx)s parameter(0), sharding=%(sx)s
  k = %(tk)s parameter(1), sharding=%(sk)s
  ROOT y = %(ty)s convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, sharding=%(sy)s
}""" % dict(tx=shape_text(dt, (4, 6, 6, 3)), tk=shape_text(dt, (3, 3, 3, 8)), ty=shape_text(dt, (4, 6, 6, 8)),
            sx=mesh_sharding(rng, 4, mesh), sk=mesh_sharding(rng, 4, mesh),
            sy=even_sharding(rng, (4, 6, 6, 8), mesh))
    xp = np.pad(x.astype(np.float64), ((0, 0), (1, 1), (1, 1), (0, 0)))
    y = np.zeros((4, 6, 6, 8))
    for di in range(3):
        for dj in range(3):
            y += np.einsum("bijc,co->bijo", xp[:, di:di + 6, dj:dj + 6, :], k[di, dj].astype(np.float64))
    return text, [x, k], y.astype(np.float32), (1e-4, 1e-4)


def reshard_chain(rng, mesh, dt):
    """A value moved through random Sharding constraints: every reshard path
    (all-gather, dynamic-slice, all-to-all, from maximal, uneven tiles).
    The first move is a split handed from dimension 0 to dimension 1 over
    the whole mesh, which is one all-to-all; the second the same tiles on
    the devices in reverse order, which is one collective-permute."""
    x = rand_array(rng, (8, 16), dt)
    n = mesh[0] * mesh[1]
    t = shape_text(dt, (8, 16))
    lines = ["  x = %s parameter(0), sharding={devices=[%d,1]<=[%d]}" % (t, n, n),
             '  c0 = %s custom-call(x), custom_call_target="Sharding", sharding={devices=[1,%d]<=[%d]}'
             % (t, n, n)]
    lines.append('  c1 = %s custom-call(c0), custom_call_target="Sharding", sharding={devices=[1,%d]%s}'
                 % (t, n, ",".join(str(d) for d in reversed(range(n)))))
    for k in range(2, 6):
        lines.append('  c%d = %s custom-call(c%d), custom_call_target="Sharding", sharding=%s'
                     % (k, t, k - 1, mesh_sharding(rng, 2, mesh)))
    lines.append("  ROOT r = %s negate(c5), sharding=%s" % (t, even_sharding(rng, (8, 16), mesh)))
    return "\nENTRY main {\n%s\n}" % "\n".join(lines), [x], -x, None


def reshard_uneven_chain(rng, mesh, dt):
    """Random Sharding constraints on an array whose dimensions no grid
    divides evenly: every reshard plan on padded shards (uneven all-to-all,
    local cuts of a padded dimension, gathers that drop the padding)."""
    x = rand_array(rng, (6, 10), dt)
    t = shape_text(dt, (6, 10))
    lines = ["  x = %s parameter(0), sharding=%s" % (t, mesh_sharding(rng, 2, mesh))]
    prev = "x"
    for k in range(6):
        lines.append('  c%d = %s custom-call(%s), custom_call_target="Sharding", sharding=%s'
                     % (k, t, prev, mesh_sharding(rng, 2, mesh)))
        prev = "c%d" % k
    lines.append("  ROOT r = %s negate(%s), sharding=%s" % (t, prev, mesh_sharding(rng, 2, mesh, False)))
    return "\nENTRY main {\n%s\n}" % "\n".join(lines), [x], -x, None


def uneven(rng, mesh, dt):
    """Dimensions that do not divide by the tiles (padded shards)."""
    x = rand_array(rng, (7, 5), dt)
    y = rand_array(rng, (5, 3), dt)
    text = """
add {
  a = %(d)s[] parameter(0)
  b = %(d)s[] parameter(1)
  ROOT c = %(d)s[] add(a, b)
}

ENTRY main {
  x = %(tx)s parameter(0), sharding=%(sx)s
  y = %(ty)s parameter(1), sharding=%(sy)s
  e = %(tx)s multiply(x, x)
  d = %(to)s dot(e, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  z = %(d)s[] constant(0)
  s = %(d)s[3] reduce(d, z), dimensions={0}, to_apply=add
  ROOT r = %(d)s[3] negate(s), sharding=%(sr)s
}""" % dict(d=dt, tx=shape_text(dt, (7, 5)), ty=shape_text(dt, (5, 3)), to=shape_text(dt, (7, 3)),
            sx=mesh_sharding(rng, 2, mesh), sy=mesh_sharding(rng, 2, mesh),
            sr=mesh_sharding(rng, 1, mesh, False))  # an uneven result: --global-output crops the padding
    want = -(((x * x) @ y).sum(axis=0)).astype(x.dtype)
    return text, [x, y], want, (1e-5, 1e-4)


def megatron(rng, mesh, dt):
    x = rand_array(rng, (8, 16), dt)
    w1 = rand_array(rng, (16, 32), dt)
    w2 = rand_array(rng, (32, 16), dt)
    return megatron_text(mesh, dt), [x, w1, w2], (np.maximum(x @ w1, 0) @ w2).astype(x.dtype), (1e-5, 1e-4)


def megatron_text(mesh, dt="f32"):
    a, b = mesh
    col = "{devices=[1,%d,%d]<=[%d,%d]T(1,0) last_tile_dim_replicate}" % (b, a, a, b)
    row = "{devices=[%d,1,%d]<=[%d,%d]T(1,0) last_tile_dim_replicate}" % (b, a, a, b)
    if a == 1:
        col = "{devices=[1,%d]<=[%d]}" % (b, b)
        row = "{devices=[%d,1]<=[%d]}" % (b, b)
    xs = "{devices=[%d,%d]<=[%d]}" % (a, b, a * b)
    return """
ENTRY main {
  x = %(d)s[8,16] parameter(0), sharding=%(xs)s
  w1 = %(d)s[16,32] parameter(1), sharding=%(col)s
  w2 = %(d)s[32,16] parameter(2), sharding=%(row)s
  h = %(d)s[8,32] dot(x, w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  zero = %(d)s[] constant(0)
  zb = %(d)s[8,32] broadcast(zero), dimensions={}
  r = %(d)s[8,32] maximum(h, zb)
  ROOT y = %(d)s[8,16] dot(r, w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding=%(xs)s
}""" % dict(d=dt, xs=xs, col=col, row=row)


def call(rng, mesh, dt):
    """Calls (one nested, one as the root) are inlined: the callee runs with
    its operands' shardings (an element-wise op and a dot, no fallback)."""
    x = rand_array(rng, (8, 16), dt)
    w = rand_array(rng, (16, 12), dt)
    text = """
scale {
  a = %(tx)s parameter(0)
  b = %(tx)s parameter(1)
  m = %(tx)s multiply(a, b)
  ROOT s = %(tx)s add(m, a)
}

mm {
  x = %(tx)s parameter(0)
  w = %(tw)s parameter(1)
  y = %(tx)s call(x, x), to_apply=scale
  ROOT d = %(to)s dot(y, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}

twice {
  p = %(to)s parameter(0)
  ROOT q = %(to)s add(p, p)
}

ENTRY main {
  x = %(tx)s parameter(0), sharding=%(sx)s
  w = %(tw)s parameter(1), sharding=%(sw)s
  c = %(to)s call(x, w), to_apply=mm
  ROOT r = %(to)s call(c), to_apply=twice, sharding=%(sr)s
}""" % dict(tx=shape_text(dt, (8, 16)), tw=shape_text(dt, (16, 12)), to=shape_text(dt, (8, 12)),
            sx=mesh_sharding(rng, 2, mesh), sw=mesh_sharding(rng, 2, mesh),
            sr=even_sharding(rng, (8, 12), mesh))
    want = (((x * x + x) @ w) * 2).astype(x.dtype)
    return text, [x, w], want, None if dt == "s32" else (1e-5, 1e-4)


def while_loop(rng, mesh, dt):
    """A while loop whose state stays split: three trips of a dot and an
    element-wise accumulation; the condition reads the split x (a reduce max,
    which gets its all-reduce)."""
    x = rand_array(rng, (8, 16), dt)
    w = rand_array(rng, (16, 16), dt)
    if dt == "s32":
        w = (w % 3 - 1).astype(np.int32)  # -1..1: no overflow in three trips
    st = "(s32[], %s, %s, %s)" % (shape_text(dt, (8, 16)), shape_text(dt, (16, 16)), shape_text(dt, (8, 16)))
    text = """
max {
  a = %(d)s[] parameter(0)
  b = %(d)s[] parameter(1)
  ROOT c = %(d)s[] maximum(a, b)
}

cond {
  s = %(st)s parameter(0)
  i = s32[] get-tuple-element(s), index=0
  lim = s32[] constant(3)
  lt = pred[] compare(i, lim), direction=LT
  x = %(tx)s get-tuple-element(s), index=1
  low = %(d)s[] constant(-1000000000)
  m = %(d)s[] reduce(x, low), dimensions={0,1}, to_apply=max
  big = pred[] compare(m, low), direction=GT
  ROOT p = pred[] and(lt, big)
}

body {
  s = %(st)s parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = %(tx)s get-tuple-element(s), index=1
  w = %(tw)s get-tuple-element(s), index=2
  acc = %(tx)s get-tuple-element(s), index=3
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  y = %(tx)s dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  acc2 = %(tx)s add(acc, y)
  ROOT t = %(st)s tuple(i2, y, w, acc2)
}

ENTRY main {
  x = %(tx)s parameter(0), sharding=%(sx)s
  w = %(tw)s parameter(1), sharding=%(sw)s
  zero = %(d)s[] constant(0)
  acc = %(tx)s broadcast(zero), dimensions={}
  i = s32[] constant(0)
  t = %(st)s tuple(i, x, w, acc)
  l = %(st)s while(t), condition=cond, body=body
  ROOT r = %(tx)s get-tuple-element(l), index=3, sharding=%(sr)s
}""" % dict(d=dt, st=st, tx=shape_text(dt, (8, 16)), tw=shape_text(dt, (16, 16)),
            sx=mesh_sharding(rng, 2, mesh), sw=mesh_sharding(rng, 2, mesh),
            sr=even_sharding(rng, (8, 16), mesh))
    acc = np.zeros_like(x)
    y = x
    for _ in range(3):
        y = (y @ w).astype(x.dtype)
        acc = (acc + y).astype(x.dtype)
    return text, [x, w], acc, None if dt == "s32" else (1e-5, 1e-4)


def while_chain(rng, mesh, dt):
    """Two loops in a row, the second's loop state the first's result (not a
    tuple instruction), the entry using elements of both results: propagation
    gives the loop results the shardings their states keep (the fixed point
    over the body), so the users do not gather them."""
    x = rand_array(rng, (8, 12), dt)
    st = "(s32[], %s, %s)" % (shape_text(dt, (8, 12)), shape_text(dt, (8, 12)))
    text = """
cond {
  s = %(st)s parameter(0)
  i = s32[] get-tuple-element(s), index=0
  lim = s32[] constant(3)
  ROOT lt = pred[] compare(i, lim), direction=LT
}

cond6 {
  s = %(st)s parameter(0)
  i = s32[] get-tuple-element(s), index=0
  lim = s32[] constant(6)
  ROOT lt = pred[] compare(i, lim), direction=LT
}

double {
  s = %(st)s parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = %(tx)s get-tuple-element(s), index=1
  acc = %(tx)s get-tuple-element(s), index=2
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  x2 = %(tx)s add(x, x)
  acc2 = %(tx)s add(acc, x2)
  ROOT t = %(st)s tuple(i2, x2, acc2)
}

shrink {
  s = %(st)s parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = %(tx)s get-tuple-element(s), index=1
  acc = %(tx)s get-tuple-element(s), index=2
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  acc2 = %(tx)s subtract(acc, x)
  ROOT t = %(st)s tuple(i2, x, acc2)
}

ENTRY main {
  x = %(tx)s parameter(0), sharding=%(sx)s
  zero = %(d)s[] constant(0)
  acc = %(tx)s broadcast(zero), dimensions={}
  i = s32[] constant(0)
  t = %(st)s tuple(i, x, acc)
  l1 = %(st)s while(t), condition=cond, body=double
  l2 = %(st)s while(l1), condition=cond6, body=shrink
  a = %(tx)s get-tuple-element(l2), index=2
  b = %(tx)s get-tuple-element(l1), index=1
  ROOT r = %(tx)s add(a, b), sharding=%(sr)s
}""" % dict(d=dt, st=st, tx=shape_text(dt, (8, 12)), sx=mesh_sharding(rng, 2, mesh),
            sr=even_sharding(rng, (8, 12), mesh))
    acc = np.zeros_like(x)
    y = x
    for _ in range(3):
        y = (y + y).astype(x.dtype)
        acc = (acc + y).astype(x.dtype)
    for _ in range(3):
        acc = (acc - y).astype(x.dtype)
    return text, [x], (acc + y).astype(x.dtype), None


def conditional(rng, mesh, dt):
    """Conditionals on partition-independent data (a reduce max of the split
    x, all-reduced) whose branches take split operands (an array, a tuple):
    the pred form and the branch-index form."""
    x = rand_array(rng, (8, 6), dt)
    y = rand_array(rng, (8, 6), dt)
    thr = x.max() + rng.choice([-1, 1])  # both branches get taken across the grids
    tx = shape_text(dt, (8, 6))
    text = """
max {
  a = %(d)s[] parameter(0)
  b = %(d)s[] parameter(1)
  ROOT c = %(d)s[] maximum(a, b)
}

neg {
  p = %(tx)s parameter(0)
  ROOT n = %(tx)s negate(p)
}

mul {
  p = (%(tx)s, %(tx)s) parameter(0)
  a = %(tx)s get-tuple-element(p), index=0
  b = %(tx)s get-tuple-element(p), index=1
  ROOT m = %(tx)s multiply(a, b)
}

ENTRY main {
  x = %(tx)s parameter(0), sharding=%(sx)s
  y = %(tx)s parameter(1), sharding=%(sy)s
  low = %(d)s[] constant(-1000)
  mx = %(d)s[] reduce(x, low), dimensions={0,1}, to_apply=max
  thr = %(d)s[] constant(%(thr)s)
  p = pred[] compare(mx, thr), direction=GT
  t = (%(tx)s, %(tx)s) tuple(x, y)
  c = %(tx)s conditional(p, x, t), true_computation=neg, false_computation=mul
  k = s32[] convert(p)
  c2 = %(tx)s conditional(k, c, x, y), branch_computations={neg, neg, neg}
  ROOT r = %(tx)s add(c2, y), sharding=%(sr)s
}""" % dict(d=dt, tx=tx, thr=("%d" % thr) if dt == "s32" else repr(float(thr)),
            sx=mesh_sharding(rng, 2, mesh), sy=mesh_sharding(rng, 2, mesh),
            sr=even_sharding(rng, (8, 6), mesh))
    pred = x.max() > thr
    c = -x if pred else x * y
    c2 = -x if pred else -c
    return text, [x, y], (c2 + y).astype(x.dtype), None


def conditional_tuple(rng, mesh, dt):
    """A conditional whose branch operands are a loop's result (a partitioned
    tuple, not a tuple instruction) and whose result is a tuple the entry
    takes apart: propagation gives its elements the branches' common root
    shardings."""
    x = rand_array(rng, (8, 6), dt)
    y = rand_array(rng, (8, 6), dt)
    thr = x.max() + rng.choice([-1, 1])
    tx = shape_text(dt, (8, 6))
    text = """
max {
  a = %(d)s[] parameter(0)
  b = %(d)s[] parameter(1)
  ROOT c = %(d)s[] maximum(a, b)
}

cond {
  s = (s32[], %(tx)s, %(tx)s) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  lim = s32[] constant(2)
  ROOT lt = pred[] compare(i, lim), direction=LT
}

body {
  s = (s32[], %(tx)s, %(tx)s) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  a = %(tx)s get-tuple-element(s), index=1
  b = %(tx)s get-tuple-element(s), index=2
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  a2 = %(tx)s add(a, b)
  ROOT t = (s32[], %(tx)s, %(tx)s) tuple(i2, a2, b)
}

swap {
  s = (s32[], %(tx)s, %(tx)s) parameter(0)
  a = %(tx)s get-tuple-element(s), index=1
  b = %(tx)s get-tuple-element(s), index=2
  ROOT t = (%(tx)s, %(tx)s) tuple(b, a)
}

addsub {
  s = (s32[], %(tx)s, %(tx)s) parameter(0)
  a = %(tx)s get-tuple-element(s), index=1
  b = %(tx)s get-tuple-element(s), index=2
  s1 = %(tx)s add(a, b)
  s2 = %(tx)s subtract(a, b)
  ROOT t = (%(tx)s, %(tx)s) tuple(s1, s2)
}

ENTRY main {
  x = %(tx)s parameter(0), sharding=%(sx)s
  y = %(tx)s parameter(1), sharding=%(sy)s
  i = s32[] constant(0)
  t = (s32[], %(tx)s, %(tx)s) tuple(i, x, y)
  l = (s32[], %(tx)s, %(tx)s) while(t), condition=cond, body=body
  low = %(d)s[] constant(-1000)
  mx = %(d)s[] reduce(x, low), dimensions={0,1}, to_apply=max
  thr = %(d)s[] constant(%(thr)s)
  p = pred[] compare(mx, thr), direction=GT
  c = (%(tx)s, %(tx)s) conditional(p, l, l), true_computation=swap, false_computation=addsub
  a = %(tx)s get-tuple-element(c), index=0
  b = %(tx)s get-tuple-element(c), index=1
  ROOT r = %(tx)s subtract(a, b), sharding=%(sr)s
}""" % dict(d=dt, tx=tx, thr=("%d" % thr) if dt == "s32" else repr(float(thr)),
            sx=mesh_sharding(rng, 2, mesh), sy=mesh_sharding(rng, 2, mesh),
            sr=even_sharding(rng, (8, 6), mesh))
    a = (x + y + y).astype(x.dtype)
    if x.max() > thr:
        want = y - a
    else:
        want = (a + y) - (a - y)
    return text, [x, y], want.astype(x.dtype), None


def rand_array(rng, shape, dt):
    seed = rng.randrange(1 << 30)
    g = np.random.default_rng(seed)
    if dt == "s32":
        return g.integers(-50, 50, size=shape).astype(np.int32)
    return g.standard_normal(shape).astype(np.float32)


CORPUS = [
    ("elementwise", elementwise, ["s32", "f32"]),
    ("broadcast_transpose", broadcast_transpose, ["s32"]),
    ("reshape", reshape, ["s32"]),
    ("reduce_sum", reduce_sum, ["s32", "f32"]),
    ("reduce_max", reduce_max, ["s32"]),
    ("dot", dot, ["s32", "f32"]),
    ("batch_dot", batch_dot, ["f32"]),
    ("data_movement", data_movement, ["s32"]),
    ("fallback_ops", fallback_ops, ["s32"]),
    ("local_rules", local_rules, ["s32"]),
    ("convolution", convolution, ["f32"]),
    ("gather", gather, ["s32"]),
    ("gather_batching", gather_batching, ["s32"]),
    ("sort_argmax", sort_argmax, ["s32"]),
    ("scatter", scatter, ["s32"]),
    ("uneven", uneven, ["s32"]),
    ("reshard_chain", reshard_chain, ["s32"]),
    ("reshard_uneven_chain", reshard_uneven_chain, ["s32"]),
    ("megatron", megatron, ["f32"]),
    ("call", call, ["s32", "f32"]),
    ("while_loop", while_loop, ["s32", "f32"]),
    ("while_chain", while_chain, ["s32", "f32"]),
    ("conditional", conditional, ["s32", "f32"]),
    ("conditional_tuple", conditional_tuple, ["s32"]),
]

# The rule a program's --explain-partitioning must name.
EXPLAIN_RULE = {
    "call": "call: mm inlined",
    "while_loop": "rule: while, the loop state keeps the shardings",
    "while_chain": "rule: while, the loop state keeps the shardings",
    "conditional_tuple": "rule: conditional, each branch on its operand's shardings",
    "conditional": "rule: conditional, each branch on its operand's shardings",
}


def run_global(tmp, tag, text, inputs, mesh):
    n = mesh[0] * mesh[1]
    prog = os.path.join(tmp, tag + ".hlo")
    with open(prog, "w") as f:
        f.write("HloModule %s, num_partitions=%d\n%s\n" % (tag, n, text))
    args = []
    for i, a in enumerate(inputs):
        p = os.path.join(tmp, "%s_arg%d.npy" % (tag, i))
        np.save(p, a)
        args.append(p)
    out = os.path.join(tmp, tag + "_out.npy")
    r = hl.run([hl.HLO_LAUNCH, "-np", str(n), "--quiet", "--global-program", "--global-args",
                ",".join(args), "--global-output", out, prog])
    return prog, out, r


def corpus_test(name, build, dtypes, rounds):
    def test():
        rng = random.Random("spmd-" + name)
        failures = []
        with hl.tempdir("spmd") as tmp:
            for mesh in MESHES:
                for dt in dtypes:
                    # One random draw per case and grid, two for the integer element-wise
                    # program and the reshard chain (the most sharding combinations); the
                    # launches are what takes time on a loaded machine.
                    twice = dt == "s32" and name in ("elementwise", "reshard_chain", "reshard_uneven_chain")
                    for k in range(rounds if twice else 1):
                        text, inputs, want, tol = build(rng, mesh, dt)
                        tag = "%s_%dx%d_%s_%d" % (name, mesh[0], mesh[1], dt, k)
                        prog, out, r = run_global(tmp, tag, text, inputs, mesh)
                        if r.returncode != 0:
                            failures.append("%s: hlo-launch failed\n%s\n%s" % (tag, text, r.describe()))
                            continue
                        got = np.load(out)
                        if tol is None:  # integer or element-wise: bit-exact
                            msg = None if got.dtype == want.dtype and np.array_equal(got, want) else \
                                "%s: got\n%s\nexpected\n%s" % (tag, got, want)
                        else:
                            msg = hl.compare(tag, got, np.asarray(want), tol)
                        if msg:
                            failures.append("%s\n%s" % (msg, text))
                        # Ops with a rule must not have run replicated.
                        e = hl.run([hl.HLO_LAUNCH, "--explain-partitioning", prog])
                        if "devices=" not in text and "maximal" not in text:
                            continue  # all replicated: nothing is partitioned
                        fell_back = "fallback:" in e.stdout
                        if name == "reshard_chain" and ("all-to-all from dim 0 to dim 1" not in e.stdout
                                                        or "collective-permute" not in e.stdout):
                            failures.append("%s: no all-to-all or collective-permute\n%s" % (tag, e.stdout))
                        if name in EXPLAIN_RULE and EXPLAIN_RULE[name] not in e.stdout:
                            failures.append("%s: explanation lacks %r\n%s" % (tag, EXPLAIN_RULE[name], e.stdout))
                        if e.returncode != 0 or fell_back != (name == "fallback_ops"):
                            failures.append("%s: explanation %s a fallback\n%s\n%s" % (
                                tag, "has" if fell_back else "lacks", text, e.describe()))
        return "\n\n".join(failures) or None
    return test


def test_megatron_bytes():
    """The Megatron MLP moves no more than XLA (one all-gather of x, one
    all-reduce of the output): one all-gather of x and one reduce-scatter."""
    with hl.tempdir("spmd-megatron") as tmp:
        prog = os.path.join(tmp, "mlp.hlo")
        with open(prog, "w") as f:
            f.write("HloModule mlp, num_partitions=8\n%s\n" % megatron_text((2, 4)))
        r = hl.run([hl.HLO_LAUNCH, "--explain-partitioning", prog])
        if r.returncode != 0:
            return r.describe()
        gathers = re.findall(r"all-gather dim (\d+) over (\d+) partitions.*: (\d+) bytes", r.stdout)
        scatters = re.findall(r"reduce-scatter dim (\d+) over (\d+) partitions.*: (\d+) bytes", r.stdout)
        # x is [8,16] f32 split [2,4]: XLA all-gathers it along dim 1 over the
        # 4-way axis (result [4,16] = 256 bytes) and all-reduces the [4,16]
        # output over the same axis (256 bytes), 512 in all. The output is
        # wanted split [2,4], so a reduce-scatter along dim 1 over the same
        # groups leaves each partition its [4,4] (64 bytes).
        if gathers != [("1", "4", "256")] or scatters != [("1", "4", "64")] or "all-reduce" in r.stdout:
            return "unexpected collectives:\n" + r.stdout
        if "total: 2 channel collectives, 320 bytes per partition" not in r.stdout:
            return "unexpected total:\n" + r.stdout
    return None


def test_convert_writes_runnable_module():
    """hlo-convert --partition writes a per-partition module (text and HloProto) that
    hlo-launch runs like an XLA-compiled dump, with per-rank inputs."""
    rng = np.random.default_rng(7)
    x = rng.integers(-9, 9, size=(4, 6)).astype(np.int32)
    text = """HloModule conv, num_partitions=2

ENTRY main {
  x = s32[4,6] parameter(0), sharding={devices=[2,1]<=[2]}
  ROOT y = s32[4,6] add(x, x), sharding={replicated}
}
"""
    with hl.tempdir("spmd-convert") as tmp:
        src = os.path.join(tmp, "g.hlo")
        with open(src, "w") as f:
            f.write(text)
        for out_name in ("p.hlo", "p.pb"):
            dst = os.path.join(tmp, out_name)
            r = hl.convert(src, dst, "--partition")
            if r.returncode != 0:
                return r.describe()
            if out_name.endswith(".hlo"):
                body = open(dst).read()
                if "all-gather" not in body or "s32[2,6]" not in body:
                    return "per-partition text lacks the all-gather or the local shape:\n" + body
            # Each partition gets its own half (the per-rank layout:
            # <args-dir>/partition<p>/arg0.npy is not supported, so use
            # global args through the module's parameter sharding).
            xp = os.path.join(tmp, "x.npy")
            np.save(xp, x)
            o = os.path.join(tmp, out_name + ".out.npy")
            r = hl.run([hl.HLO_LAUNCH, "-np", "2", "--quiet", "--global-args", xp, "--global-output", o, dst])
            if r.returncode != 0:
                return r.describe()
            msg = hl.compare(out_name, np.load(o), x + x)
            if msg:
                return msg
    return None


def test_while_loop_and_tuple_root_shards():
    """A while loop (its state keeps x's split) and a tuple
    root with one sharding per element; each rank's outputs (--output-dir)
    are its shards, cut here by NumPy from the sharding's definition."""
    text = """HloModule loop, num_partitions=4

body {
  p = (s32[], s32[8,6]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = s32[8,6] get-tuple-element(p), index=1
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  x2 = s32[8,6] add(x, x)
  ROOT t = (s32[], s32[8,6]) tuple(i2, x2)
}

cond {
  p = (s32[], s32[8,6]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  three = s32[] constant(3)
  ROOT lt = pred[] compare(i, three), direction=LT
}

ENTRY main {
  x = s32[8,6] parameter(0), sharding={devices=[2,2]<=[4]}
  zero = s32[] constant(0)
  t = (s32[], s32[8,6]) tuple(zero, x)
  w = (s32[], s32[8,6]) while(t), condition=cond, body=body
  y = s32[8,6] get-tuple-element(w), index=1
  n = s32[8,6] negate(y)
  ROOT r = (s32[8,6], s32[8,6]) tuple(n, x), sharding={{devices=[2,2]<=[4]}, {devices=[1,2,2]<=[4] last_tile_dim_replicate}}
}
"""
    x = np.arange(48, dtype=np.int32).reshape(8, 6) - 20
    with hl.tempdir("spmd-loop") as tmp:
        prog = os.path.join(tmp, "loop.hlo")
        with open(prog, "w") as f:
            f.write(text)
        xp = os.path.join(tmp, "x.npy")
        np.save(xp, x)
        out = os.path.join(tmp, "out")
        r = hl.run([hl.HLO_LAUNCH, "-np", "4", "--global-args", xp, "--output-dir", out, "--quiet", prog])
        if r.returncode != 0:
            return r.describe()
        n = -8 * x
        for p in range(4):
            got = hl.read_outputs(out, 0, p, 2)
            # devices=[2,2]<=[4]: partition p holds tile (p // 2, p % 2) of [4,3].
            want0 = n[(p // 2) * 4:(p // 2 + 1) * 4, (p % 2) * 3:(p % 2 + 1) * 3]
            # devices=[1,2,2]<=[4] last_tile_dim_replicate: p holds column tile p // 2.
            want1 = x[:, (p // 2) * 3:(p // 2 + 1) * 3]
            for k, (g, w) in enumerate(zip(got, (want0, want1))):
                if g.shape != w.shape or not np.array_equal(g, w):
                    return "partition %d element %d: got\n%s\nexpected\n%s" % (p, k, g, w)
        e = hl.run([hl.HLO_LAUNCH, "--explain-partitioning", prog])
        if "rule: while" not in e.stdout or "fallback" in e.stdout:
            return "the while loop should keep its state split:\n" + e.stdout
    return None


def test_sort_tuple_root_shards():
    """A locally sorted tuple as the root, its elements moved to the root's
    tuple sharding; each rank's outputs (--output-dir) checked against
    NumPy's shards."""
    text = """HloModule st, num_partitions=4

gt {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT r = pred[] compare(a, b), direction=GT
}

ENTRY main {
  x = s32[8,6] parameter(0), sharding={devices=[2,2]<=[4]}
  io = s32[8,6] iota(), iota_dimension=1
  ROOT s = (s32[8,6], s32[8,6]) sort(x, io), dimensions={1}, is_stable=true, to_apply=gt, sharding={{devices=[4,1]<=[4]}, {replicated}}
}
"""
    x = (np.arange(48, dtype=np.int32) * 7 % 13).reshape(8, 6)
    order = np.argsort(-x, axis=1, kind="stable").astype(np.int32)
    sv = np.take_along_axis(x, order, axis=1)
    with hl.tempdir("spmd-sort") as tmp:
        prog = os.path.join(tmp, "sort.hlo")
        with open(prog, "w") as f:
            f.write(text)
        xp = os.path.join(tmp, "x.npy")
        np.save(xp, x)
        out = os.path.join(tmp, "out")
        r = hl.run([hl.HLO_LAUNCH, "-np", "4", "--global-program", "--global-args", xp, "--output-dir", out,
                    "--quiet", prog])
        if r.returncode != 0:
            return r.describe()
        for p in range(4):
            got = hl.read_outputs(out, 0, p, 2)
            for k, (g, w) in enumerate(zip(got, (sv[2 * p:2 * p + 2], order))):
                if g.shape != w.shape or not np.array_equal(g, w):
                    return "partition %d element %d: got\n%s\nexpected\n%s" % (p, k, g, w)
        e = hl.run([hl.HLO_LAUNCH, "--explain-partitioning", prog])
        if "rule: sort along unsplit dimensions" not in e.stdout or "fallback" in e.stdout:
            return "the sort should run locally:\n" + e.stdout
    return None


def test_refined_split_moves_nothing():
    """A finer split of tiles each device already holds is cut from its own
    shard: no collective, and the values are right."""
    text = """HloModule refine, num_partitions=8

ENTRY main {
  x = s32[8,4] parameter(0), sharding={devices=[2,1,4]<=[8] last_tile_dim_replicate}
  c = s32[8,4] custom-call(x), custom_call_target="Sharding", sharding={devices=[8,1]<=[8]}
  ROOT y = s32[8,4] negate(c), sharding={devices=[8,1]<=[8]}
}
"""
    x = np.arange(32, dtype=np.int32).reshape(8, 4)
    with hl.tempdir("spmd-refine") as tmp:
        prog = os.path.join(tmp, "refine.hlo")
        with open(prog, "w") as f:
            f.write(text)
        e = hl.run([hl.HLO_LAUNCH, "--explain-partitioning", prog])
        if e.returncode != 0 or "total: 0 channel collectives, 0 bytes per partition" not in e.stdout:
            return "expected a local cut:\n" + e.describe()
        xp, out = os.path.join(tmp, "x.npy"), os.path.join(tmp, "out.npy")
        np.save(xp, x)
        r = hl.run([hl.HLO_LAUNCH, "-np", "8", "--quiet", "--global-args", xp, "--global-output", out, prog])
        if r.returncode != 0:
            return r.describe()
        return hl.compare("refine", np.load(out), -x)


# Reshards whose cheapest plan is known: (partitions, shape, source, target,
# plan chosen, bytes per partition of the move). Bytes worked out by hand
# (s32: 4 bytes an element), each against the all-gather + dynamic-slice
# plan's, which the explanation lists too.
RESHARD_CASES = [
    # A split handed from dim 0 to dim 1 on 2 partitions: one all-to-all of
    # the [4,16] shard (256 bytes), not an all-gather of [8,16] (512).
    (2, (8, 16), "{devices=[2,1]<=[2]}", "{devices=[1,2]<=[2]}", "direct", 256, 512),
    # Uneven: [6,10] split 4 ways along 0 ([2,10] shards) to 4 ways along 1:
    # dim 1 padded to 12, one all-to-all of [2,12] = 96 bytes; gathering
    # [8,10] would be 320.
    (4, (6, 10), "{devices=[4,1]<=[4]}", "{devices=[1,4]<=[4]}", "direct", 96, 320),
    # The same split change with the devices in reverse order: a
    # collective-permute of the [2,16] shard, then the all-to-all (128 + 128);
    # gathering is [8,16] = 512.
    (4, (8, 16), "{devices=[4,1]<=[4]}", "{devices=[1,4]3,2,1,0}", "permute+direct", 256, 512),
    # Rows over pairs {0,1},{2,3} to columns over pairs {0,2},{1,3}: each
    # device cuts its column half first, then the row halves are gathered
    # over {0,2},{1,3}: [8,8] = 256 bytes instead of [8,16] = 512.
    (4, (8, 16), "{devices=[2,1,2]<=[4] last_tile_dim_replicate}",
     "{devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}", "direct", 256, 512),
    # Rows in halves to rows in quarters on other devices: cut the quarter of
    # the half each device holds (free), then a collective-permute of [2,16]
    # = 128 bytes; gathering the halves is [8,16] = 512.
    (4, (8, 16), "{devices=[2,1,2]<=[4] last_tile_dim_replicate}", "{devices=[4,1]2,3,0,1}",
     "direct+permute", 128, 512),
    # Row halves (devices {0,1} and {2,3}) to column quarters: an all-to-all
    # over pairs {0,2},{1,3} from rows to columns, each sender first cutting
    # from both column halves the quarter its pair keeps: [4,8] = 128 bytes
    # moved instead of the [4,16] shard (256), or [8,16] = 512 gathered.
    (4, (8, 16), "{devices=[2,1,2]<=[4] last_tile_dim_replicate}", "{devices=[1,4]<=[4]}", "direct", 128, 512),
    # Column quarters to row halves held by {0,2} and {1,3}: an all-to-all
    # over {0,1},{2,3} hands the fine half of the column split to the rows
    # ([8,4] = 128 bytes), then the column halves are gathered over
    # {0,2},{1,3} ([4,16] = 256): 384 instead of gathering [8,16] = 512.
    (4, (8, 16), "{devices=[1,4]<=[4]}", "{devices=[2,1,2]0,2,1,3 last_tile_dim_replicate}",
     "partial-all-to-all+direct", 384, 512),
    # Only the devices differ: one collective-permute of the [8,4] shard.
    (4, (8, 16), "{devices=[1,4]<=[4]}", "{devices=[1,4]3,1,2,0}", "permute", 128, 512),
]


def test_reshard_cheapest_plan():
    """Each reshard of RESHARD_CASES picks the cheapest plan (named and costed
    in --explain-partitioning, bytes as worked out by hand), and the moved
    value is right on real ranks."""
    failures = []
    with hl.tempdir("spmd-reshard") as tmp:
        for k, (n, shape, src, dst, plan, nbytes, gather_bytes) in enumerate(RESHARD_CASES):
            t = shape_text("s32", shape)
            text = """HloModule reshard%d, num_partitions=%d

ENTRY main {
  x = %s parameter(0), sharding=%s
  c = %s custom-call(x), custom_call_target="Sharding", sharding=%s
  ROOT y = %s negate(c), sharding=%s
}
""" % (k, n, t, src, t, dst, t, dst)
            prog = os.path.join(tmp, "r%d.hlo" % k)
            with open(prog, "w") as f:
                f.write(text)
            e = hl.run([hl.HLO_LAUNCH, "--explain-partitioning", prog])
            m = re.search(r"reshard plans \(bytes per partition\):(.*); chosen: (\S+)", e.stdout)
            costs = dict((name.strip(), int(b)) for name, b in
                         (item.rsplit(" ", 1) for item in m.group(1).split(","))) if m else {}
            if (e.returncode != 0 or not m or m.group(2) != plan or costs.get(plan) != nbytes
                    or costs.get("all-gather+slice") != gather_bytes or min(costs.values()) != nbytes
                    or "total: " not in e.stdout or " %d bytes per partition" % nbytes not in e.stdout):
                failures.append("case %d: expected %s moving %d bytes (all-gather+slice %d)\n%s\n%s"
                                % (k, plan, nbytes, gather_bytes, text, e.describe()))
                continue
            x = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape) - 7
            xp, out = os.path.join(tmp, "x%d.npy" % k), os.path.join(tmp, "out%d.npy" % k)
            np.save(xp, x)
            r = hl.run([hl.HLO_LAUNCH, "-np", str(n), "--quiet", "--global-args", xp, "--global-output", out, prog])
            if r.returncode != 0:
                failures.append("case %d:\n%s" % (k, r.describe()))
                continue
            msg = hl.compare("case %d" % k, np.load(out), -x)
            if msg:
                failures.append(msg)
    return "\n\n".join(failures) or None


def test_loop_results_follow_the_state():
    """The while_chain program with x and the result split alike: the loops'
    results are held as their states (the second loop's state is the first's
    result), and the entry uses them where they are: no collective at all."""
    rng = random.Random("spmd-loop-results")
    text, inputs, want, _ = while_chain(rng, (1, 4), "s32")
    text = re.sub(r"parameter\(0\), sharding=\{[^}]*\}", "parameter(0), sharding={devices=[4,1]<=[4]}", text)
    text = re.sub(r"add\(a, b\), sharding=\{[^}]*\}", "add(a, b), sharding={devices=[4,1]<=[4]}", text)
    with hl.tempdir("spmd-loop-results") as tmp:
        prog, out, r = run_global(tmp, "chain", text, inputs, (1, 4))
        if r.returncode != 0:
            return r.describe()
        e = hl.run([hl.HLO_LAUNCH, "--explain-partitioning", prog])
        if (e.returncode != 0 or "fallback" in e.stdout or e.stdout.count("rule: while") != 2
                or "total: 0 channel collectives, 0 bytes per partition" not in e.stdout):
            return "expected both loops partitioned and nothing moved:\n" + e.describe()
        return hl.compare("chain", np.load(out), want)


def test_two_replicas():
    """A global program on a grid of 2 replicas x 4 partitions: each replica
    runs the partitioned program on its own copy, its collectives within its
    own partitions; every rank's output (--output-dir) is checked, replica 1's
    included. The Megatron MLP (all-gather, reduce-scatter) and the reshard
    chain (all-to-all, collective-permute, dynamic-slice) with a replicated
    root."""
    rng = random.Random("spmd-replicas")
    g = np.random.default_rng(3)
    x, w1, w2 = (g.standard_normal(s).astype(np.float32) for s in ((8, 16), (16, 32), (32, 16)))
    mlp_want = np.maximum(x @ w1, 0) @ w2
    chain_text, chain_in, chain_want, _ = reshard_chain(rng, (2, 2), "s32")
    chain_text = re.sub(r"ROOT r = (.*) negate\(c5\), sharding=.*", r"ROOT r = \1 negate(c5), sharding={replicated}",
                        chain_text)
    cases = [("mlp", megatron_text((2, 2)), [x, w1, w2],
              lambda p: mlp_want[(p // 2) * 4:(p // 2 + 1) * 4, (p % 2) * 8:(p % 2 + 1) * 8], (1e-5, 1e-4)),
             ("chain", chain_text, chain_in, lambda p: chain_want, None)]
    with hl.tempdir("spmd-replicas") as tmp:
        for tag, text, inputs, want_of, tol in cases:
            prog = os.path.join(tmp, tag + ".hlo")
            with open(prog, "w") as f:
                f.write("HloModule %s, num_partitions=4, replica_count=2\n%s\n" % (tag, text))
            args = []
            for i, a in enumerate(inputs):
                args.append(os.path.join(tmp, "%s_%d.npy" % (tag, i)))
                np.save(args[-1], a)
            out = os.path.join(tmp, tag + "_out")
            r = hl.run([hl.HLO_LAUNCH, "-np", "8", "--quiet", "--global-program", "--global-args", ",".join(args),
                        "--output-dir", out, prog])
            if r.returncode != 0:
                return "%s\n%s" % (tag, r.describe())
            for rep in range(2):
                for p in range(4):
                    got = hl.read_outputs(out, rep, p, 1)[0]
                    msg = hl.compare("%s replica %d partition %d" % (tag, rep, p), got, want_of(p), tol)
                    if msg:
                        return msg + "\n" + text
    return None


def test_detection():
    """Which programs hlo-launch partitions by itself: one with a Sharding
    custom-call, and one whose --global-args arrays have the split
    parameters' own shapes; a program already partitioned (the global arrays
    are larger than its parameters) runs as it is; one that could be either
    runs as it is, with a note."""
    x = np.arange(32, dtype=np.int32).reshape(8, 4)
    plain = """HloModule p, num_partitions=2

ENTRY main {
  x = s32[8,4] parameter(0), sharding={devices=[2,1]<=[2]}
  ROOT y = s32[8,4] multiply(x, x), sharding={devices=[2,1]<=[2]}
}
"""
    constrained = plain.replace("ROOT y = s32[8,4] multiply(x, x), sharding={devices=[2,1]<=[2]}",
                                "m = s32[8,4] multiply(x, x)\n  ROOT y = s32[8,4] custom-call(m), "
                                "custom_call_target=\"Sharding\", sharding={replicated}")
    with hl.tempdir("spmd-detect") as tmp:
        def path(name, text):
            p = os.path.join(tmp, name)
            with open(p, "w") as f:
                f.write(text)
            return p
        xp = os.path.join(tmp, "x.npy")
        np.save(xp, x)
        half = os.path.join(tmp, "half.npy")  # global array of a per-partition [8,4] program
        x16 = np.arange(64, dtype=np.int32).reshape(16, 4)
        np.save(half, x16)
        cases = [
            # (program, global arg, expected global output, note expected)
            (path("plain.hlo", plain), xp, x * x, False),            # shapes match: global
            (path("plain2.hlo", plain), half, x16 * x16, False),      # larger array: per-partition
            (path("constrained.hlo", constrained), xp, x * x, False),  # Sharding custom-call
        ]
        for prog, arg, want, _ in cases:
            out = os.path.join(tmp, "out.npy")
            if os.path.exists(out):
                os.remove(out)
            r = hl.run([hl.HLO_LAUNCH, "-np", "2", "--quiet", "--global-args", arg, "--global-output", out, prog])
            if r.returncode != 0:
                return r.describe()
            msg = hl.compare(os.path.basename(prog), np.load(out), want)
            if msg:
                return msg
        # Per-rank inputs, shardings on the parameters only: run as it is, with a note.
        args = os.path.join(tmp, "args")
        hl.write_args(args, [x])
        r = hl.run([hl.HLO_LAUNCH, "-np", "2", "--args-dir", args, "--quiet", cases[0][0]])
        if r.returncode != 0 or "pass --global-program" not in r.stderr:
            return "expected a run as a per-partition program with a note:\n" + r.describe()
    return None


MANUAL_REGION = """HloModule manual, num_partitions=4

add {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT c = s32[] add(a, b)
}

ENTRY main {
  x = s32[8,4] parameter(0), sharding={devices=[4,1]<=[4]}
  c = s32[8,4] custom-call(x), custom_call_target="Sharding", sharding={devices=[4,1]<=[4]}
  m = s32[2,4] custom-call(c), custom_call_target="SPMDFullToShardShape", sharding={manual}
  s = s32[2,4] multiply(m, m)
  ar = s32[2,4] all-reduce(s), channel_id=1, replica_groups={{0,1,2,3}}, use_global_device_ids=true, to_apply=add
  one = s32[] constant(1)
  ob = s32[2,4] broadcast(one), dimensions={}
  n = s32[2,4] add(ar, m)
  n1 = s32[2,4] add(n, ob)
  cm = s32[2,4] custom-call(n1), custom_call_target="Sharding", sharding={manual}
  f = s32[8,4] custom-call(cm), custom_call_target="SPMDShardToFullShape", sharding={devices=[4,1]<=[4]}
  ROOT r = s32[8,4] negate(f), sharding={devices=[1,4]<=[4]}
}
"""


def test_manual_region():
    """A shard_map body (SPMDFullToShardShape .. SPMDShardToFullShape, with its
    own all-reduce) runs per partition unchanged, between partitioned code."""
    x = np.arange(32, dtype=np.int32).reshape(8, 4) - 10
    b = x.reshape(4, 2, 4)  # partition p's manual value is rows 2p, 2p+1
    want = (-((b * b).sum(axis=0)[None] + b + 1)).reshape(8, 4).astype(np.int32)
    with hl.tempdir("spmd-manual") as tmp:
        prog = os.path.join(tmp, "manual.hlo")
        with open(prog, "w") as f:
            f.write(MANUAL_REGION)
        xp, out = os.path.join(tmp, "x.npy"), os.path.join(tmp, "out.npy")
        np.save(xp, x)
        r = hl.run([hl.HLO_LAUNCH, "-np", "4", "--quiet", "--global-args", xp, "--global-output", out, prog])
        if r.returncode != 0:
            return r.describe()
        return hl.compare("manual", np.load(out), want)


def test_explain_refuses_partitioned_program():
    with hl.tempdir("spmd-explain") as tmp:
        prog = os.path.join(tmp, "p.hlo")
        with open(prog, "w") as f:
            f.write("HloModule p\n\nENTRY main {\n  x = f32[4] parameter(0)\n  ROOT y = f32[4] negate(x)\n}\n")
        r = hl.run([hl.HLO_LAUNCH, "--explain-partitioning", prog])
        if r.returncode == 0 or "not a global program" not in r.stderr:
            return "expected a refusal naming the reason:\n" + r.describe()
    return None


TESTS = [(name, corpus_test(name, build, dts, 2)) for name, build, dts in CORPUS] + [
    ("megatron_bytes", test_megatron_bytes),
    ("convert_writes_runnable_module", test_convert_writes_runnable_module),
    ("while_loop_and_tuple_root_shards", test_while_loop_and_tuple_root_shards),
    ("sort_tuple_root_shards", test_sort_tuple_root_shards),
    ("refined_split_moves_nothing", test_refined_split_moves_nothing),
    ("reshard_cheapest_plan", test_reshard_cheapest_plan),
    ("loop_results_follow_the_state", test_loop_results_follow_the_state),
    ("two_replicas", test_two_replicas),
    ("detection", test_detection),
    ("manual_region", test_manual_region),
    ("explain_refuses_partitioned_program", test_explain_refuses_partitioned_program),
]

if __name__ == "__main__":
    hl.require_binaries("hlo-launch", "hlo-convert")
    hl.main(TESTS)
