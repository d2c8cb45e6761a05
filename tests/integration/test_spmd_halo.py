"""Halo exchanges in the SPMD partitioner (runtime/spmd/halo.c): slice, pad,
reduce-window and convolution along a split dimension run on each
partition's shard plus the few elements its outputs read from the
neighbouring shards (collective-permute), not on an all-gathered array.

Every program is global, run by hlo-launch on real MPI ranks with
--global-args / --global-output on the grids 1x2, 1x4, 2x2 and 2x4 with
random shardings (every form XLA prints: iota with transposes, explicit and
permuted device lists, partial replication) that split the windowed
dimension, and must equal NumPy's run of the global program: bit-exact for
the integer programs, a tolerance for the f32 convolutions. The geometries
cover halos of one element, of several, uneven results (the dynamic-slice
path: r_i differs per partition), padding (the fill: pad value,
reduce-window init, zero) and halos wider than a shard (that dimension is
gathered instead). Fixed-sharding tests check that the communication is
collective-permutes of exactly the halo, in --explain-partitioning and in
hlo-convert --partition's per-partition module.
"""

import os
import random
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hl_testlib as hl  # noqa: E402
from test_spmd_partitioner import MESHES, mesh_sharding, rand_array, run_global, shape_text  # noqa: E402


def split_sharding(rng, rank, mesh, dims):
    """A random sharding (no maximal) that splits at least one of `dims`."""
    while True:
        text = mesh_sharding(rng, rank, mesh, False)
        m = re.match(r"\{devices=\[([0-9,]+)\]", text)
        if m and any(int(t) > 1 for d, t in enumerate(m.group(1).split(",")) if d in dims):
            return text


def windows(x, axis, size, stride=1, lo=0, hi=0, dilation=1, fill=0):
    """NumPy oracle of one windowed dimension: the padded input's windows,
    stacked on a new last axis (output o reads o*stride + k*dilation)."""
    pad = [(0, 0)] * x.ndim
    pad[axis] = (lo, hi)
    xp = np.pad(x, pad, constant_values=fill)
    ext = (size - 1) * dilation + 1
    n = (xp.shape[axis] - ext) // stride + 1
    taps = []
    for k in range(size):
        idx = [slice(None)] * x.ndim
        idx[axis] = slice(k * dilation, k * dilation + (n - 1) * stride + 1, stride)
        taps.append(xp[tuple(idx)])
    return np.stack(taps, axis=-1)


# --- the corpus: each entry builds (hlo text, inputs, expected, tolerance) ------

def stencil(rng, mesh, dt):
    """Shifted slices of a split dimension: x[1:] - x[:-1] (halo 1 from the
    right), x[3:] - x[:-3] (halo 3: wider than a shard of 16 rows over 8),
    a strided slice and an uneven slice x[0:11] (r_i differs per partition)."""
    x = rand_array(rng, (16, 6), dt)
    sx = split_sharding(rng, 2, mesh, [0])
    text = """
ENTRY main {
  x = %(tx)s parameter(0), sharding=%(sx)s
  a = %(t15)s slice(x), slice={[1:16], [0:6]}
  b = %(t15)s slice(x), slice={[0:15], [0:6]}
  d1 = %(t15)s subtract(a, b)
  c = %(t13)s slice(x), slice={[3:16], [0:6]}
  e = %(t13)s slice(x), slice={[0:13], [0:6]}
  d3 = %(t13)s subtract(c, e)
  s = %(t8)s slice(x), slice={[1:16:2], [0:6]}
  u = %(t11)s slice(x), slice={[0:11], [0:6]}
  ROOT r = %(t47)s concatenate(d1, d3, s, u), dimensions={0}, sharding=%(sr)s
}""" % dict(tx=shape_text(dt, (16, 6)), t15=shape_text(dt, (15, 6)), t13=shape_text(dt, (13, 6)),
            t8=shape_text(dt, (8, 6)), t11=shape_text(dt, (11, 6)), t47=shape_text(dt, (47, 6)), sx=sx,
            sr=mesh_sharding(rng, 2, mesh, False))
    want = np.concatenate([x[1:] - x[:-1], x[3:] - x[:-3], x[1:16:2], x[0:11]], axis=0)
    return text, [x], want.astype(x.dtype), None


