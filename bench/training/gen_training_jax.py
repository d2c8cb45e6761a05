#!/usr/bin/env python3
"""Writes the training steps of gen_training_steps.py as JAX lowers them:
unfused StableHLO text in the form `jax.jit(step).lower(...).as_text()`
prints (func.func public @main, jax.result_info, dot_general with dimension
numbers, broadcast_in_dim of scalars and of [1,n] rows, reduce in its pretty
form, the backward pass as JAX's autodiff writes it: dot_general transposes
contracting dimension 0 instead of transposing operands, bias gradients as
reduce + reshape, relu's select, slice's transpose as pad + add). Arguments
and results are in the order of the HLO forms, so `--seed S` gives both the
same inputs.

  mlp_f32.mlir: 2-layer ReLU MLP, mean squared error, Adam.
  transformer_f32.mlir: one attention + tanh-GELU MLP block, residuals,
      mean squared error, SGD.

  python3 bench/training/gen_training_jax.py [OUT_DIR]   (default: this folder)

JAX is not installed here; the printed forms follow JAX's output as the
StableHLO corpora (stablehlo-testdata, jax-export-back-compat) show it.
The shapes are arguments of mlp() / transformer(), so tests write small ones.
"""

import os
import sys

import numpy as np


def ty(dims, t="f32"):
    return "tensor<%s>" % "x".join([str(d) for d in dims] + [t])


def flt(v):
    """A float as MLIR prints an f32 attribute."""
    f = np.float32(v)
    if np.isinf(f):
        return "0xFF800000" if f < 0 else "0x7F800000"
    s = "%.6e" % f
    if np.float32(s) == f:
        return s
    s = "%.9g" % f
    if "e" in s:
        mant, exp = s.split("e")
        s = "%sE%d" % (mant, int(exp))
    return s


def dims_list(v):
    return "[%s]" % ", ".join(str(x) for x in v)


