#!/usr/bin/env python3
"""Writes the .npy seed corpus of fuzz_npy into DIR: every element type
NumPy has, both byte orders, Fortran order, 0-d and empty arrays, the
untyped void files np.save writes for ml_dtypes arrays, and format 2.0."""

import os
import sys

import numpy as np


def main(out):
    os.makedirs(out, exist_ok=True)
    arrays = {}
    for t in ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
              "uint64", "float16", "float32", "float64", "complex64", "complex128"]:
        arrays[t] = (np.arange(6) % 3).astype(t).reshape(2, 3)
    arrays["big_endian"] = np.arange(4, dtype=">i4")
    arrays["fortran"] = np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    arrays["scalar"] = np.array(1.5, np.float64)
    arrays["empty"] = np.zeros((3, 0), np.int16)
    arrays["void2"] = np.arange(4, dtype=np.uint16).view("V2")
    arrays["void1"] = np.arange(4, dtype=np.uint8).view("V1")
    for name, a in arrays.items():
        np.save(os.path.join(out, name + ".npy"), a)
    with open(os.path.join(out, "v2.npy"), "wb") as f:
        np.lib.format.write_array(f, np.arange(3, dtype=np.int32), version=(2, 0))


if __name__ == "__main__":
    main(sys.argv[1])