def stencil_chain(rng, mesh, dt):
    """A 3-point stencil whose every value stays split: the result sharding
    is x's, so the slices keep the split and only halos move."""
    x = rand_array(rng, (16, 4), dt)
    sx = split_sharding(rng, 2, mesh, [0])
    text = """
ENTRY main {
  x = %(tx)s parameter(0), sharding=%(sx)s
  l = %(t14)s slice(x), slice={[0:14], [0:4]}
  m = %(t14)s slice(x), slice={[1:15], [0:4]}
  r = %(t14)s slice(x), slice={[2:16], [0:4]}
  two = %(d)s[] constant(2)
  tb = %(t14)s broadcast(two), dimensions={}
  mm = %(t14)s multiply(m, tb)
  s = %(t14)s subtract(mm, l)
  lap = %(t14)s subtract(s, r)
  z = %(d)s[] constant(0)
  ROOT p = %(tx)s pad(lap, z), padding=1_1x0_0, sharding=%(sx)s
}""" % dict(d=dt, tx=shape_text(dt, (16, 4)), t14=shape_text(dt, (14, 4)), sx=sx)
    lap = 2 * x[1:15] - x[0:14] - x[2:16]
    return text, [x], np.pad(lap, ((1, 1), (0, 0))).astype(x.dtype), None


def pad(rng, mesh, dt):
    """pad along a split dimension: edges 2_1 (the value fills the global
    edges, the output shards are larger than the input's: a dynamic-slice
    per partition), a negative low edge (a crop), and pad along both dims."""
    x = rand_array(rng, (16, 6), dt)
    sx = split_sharding(rng, 2, mesh, [0])
    text = """
ENTRY main {
  x = %(tx)s parameter(0), sharding=%(sx)s
  v = %(d)s[] constant(7)
  p = %(tp)s pad(x, v), padding=2_1x0_0
  q = %(tq)s pad(x, v), padding=-1_3x0_0
  b = %(tb)s pad(x, v), padding=1_1x2_2
  ROOT r = %(tr)s concatenate(p, q, b), dimensions={0}, sharding=%(sr)s
}""" % dict(d=dt, tx=shape_text(dt, (16, 6)), tp=shape_text(dt, (19, 6)), tq=shape_text(dt, (18, 6)),
            tb=shape_text(dt, (18, 10)), tr=shape_text(dt, (55, 6)), sx=sx, sr=mesh_sharding(rng, 2, mesh, False))
    text = text.replace("b = %s pad(x, v), padding=1_1x2_2" % shape_text(dt, (18, 10)),
                        "bb = %s pad(x, v), padding=1_1x2_2\n  b = %s slice(bb), slice={[0:18], [2:8]}"
                        % (shape_text(dt, (18, 10)), shape_text(dt, (18, 6))))
    p = np.pad(x, ((2, 1), (0, 0)), constant_values=7)
    q = np.concatenate([x[1:], np.full((3, 6), 7, x.dtype)], axis=0)
    b = np.pad(x, ((1, 1), (2, 2)), constant_values=7)[:, 2:8]
    return text, [x], np.concatenate([p, q, b], axis=0).astype(x.dtype), None


