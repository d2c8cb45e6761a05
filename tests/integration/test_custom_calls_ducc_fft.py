"""jaxlib's old CPU FFT custom-calls (ducc_fft, dynamic_ducc_fft) through hlo-launch.

The descriptor operand is a flatbuffer of jaxlib/cpu/ducc_fft.fbs (built here
by a small writer that follows the flatbuffers binary format: root offset,
vtable, table, vectors), passed as a u8 constant as jax's lowering did.
NumPy's fft is the oracle.
"""

import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hl_testlib as hl  # noqa: E402


def flatbuffer(fields):
    """fields: list by field id of None (absent) or (fmt, value) with fmt a struct
    scalar format ('b', 'B', 'I', 'd', '?') or a vector ('Q[]', 'I[]')."""
    nf = len(fields)
    vt_size = 4 + 2 * nf
    vt_pos = 4
    table_pos = (vt_pos + vt_size + 7) // 8 * 8
    # Table body: soffset, then each field 8-aligned (simple, valid).
    offsets, body, vectors = [], bytearray(), []
    cursor = 4
    for f in fields:
        if f is None:
            offsets.append(0)
            continue
        fmt, value = f
        cursor = (cursor + 7) // 8 * 8
        offsets.append(cursor)
        if fmt.endswith("[]"):
            vectors.append((table_pos + cursor, fmt[0], value))
            size = 4
        else:
            size = struct.calcsize("<" + fmt)
        body += bytes(cursor - 4 - len(body))
        body += struct.pack("<" + (fmt if not fmt.endswith("[]") else "I"),
                            value if not fmt.endswith("[]") else 0)
        cursor += size
    table_size = 4 + len(body)
    buf = bytearray(table_pos + table_size)
    struct.pack_into("<I", buf, 0, table_pos)
    struct.pack_into("<HH", buf, vt_pos, vt_size, table_size)
    for i, off in enumerate(offsets):
        struct.pack_into("<H", buf, vt_pos + 4 + 2 * i, off)
    struct.pack_into("<i", buf, table_pos, table_pos - vt_pos)
    buf[table_pos + 4:table_pos + table_size] = body
    for field_pos, elem, values in vectors:
        while len(buf) % 8 != 4:  # so 8-byte elements after the length are aligned
            buf.append(0)
        vec_pos = len(buf)
        buf += struct.pack("<I", len(values)) + struct.pack("<%d%s" % (len(values), elem), *values)
        struct.pack_into("<I", buf, field_pos, vec_pos - field_pos)
    return bytes(buf)


C2C, C2R, R2C = 0, 1, 2
HLO = {np.complex64: "c64", np.complex128: "c128", np.float32: "f32", np.float64: "f64"}


def strides(shape):
    return [int(np.prod(shape[i + 1:])) for i in range(len(shape))]


def shp(t, dims):
    return "%s[%s]{%s}" % (HLO[t], ",".join(map(str, dims)),
                           ",".join(map(str, range(len(dims) - 1, -1, -1))))


def run(text, args):
    return hl.run_hlo_text("ducc", text, args, 1)[0][0]


def ducc(x, out_t, out_shape, shape, axes, fft_type, forward, scale, dtype_code):
    desc = flatbuffer([("b", dtype_code), ("b", fft_type), ("Q[]", shape),
                       ("Q[]", strides(x.shape)), ("Q[]", strides(out_shape)),
                       ("I[]", axes), ("?", forward), ("d", scale)])
    text = ("HloModule m\n\nENTRY main {\n  d = u8[%d]{0} constant({%s})\n  x = %s parameter(0)\n"
            "  ROOT y = %s custom-call(d, x), custom_call_target=\"ducc_fft\", "
            "operand_layout_constraints={u8[%d]{0}, %s}\n}\n" % (
                len(desc), ", ".join(map(str, desc)), shp(x.dtype.type, x.shape),
                shp(out_t, out_shape), len(desc), shp(x.dtype.type, x.shape)))
    return run(text, [x])