class Func:
    """SSA lines of @main; every value remembers its dimensions."""

    def __init__(self, name):
        self.name, self.lines, self.n, self.ncst = name, [], 0, 0
        self.args, self.dims = [], {}

    def arg(self, name, dims):
        v = "%%arg%d" % len(self.args)
        self.args.append((v, dims, name))
        self.dims[v] = dims
        return v

    def emit(self, text, dims):
        v = "%%%d" % self.n
        self.n += 1
        self.lines.append("    %s = %s" % (v, text))
        self.dims[v] = dims
        return v

    def const(self, value):
        v = "%cst" if self.ncst == 0 else "%%cst_%d" % (self.ncst - 1)
        self.ncst += 1
        self.lines.append("    %s = stablehlo.constant dense<%s> : tensor<f32>" % (v, flt(value)))
        self.dims[v] = []
        return v

    def bcast(self, x, dims, bdims):
        return self.emit("stablehlo.broadcast_in_dim %s, dims = %s : (%s) -> %s" % (
            x, dims_list(bdims), ty(self.dims[x]), ty(dims)), dims)

    def splat(self, value, dims):  # a Python float broadcast as JAX does
        return self.bcast(self.const(value), dims, [])

    def row(self, b, dims):  # b[n] added to x[..., n]: [1, n] first, then full
        one = [1] * (len(dims) - 1) + [dims[-1]]
        r = self.bcast(b, one, [len(dims) - 1])
        return self.bcast(r, dims, list(range(len(dims))))

    def keep(self, r, dims, axis):  # r reduced over axis, broadcast back (keepdims)
        kd = list(dims)
        kd[axis] = 1
        rest = [d for d in range(len(dims)) if d != axis]
        k = self.bcast(r, kd, rest)
        return self.bcast(k, dims, list(range(len(dims))))

    def ew(self, op, *xs):
        d = self.dims[xs[0]]
        return self.emit("stablehlo.%s %s : %s" % (op, ", ".join(xs), ty(d)), d)

    def compare(self, direction, a, b):
        d = self.dims[a]
        return self.emit("stablehlo.compare %s, %s, %s, FLOAT : (%s, %s) -> %s" % (
            direction, a, b, ty(d), ty(d), ty(d, "i1")), d)

    def select(self, p, a, b):
        d = self.dims[a]
        return self.emit("stablehlo.select %s, %s, %s : %s, %s" % (p, a, b, ty(d, "i1"), ty(d)), d)

    def reduce(self, x, op, axes, init):
        d = self.dims[x]
        out = [n for i, n in enumerate(d) if i not in axes]
        return self.emit("stablehlo.reduce(%s init: %s) applies stablehlo.%s across dimensions = %s"
                         " : (%s, tensor<f32>) -> %s" % (x, init, op, dims_list(axes), ty(d),
                                                          ty(out)), out)

    def reshape(self, x, dims):
        return self.emit("stablehlo.reshape %s : (%s) -> %s" % (x, ty(self.dims[x]), ty(dims)),
                         dims)

    def transpose(self, x, perm):
        d = self.dims[x]
        out = [d[p] for p in perm]
        return self.emit("stablehlo.transpose %s, dims = %s : (%s) -> %s" % (
            x, dims_list(perm), ty(d), ty(out)), out)

    def slice(self, x, starts, limits):
        out = [b - a for a, b in zip(starts, limits)]
        return self.emit("stablehlo.slice %s [%s] : (%s) -> %s" % (
            x, ", ".join("%d:%d" % (a, b) for a, b in zip(starts, limits)),
            ty(self.dims[x]), ty(out)), out)

    def pad(self, x, zero, low, high):
        d = self.dims[x]
        out = [a + lo + hi for a, lo, hi in zip(d, low, high)]
        return self.emit("stablehlo.pad %s, %s, low = %s, high = %s, interior = %s : (%s, tensor<f32>)"
                         " -> %s" % (x, zero, dims_list(low), dims_list(high),
                                     dims_list([0] * len(d)), ty(d), ty(out)), out)

    def dot(self, a, b, lc, rc, batch=0):
        da, db = self.dims[a], self.dims[b]
        bd = list(range(batch))
        out = [da[i] for i in bd] + [n for i, n in enumerate(da) if i not in bd and i != lc] + \
              [n for i, n in enumerate(db) if i not in bd and i != rc]
        bt = "batching_dims = %s x %s, " % (dims_list(bd), dims_list(bd)) if batch else ""
        return self.emit("stablehlo.dot_general %s, %s, %scontracting_dims = [%d] x [%d], precision = "
                         "[DEFAULT, DEFAULT] : (%s, %s) -> %s" % (a, b, bt, lc, rc, ty(da), ty(db),
                                                                  ty(out)), out)

    def bias_grad(self, g):  # the transpose of b[n] -> [1, n] -> [m, n]
        zero = self.const(0.0)
        r = self.reduce(g, "add", [0], zero)
        n = self.dims[g][1]
        return self.reshape(self.reshape(r, [1, n]), [n])

    def text(self, module, results):
        args = ", ".join("%s: %s" % (v, ty(d)) for v, d, _ in self.args)
        res = ", ".join('%s {jax.result_info = "result[%d]"}' % (ty(self.dims[r]), i)
                        for i, r in enumerate(results))
        ret = "    return %s : %s" % (", ".join(results),
                                      ", ".join(ty(self.dims[r]) for r in results))
        return ("module @%s attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32}"
                " {\n  func.func public @main(%s) -> (%s) {\n%s\n%s\n  }\n}\n" % (
                    module, args, res, "\n".join(self.lines), ret))


def mse(f, pred, y):
    """loss = mean((pred - y)^2) and its gradient with respect to pred."""
    dims = f.dims[pred]
    n = float(np.prod(dims))
    d = f.ew("subtract", pred, y)
    sq = f.ew("multiply", d, d)
    loss = f.ew("divide", f.reduce(sq, "add", list(range(len(dims))), f.const(0.0)), f.const(n))
    two_d = f.ew("multiply", f.splat(2.0, dims), d)  # integer_pow's jvp, from the forward pass
    ct = f.ew("divide", f.const(1.0), f.const(n))     # the mean's transpose
    return loss, f.ew("multiply", f.bcast(ct, dims, []), two_d)