def reduce_window(rng, mesh, dt):
    """reduce-window along a split dimension: size 3 padded 1_1 (init 1, not
    the identity: padding holds it, every output adds it once), size 5 stride
    2 padded 2_2, a dilated window (size 2, dilation 3), max with 2-D windows."""
    x = rand_array(rng, (16, 6), dt)
    sx = split_sharding(rng, 2, mesh, [0, 1])
    text = """
add {
  a = %(d)s[] parameter(0)
  b = %(d)s[] parameter(1)
  ROOT c = %(d)s[] add(a, b)
}

max {
  a = %(d)s[] parameter(0)
  b = %(d)s[] parameter(1)
  ROOT c = %(d)s[] maximum(a, b)
}

ENTRY main {
  x = %(tx)s parameter(0), sharding=%(sx)s
  one = %(d)s[] constant(1)
  lo = %(d)s[] constant(-1000)
  w1 = %(tx)s reduce-window(x, one), window={size=3x1 pad=1_1x0_0}, to_apply=add
  w2 = %(t8)s reduce-window(x, one), window={size=5x1 stride=2x1 pad=2_2x0_0}, to_apply=add
  w3 = %(t13)s reduce-window(x, one), window={size=2x1 rhs_dilate=3x1}, to_apply=add
  w4 = %(t15x6)s reduce-window(x, lo), window={size=2x3 pad=0_0x1_1}, to_apply=max
  ROOT r = %(tr)s concatenate(w1, w2, w3, w4), dimensions={0}, sharding=%(sr)s
}""" % dict(d=dt, tx=shape_text(dt, (16, 6)), t8=shape_text(dt, (8, 6)), t13=shape_text(dt, (13, 6)),
            t15x6=shape_text(dt, (15, 6)), tr=shape_text(dt, (52, 6)), sx=sx,
            sr=mesh_sharding(rng, 2, mesh, False))
    w1 = windows(x, 0, 3, lo=1, hi=1, fill=1).sum(-1) + 1
    w2 = windows(x, 0, 5, stride=2, lo=2, hi=2, fill=1).sum(-1) + 1
    w3 = windows(x, 0, 2, dilation=3).sum(-1) + 1
    w4 = windows(windows(x, 0, 2).max(-1), 1, 3, lo=1, hi=1, fill=-1000).max(-1)
    want = np.concatenate([w1, w2, w3, w4], axis=0).astype(x.dtype)
    return text, [x], want, None


def stencil_loop(rng, mesh, dt):
    """Three Jacobi-like sweeps in a while loop whose state stays split: the
    body's shifted slices and pad exchange halos on every trip."""
    x = rand_array(rng, (32, 4), dt)
    sx = split_sharding(rng, 2, mesh, [0])
    text = """
cond {
  p = (s32[], %(tx)s) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}

body {
  p = (s32[], %(tx)s) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = %(tx)s get-tuple-element(p), index=1
  l = %(t30)s slice(x), slice={[0:30], [0:4]}
  r = %(t30)s slice(x), slice={[2:32], [0:4]}
  s = %(t30)s add(l, r)
  z = %(d)s[] constant(0)
  mp = %(tx)s pad(s, z), padding=1_1x0_0
  y = %(tx)s subtract(mp, x)
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  ROOT t = (s32[], %(tx)s) tuple(i1, y)
}

ENTRY main {
  x = %(tx)s parameter(0), sharding=%(sx)s
  z = s32[] constant(0)
  t = (s32[], %(tx)s) tuple(z, x)
  w = (s32[], %(tx)s) while(t), condition=cond, body=body
  ROOT y = %(tx)s get-tuple-element(w), index=1, sharding=%(sx)s
}""" % dict(d=dt, tx=shape_text(dt, (32, 4)), t30=shape_text(dt, (30, 4)), sx=sx)
    y = x
    for _ in range(3):
        y = np.pad(y[0:30] + y[2:32], ((1, 1), (0, 0))) - y
    return text, [x], y.astype(x.dtype), None


