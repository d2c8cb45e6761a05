#!/usr/bin/env python3
"""--global-args / --global-output and where the shardings come from
(issue 10, section 2): --output-sharding and --arg-shardings, the ROOT and
parameter attributes, and a binary proto's spmd_output_sharding /
spmd_parameters_shardings (HloModuleProto fields 12 and 14). An unknown
output sharding on more than one partition is an error naming the option,
never partition 0's shard written as the global array. NumPy is the oracle.

Run by ctest (integration.global_shardings), which sets HLO_LAUNCH.
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hl_testlib as hl  # noqa: E402

TIMEOUT_S = 60

# Shard-shaped (partitioned) negation on 2 partitions, no shardings in the text.
NEG_BARE = """HloModule neg, num_partitions=2

ENTRY main {
  x = f32[2,3]{1,0} parameter(0)
  ROOT n = f32[2,3]{1,0} negate(x)
}
"""


def launch(*args):
    return hl.run([hl.HLO_LAUNCH] + [str(a) for a in args], timeout=TIMEOUT_S)


def rows_x():
    return (np.arange(12, dtype=np.float32) - 5.5).reshape(4, 3)


def test_unknown_output_sharding_is_an_error():
    with hl.tempdir("unknown") as d:
        prog = hl.write_text(d, "neg.hlo", NEG_BARE)
        x = os.path.join(d, "x.npy")
        np.save(x, rows_x())
        out = os.path.join(d, "out.npy")
        res = launch("-np", 2, "--quiet", "--global-args", x, "--arg-shardings",
                     "{devices=[2,1]<=[2]}", "--global-output", out, prog)
        if res.timed_out or res.returncode != 1:
            return res.describe()
        if "--output-sharding" not in res.stderr or "not known" not in res.stderr:
            return "the error should name --output-sharding\n" + res.describe()
        if "rank" in res.stderr or os.path.exists(out):
            return "found only after the ranks ran\n" + res.describe()
    return None


def test_option_shardings():
    # Arguments split by rows in device order 0,1 (commas inside the braces);
    # the result's tiles held in the order 1,0: global = -[x[2:4]; x[0:2]].
    with hl.tempdir("options") as d:
        prog = hl.write_text(d, "neg.hlo", NEG_BARE)
        x = os.path.join(d, "x.npy")
        a = rows_x()
        np.save(x, a)
        out = os.path.join(d, "out.npy")
        res = launch("-np", 2, "--quiet", "--global-args", x, "--arg-shardings",
                     "{devices=[2,1]0,1}", "--output-sharding", "{devices=[2,1]1,0}",
                     "--global-output", out, prog)
        if res.returncode != 0:
            return res.describe()
        return hl.compare("assembled", np.load(out), -np.concatenate([a[2:4], a[0:2]]))


def test_root_and_parameter_attributes():
    text = NEG_BARE.replace("parameter(0)", "parameter(0), sharding={devices=[2,1]<=[2]}") \
                   .replace("negate(x)", "negate(x), sharding={devices=[2,1]1,0}")
    with hl.tempdir("attrs") as d:
        prog = hl.write_text(d, "neg.hlo", text)
        x = os.path.join(d, "x.npy")
        a = rows_x()
        np.save(x, a)
        out = os.path.join(d, "out.npy")
        res = launch("-np", 2, "--quiet", "--global-args", x, "--global-output", out, prog)
        if res.returncode != 0:
            return res.describe()
        msg = hl.compare("from attributes", np.load(out), -np.concatenate([a[2:4], a[0:2]]))
        if msg:
            return msg
        # --output-sharding overrides the ROOT's attribute.
        res = launch("-np", 2, "--quiet", "--global-args", x, "--output-sharding",
                     "{devices=[2,1]0,1}", "--global-output", out, prog)
        if res.returncode != 0:
            return res.describe()
        return hl.compare("overridden", np.load(out), -a)


# --- protobuf wire encoding, enough to add fields to an HloModuleProto ---------

def field(number, wire_type, payload):
    key = hl.varint((number << 3) | wire_type)
    if wire_type == 2:
        return key + hl.varint(len(payload)) + payload
    return key + payload


def op_sharding_tiled(dims, devices):
    """OpSharding{type=OTHER(3), tile_assignment_dimensions=3, _devices=4} (packed)."""
    packed = lambda vals: b"".join(hl.varint(v) for v in vals)  # noqa: E731
    return (field(1, 0, hl.varint(3)) + field(3, 2, packed(dims)) + field(4, 2, packed(devices)))


def read_varint(buf, pos):
    shift = value = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, pos


def add_module_fields(hlo_proto, extra):
    """HloProto{hlo_module=1} with `extra` bytes appended to the module message."""
    assert hlo_proto[0] == 0x0A, "HloProto should start with field 1 (hlo_module)"
    length, pos = read_varint(hlo_proto, 1)
    module = hlo_proto[pos:pos + length] + extra
    return field(1, 2, module) + hlo_proto[pos + length:]


def test_binary_proto_spmd_shardings():
    # JAX's case: no sharding attributes; the module records them in
    # spmd_output_sharding (12) and spmd_parameters_shardings (14).
    with hl.tempdir("proto") as d:
        prog = hl.write_text(d, "neg.hlo", NEG_BARE)
        pb = os.path.join(d, "neg.pb")
        res = hl.run([hl.HLO_CONVERT, prog, pb], timeout=TIMEOUT_S)
        if res.returncode != 0:
            return res.describe()
        with open(pb, "rb") as f:
            data = f.read()
        extra = field(12, 2, op_sharding_tiled([2, 1], [1, 0])) + \
            field(14, 2, op_sharding_tiled([2, 1], [0, 1]))
        spmd = os.path.join(d, "spmd.pb")
        with open(spmd, "wb") as f:
            f.write(add_module_fields(data, extra))
        x = os.path.join(d, "x.npy")
        a = rows_x()
        np.save(x, a)
        out = os.path.join(d, "out.npy")
        res = launch("-np", 2, "--quiet", "--global-args", x, "--global-output", out, spmd)
        if res.returncode != 0:
            return res.describe()
        msg = hl.compare("from the module config", np.load(out),
                         -np.concatenate([a[2:4], a[0:2]]))
        if msg:
            return msg
        # hlo-convert keeps them: the converted proto assembles the same way.
        again = os.path.join(d, "again.pb")
        res = hl.run([hl.HLO_CONVERT, spmd, again], timeout=TIMEOUT_S)
        if res.returncode != 0:
            return res.describe()
        res = launch("-np", 2, "--quiet", "--global-args", x, "--global-output", out, again)
        if res.returncode != 0:
            return res.describe()
        return hl.compare("after hlo-convert", np.load(out), -np.concatenate([a[2:4], a[0:2]]))


def bf16_bits(values):
    return hl.round_to_bf16(values).view(np.uint32).astype(np.uint64).__rshift__(16) \
        .astype(np.uint16)


def write_untyped_npy(path, descr, u16):
    """A .npy file whose descr is `descr` exactly ('<V2' as ml_dtypes' np.save
    writes it; NumPy itself would normalise it to '|V2')."""
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %r, }" % (descr, u16.shape)
    header = header.encode() + b" " * (64 - (10 + len(header) + 1) % 64) + b"\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header)
        f.write(u16.astype("<u2").tobytes())
    assert np.load(path).shape == u16.shape


def test_global_args_untyped_bf16():
    text = """HloModule negbf, num_partitions=2

