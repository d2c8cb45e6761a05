"""collective-permute's combined and variadic forms, and collectives split into
chunks (messages beyond the MPI message limit), run on 1-4 real MPI ranks.

Combined (in-place) form, XLA's HloCollectivePermuteInstruction with
slice_sizes: collective-permute(input, output, input_start_indices,
output_start_indices) -> a copy of `output` where each target writes, at its
own output start indices, the slice of its source's input at the source's
input start indices (clamped like dynamic-slice). K index tuples per buffer
split source_target_pairs into K equal consecutive parts, part k moving slice
k. Variadic form: several operands -> a tuple of results, each permuted.

Chunking: HL_MPI_MAX_MESSAGE_BYTES=1002 forces every collective, channel
send/recv and ragged exchange of ~1 MiB through many MPI calls (1002 is no
multiple of the element sizes, so reductions must align their chunks to
elements).

NumPy is the oracle: expected values are computed here from the inputs.
"""

import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hl_testlib as hl  # noqa: E402


def clamp(v, lo, hi):
    return max(lo, min(v, hi))


def run_hlo(name, text, n, args, env=None, nout=1, fmt_pb=False):
    """Runs `text` on n replicas; args[rank] is the list of that rank's inputs.

    Returns (outputs per rank, None) or (None, failure message)."""
    with hl.tempdir("perm-" + name) as tmp:
        prog = os.path.join(tmp, name + ".hlo")
        with open(prog, "w") as f:
            f.write(text)
        if fmt_pb:
            pb = os.path.join(tmp, name + ".pb")
            res = hl.convert(prog, pb)
            if res.returncode != 0:
                return None, res.describe()
            prog = pb
        args_dir = os.path.join(tmp, "args") if any(args) else None
        for r, a in enumerate(args):
            if a:
                hl.write_args(os.path.join(args_dir, "replica%d_partition0" % r), a)
        out_dir = os.path.join(tmp, "out")
        saved = dict(os.environ)
        try:
            os.environ.update(env or {})
            res = hl.launch(prog, n, 1, args_dir=args_dir, output_dir=out_dir)
        finally:
            os.environ.clear()
            os.environ.update(saved)
        if res.returncode != 0 or res.timed_out:
            return None, res.describe()
        try:
            return [hl.read_outputs(out_dir, r, 0, nout) for r in range(n)], None
        except OSError as e:
            return None, "missing output: %s\n%s" % (e, res.describe())


def check(name, got, want):
    problems = []
    for r, (g, w) in enumerate(zip(got, want)):
        for j, (a, b) in enumerate(zip(g, w)):
            msg = hl.compare("%s rank %d output %d" % (name, r, j), a, b)
            if msg:
                problems.append(msg)
    return "\n".join(problems[:4]) or None


def ints(rng, *shape):
    return rng.integers(-1000, 1000, size=shape).astype(np.int32)


# ------------------------------------------------------------- combined form
COMBINED_1 = """HloModule cp_combined_1
ENTRY e {
  x = s32[4,3] parameter(0)
  o = s32[6,5] parameter(1)
  rid = u32[] replica-id()
  r = s32[] convert(rid)
  c0 = s32[] constant(0)
  c9 = s32[] constant(9)
  ii = (s32[], s32[]) tuple(r, c0)
  oi = (s32[], s32[]) tuple(r, c9)
  %ROOT%
}
"""
SYNC_1 = ("ROOT cp = s32[6,5] collective-permute(x, o, ii, oi), "
          "source_target_pairs={{0,1},{1,2}}, slice_sizes={{2,3}}")
ASYNC_1 = ("s = (s32[4,3], s32[6,5], u32[], u32[]) collective-permute-start(x, o, ii, oi), "
           "source_target_pairs={{0,1},{1,2}}, slice_sizes={{2,3}}\n"
           "  ROOT d = s32[6,5] collective-permute-done(s)")