def roll(rng, mesh, dt):
    """jnp.roll's form: concatenate(x[k:], x[:k]) along a split dimension, a
    cyclic halo exchange (the wrap-around edge from the last / first
    partition): by -1 (1 row from the right), by 3 (3 rows from the left;
    wider than a shard of 16 rows over 8: gathered), by -2 along dim 1."""
    x = rand_array(rng, (16, 8), dt)
    sx = split_sharding(rng, 2, mesh, [0, 1])
    text = """
ENTRY main {
  x = %(tx)s parameter(0), sharding=%(sx)s
  a = %(d)s[15,8] slice(x), slice={[1:16], [0:8]}
  b = %(d)s[1,8] slice(x), slice={[0:1], [0:8]}
  r = %(tx)s concatenate(a, b), dimensions={0}
  c = %(d)s[3,8] slice(x), slice={[13:16], [0:8]}
  e = %(d)s[13,8] slice(x), slice={[0:13], [0:8]}
  l = %(tx)s concatenate(c, e), dimensions={0}
  f = %(d)s[16,6] slice(x), slice={[0:16], [2:8]}
  g = %(d)s[16,2] slice(x), slice={[0:16], [0:2]}
  h = %(tx)s concatenate(f, g), dimensions={1}
  s = %(tx)s add(r, l)
  ROOT y = %(tx)s subtract(s, h), sharding=%(sx)s
}""" % dict(d=dt, tx=shape_text(dt, (16, 8)), sx=sx)
    want = np.roll(x, -1, 0) + np.roll(x, 3, 0) - np.roll(x, -2, 1)
    return text, [x], want.astype(x.dtype), None


def conv_oracle(x, k, stride, pad_hw):
    """NHWC x HWIO convolution in float64."""
    (plo_h, phi_h), (plo_w, phi_w) = pad_hw
    xp = np.pad(x.astype(np.float64), ((0, 0), (plo_h, phi_h), (plo_w, phi_w), (0, 0)))
    kh, kw = k.shape[0], k.shape[1]
    oh = (xp.shape[1] - kh) // stride[0] + 1
    ow = (xp.shape[2] - kw) // stride[1] + 1
    y = np.zeros((x.shape[0], oh, ow, k.shape[3]))
    for di in range(kh):
        for dj in range(kw):
            patch = xp[:, di:di + (oh - 1) * stride[0] + 1:stride[0], dj:dj + (ow - 1) * stride[1] + 1:stride[1], :]
            y += np.einsum("bijc,co->bijo", patch, k[di, dj].astype(np.float64))
    return y.astype(np.float32)


def convolution(rng, mesh, dt):
    """3x3 NHWC convolutions split along H and / or W: stride 1 padded 1_1
    (halo 1 both sides, zero at the global edges) and stride 2 padded 1_1."""
    x = rand_array(rng, (2, 8, 8, 3), dt)
    k = rand_array(rng, (3, 3, 3, 4), dt)
    sx = split_sharding(rng, 4, mesh, [1, 2])
    text = """
ENTRY main {
  x = %(tx)s parameter(0), sharding=%(sx)s
  k = %(tk)s parameter(1), sharding={replicated}
  y = %(ty)s convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  s = %(ts)s convolution(x, k), window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  sp = %(ty)s pad(s, z), padding=0_0x0_4x0_4x0_0
  ROOT r = %(tr)s concatenate(y, sp), dimensions={3}, sharding=%(sr)s
}""" % dict(tx=shape_text(dt, (2, 8, 8, 3)), tk=shape_text(dt, (3, 3, 3, 4)), ty=shape_text(dt, (2, 8, 8, 4)),
            ts=shape_text(dt, (2, 4, 4, 4)), tr=shape_text(dt, (2, 8, 8, 8)), sx=sx,
            sr=mesh_sharding(rng, 4, mesh, False))
    text = text.replace("  sp = ", "  z = %s[] constant(0)\n  sp = " % dt)
    y = conv_oracle(x, k, (1, 1), ((1, 1), (1, 1)))
    s = conv_oracle(x, k, (2, 2), ((1, 1), (1, 1)))
    sp = np.pad(s, ((0, 0), (0, 4), (0, 4), (0, 0)))
    return text, [x, k], np.concatenate([y, sp], axis=3), (1e-4, 1e-4)


