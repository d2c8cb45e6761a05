#!/usr/bin/env python3
"""Seeds for fuzz_jax_export: jax.export flatbuffers encoded by flatc from
tests/integration/jax_export_test.fbs around StableHLO's portable artifacts.
Usage: make_jax_export_seeds.py OUT_DIR ARTIFACT.mlir.bc... (needs flatc)."""
import json
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
schema = os.path.join(here, "..", "integration", "jax_export_test.fbs")
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
for i, path in enumerate(sys.argv[2:]):
    with open(path, "rb") as f:
        module = f.read()
    for j, platforms in enumerate((["cpu"], ["cuda", "cpu"])):
        doc = {"serialization_version": 9, "function_name": "f", "nr_devices": 1,
               "in_avals": [{"kind": 0, "shape": ["2"], "dtype": 10}], "platforms": platforms,
               "mlir_module_serialized": [b - 256 if b > 127 else b for b in module],
               "calling_convention_version": 9, "module_kept_var_idx": [0]}
        src = os.path.join(out, "seed%d_%d.json" % (i, j))
        with open(src, "w") as f:
            json.dump(doc, f)
        subprocess.run(["flatc", "-b", "-o", out, schema, src], check=True)
        os.remove(src)
    # With shardings: HloSharding protos ({replicated}: type 0), and named
    # shardings through the unique tables of serialization version 10.
    mesh = {"axis_sizes": [2], "axis_names": ["x"], "axis_types": [1]}
    named = {"mesh": mesh, "spec": {"partitions": []}, "abstract_mesh_idx": 0}
    variants = [{"in_shardings": [{"hlo_sharding_proto": [8, 0]}],
                 "out_shardings": [{"hlo_sharding_proto": [8, 0]}]},
                {"unique_abstract_meshes": [mesh], "unique_named_shardings": [named],
                 "in_shardings_idxs": [1], "out_shardings_idxs": [1],
                 "in_shardings": [{"named_sharding": named}]}]
    for j, extra in enumerate(variants):
        doc = {"serialization_version": 10, "function_name": "f", "nr_devices": 2,
               "in_avals": [{"kind": 0, "shape": [], "dtype": 10}], "platforms": ["cpu"],
               "mlir_module_serialized": [b - 256 if b > 127 else b for b in module],
               "calling_convention_version": 9, "module_kept_var_idx": [0]}
        doc.update(extra)
        src = os.path.join(out, "seed%d_s%d.json" % (i, j))
        with open(src, "w") as f:
            json.dump(doc, f)
        subprocess.run(["flatc", "-b", "-o", out, schema, src], check=True)
        os.remove(src)
