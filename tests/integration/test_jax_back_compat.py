"""JAX's export back-compatibility data through hlo-launch (scripts/jax_back_compat.py).

The data is third-party and stays outside the tree: the ROCm and TPU files in
../shared/conformance/jax-export-back-compat next to the checkout (or next to
its worktree folder), plus any directories in HL_JAX_BACK_COMPAT_DIRS
(os.pathsep-separated; e.g. the CPU and CUDA files of jax-ml/jax's
jax/_src/internal_test_util/export_back_compat_test_data). Skipped when none
exists. Fails on any case with wrong numbers, and on any error not listed in
scripts/jax_back_compat_known_failures.txt.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hl_testlib as hl  # noqa: E402

sys.path.insert(0, os.path.join(hl.SOURCE_DIR, "scripts"))
import jax_back_compat  # noqa: E402


def data_dirs():
    dirs = []
    for up in ("..", os.path.join("..", "..")):
        d = os.path.normpath(os.path.join(hl.SOURCE_DIR, up, "shared", "conformance",
                                          "jax-export-back-compat"))
        if os.path.isdir(d):
            dirs.append(d)
            break
    for d in os.environ.get("HL_JAX_BACK_COMPAT_DIRS", "").split(os.pathsep):
        if d and os.path.isdir(d):
            dirs.append(d)
    return dirs


if __name__ == "__main__":
    hl.require_binaries("hlo-launch")
    dirs = data_dirs()
    if not dirs:
        print("skip: no ../shared/conformance/jax-export-back-compat and no "
              "HL_JAX_BACK_COMPAT_DIRS")
        sys.exit(0)
    sys.exit(jax_back_compat.main([
        "--hlo-launch", hl.HLO_LAUNCH,
        "--known-failures", os.path.join(hl.SOURCE_DIR, "scripts",
                                         "jax_back_compat_known_failures.txt")] + dirs))