CORPUS = [
    ("stencil", stencil, ["s32"]),
    ("stencil_chain", stencil_chain, ["s32"]),
    ("pad", pad, ["s32"]),
    ("reduce_window", reduce_window, ["s32"]),
    ("stencil_loop", stencil_loop, ["s32"]),
    ("roll", roll, ["s32"]),
    ("convolution", convolution, ["f32"]),
]


def corpus_test(name, build, dtypes):
    def test():
        rng = random.Random("spmd-halo-" + name)
        failures = []
        with hl.tempdir("spmd-halo") as tmp:
            for mesh in MESHES:
                for dt in dtypes:
                    text, inputs, want, tol = build(rng, mesh, dt)
                    tag = "%s_%dx%d_%s" % (name, mesh[0], mesh[1], dt)
                    prog, out, r = run_global(tmp, tag, text, inputs, mesh)
                    if r.returncode != 0:
                        failures.append("%s: hlo-launch failed\n%s\n%s" % (tag, text, r.describe()))
                        continue
                    msg = hl.compare(tag, np.load(out), want, tol)
                    if msg:
                        failures.append("%s\n%s" % (msg, text))
                    e = hl.run([hl.HLO_LAUNCH, "--explain-partitioning", prog])
                    if e.returncode != 0 or "fallback:" in e.stdout:
                        failures.append("%s: explanation failed or fell back\n%s" % (tag, e.describe()))
                    elif "halo collective-permute" not in e.stdout and "halo 0 left, 0 right" not in e.stdout:
                        failures.append("%s: no halo rule applied\n%s\n%s" % (tag, text, e.stdout))
        return "\n\n".join(failures) or None
    return test


def explain(tmp, tag, text, n):
    prog = os.path.join(tmp, tag + ".hlo")
    with open(prog, "w") as f:
        f.write("HloModule %s, num_partitions=%d\n%s\n" % (tag, n, text))
    return prog, hl.run([hl.HLO_LAUNCH, "--explain-partitioning", prog])


STENCIL_1D = """
ENTRY main {
  x = f32[64,32] parameter(0), sharding={devices=[4,1]<=[4]}
  a = f32[63,32] slice(x), slice={[1:64], [0:32]}
  b = f32[63,32] slice(x), slice={[0:63], [0:32]}
  ROOT d = f32[63,32] subtract(a, b), sharding={devices=[4,1]<=[4]}
}"""


def test_stencil_moves_one_row():
    """x[1:] - x[:-1] with rows split 4 ways: one collective-permute of one
    row (32 f32 = 128 bytes) from the right neighbour, no all-gather (which
    would move the whole 64x32 array, 8192 bytes); the partitioned module
    (hlo-convert --partition) holds the permute with the neighbour pairs and
    no all-gather, and runs to NumPy's result."""
    with hl.tempdir("spmd-halo-bytes") as tmp:
        prog, r = explain(tmp, "st", STENCIL_1D, 4)
        if r.returncode != 0:
            return r.describe()
        perms = re.findall(r"halo collective-permute dim (\d+) from the (\w+) neighbour, (\d+) elements? over "
                           r"(\d+) partitions.*: (\d+) bytes per partition", r.stdout)
        if perms != [("0", "right", "1", "4", "128")] or "all-gather" in r.stdout:
            return "expected one 128-byte halo permute and no all-gather:\n" + r.stdout
        if "total: 1 channel collectives, 128 bytes per partition" not in r.stdout:
            return "unexpected total:\n" + r.stdout
        dst = os.path.join(tmp, "st_part.hlo")
        c = hl.convert(prog, dst, "--partition")
        if c.returncode != 0:
            return c.describe()
        body = open(dst).read()
        m = re.search(r"f32\[1,32\][^\n]* collective-permute\([^\n]*source_target_pairs=\{([^}]*(\}[^}]*)*)\}\}",
                      body)
        if not m or "all-gather" in body or "{1,0},{2,1},{3,2}" not in m.group(0):
            return "per-partition module lacks the [1,32] neighbour permute or has an all-gather:\n" + body
        x = np.random.default_rng(3).standard_normal((64, 32)).astype(np.float32)
        xp = os.path.join(tmp, "x.npy")
        np.save(xp, x)
        o = os.path.join(tmp, "o.npy")
        r = hl.run([hl.HLO_LAUNCH, "-np", "4", "--quiet", "--global-args", xp, "--global-output", o, dst])
        if r.returncode != 0:
            return r.describe()
        return hl.compare("stencil", np.load(o), x[1:] - x[:-1], (0, 0))