def oracle_combined_1(xs, os_, pairs, n):
    """Input rows start at the sender's replica id (clamped to 4-2), output rows
    at the receiver's (clamped to 6-2), columns at 9 (clamped to 5-3)."""
    want = [o.copy() for o in os_]
    for s, t in pairs:
        if s >= n or t >= n:
            continue
        i0, o0 = clamp(s, 0, 2), clamp(t, 0, 4)
        want[t][o0:o0 + 2, 2:5] = xs[s][i0:i0 + 2, 0:3]
    return [[w] for w in want]


def test_combined_1(asynchronous):
    rng = np.random.default_rng(1)
    n = 3
    xs = [ints(rng, 4, 3) for _ in range(n)]
    os_ = [ints(rng, 6, 5) for _ in range(n)]
    text = COMBINED_1.replace("%ROOT%", ASYNC_1 if asynchronous else SYNC_1)
    got, err = run_hlo("combined1", text, n, [[x, o] for x, o in zip(xs, os_)])
    return err or check("combined1", got, oracle_combined_1(xs, os_, [(0, 1), (1, 2)], n))


def test_combined_single_process():
    """-np 1 without a pair {0,0}: the output comes back unchanged; with it, the
    process updates itself."""
    rng = np.random.default_rng(2)
    x, o = ints(rng, 4, 3), ints(rng, 6, 5)
    problems = []
    for pairs, text_pairs in (([], "{}"), ([(0, 0)], "{{0,0}}")):
        text = COMBINED_1.replace("%ROOT%", SYNC_1.replace("{{0,1},{1,2}}", text_pairs))
        got, err = run_hlo("combined_np1", text, 1, [[x, o]])
        if err:
            return err
        problems.append(check("np1 pairs=%s" % text_pairs, got,
                              oracle_combined_1([x], [o], pairs, 1)))
    return "\n".join(p for p in problems if p) or None


COMBINED_2 = """HloModule cp_combined_2
ENTRY e {
  x = f32[4,2,3] parameter(0)
  o = f32[4,2,3] parameter(1)
  c0 = s32[] constant(0)
  c1 = s32[] constant(1)
  c2 = s32[] constant(2)
  c3 = s32[] constant(3)
  i0 = (s32[], s32[], s32[]) tuple(c0, c0, c0)
  i1 = (s32[], s32[], s32[]) tuple(c1, c0, c0)
  o0 = (s32[], s32[], s32[]) tuple(c2, c0, c0)
  o1 = (s32[], s32[], s32[]) tuple(c3, c0, c0)
  ii = ((s32[], s32[], s32[]), (s32[], s32[], s32[])) tuple(i0, i1)
  oi = ((s32[], s32[], s32[]), (s32[], s32[], s32[])) tuple(o0, o1)
  ROOT cp = f32[4,2,3] collective-permute(x, o, ii, oi),
    source_target_pairs={{0,1},{1,2},{2,3},{0,3},{2,1},{3,2}}, slice_sizes={{1,2,3},{1,2,3}}
}
"""


def test_combined_two_slices():
    """XLA's CollectivePermuteInPlaceUpdateMultipleReadWrite shape of program:
    two slices per buffer, pairs split into two parts of three."""
    rng = np.random.default_rng(3)
    n = 4
    xs = [rng.standard_normal((4, 2, 3)).astype(np.float32) for _ in range(n)]
    os_ = [rng.standard_normal((4, 2, 3)).astype(np.float32) for _ in range(n)]
    want = [o.copy() for o in os_]
    parts = [[(0, 1), (1, 2), (2, 3)], [(0, 3), (2, 1), (3, 2)]]
    for k, part in enumerate(parts):
        for s, t in part:
            want[t][2 + k] = xs[s][k]  # input row k -> output row 2 + k
    got, err = run_hlo("combined2", COMBINED_2, n, [[x, o] for x, o in zip(xs, os_)])
    return err or check("combined2", got, [[w] for w in want])