def rand(shape, t, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    if np.issubdtype(t, np.complexfloating):
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(t)


def c2c_forward_c64():
    x = rand((2, 8), np.complex64, 1)
    y = ducc(x, np.complex64, x.shape, [2, 8], [1], C2C, True, 1.0, 0)
    return hl.compare("fft", y.view(np.float32),
                      np.fft.fft(x, axis=1).astype(np.complex64).view(np.float32), (1e-5, 1e-5))


def c2c_inverse_2d_c128():
    x = rand((4, 6), np.complex128, 2)
    y = ducc(x, np.complex128, x.shape, [4, 6], [0, 1], C2C, False, 1 / 24, 1)
    return hl.compare("ifft2", y.view(np.float64), np.ascontiguousarray(np.fft.ifft2(x)).view(np.float64),
                      (1e-12, 1e-12))


def r2c_f32():
    x = rand((3, 8), np.float32, 3)
    y = ducc(x, np.complex64, (3, 5), [3, 8], [1], R2C, True, 1.0, 0)
    return hl.compare("rfft", y.view(np.float32),
                      np.fft.rfft(x, axis=1).astype(np.complex64).view(np.float32), (1e-5, 1e-5))


def c2r_f64():
    spec = np.fft.rfft(rand((3, 8), np.float64, 4), axis=1)
    y = ducc(spec, np.float64, (3, 8), [3, 8], [1], C2R, False, 1 / 8, 1)
    return hl.compare("irfft", y, np.fft.irfft(spec, n=8, axis=1), (1e-12, 1e-12))


def dynamic_c2c():
    x = rand((3, 4), np.complex128, 5)
    desc = flatbuffer([("I", 2), ("b", 1), ("b", C2C), ("I[]", [0]), ("?", True)])
    text = ("HloModule m\n\nENTRY main {\n  d = u8[%d]{0} constant({%s})\n  x = c128[3,4]{1,0} parameter(0)\n"
            "  s = u32[2]{0} constant({3, 4})\n  si = u32[2]{0} constant({4, 1})\n"
            "  so = u32[2]{0} constant({4, 1})\n  sc = f64[] constant(2)\n"
            "  ROOT y = c128[3,4]{1,0} custom-call(d, x, s, si, so, sc), custom_call_target=\"dynamic_ducc_fft\"\n}\n"
            % (len(desc), ", ".join(map(str, desc))))
    y = run(text, [x])
    return hl.compare("2 * fft over axis 0", y.view(np.float64),
                      np.ascontiguousarray(2 * np.fft.fft(x, axis=0)).view(np.float64), (1e-12, 1e-12))


def bad_descriptor():
    x = rand((2, 8), np.complex64, 6)
    text = ("HloModule m\n\nENTRY main {\n  d = u8[4]{0} constant({200, 0, 0, 0})\n"
            "  x = c64[2,8]{1,0} parameter(0)\n  ROOT y = c64[2,8]{1,0} custom-call(d, x), "
            "custom_call_target=\"ducc_fft\"\n}\n")
    with hl.tempdir("ducc-err") as d:
        path = os.path.join(d, "p.hlo")
        with open(path, "w") as f:
            f.write(text)
        hl.write_args(os.path.join(d, "args"), [x])
        r = hl.launch(path, args_dir=os.path.join(d, "args"))
        if r.returncode == 0 or "flatbuffer descriptor" not in r.stdout + r.stderr:
            return "expected a descriptor error\n" + r.describe()
    # Strides that reach outside the operand.
    desc = flatbuffer([("b", 0), ("b", C2C), ("Q[]", [2, 8]), ("Q[]", [16, 1]), ("Q[]", [8, 1]),
                       ("I[]", [1]), ("?", True), ("d", 1.0)])
    text = ("HloModule m\n\nENTRY main {\n  d = u8[%d]{0} constant({%s})\n"
            "  x = c64[2,8]{1,0} parameter(0)\n  ROOT y = c64[2,8]{1,0} custom-call(d, x), "
            "custom_call_target=\"ducc_fft\"\n}\n" % (len(desc), ", ".join(map(str, desc))))
    with hl.tempdir("ducc-err") as d:
        path = os.path.join(d, "p.hlo")
        with open(path, "w") as f:
            f.write(text)
        hl.write_args(os.path.join(d, "args"), [x])
        r = hl.launch(path, args_dir=os.path.join(d, "args"))
        if r.returncode == 0 or "reach outside" not in r.stdout + r.stderr:
            return "expected a stride error\n" + r.describe()
    return None


if __name__ == "__main__":
    hl.require_binaries("hlo-launch")
    hl.main([
        ("c2c_forward_c64", c2c_forward_c64),
        ("c2c_inverse_2d_c128", c2c_inverse_2d_c128),
        ("r2c_f32", r2c_f32),
        ("c2r_f64", c2r_f64),
        ("dynamic_ducc_fft_c2c", dynamic_c2c),
        ("bad_descriptor", bad_descriptor),
    ])