def test_conv_2d_halo_bytes():
    """A 3x3 convolution (pad 1) with H and W split 2x2: along H one row from
    each neighbour ([2,1,8,3] f32: 192 bytes each), then along W one column
    of the H-extended block ([2,10,1,3]: 240 bytes each), corners included;
    no all-gather of x (whose shard is [2,8,8,3]). Its result is checked on
    the real ranks."""
    text = """
ENTRY main {
  x = f32[2,16,16,3] parameter(0), sharding={devices=[1,2,2,1]<=[4]}
  k = f32[3,3,3,4] parameter(1), sharding={replicated}
  ROOT y = f32[2,16,16,4] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, sharding={devices=[1,2,2,1]<=[4]}
}"""
    with hl.tempdir("spmd-halo-conv") as tmp:
        prog, r = explain(tmp, "conv", text, 4)
        if r.returncode != 0:
            return r.describe()
        perms = re.findall(r"halo collective-permute dim (\d+) from the (\w+) neighbour.*: (\d+) bytes", r.stdout)
        want = [("1", "left", "192"), ("1", "right", "192"), ("2", "left", "240"), ("2", "right", "240")]
        if perms != want or "all-gather" in r.stdout or "fallback" in r.stdout:
            return "expected four halo permutes %s and no all-gather:\n%s" % (want, r.stdout)
        g = np.random.default_rng(5)
        x = g.standard_normal((2, 16, 16, 3)).astype(np.float32)
        k = g.standard_normal((3, 3, 3, 4)).astype(np.float32)
        _, out, r = run_global(tmp, "conv_run", text, [x, k], (2, 2))
        if r.returncode != 0:
            return r.describe()
        return hl.compare("conv2d", np.load(out), conv_oracle(x, k, (1, 1), ((1, 1), (1, 1))), (1e-4, 1e-4))


def test_halo_wider_than_shard_gathers():
    """x[3:] - x[:-3] with 16 rows over 8 partitions (shards of 2 rows): the
    halo of 3 rows is wider than a shard, so that slice is gathered (noted
    as the ordinary slice rule) while x[:-3] (halo 0) stays local; the
    result still equals NumPy's."""
    text = """
ENTRY main {
  x = s32[16,2] parameter(0), sharding={devices=[8,1]<=[8]}
  c = s32[13,2] slice(x), slice={[3:16], [0:2]}
  e = s32[13,2] slice(x), slice={[0:13], [0:2]}
  ROOT d = s32[13,2] subtract(c, e), sharding={devices=[8,1]<=[8]}
}"""
    with hl.tempdir("spmd-halo-wide") as tmp:
        prog, r = explain(tmp, "wide", text, 8)
        if r.returncode != 0:
            return r.describe()
        if "all-gather dim 0" not in r.stdout or "halo collective-permute" in r.stdout:
            return "expected the wide halo gathered:\n" + r.stdout
        x = np.arange(32, dtype=np.int32).reshape(16, 2) ** 2
        _, out, r = run_global(tmp, "wide_run", text, [x], (2, 4))
        if r.returncode != 0:
            return r.describe()
        return hl.compare("wide", np.load(out), x[3:] - x[:-3])


