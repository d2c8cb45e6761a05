#!/usr/bin/env python3
"""hlo-convert: text -> pb -> text -> pb is byte-stable for every program in
tests/programs/ and examples/; hlo-launch gives bit-identical results for a
program's .hlo, .pb (HloProto), .pb.gz and bare HloModuleProto; and the CLI's
file-safety rules hold (never overwrite the input, existing output only with
--force).
"""

import gzip
import os


import hl_testlib as hl
import test_programs as tp


def programs():
    found = []
    for d in (hl.PROGRAMS_DIR, hl.EXAMPLES_DIR):
        if os.path.isdir(d):
            found += [os.path.join(d, f) for f in sorted(os.listdir(d)) if f.endswith(".hlo")]
    return found


def read(path):
    with open(path, "rb") as f:
        return f.read()


def must_convert(src, dst, *options):
    res = hl.convert(src, dst, *options)
    if res.returncode != 0 or res.timed_out:
        raise AssertionError("conversion failed\n" + res.describe())


def roundtrip(program):
    with hl.tempdir("roundtrip") as t:
        p1, t1, p2, t2 = (os.path.join(t, n) for n in ("1.pb", "1.hlo", "2.pb", "2.hlo"))
        must_convert(program, p1)
        must_convert(p1, t1)
        must_convert(t1, p2)
        must_convert(p2, t2)
        if read(p1) != read(p2):
            return "pb changed after text -> pb -> text -> pb (%d vs %d bytes)" % (
                len(read(p1)), len(read(p2)))
        if read(t1) != read(t2):
            return "text changed after pb -> text -> pb -> text:\n%s\n---\n%s" % (
                read(t1).decode()[:2000], read(t2).decode()[:2000])
        # stdout gives the same text; gzip and bare-module forms hold the same bytes.
        res = hl.run([hl.HLO_CONVERT, p1, "-"])
        if res.returncode != 0 or res.stdout.encode() != read(t1):
            return "'hlo-convert X.pb -' differs from the file output\n" + res.describe()
        gz, mod = os.path.join(t, "1.pb.gz"), os.path.join(t, "m.pb")
        must_convert(program, gz)
        if gzip.decompress(read(gz)) != read(p1):
            return ".pb.gz does not inflate to the .pb bytes"
        must_convert(program, mod, "--to", "module-pb")
        m = read(mod)
        # HloProto = field 1 (hlo_module, length-delimited) holding the HloModuleProto.
        if b"\x0a" + hl.varint(len(m)) + m != read(p1):
            return "--to module-pb is not the HloModuleProto inside the HloProto"
    return None


def outputs_of(program, replicas, partitions, args_dir, tmp, tag):
    out = os.path.join(tmp, "out-" + tag)
    res = hl.launch(program, replicas, partitions, args_dir=args_dir, output_dir=out)
    if res.returncode != 0 or res.timed_out:
        raise AssertionError("%s failed\n%s" % (tag, res.describe()))
    files = {}
    for root, _, names in os.walk(out):
        for n in names:
            if not n.endswith(".npy"):
                continue
            files[os.path.relpath(os.path.join(root, n), out)] = read(os.path.join(root, n))
    return files


def same_results(name):
    """The same outputs, byte for byte, from each encoding of the program."""
    program = os.path.join(hl.PROGRAMS_DIR, name + ".hlo")
    with hl.tempdir("formats") as t:
        args_dir = os.path.join(t, "args")
        hl.write_args(args_dir, tp.CASES[name][0])
        forms = {"hlo": program}
        for tag, fname, opts in (("pb", "p.pb", ()), ("pb.gz", "p.pb.gz", ()),
                                 ("module-pb", "m.pb", ("--to", "module-pb"))):
            forms[tag] = os.path.join(t, fname)
            must_convert(program, forms[tag], *opts)
        want = outputs_of(program, 2, 1, args_dir, t, "hlo")
        if not want:
            return "no output files"
        for tag in ("pb", "pb.gz", "module-pb"):
            got = outputs_of(forms[tag], 2, 1, args_dir, t, tag)
            if got != want:
                diff = sorted(k for k in set(got) | set(want) if got.get(k) != want.get(k))
                return "%s results differ from the .hlo's in %s" % (tag, diff)
    return None