COMBINED_TUPLE = """HloModule cp_combined_tuple
ENTRY e {
  a = u32[2,2,3] parameter(0)
  b = u32[2,2,3] parameter(1)
  c = u32[2,2,3] parameter(2)
  d = u32[4,2,3] parameter(3)
  ins = (u32[2,2,3], u32[2,2,3]) tuple(a, b)
  outs = (u32[2,2,3], u32[4,2,3]) tuple(c, d)
  k0 = s32[] constant(0)
  k1 = s32[] constant(1)
  k2 = s32[] constant(2)
  t2 = (s32[], s32[], s32[]) tuple(k0, k0, k0)
  t3 = (s32[], s32[], s32[]) tuple(k1, k0, k0)
  t5 = (s32[], s32[], s32[]) tuple(k2, k0, k0)
  t4 = ((s32[], s32[], s32[]), (s32[], s32[], s32[])) tuple(t2, t3)
  t7 = ((s32[], s32[], s32[]), (s32[], s32[], s32[])) tuple(t2, t2)
  t6 = ((s32[], s32[], s32[]), (s32[], s32[], s32[])) tuple(t2, t5)
  t8 = (((s32[], s32[], s32[]), (s32[], s32[], s32[])), ((s32[], s32[], s32[]), (s32[], s32[], s32[]))) tuple(t4, t7)
  t9 = (((s32[], s32[], s32[]), (s32[], s32[], s32[])), ((s32[], s32[], s32[]), (s32[], s32[], s32[]))) tuple(t4, t6)
  ROOT cp = (u32[2,2,3], u32[4,2,3]) collective-permute(ins, outs, t8, t9),
    source_target_pairs={{0,1},{1,2},{2,3},{3,0},{0,3},{3,2},{2,1},{1,0}},
    slice_sizes={{1,2,3},{1,2,3},{2,2,3},{2,2,3}}
}
"""


def test_combined_tuple(fmt_pb):
    """XLA's CollectivePermuteInPlaceUpdateTupleMultipleReadWrite shape of
    program: two buffers, two slices each (ring forward, then backward)."""
    rng = np.random.default_rng(4)
    n = 4
    ins = [[rng.integers(0, 1 << 30, size=s).astype(np.uint32)
            for s in ((2, 2, 3), (2, 2, 3), (2, 2, 3), (4, 2, 3))] for _ in range(n)]
    want = [[i[2].copy(), i[3].copy()] for i in ins]
    parts = [[(0, 1), (1, 2), (2, 3), (3, 0)], [(0, 3), (3, 2), (2, 1), (1, 0)]]
    for k, part in enumerate(parts):
        for s, t in part:
            want[t][0][k] = ins[s][0][k]                   # buffer 0: row k -> row k
            want[t][1][2 * k:2 * k + 2] = ins[s][1][0:2]   # buffer 1: rows 0-1 -> 2k..2k+1
    got, err = run_hlo("combinedt", COMBINED_TUPLE, n, ins, nout=2, fmt_pb=fmt_pb)
    return err or check("combined tuple", got, want)


def test_combined_text_round_trip():
    """slice_sizes survives text -> proto -> text with its grouping."""
    with hl.tempdir("perm-rt") as tmp:
        src = os.path.join(tmp, "a.hlo")
        with open(src, "w") as f:
            f.write(COMBINED_TUPLE)
        pb, back = os.path.join(tmp, "a.pb"), os.path.join(tmp, "b.hlo")
        for a, b in ((src, pb), (pb, back)):
            res = hl.convert(a, b)
            if res.returncode != 0:
                return res.describe()
        text = open(back).read()
        want = "slice_sizes={{1,2,3},{1,2,3},{2,2,3},{2,2,3}}"
        if want not in text.replace(" ", ""):
            return "printed text lacks %s:\n%s" % (want, text)
    return None


# ------------------------------------------------------------- variadic form
VARIADIC = """HloModule cp_variadic
ENTRY e {
  a = s32[3] parameter(0)
  b = f32[2,2] parameter(1)
  c = s32[] parameter(2)
  d = u8[5] parameter(3)
  %BODY%
}
"""
VARIADIC_SYNC = ("ROOT cp = (s32[3], f32[2,2], s32[], u8[5]) collective-permute(a, b, c, d), "
                 "source_target_pairs={{0,1},{1,2}}")
VARIADIC_ASYNC = (
    "s = ((s32[3], f32[2,2], s32[], u8[5]), (s32[3], f32[2,2], s32[], u8[5])) "
    "collective-permute-start(a, b, c, d), source_target_pairs={{0,1},{1,2}}\n"
    "  ROOT dn = (s32[3], f32[2,2], s32[], u8[5]) collective-permute-done(s)")