def test_roll_moves_one_row():
    """A roll by one row (concatenate(x[1:], x[:1])) with rows split 4 ways:
    one cyclic collective-permute of one row (partition 0 sends to 3), no
    all-gather, and the slices it reads are not computed."""
    text = """
ENTRY main {
  x = f32[64,32] parameter(0), sharding={devices=[4,1]<=[4]}
  a = f32[63,32] slice(x), slice={[1:64], [0:32]}
  b = f32[1,32] slice(x), slice={[0:1], [0:32]}
  ROOT r = f32[64,32] concatenate(a, b), dimensions={0}, sharding={devices=[4,1]<=[4]}
}"""
    with hl.tempdir("spmd-halo-roll") as tmp:
        prog, r = explain(tmp, "roll", text, 4)
        if r.returncode != 0:
            return r.describe()
        if ("halo collective-permute dim 0 from the cyclic right neighbour, 1 element over 4 partitions in 1 group: "
                "128 bytes per partition") not in r.stdout or "all-gather" in r.stdout \
                or r.stdout.count("read by rolls only: not computed") != 2 \
                or "total: 1 channel collectives, 128 bytes per partition" not in r.stdout:
            return "expected one 128-byte cyclic permute:\n" + r.stdout
        dst = os.path.join(tmp, "roll_part.hlo")
        c = hl.convert(prog, dst, "--partition")
        if c.returncode != 0:
            return c.describe()
        body = open(dst).read()
        if "{1,0},{2,1},{3,2},{0,3}" not in body or "all-gather" in body:
            return "per-partition module lacks the cyclic pairs:\n" + body
    return None


ROLL_MLIR = """module @jit_f attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<16x6xi32> {mhlo.sharding = "{devices=[4,1]<=[4]}"})
      -> (tensor<16x6xi32> {mhlo.sharding = "{devices=[4,1]<=[4]}"}) {
    %0 = stablehlo.slice %arg0 [1:16, 0:6] : (tensor<16x6xi32>) -> tensor<15x6xi32>
    %1 = stablehlo.slice %arg0 [0:1, 0:6] : (tensor<16x6xi32>) -> tensor<1x6xi32>
    %2 = stablehlo.concatenate %0, %1, dim = 0 : (tensor<15x6xi32>, tensor<1x6xi32>) -> tensor<16x6xi32>
    %3 = stablehlo.subtract %2, %arg0 : tensor<16x6xi32>
    return %3 : tensor<16x6xi32>
  }
}
"""


def test_stablehlo_roll():
    """jnp.roll(x, -1, 0) - x as jax.jit(...).lower(...).as_text() prints it
    (StableHLO, GSPMD mhlo.sharding): the roll is one cyclic halo permute on
    real ranks and equals NumPy."""
    with hl.tempdir("spmd-halo-mlir") as tmp:
        prog = os.path.join(tmp, "roll.mlir")
        with open(prog, "w") as f:
            f.write(ROLL_MLIR)
        r = hl.run([hl.HLO_LAUNCH, "--explain-partitioning", prog])
        if r.returncode != 0 or "cyclic right neighbour, 1 element" not in r.stdout or "all-gather" in r.stdout:
            return "expected one cyclic halo permute:\n" + r.describe()
        x = np.random.default_rng(11).integers(-99, 99, size=(16, 6)).astype(np.int32)
        xp, o = os.path.join(tmp, "x.npy"), os.path.join(tmp, "o.npy")
        np.save(xp, x)
        r = hl.run([hl.HLO_LAUNCH, "-np", "4", "--quiet", "--global-args", xp, "--global-output", o, prog])
        if r.returncode != 0:
            return r.describe()
        return hl.compare("stablehlo roll", np.load(o), np.roll(x, -1, 0) - x)


TESTS = [(name, corpus_test(name, build, dts)) for name, build, dts in CORPUS] + [
    ("stencil_moves_one_row", test_stencil_moves_one_row),
    ("roll_moves_one_row", test_roll_moves_one_row),
    ("stablehlo_roll", test_stablehlo_roll),
    ("conv_2d_halo_bytes", test_conv_2d_halo_bytes),
    ("halo_wider_than_shard_gathers", test_halo_wider_than_shard_gathers),
]

if __name__ == "__main__":
    hl.require_binaries("hlo-launch", "hlo-convert")
    hl.main(TESTS)
