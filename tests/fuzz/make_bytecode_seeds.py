#!/usr/bin/env python3
"""Seeds for fuzz_bytecode: the portable artifacts (mlir_module_serialized)
of JAX's back-compat data files, which hold Shardy ops and meshes, dynamic
shapes and custom calls the StableHLO suite does not.
Usage: make_bytecode_seeds.py OUT_DIR DATA.py... (third-party data, read from
outside the tree)."""
import ast
import os
import sys

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
for path in sys.argv[2:]:
    with open(path) as f:
        tree = ast.parse(f.read())
    k = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "dict":
            kw = {a.arg: a.value for a in node.keywords}
            if "mlir_module_serialized" in kw:
                name = "%s_%d.mlirbc" % (os.path.basename(path)[:-3], k)
                with open(os.path.join(out, name), "wb") as f:
                    f.write(ast.literal_eval(kw["mlir_module_serialized"]))
                k += 1
