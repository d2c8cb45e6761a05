#!/usr/bin/env python3
"""hlo-launch --describe on real files of every input format: StableHLO's own
portable artifact (its version is the one its RUN line's FileCheck expects),
a jax.export built by flatc around it (test_jax_export.py's encoder), HLO
text and its HloModuleProto / gzip forms (hlo-convert), StableHLO text with a
stated grid, and a shape-polymorphic StableHLO program ('?' dimensions).
Nothing starts MPI; the expected shapes, shardings and grids are the ones the
files state.
"""

import gzip
import os
import shutil

import hl_testlib as hl
import test_jax_export as jexp

TESTS = os.path.join(hl.SOURCE_DIR, "tests")


def describe(*paths):
    return hl.run([hl.HLO_LAUNCH, "--describe"] + list(paths), timeout=60)


def expect_lines(r, lines):
    if r.returncode != 0 or r.timed_out:
        return r.describe()
    got = r.stdout.splitlines()
    missing = [line for line in lines if line not in got]
    if missing:
        return "missing lines %r\n%s" % (missing, r.describe())
    return None


def test_portable_artifact():
    if not jexp.VHLO:
        return "SKIP: no ../shared/conformance/stablehlo-vhlo"
    path = os.path.join(jexp.VHLO, "vhlo_emit_version_api.1_1_0.mlir.bc")
    return expect_lines(describe(path), [
        "format: StableHLO portable artifact (MLIR bytecode)",
        "producer: StableHLO_v1.1.0", "stablehlo version: 1.1.0", "bytecode version: 6",
        "arguments: 1", "  0: f32[]", "results: 1"])


def test_jax_export():
    if jexp.skip_reason():
        return jexp.skip_reason()
    with hl.tempdir("describe") as d:
        prog = jexp.make_export(d, "multi", platforms=("tpu", "cuda"), nr_devices=2)
        r = describe(prog)
        # Its module loads only for the CPU: what the container says is
        # printed, then the load's error (exit 1).
        want = ["format: jax.export serialized program",
                "jax.export: serialization version 9, calling convention version 9",
                "function: add", "platforms: tpu,cuda", "devices: 2",
                "producer: StableHLO_v1.1.0"]
        missing = [line for line in want if line not in r.stdout.splitlines()]
        if r.returncode != 1 or missing or \
                "exported for platform(s) [tpu, cuda], not cpu" not in r.stderr:
            return "missing %r or the error\n%s" % (missing, r.describe())
        prog = jexp.make_export(d, "add")
        return expect_lines(describe(prog), [
            "format: jax.export serialized program",
            "jax.export: serialization version 9, calling convention version 9",
            "function: add", "platforms: cpu", "devices: 1", "producer: StableHLO_v1.1.0",
            "stablehlo version: 1.1.0", "arguments: 1", "  0: f32[]", "results: 1"])


SHARDED = [
    "arguments: 2",
    "  0: f32[8,2]  sharding {devices=[1,4]<=[4]}",
    "  1: f32[2,3]  sharding {devices=[4,1]<=[4]}",
    "results: 1", "  0: f32[2,3]  sharding {devices=[4,1]<=[4]}"]


def test_hlo_formats():
    src = os.path.join(hl.PROGRAMS_DIR, "sharded_contract_scatter_4.hlo")
    msg = expect_lines(describe(src), ["format: HLO text", "grid: 4 partitions"] + SHARDED)
    if msg:
        return msg
    with hl.tempdir("describe") as d:
        pb = os.path.join(d, "m.pb")
        c = hl.convert(src, pb)
        if c.returncode != 0:
            return c.describe()
        with open(pb, "rb") as f, gzip.open(pb + ".gz", "wb") as g:
            shutil.copyfileobj(f, g)
        r = describe(pb, pb + ".gz")
        # hlo-convert's HloProto states the replica count too.
        msg = expect_lines(r, ["format: HloProto", "format: HloProto (gzip)",
                               "grid: 1 replica x 4 partitions"] + SHARDED)
        if msg:
            return msg
        if r.stdout.count("\nprogram: ") != 1:  # two blocks, one blank line apart
            return "expected two descriptions\n" + r.describe()
    return None


def test_stablehlo_text():
    msg = expect_lines(describe(os.path.join(TESTS, "stablehlo", "psum_8.mlir")), [
        "format: StableHLO text", "module: jit_f", "grid: 8 replicas x 1 partition",
        "arguments: 2", "  0: f32[4,3]", "  1: f32[3]", "results: 2", "  1: f32[]"])
    if msg:
        return msg
    return expect_lines(describe(os.path.join(TESTS, "stablehlo", "shape_poly_global.mlir")), [
        "format: StableHLO text", "arguments: 1", "  0: f32[?,4]"])


def test_bad_file():
    with hl.tempdir("describe") as d:
        bad = os.path.join(d, "junk.bin")
        with open(bad, "wb") as f:
            f.write(b"\x00\x01\x02not a program")
        r = describe(bad)
        if r.returncode != 1 or bad not in r.stderr:
            return "expected exit 1 naming %s\n%s" % (bad, r.describe())
    return None


if __name__ == "__main__":
    hl.main([
        ("portable_artifact", test_portable_artifact),
        ("jax_export", test_jax_export),
        ("hlo_formats", test_hlo_formats),
        ("stablehlo_text", test_stablehlo_text),
        ("bad_file", test_bad_file),
    ])