ENTRY main {
  x = bf16[1,2]{1,0} parameter(0), sharding={devices=[2,1]<=[2]}
  ROOT n = bf16[1,2]{1,0} negate(x), sharding={devices=[2,1]<=[2]}
}
"""
    vals = np.array([[1.5, -2.0], [0.25, 3.0]], np.float32)
    bits = bf16_bits(vals)
    with hl.tempdir("bf16") as d:
        prog = hl.write_text(d, "negbf.hlo", text)
        out = os.path.join(d, "out.npy")
        for descr in ("<V2", "|V2"):
            x = os.path.join(d, "x.npy")
            write_untyped_npy(x, descr, bits)
            res = launch("-np", 2, "--quiet", "--global-args", x, "--global-output", out, prog)
            if res.returncode != 0:
                return descr + "\n" + res.describe()
            got = np.load(out).view(np.uint16)
            want = bits ^ np.uint16(0x8000)   # negation flips the sign bit
            if not np.array_equal(got, want):
                return "%s: got bits %s, expected %s" % (descr, got, want)
        # One-byte types ('|V1'): f8e4m3fn 1.0, 2.0, 0.5, 3.0 (bits 0x38 0x40 0x30 0x44).
        prog8 = hl.write_text(d, "negf8.hlo", text.replace("bf16", "f8e4m3fn"))
        x = os.path.join(d, "x8.npy")
        bits8 = np.array([[0x38, 0x40], [0x30, 0x44]], np.uint8)
        np.save(x, bits8.view("V1"))
        res = launch("-np", 2, "--quiet", "--global-args", x, "--global-output", out, prog8)
        if res.returncode != 0:
            return "|V1\n" + res.describe()
        got = np.load(out).view(np.uint8)
        if not np.array_equal(got, bits8 ^ np.uint8(0x80)):
            return "f8e4m3fn: got bits %s, expected %s" % (got, bits8 ^ np.uint8(0x80))
    return None


def test_already_global_parameters():
    # An un-partitioned ("before optimizations") dump: the parameter has the
    # global shape and a splitting sharding. The global .npy matches that
    # shape, so the program is partitioned (runtime/spmd) and each partition
    # holds its block of rows (docs/PARTITIONER.md).
    text = """HloModule before, num_partitions=2