# ------------------------------------------------------------------ CLI rules
def cli_rules():
    src = os.path.join(hl.PROGRAMS_DIR, "call_fusion.hlo")
    with hl.tempdir("cli") as t:
        pb = os.path.join(t, "a.pb")
        must_convert(src, pb)
        before = read(pb)
        for opts in ((), ("--force",)):
            res = hl.convert(pb, pb, *opts)
            if res.returncode == 0 or "input" not in res.stderr or read(pb) != before:
                return "converting a file onto itself %s must fail and keep it\n%s" % (
                    opts, res.describe())
        link = os.path.join(t, "link.pb")
        os.symlink(pb, link)
        res = hl.convert(pb, link, "--force")
        if res.returncode == 0 or read(pb) != before:
            return "overwriting the input through a symlink must fail\n" + res.describe()
        out = os.path.join(t, "b.hlo")
        with open(out, "w") as f:
            f.write("keep me")
        res = hl.convert(pb, out)
        if res.returncode == 0 or "--force" not in res.stderr or read(out) != b"keep me":
            return "an existing output without --force must be refused\n" + res.describe()
        must_convert(pb, out, "--force")
        if not read(out).startswith(b"HloModule"):
            return "--force did not write the text"
        res = hl.convert(pb, os.path.join(t, "c.weird"))
        if res.returncode == 0 or "--to" not in res.stderr:
            return "an unknown output extension must ask for --to\n" + res.describe()
        must_convert(pb, os.path.join(t, "c.weird"), "--to", "text")
        res = hl.run([hl.HLO_CONVERT, "--help"])
        if res.returncode != 0 or "usage: hlo-convert" not in res.stdout:
            return "--help\n" + res.describe()
        res = hl.run([hl.HLO_CONVERT, "-", os.path.join(t, "stdin.pb")],
                     stdin_bytes=read(src))
        if res.returncode != 0 or read(os.path.join(t, "stdin.pb")) != before:
            return "reading the program from stdin\n" + res.describe()
        res = hl.convert(os.path.join(t, "missing.hlo"), os.path.join(t, "x.pb"))
        if res.returncode == 0 or "missing.hlo" not in res.stderr:
            return "a missing input must be named\n" + res.describe()
        res = hl.convert(os.path.join(hl.PROGRAMS_DIR, "errors", "elided_constant.hlo"),
                         os.path.join(t, "e.pb"))
        if res.returncode == 0 or ".pb" not in res.stderr or os.path.exists(
                os.path.join(t, "e.pb")):
            return "an elided constant must be refused, pointing at the .pb\n" + res.describe()
        res = hl.convert(os.path.join(hl.PROGRAMS_DIR, "errors", "malformed.hlo"),
                         os.path.join(t, "m.pb"))
        if res.returncode == 0 or "malformed.hlo:" not in res.stderr:
            return "a parse error must name file:line:col\n" + res.describe()
        leftovers = [n for n in os.listdir(t) if ".tmp." in n]
        if leftovers:
            return "temporary files left behind: %s" % leftovers
    return None


def tests():
    out = [("cli rules", cli_rules)]
    for p in programs():
        out.append(("roundtrip %s" % os.path.relpath(p, hl.SOURCE_DIR),
                    lambda p=p: roundtrip(p)))
    for name in sorted(tp.CASES):
        out.append(("same results .hlo/.pb/.pb.gz/module-pb: %s" % name,
                    lambda n=name: same_results(n)))
    return out


if __name__ == "__main__":
    hl.require_binaries("hlo-convert", "hlo-launch")
    hl.main(tests())