def adam(f, w, m, v, g, lr_t):
    dims = f.dims[w]
    m2 = f.ew("add", f.ew("multiply", f.splat(0.9, dims), m),
              f.ew("multiply", f.splat(0.1, dims), g))
    v2 = f.ew("add", f.ew("multiply", f.splat(0.999, dims), v),
              f.ew("multiply", f.splat(0.001, dims), f.ew("multiply", g, g)))
    den = f.ew("add", f.ew("sqrt", v2), f.splat(1e-8, dims))
    step = f.ew("divide", f.ew("multiply", f.bcast(lr_t, dims, []), m2), den)
    return [f.ew("subtract", w, step), m2, v2]


def mlp(B=256, D=512, H=1024, O=256):
    f = Func("mlp")
    W1, b1, W2, b2 = f.arg("w1", [D, H]), f.arg("b1", [H]), f.arg("w2", [H, O]), f.arg("b2", [O])
    opt = [(f.arg("m_" + n, d), f.arg("v_" + n, d))
           for n, d in (("w1", [D, H]), ("b1", [H]), ("w2", [H, O]), ("b2", [O]))]
    x, y, lr_t = f.arg("x", [B, D]), f.arg("y", [B, O]), f.arg("lr_t", [])
    z1 = f.ew("add", f.dot(x, W1, 1, 0), f.row(b1, [B, H]))
    zeros = f.splat(0.0, [B, H])
    a1 = f.ew("maximum", z1, zeros)
    pred = f.ew("add", f.dot(a1, W2, 1, 0), f.row(b2, [B, O]))
    loss, g = mse(f, pred, y)
    db2 = f.bias_grad(g)
    dW2 = f.dot(a1, g, 0, 0)
    ga1 = f.dot(g, W2, 1, 1)
    gz = f.select(f.compare("GT", z1, zeros), ga1, zeros)  # jax.nn.relu's jvp
    db1 = f.bias_grad(gz)
    dW1 = f.dot(x, gz, 0, 0)
    outs = []
    for (w, gr), (m, v) in zip(((W1, dW1), (b1, db1), (W2, dW2), (b2, db2)), opt):
        outs += adam(f, w, m, v, gr, lr_t)
    return f.text("jit_mlp_train_step", outs + [loss])


GELU_C, GELU_K = 0.044715, 0.7978845608028654