ENTRY main {
  x = f32[4,3]{1,0} parameter(0), sharding={devices=[2,1]<=[2]}
  ROOT n = f32[4,3]{1,0} negate(x), sharding={devices=[2,1]<=[2]}
}
"""
    with hl.tempdir("before") as d:
        prog = hl.write_text(d, "before.hlo", text)
        x = os.path.join(d, "x.npy")
        np.save(x, rows_x())
        y = os.path.join(d, "y.npy")
        res = launch("-np", 2, "--quiet", "--global-args", x, "--global-output", y, prog)
        if res.returncode != 0:
            return "a global program with global arguments should run partitioned\n" + res.describe()
        got = np.load(y)
        if got.shape != (4, 3) or not np.array_equal(got, -rows_x()):
            return "global output %r, expected %r" % (got, -rows_x())
    return None


def test_seed_draws_global_arrays():
    # --seed gives a program the same global inputs however it is sharded:
    # the launcher-partitioned program on 2 partitions draws each parameter
    # whole and cuts it (it gave every partition the same shard), so its
    # assembled result equals the program's on one process (issue 26).
    text = """HloModule seeded

ENTRY main {
  x = f32[4,3]{1,0} parameter(0), sharding={devices=[2,1]<=[2]}
  w = f32[4,3]{1,0} parameter(1), sharding={replicated}
  n = f32[4,3]{1,0} negate(x), sharding={devices=[2,1]<=[2]}
  ROOT a = f32[4,3]{1,0} add(n, w), sharding={devices=[2,1]<=[2]}
}
"""
    with hl.tempdir("seeded") as d:
        prog = hl.write_text(d, "seeded.hlo", text)
        one = os.path.join(d, "one")
        res = launch("-np", 1, "--quiet", "--seed", 7, "--output-dir", one, prog)
        if res.returncode != 0:
            return res.describe()
        want = np.load(os.path.join(one, "replica0_partition0", "result0.npy"))
        y = os.path.join(d, "y.npy")
        res = launch("-np", 2, "--partitions", 2, "--global-program", "--quiet", "--seed", 7,
                     "--global-output", y, prog)
        if res.returncode != 0:
            return res.describe()
        got = np.load(y)
        if got.shape != (4, 3) or not np.array_equal(got, want):
            return "2 partitions gave %r, one process %r" % (got, want)
        if np.array_equal(want[:2], want[2:]):
            return "the draw repeats itself: %r" % want
    return None


def test_bad_sharding_options():
    with hl.tempdir("bad") as d:
        prog = hl.write_text(d, "neg.hlo", NEG_BARE)
        res = launch("-np", 2, "--zeros", "--output-sharding", "{devices=[2,1", prog)
        if res.returncode != 2 or "--output-sharding" not in res.stderr:
            return res.describe()
        res = launch("-np", 2, "--zeros", "--arg-shardings", "{replicated},{bogus}", prog)
        if res.returncode != 2 or "--arg-shardings entry 1" not in res.stderr:
            return res.describe()
    return None


TESTS = [
    ("unknown_output_sharding_is_an_error", test_unknown_output_sharding_is_an_error),
    ("option_shardings", test_option_shardings),
    ("root_and_parameter_attributes", test_root_and_parameter_attributes),
    ("binary_proto_spmd_shardings", test_binary_proto_spmd_shardings),
    ("global_args_untyped_bf16", test_global_args_untyped_bf16),
    ("already_global_parameters", test_already_global_parameters),
    ("bad_sharding_options", test_bad_sharding_options),
    ("seed_draws_global_arrays", test_seed_draws_global_arrays),
]

if __name__ == "__main__":
    hl.require_binaries("hlo-launch", "hlo-convert")
    hl.main(TESTS)