def test_variadic(asynchronous):
    """Four operands without slice_sizes: the variadic form, not the combined
    one. Rank 0 is no target: zeros."""
    rng = np.random.default_rng(5)
    n = 3
    args = [[ints(rng, 3), rng.standard_normal((2, 2)).astype(np.float32),
             np.int32(rng.integers(-99, 99)), rng.integers(0, 255, size=5).astype(np.uint8)]
            for _ in range(n)]
    want = [[np.zeros_like(np.asarray(v)) for v in args[0]]] + [
        [np.asarray(v) for v in args[r - 1]] for r in range(1, n)]
    text = VARIADIC.replace("%BODY%", VARIADIC_ASYNC if asynchronous else VARIADIC_SYNC)
    got, err = run_hlo("variadic", text, n, args, nout=4)
    return err or check("variadic", got, want)


# ------------------------------------------------------------------ chunking
CHUNK_ENV = {"HL_MPI_MAX_MESSAGE_BYTES": "1002"}
N_BIG = 3 * 87382  # f32 elements: ~1 MiB, divisible by 3 ranks

CHUNK_PROGRAM = """HloModule chunked
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
add16 {
  x = f16[] parameter(0)
  y = f16[] parameter(1)
  ROOT s = f16[] add(x, y)
}
custom_max {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  gt = pred[] compare(x, y), direction=GT
  ROOT m = f32[] select(gt, x, y)
}
ENTRY e {
  p = f32[%N%] parameter(0)
  h = f16[4001] parameter(1)
  q = f32[3003] parameter(2)
  ar = f32[%N%] all-reduce(p), replica_groups={}, to_apply=add
  ag = f32[%N3%] all-gather(p), replica_groups={}, dimensions={0}
  a2a = f32[%N%] all-to-all(p), replica_groups={}, dimensions={0}
  rs = f32[%NS%] reduce-scatter(p), replica_groups={}, dimensions={0}, to_apply=add
  cp = f32[%N%] collective-permute(p), source_target_pairs={{0,1},{1,2}}
  cb = f32[%N%] collective-broadcast(p), replica_groups={{1,0,2}}
  ars = f32[%N%] all-reduce-start(p), replica_groups={}, to_apply=add
  ard = f32[%N%] all-reduce-done(ars)
  ags = (f32[%N%], f32[%N3%]) all-gather-start(p), replica_groups={}, dimensions={0}
  agd = f32[%N3%] all-gather-done(ags)
  cps = (f32[%N%], f32[%N%], u32[], u32[]) collective-permute-start(p), source_target_pairs={{2,0},{0,1}}
  cpd = f32[%N%] collective-permute-done(cps)
  arh = f16[4001] all-reduce(h), replica_groups={}, to_apply=add16
  arc = f32[3003] all-reduce(q), replica_groups={}, to_apply=custom_max
  rsc = f32[1001] reduce-scatter(q), replica_groups={}, dimensions={0}, to_apply=custom_max
  ROOT t = (f32[%N%], f32[%N3%], f32[%N%], f32[%NS%], f32[%N%], f32[%N%], f32[%N%], f32[%N3%], f32[%N%], f16[4001], f32[3003], f32[1001]) tuple(ar, ag, a2a, rs, cp, cb, ard, agd, cpd, arh, arc, rsc)
}
"""


