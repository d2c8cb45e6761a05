#!/usr/bin/env python3
"""stablehlo.send / recv / infeed through hlo-launch on real ranks
(runtime/stablehlo/lower_channels.c, docs/STABLEHLO.md):

  - in interpreter.run_parallel programs, send / recv move data between the
    processes that send and receive on a channel (here partition 0 -> 1 of a
    1x2 grid), with NumPy's value checked both by the program's own check op
    and on the written results;
  - run_parallel's infeed functions feed the programs' infeed ops in order,
    and programs may return (nested) tuples;
  - outside run_parallel, host transfers use --outfeed-dir / --infeed files;
  - a channel several processes send on, and infeed ops in two processes'
    programs, are errors naming the channel / the op.
"""

import os

import numpy as np

import hl_testlib as hl

SRC = os.environ.get("HL_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
PROGRAMS = os.path.join(SRC, "tests", "stablehlo")
rng = np.random.default_rng(1124)


def send_recv_between_partitions():
    x = rng.standard_normal(3).astype(np.float32)
    want = (x * np.float32(2) + np.float32(1)).astype(np.float32)
    with open(os.path.join(PROGRAMS, "run_parallel_send_recv.mlir")) as f:
        text = f.read().replace("INPUT", hl.hexf32(x)).replace("EXPECTED", hl.hexf32(want))
    with hl.tempdir("shlo-ch") as d:
        out = os.path.join(d, "out")
        prog = hl.write_text(d, "sr.mlir", text)
        r = hl.run([hl.HLO_LAUNCH, "--output-dir", out, "--quiet", prog])
        if r.returncode != 0:
            return r.describe()
        for p in range(2):  # every rank holds the receiver's result
            msg = hl.compare("partition %d" % p, hl.read_outputs(out, 0, p, 1)[0], want)
            if msg:
                return msg
        # A wrong expectation fails: the transfer is what the check sees.
        bad = text.replace("EXPECTED", "").replace(hl.hexf32(want), hl.hexf32(want + 1))
        r = hl.run([hl.HLO_LAUNCH, "--quiet", hl.write_text(d, "bad.mlir", bad)])
        if r.returncode == 0 or "expect_eq" not in r.stderr:
            return "a wrong expected value passed\n" + r.describe()
    return None


def run_parallel_infeed():
    # @reader: feed0 = ([3, -4], 10), feed1 = [1, 2]  ->  [3, -4] * 10 - [1, 2].
    want1 = np.array([3, -4], np.int32) * np.int32(10) - np.array([1, 2], np.int32)
    with hl.tempdir("shlo-ch") as d:
        out = os.path.join(d, "out")
        r = hl.run([hl.HLO_LAUNCH, "--output-dir", out, "--quiet",
                    os.path.join(PROGRAMS, "run_parallel_infeed.mlir")])
        if r.returncode != 0:
            return r.describe()
        for rank in range(2):
            got = hl.read_outputs(out, rank, 0, 2)
            for name, g, w in (("idle", got[0], np.array([7, 7], np.int32)), ("reader", got[1], want1)):
                msg = hl.compare("rank %d %s" % (rank, name), g, w)
                if msg:
                    return msg
    return None


def run_parallel_tuple_results():
    """Programs returning (nested) tuples: every leaf from its own process on every rank."""
    a, b = np.array([3, -4], np.int32), np.array([5, 6], np.int32)
    want = [a + a, np.int32(10), b * b, np.int32(20)]
    with hl.tempdir("shlo-ch") as d:
        out = os.path.join(d, "out")
        r = hl.run([hl.HLO_LAUNCH, "--output-dir", out, "--quiet",
                    os.path.join(PROGRAMS, "run_parallel_tuple.mlir")])
        if r.returncode != 0:
            return r.describe()
        for rank in range(2):
            got = hl.read_outputs(out, rank, 0, 4)
            for k in range(4):
                msg = hl.compare("rank %d result %d" % (rank, k), got[k], np.asarray(want[k]))
                if msg:
                    return msg
    return None


def host_transfers():
    x = rng.standard_normal((2, 2)).astype(np.float32)
    fed = rng.standard_normal((2, 2)).astype(np.float32)
    with hl.tempdir("shlo-ch") as d:
        args, out, feed_out = (os.path.join(d, n) for n in ("args", "out", "outfeed"))
        hl.write_args(args, [x])
        infeed = os.path.join(d, "in0.npy")
        np.save(infeed, fed)
        r = hl.launch(os.path.join(PROGRAMS, "host_send_recv.mlir"), args_dir=args,
                      output_dir=out, extra=["--infeed", infeed, "--outfeed-dir", feed_out])
        if r.returncode != 0:
            return r.describe()
        sent = np.load(os.path.join(feed_out, "replica0_partition0", "outfeed0.npy"))
        return (hl.compare("host send", sent, x) or
                hl.compare("result", hl.read_outputs(out, 0, 0, 1)[0], (x + fed).astype(np.float32)))


SEND = """func.func @s%d(%%t: !stablehlo.token) -> !stablehlo.token {
  %%x = stablehlo.constant dense<1> : tensor<i32>
  %%r = "stablehlo.send"(%%x, %%t) {channel_handle = #stablehlo.channel_handle<handle = 3, type = 1>} : (tensor<i32>, !stablehlo.token) -> !stablehlo.token
  return %%r : !stablehlo.token
}
"""
RECV = """func.func @r(%t: !stablehlo.token) -> tensor<i32> {
  %v:2 = "stablehlo.recv"(%t) {channel_handle = #stablehlo.channel_handle<handle = 3, type = 1>} : (!stablehlo.token) -> (tensor<i32>, !stablehlo.token)
  return %v#0 : tensor<i32>
}
"""
TWO_SENDERS = SEND % 0 + SEND % 1 + RECV + """func.func @main() {
  %t = stablehlo.after_all : !stablehlo.token
  %r:3 = "interpreter.run_parallel"(%t, %t, %t) {programs = [[@s0], [@s1], [@r]]} : (!stablehlo.token, !stablehlo.token, !stablehlo.token) -> (!stablehlo.token, !stablehlo.token, tensor<i32>)
  return
}
"""
INFEED = """func.func @i%d(%%t: !stablehlo.token) -> tensor<i32> {
  %%v:2 = "stablehlo.infeed"(%%t) : (!stablehlo.token) -> (tensor<i32>, !stablehlo.token)
  return %%v#0 : tensor<i32>
}
"""
TWO_READERS = INFEED % 0 + INFEED % 1 + """func.func @f() -> tensor<i32> {
  %c = stablehlo.constant dense<4> : tensor<i32>
  return %c : tensor<i32>
}
func.func @main() {
  %t = stablehlo.after_all : !stablehlo.token
  %r:2 = "interpreter.run_parallel"(%t, %t) {infeed = [@f, @f], programs = [[@i0], [@i1]]} : (!stablehlo.token, !stablehlo.token) -> (tensor<i32>, tensor<i32>)
  return
}
"""


def errors():
    cases = [("two_senders.mlir", TWO_SENDERS, "channel 3: the programs of 2 processes send on it"),
             ("two_readers.mlir", TWO_READERS, "runs infeed ops in 2 processes' programs")]
    with hl.tempdir("shlo-ch") as d:
        for name, text, needle in cases:
            r = hl.run([hl.HLO_LAUNCH, "--quiet", hl.write_text(d, name, text)])
            if r.returncode == 0 or needle not in r.stderr or "interpreter.run_parallel" not in r.stderr:
                return "%s: expected a failure with %r\n%s" % (name, needle, r.describe())
    return None


if __name__ == "__main__":
    hl.require_binaries("hlo-launch")
    hl.main([
        ("send_recv_between_partitions", send_recv_between_partitions),
        ("run_parallel_infeed", run_parallel_infeed),
        ("run_parallel_tuple_results", run_parallel_tuple_results),
        ("host_transfers", host_transfers),
        ("errors", errors),
    ])
