#!/usr/bin/env python3
"""The generic form of a whole program (runtime/stablehlo/mlir_generic.c), as
`mlir-opt --mlir-print-op-generic` prints it: "builtin.module" with its
attributes (the grid from mhlo.num_replicas), "func.func" with function_type,
sym_visibility, arg_attrs / res_attrs and a block of arguments, run on 2 ranks
with NumPy as the oracle; malformed generic functions are diagnostics."""

import os

import numpy as np

import hl_testlib as hl

SRC = os.environ.get("HL_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
PROGRAM = os.path.join(SRC, "tests", "stablehlo", "generic_form.mlir")
rng = np.random.default_rng(77)


def generic_program_on_two_ranks():
    """main(x) = all_reduce over 2 replicas of double(x) = 4 * x."""
    x = rng.standard_normal(3).astype(np.float32)
    with hl.tempdir("shlo-gen") as d:
        args, out = os.path.join(d, "args"), os.path.join(d, "out")
        hl.write_args(args, [x])
        # No grid options: mhlo.num_replicas = 2 in the module's attributes.
        r = hl.run([hl.HLO_LAUNCH, "--args-dir", args, "--output-dir", out, "--quiet", PROGRAM])
        if r.returncode != 0:
            return r.describe()
        want = ((x + x) + (x + x)).astype(np.float32)
        for rank in range(2):
            msg = hl.compare("replica %d" % rank, hl.read_outputs(out, rank, 0, 1)[0], want)
            if msg:
                return msg
    return None


BAD = [
    ("args.mlir", '''"func.func"() <{function_type = (tensor<i32>) -> tensor<i32>, sym_name = "main"}> ({
  "func.return"() : () -> ()
}) : () -> ()
''', "the block has 0 arguments, function_type 1"),
    ("noname.mlir", '''"func.func"() <{function_type = () -> ()}> ({
  "func.return"() : () -> ()
}) : () -> ()
''', "'func.func' needs sym_name"),
    ("stray.mlir", '''"builtin.module"() ({
  "stablehlo.constant"() <{value = dense<1> : tensor<i32>}> : () -> tensor<i32>
}) : () -> ()
''', "at module level (expected func.func)"),
]


def diagnostics():
    with hl.tempdir("shlo-gen") as d:
        for name, text, needle in BAD:
            path = os.path.join(d, name)
            with open(path, "w") as f:
                f.write(text)
            r = hl.run([hl.HLO_LAUNCH, "--quiet", path])
            if r.returncode == 0 or needle not in r.stderr or (name + ":") not in r.stderr:
                return "%s: expected a diagnostic with %r\n%s" % (name, needle, r.describe())
    return None


if __name__ == "__main__":
    hl.require_binaries("hlo-launch")
    hl.main([
        ("generic_program_on_two_ranks", generic_program_on_two_ranks),
        ("diagnostics", diagnostics),
    ])