def test_chunked_collectives():
    n = 3
    rng = np.random.default_rng(6)
    # Small integers in f32: sums are exact whatever the reduction order.
    ps = [rng.integers(-50, 50, size=N_BIG).astype(np.float32) for _ in range(n)]
    hs = [rng.integers(-8, 8, size=4001).astype(np.float16) for _ in range(n)]
    qs = [rng.standard_normal(3003).astype(np.float32) for _ in range(n)]
    text = (CHUNK_PROGRAM.replace("%N3%", str(3 * N_BIG)).replace("%NS%", str(N_BIG // 3))
            .replace("%N%", str(N_BIG)))
    total = sum(ps)
    blocks = [np.split(p, n) for p in ps]
    want = []
    for r in range(n):
        a2a = np.concatenate([blocks[j][r] for j in range(n)])
        cp = ps[r - 1] if r in (1, 2) else np.zeros_like(ps[0])
        cpd = ps[2] if r == 0 else ps[0] if r == 1 else np.zeros_like(ps[0])
        want.append([total, np.concatenate(ps), a2a, np.split(total, n)[r], cp, ps[1], total,
                     np.concatenate(ps), cpd, sum(hs).astype(np.float16),
                     np.maximum.reduce(qs), np.split(np.maximum.reduce(qs), n)[r]])
    got, err = run_hlo("chunked", text, n, [[p, h, q] for p, h, q in zip(ps, hs, qs)],
                       env=CHUNK_ENV, nout=12)
    return err or check("chunked", got, want)


RAGGED_PROGRAM = """HloModule chunked_ragged
ENTRY e {
  input = f32[%R%] parameter(0)
  output = f32[%R%] parameter(1)
  io = s32[2] parameter(2)
  ss = s32[2] parameter(3)
  oo = s32[2] parameter(4)
  rs = s32[2] parameter(5)
  ROOT r = f32[%R%] ragged-all-to-all(input, output, io, ss, oo, rs), replica_groups={{0,1}}
}
"""


def test_chunked_ragged():
    """Ragged pieces of ~100k rows (> the 1002-byte limit) take the chunked
    point-to-point path."""
    n, R = 2, 262144
    rng = np.random.default_rng(7)
    ins = [rng.standard_normal(R).astype(np.float32) for _ in range(n)]
    outs = [rng.standard_normal(R).astype(np.float32) for _ in range(n)]
    # send[i][j]: rows process i sends to j, at in_off[i][j], landing at out_off[i][j] on j.
    # Regions landing on one process do not overlap (their order is unspecified).
    send = [[100000, 70001], [50000, 90000]]
    in_off = [[0, 100000], [3, 60000]]
    out_off = [[0, 100000], [150000, 170001]]
    want = [o.copy() for o in outs]
    for i in range(n):
        for j in range(n):
            c = send[i][j]
            want[j][out_off[i][j]:out_off[i][j] + c] = ins[i][in_off[i][j]:in_off[i][j] + c]
    args = []
    for i in range(n):
        recv = [send[j][i] for j in range(n)]
        args.append([ins[i], outs[i], np.array(in_off[i], np.int32), np.array(send[i], np.int32),
                     np.array(out_off[i], np.int32), np.array(recv, np.int32)])
    text = RAGGED_PROGRAM.replace("%R%", str(R))
    got, err = run_hlo("ragged", text, n, args, env=CHUNK_ENV)
    return err or check("chunked ragged", got, [[w] for w in want])


CHANNEL_PROGRAM = """HloModule chunked_channel
ENTRY e {
  x = f32[%N%] parameter(0)
  tok = token[] after-all()
  s = (f32[%N%], u32[], token[]) send(x, tok), channel_id=5,
    frontend_attributes={_xla_send_recv_source_target_pairs="{{0,1}}"}
  sd = token[] send-done(s), channel_id=5
  r = (f32[%N%], u32[], token[]) recv(tok), channel_id=5,
    frontend_attributes={_xla_send_recv_source_target_pairs="{{0,1}}"}
  rd = (f32[%N%], token[]) recv-done(r), channel_id=5
  ROOT v = f32[%N%] get-tuple-element(rd), index=0
}
"""


def test_chunked_channel():
    """A 1 MiB send/recv pair split into 1002-byte messages."""
    n = 2
    rng = np.random.default_rng(8)
    xs = [rng.standard_normal(N_BIG).astype(np.float32) for _ in range(n)]
    got, err = run_hlo("channel", CHANNEL_PROGRAM.replace("%N%", str(N_BIG)), n,
                       [[x] for x in xs], env=CHUNK_ENV)
    if err:
        return err
    # Only rank 1 receives; rank 0's recv has no sender (its value is not checked).
    return hl.compare("channel rank 1", got[1][0], xs[0])


def test_chunked_combined():
    """The combined permute's slices also go in chunks."""
    rng = np.random.default_rng(9)
    n = 3
    xs = [ints(rng, 4, 3) for _ in range(n)]
    os_ = [ints(rng, 6, 5) for _ in range(n)]
    text = COMBINED_1.replace("%ROOT%", SYNC_1)
    got, err = run_hlo("combined1c", text, n, [[x, o] for x, o in zip(xs, os_)],
                       env={"HL_MPI_MAX_MESSAGE_BYTES": "5"})
    return err or check("combined1 chunked", got,
                        oracle_combined_1(xs, os_, [(0, 1), (1, 2)], n))


RAGGED_2D = """HloModule ragged_2d
ENTRY e {
  input = f32[10,3] parameter(0)
  output = f32[12,3] parameter(1)
  io = s32[2,2] parameter(2)
  ss = s32[2,2] parameter(3)
  oo = s32[2,2] parameter(4)
  rs = s32[2,2] parameter(5)
  ROOT r = f32[12,3] ragged-all-to-all(input, output, io, ss, oo, rs), replica_groups={{0,1}}
}
"""


def test_ragged_2d(env):
    """Offsets and sizes of shape [peers, updates]: update u to peer j is entry
    [j, u] (XLA's update_idx = j * num_updates_per_replica + u)."""
    n = 2
    rng = np.random.default_rng(10)
    ins = [rng.standard_normal((10, 3)).astype(np.float32) for _ in range(n)]
    outs = [rng.standard_normal((12, 3)).astype(np.float32) for _ in range(n)]
    # [sender][peer][update]; each receiver's regions are disjoint.
    send = [[[2, 1], [3, 0]], [[1, 2], [2, 2]]]
    in_off = [[[0, 5], [2, 9]], [[7, 1], [4, 8]]]
    out_off = [[[0, 4], [1, 11]], [[2, 9], [5, 8]]]
    want = [o.copy() for o in outs]
    for i in range(n):
        for j in range(n):
            for u in range(2):
                c, a, b = send[i][j][u], in_off[i][j][u], out_off[i][j][u]
                want[j][b:b + c] = ins[i][a:a + c]
    args = []
    for i in range(n):
        recv = [[send[j][i][u] for u in range(2)] for j in range(n)]
        args.append([ins[i], outs[i], np.array(in_off[i], np.int32),
                     np.array(send[i], np.int32), np.array(out_off[i], np.int32),
                     np.array(recv, np.int32)])
    got, err = run_hlo("ragged2d", RAGGED_2D, n, args, env=env)
    return err or check("ragged 2-d", got, [[w] for w in want])


def tests():
    return [
        ("combined: array, one slice, offsets from replica-id", lambda: test_combined_1(False)),
        ("combined: -start/-done", lambda: test_combined_1(True)),
        ("combined: one process", test_combined_single_process),
        ("combined: two slices per buffer", test_combined_two_slices),
        ("combined: tuple of buffers, two slices", lambda: test_combined_tuple(False)),
        ("combined: tuple, run from a binary proto", lambda: test_combined_tuple(True)),
        ("combined: slice_sizes text/proto round trip", test_combined_text_round_trip),
        ("variadic: four operands", lambda: test_variadic(False)),
        ("variadic: -start/-done", lambda: test_variadic(True)),
        ("ragged-all-to-all: 2-d offsets (several updates per peer)",
         lambda: test_ragged_2d(None)),
        ("chunked: ragged-all-to-all 2-d, point-to-point",
         lambda: test_ragged_2d({"HL_MPI_MAX_MESSAGE_BYTES": "8"})),
        ("chunked: every collective, 1 MiB in 1002-byte messages", test_chunked_collectives),
        ("chunked: ragged-all-to-all point-to-point", test_chunked_ragged),
        ("chunked: channel send/recv", test_chunked_channel),
        ("chunked: combined permute", test_chunked_combined),
    ]


if __name__ == "__main__":
    hl.require_binaries("hlo-launch", "hlo-convert")
    only = os.environ.get("HL_PERMUTE_ONLY")
    ts = tests()
    if only:
        ts = [t for t in ts if re.search(only, t[0])]
    hl.main(ts)