def transformer(B=4, S=128, D=256, NH=4, F=1024):
    dh, N = D // NH, B * S
    f = Func("transformer")
    Wqkv, Wo = f.arg("w_qkv", [D, 3 * D]), f.arg("w_o", [D, D])
    W1, b1 = f.arg("w_1", [D, F]), f.arg("b_1", [F])
    W2, b2 = f.arg("w_2", [F, D]), f.arg("b_2", [D])
    x, y, lr = f.arg("x", [N, D]), f.arg("y", [N, D]), f.arg("lr", [])
    heads, sq = [B, NH, S, dh], [B, NH, S, S]
    scale = 1.0 / dh ** 0.5
    # Forward: attention.
    qkv = f.reshape(f.dot(x, Wqkv, 1, 0), [B, S, 3, NH, dh])
    parts = []
    for i in range(3):
        p5 = f.slice(qkv, [0, 0, i, 0, 0], [B, S, i + 1, NH, dh])
        parts.append(f.transpose(f.reshape(p5, [B, S, NH, dh]), [0, 2, 1, 3]))
    q = f.ew("multiply", parts[0], f.splat(scale, heads))
    k, v = parts[1], parts[2]
    sc = f.dot(q, k, 3, 3, batch=2)
    mx = f.reduce(sc, "maximum", [3], f.const(float("-inf")))
    ex = f.ew("exponential", f.ew("subtract", sc, f.keep(mx, sq, 3)))
    ssum = f.reduce(ex, "add", [3], f.const(0.0))
    pr = f.ew("divide", ex, f.keep(ssum, sq, 3))
    o = f.dot(pr, v, 3, 2, batch=2)
    o2 = f.reshape(f.transpose(o, [0, 2, 1, 3]), [N, D])
    r1 = f.ew("add", x, f.dot(o2, Wo, 1, 0))
    # Forward: MLP with jax.nn.gelu(approximate=True).
    z = f.ew("add", f.dot(r1, W1, 1, 0), f.row(b1, [N, F]))
    nf = [N, F]
    z3 = f.ew("multiply", f.ew("multiply", z, z), z)
    inner = f.ew("multiply", f.splat(GELU_K, nf),
                 f.ew("add", z, f.ew("multiply", f.splat(GELU_C, nf), z3)))
    th = f.ew("tanh", inner)
    cdf = f.ew("multiply", f.splat(0.5, nf), f.ew("add", f.splat(1.0, nf), th))
    hg = f.ew("multiply", z, cdf)
    dz3 = f.ew("multiply", f.splat(3.0, nf), f.ew("multiply", z, z))  # integer_pow's jvp
    out = f.ew("add", f.ew("add", f.dot(hg, W2, 1, 0), f.row(b2, [N, D])), r1)
    loss, g = mse(f, out, y)
    # Backward: MLP.
    db2 = f.bias_grad(g)
    dW2 = f.dot(hg, g, 0, 0)
    gh = f.dot(g, W2, 1, 1)
    g_cdf = f.ew("multiply", z, gh)
    g_th = f.ew("multiply", f.splat(0.5, nf), g_cdf)
    g_in = f.ew("multiply", g_th, f.ew("subtract", f.splat(1.0, nf), f.ew("multiply", th, th)))
    g_b = f.ew("multiply", f.splat(GELU_K, nf), g_in)
    g_z3 = f.ew("multiply", f.ew("multiply", f.splat(GELU_C, nf), g_b), dz3)
    gu = f.ew("add", f.ew("add", f.ew("multiply", gh, cdf), g_b), g_z3)
    db1 = f.bias_grad(gu)
    dW1 = f.dot(r1, gu, 0, 0)
    gr1 = f.ew("add", g, f.dot(gu, W1, 1, 1))
    # Backward: attention.
    dWo = f.dot(o2, gr1, 0, 0)
    go = f.transpose(f.reshape(f.dot(gr1, Wo, 1, 1), [B, S, NH, dh]), [0, 2, 1, 3])
    dp = f.dot(go, v, 3, 3, batch=2)
    dv = f.dot(pr, go, 2, 2, batch=2)
    yg = f.ew("multiply", pr, dp)  # jax.nn.softmax's jvp, transposed
    rs = f.reduce(yg, "add", [3], f.const(0.0))
    ds = f.ew("subtract", yg, f.ew("multiply", pr, f.keep(rs, sq, 3)))
    dq = f.ew("multiply", f.dot(ds, k, 3, 2, batch=2), f.splat(scale, heads))
    dk = f.dot(ds, q, 2, 2, batch=2)
    zero = f.const(0.0)
    gq = None
    for i, gp in enumerate((dq, dk, dv)):  # slice's transpose: pad, summed
        g5 = f.reshape(f.transpose(gp, [0, 2, 1, 3]), [B, S, 1, NH, dh])
        padded = f.pad(g5, zero, [0, 0, i, 0, 0], [0, 0, 2 - i, 0, 0])
        gq = padded if gq is None else f.ew("add", gq, padded)
    dWqkv = f.dot(x, f.reshape(gq, [N, 3 * D]), 0, 0)
    # SGD.
    outs = []
    for w, gr in ((Wqkv, dWqkv), (Wo, dWo), (W1, dW1), (b1, db1), (W2, dW2), (b2, db2)):
        dims = f.dims[w]
        outs.append(f.ew("subtract", w, f.ew("multiply", f.bcast(lr, dims, []), gr)))
    return f.text("jit_transformer_train_step", outs + [loss])


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    for name, text in (("mlp_f32", mlp()), ("transformer_f32", transformer())):
        with open(os.path.join(out, name + ".mlir"), "w") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
