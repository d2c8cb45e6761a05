#!/usr/bin/env python3
"""Writes the whole-program benchmarks of bench/training/: one training step
(forward, backward, optimizer update) of an MLP and of a small transformer
block, in f32 and bf16, as HLO text shaped like XLA's CPU compiler output
after optimization: dots left as instructions (Eigen/oneDNN calls), the
element-wise work around them in kLoop fusions, reductions with their
producers in kInput fusions (multi-output where XLA forms them: a bias
gradient next to the gradient it sums), transposes as layout-copy fusions
feeding the dots, optimizer updates as multi-output kLoop fusions. In bf16
the tensors are bf16 and every fusion computes in f32 between converts
(XLA's float normalization on CPU); dots take and give bf16.

  python3 bench/training/gen_training_steps.py [OUT_DIR]   (default: this folder)

The files are committed; rerun this after editing it.
"""

import os
import sys


class Hlo:
    """Collects fused computations and entry instructions as text."""

    def __init__(self, name, t):
        self.name, self.t = name, t
        self.comps, self.entry, self.params, self.n = [], [], [], 0
        self.bf16 = t == "bf16"

    def fresh(self, base):
        self.n += 1
        return "%s.%d" % (base, self.n)

    def param(self, name, shape):
        i = len(self.params)
        self.params.append(shape)
        self.entry.append("  %%%s = %s parameter(%d)" % (name, shape, i))
        return "%" + name

    def inst(self, shape, text, base="v"):
        name = self.fresh(base)
        self.entry.append("  %%%s = %s %s" % (name, shape, text))
        return "%" + name

    def fusion(self, kind, out_shape, args, body, base="fusion"):
        """body(ctx) returns the root line; ctx.p(i) names parameter i."""
        cname = self.fresh("fused_" + base)
        lines = []
        for i, (_, shape) in enumerate(args):
            lines.append("  %%param_%d = %s parameter(%d)" % (i, shape, i))
        body_lines = body(lambda i: "%%param_%d" % i)
        lines += body_lines
        self.comps.append("%%%s {\n%s\n}\n" % (cname, "\n".join(lines)))
        return self.inst(out_shape, "fusion(%s), kind=%s, calls=%%%s" % (
            ", ".join(a for a, _ in args), kind, cname), base)

    def text(self, root):
        self.entry.append("  ROOT %%tuple = %s tuple(%s)" % root)
        head = "HloModule %s\n\n" % self.name
        head += ("%add_f32 {\n  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n"
                 "  ROOT %s = f32[] add(%a, %b)\n}\n\n"
                 "%max_f32 {\n  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n"
                 "  ROOT %m = f32[] maximum(%a, %b)\n}\n\n")
        return head + "\n".join(self.comps) + "\nENTRY %main {\n" + "\n".join(self.entry) + "\n}\n"


def shp(t, dims):
    return "%s[%s]" % (t, ",".join(str(d) for d in dims))


class Body:
    """Lines of one fused computation, computing in f32 (converts in bf16)."""

    def __init__(self, t):
        self.t, self.lines, self.n = t, [], 0

    def v(self, shape, text):
        self.n += 1
        name = "%%t.%d" % self.n
        self.lines.append("  %s = %s %s" % (name, shape, text))
        return name

    def load(self, p, dims):  # a parameter as f32
        if self.t == "f32":
            return p
        return self.v(shp("f32", dims), "convert(%s)" % p)

    def store(self, x, dims):  # an f32 value as the tensor type
        if self.t == "f32":
            return x
        return self.v(shp(self.t, dims), "convert(%s)" % x)

    def const(self, value, dims):
        c = self.v("f32[]", "constant(%r)" % float(value))
        if not dims:
            return c
        return self.v(shp("f32", dims), "broadcast(%s), dimensions={}" % c)

    def root(self, x):
        last = self.lines[-1]
        if last.startswith("  %s = " % x):
            self.lines[-1] = "  ROOT " + last[2:]
        else:
            raise ValueError("root must be the last line")
        return self.lines


def binop(b, op, x, y, dims):
    return b.v(shp("f32", dims), "%s(%s, %s)" % (op, x, y))


def adam_update(h, t, w, m, v, g, lr_t, dims, label):
    """W', m', v' = Adam(W, m, v, g) with the bias-corrected rate lr_t (f32[]);
    a 1-D gradient (a bias's) is f32."""
    S = shp(t, dims)
    gt = "f32" if len(dims) == 1 else t

    def body(p):
        b = Body(t)
        W, M, V = (b.load(p(i), dims) for i in range(3))
        G = p(3) if gt == "f32" else b.load(p(3), dims)
        lr = b.v(shp("f32", dims), "broadcast(%s), dimensions={}" % p(4))
        m2 = binop(b, "add", binop(b, "multiply", M, b.const(0.9, dims), dims),
                   binop(b, "multiply", G, b.const(0.1, dims), dims), dims)
        gg = binop(b, "multiply", G, G, dims)
        v2 = binop(b, "add", binop(b, "multiply", V, b.const(0.999, dims), dims),
                   binop(b, "multiply", gg, b.const(0.001, dims), dims), dims)
        den = binop(b, "add", b.v(shp("f32", dims), "sqrt(%s)" % v2), b.const(1e-8, dims), dims)
        step = binop(b, "divide", binop(b, "multiply", lr, m2, dims), den, dims)
        w2 = binop(b, "subtract", W, step, dims)
        outs = [b.store(x, dims) for x in (w2, m2, v2)]
        tup = b.v("(%s, %s, %s)" % (S, S, S), "tuple(%s)" % ", ".join(outs))
        return b.root(tup)

    f = h.fusion("kLoop", "(%s, %s, %s)" % (S, S, S),
                 [(w, S), (m, S), (v, S), (g, shp(gt, dims)), (lr_t, "f32[]")], body,
                 "adam_" + label)
    return [h.inst(S, "get-tuple-element(%s), index=%d" % (f, i), "gte") for i in range(3)]


def transpose_copy(h, t, x, dims, label):
    """A layout-copy fusion (XLA CPU feeds a dot a transposed operand so)."""
    out = [dims[1], dims[0]]

    def body(p):
        b = Body(t)
        r = b.v(shp(t, out), "transpose(%s), dimensions={1,0}" % p(0))
        return b.root(r)

    return h.fusion("kLoop", shp(t, out), [(x, shp(t, dims))], body, "transpose_" + label)


def dot(h, t, a, b, out, lc, rc, batch=0):
    bd = ""
    if batch:
        dims = ",".join(str(i) for i in range(batch))
        bd = "lhs_batch_dims={%s}, rhs_batch_dims={%s}, " % (dims, dims)
    return h.inst(shp(t, out), "dot(%s, %s), %slhs_contracting_dims={%d}, rhs_contracting_dims={%d}"
                  % (a, b, bd, lc, rc), "dot")


def mlp(t, B=256, D=512, H=1024, O=256):
    """2-layer ReLU MLP, mean squared error, Adam."""
    h = Hlo("mlp_train_step_%s" % t, t)
    W1, b1 = h.param("w1", shp(t, [D, H])), h.param("b1", shp(t, [H]))
    W2, b2 = h.param("w2", shp(t, [H, O])), h.param("b2", shp(t, [O]))
    opt = [(h.param("m_" + n, shp(t, d)), h.param("v_" + n, shp(t, d)))
           for n, d in (("w1", [D, H]), ("b1", [H]), ("w2", [H, O]), ("b2", [O]))]
    x, y = h.param("x", shp(t, [B, D])), h.param("y", shp(t, [B, O]))
    lr_t = h.param("lr_t", "f32[]")
    # Forward.
    z1 = dot(h, t, x, W1, [B, H], 1, 0)

    def bias_relu(p):
        b = Body(t)
        z = b.load(p(0), [B, H])
        bb = b.v(shp("f32", [B, H]), "broadcast(%s), dimensions={1}" % b.load(p(1), [H]))
        a = binop(b, "maximum", binop(b, "add", z, bb, [B, H]), b.const(0, [B, H]), [B, H])
        return b.root(b.store(a, [B, H]))
    a1 = h.fusion("kLoop", shp(t, [B, H]), [(z1, shp(t, [B, H])), (b1, shp(t, [H]))],
                  bias_relu, "bias_relu")
    z2 = dot(h, t, a1, W2, [B, O], 1, 0)
    n = float(B * O)

    def diff(p):  # (z2 + b2 - y) * 2/n: the output gradient
        b = Body(t)
        bb = b.v(shp("f32", [B, O]), "broadcast(%s), dimensions={1}" % b.load(p(1), [O]))
        d = binop(b, "subtract", binop(b, "add", b.load(p(0), [B, O]), bb, [B, O]),
                  b.load(p(2), [B, O]), [B, O])
        return b.root(b.store(binop(b, "multiply", d, b.const(2 / n, [B, O]), [B, O]), [B, O]))
    g2 = h.fusion("kLoop", shp(t, [B, O]), [(z2, shp(t, [B, O])), (b2, shp(t, [O])),
                                           (y, shp(t, [B, O]))], diff, "output_grad")

    def loss_sum(p):  # sum(g^2) * n / 4 = sum(d^2) / n
        b = Body(t)
        g = b.load(p(0), [B, O])
        sq = binop(b, "multiply", g, g, [B, O])
        zero = b.v("f32[]", "constant(0)")
        r = b.v("f32[]", "reduce(%s, %s), dimensions={0,1}, to_apply=%%add_f32" % (sq, zero))
        return b.root(r)
    ls = h.fusion("kInput", "f32[]", [(g2, shp(t, [B, O]))], loss_sum, "loss")

    def loss_scale(p):
        b = Body("f32")
        return b.root(binop(b, "multiply", p(0), b.const(n / 4, []), []))
    loss = h.fusion("kLoop", "f32[]", [(ls, "f32[]")], loss_scale, "loss_scale")
    # Backward: bias gradient of layer 2 (a column sum).

    def col_sum(dims):
        def body(p):
            b = Body(t)
            g = b.load(p(0), dims)
            zero = b.v("f32[]", "constant(0)")
            r = b.v(shp("f32", dims[1:]), "reduce(%s, %s), dimensions={0}, to_apply=%%add_f32"
                    % (g, zero))
            return b.root(r)
        return body
    db2 = h.fusion("kInput", shp("f32", [O]), [(g2, shp(t, [B, O]))], col_sum([B, O]), "bias_grad")
    a1t = transpose_copy(h, t, a1, [B, H], "act")
    dW2 = dot(h, t, a1t, g2, [H, O], 1, 0)
    ga1 = dot(h, t, g2, W2, [B, H], 1, 1)

    def relu_grad(p):  # multi-output: the pre-activation gradient and its column sum
        b = Body(t)
        g, a = b.load(p(0), [B, H]), b.load(p(1), [B, H])
        pos = b.v(shp("pred", [B, H]), "compare(%s, %s), direction=GT" % (a, b.const(0, [B, H])))
        gz = b.v(shp("f32", [B, H]), "select(%s, %s, %s)" % (pos, g, b.const(0, [B, H])))
        gzs = b.store(gz, [B, H])
        gz_back = b.load(gzs, [B, H]) if t != "f32" else gz
        zero = b.v("f32[]", "constant(0)")
        r = b.v(shp("f32", [H]), "reduce(%s, %s), dimensions={0}, to_apply=%%add_f32"
                % (gz_back, zero))
        tup = b.v("(%s, %s)" % (shp("f32", [H]), shp(t, [B, H])), "tuple(%s, %s)" % (r, gzs))
        return b.root(tup)
    rg = h.fusion("kInput", "(%s, %s)" % (shp("f32", [H]), shp(t, [B, H])),
                  [(ga1, shp(t, [B, H])), (a1, shp(t, [B, H]))], relu_grad, "relu_grad")
    db1 = h.inst(shp("f32", [H]), "get-tuple-element(%s), index=0" % rg, "gte")
    gz1 = h.inst(shp(t, [B, H]), "get-tuple-element(%s), index=1" % rg, "gte")
    xt = transpose_copy(h, t, x, [B, D], "input")
    dW1 = dot(h, t, xt, gz1, [D, H], 1, 0)
    # Adam.
    outs = []
    for (w, g, dims, label), (m, v) in zip(((W1, dW1, [D, H], "w1"), (b1, db1, [H], "b1"),
                                            (W2, dW2, [H, O], "w2"), (b2, db2, [O], "b2")), opt):
        outs.append((adam_update(h, t, w, m, v, g, lr_t, dims, label), dims))
    shapes = []
    names = []
    for (w2, m2, v2), dims in outs:
        names += [w2, m2, v2]
        shapes += [shp(t, dims)] * 3
    names.append(loss)
    shapes.append("f32[]")
    return h.text(("(%s)" % ", ".join(shapes), ", ".join(names)))


def sgd_update(h, t, w, g, lr, dims, label):
    S = shp(t, dims)
    gt = "f32" if len(dims) == 1 else t

    def body(p):
        b = Body(t)
        W = b.load(p(0), dims)
        G = p(1) if gt == "f32" else b.load(p(1), dims)
        lrb = b.v(shp("f32", dims), "broadcast(%s), dimensions={}" % p(2))
        return b.root(b.store(binop(b, "subtract", W, binop(b, "multiply", lrb, G, dims), dims),
                              dims))
    return h.fusion("kLoop", S, [(w, S), (g, shp(gt, dims)), (lr, "f32[]")], body, "sgd_" + label)


def loop(h, t, out_dims, args, fn, label, kind="kLoop"):
    """A kLoop fusion computing fn(body, loaded params) in f32, stored as t."""
    def body(p):
        b = Body(t)
        vals = [b.load(p(i), d) if d is not None else p(i) for i, (_, d) in enumerate(args)]
        return b.root(b.store(fn(b, *vals), out_dims))
    return h.fusion(kind, shp(t, out_dims),
                    [(a, shp(t, d) if d is not None else "f32[]") for a, d in args], body, label)


def col_sum_fusion(h, t, x, dims, label):
    def body(p):
        b = Body(t)
        zero = b.v("f32[]", "constant(0)")
        r = b.v(shp("f32", dims[1:]), "reduce(%s, %s), dimensions={0}, to_apply=%%add_f32"
                % (b.load(p(0), dims), zero))
        return b.root(r)
    return h.fusion("kInput", shp("f32", dims[1:]), [(x, shp(t, dims))], body, label)


GELU_C, GELU_K = 0.044715, 0.7978845608028654


def gelu_tanh(b, z, d):
    z3 = binop(b, "multiply", binop(b, "multiply", z, z, d), z, d)
    inner = binop(b, "multiply", binop(b, "add", z, binop(b, "multiply", z3, b.const(GELU_C, d), d),
                                      d), b.const(GELU_K, d), d)
    th = b.v(shp("f32", d), "tanh(%s)" % inner)
    return th, binop(b, "multiply", binop(b, "multiply", z, b.const(0.5, d), d),
                     binop(b, "add", th, b.const(1, d), d), d)


def transformer(t, B=4, S=128, D=256, NH=4, F=1024):
    """One pre-residual transformer block (multi-head self-attention, tanh-GELU
    MLP, residuals), mean squared error against a target, SGD."""
    dh, N = D // NH, B * S
    h = Hlo("transformer_train_step_%s" % t, t)
    Wqkv, Wo = h.param("w_qkv", shp(t, [D, 3 * D])), h.param("w_o", shp(t, [D, D]))
    W1, b1 = h.param("w_1", shp(t, [D, F])), h.param("b_1", shp(t, [F]))
    W2, b2 = h.param("w_2", shp(t, [F, D])), h.param("b_2", shp(t, [D]))
    x, y = h.param("x", shp(t, [N, D])), h.param("y", shp(t, [N, D]))
    lr = h.param("lr", "f32[]")
    heads = [B, NH, S, dh]
    scale = 1.0 / dh ** 0.5

    # Forward: projections, heads as batch dimensions of the attention dots.
    qkv = dot(h, t, x, Wqkv, [N, 3 * D], 1, 0)

    def split(i, mul):
        def fn(b, v):
            r = b.v(shp("f32", [B, S, 3, NH, dh]), "reshape(%s)" % v)
            sl = b.v(shp("f32", [B, S, 1, NH, dh]), "slice(%s), slice={[0:%d], [0:%d], [%d:%d], "
                     "[0:%d], [0:%d]}" % (r, B, S, i, i + 1, NH, dh))
            r2 = b.v(shp("f32", [B, S, NH, dh]), "reshape(%s)" % sl)
            tr = b.v(shp("f32", heads), "transpose(%s), dimensions={0,2,1,3}" % r2)
            return binop(b, "multiply", tr, b.const(mul, heads), heads) if mul != 1 else tr
        return fn
    q = loop(h, t, heads, [(qkv, [N, 3 * D])], split(0, scale), "q_heads")
    k = loop(h, t, heads, [(qkv, [N, 3 * D])], split(1, 1), "k_heads")
    v = loop(h, t, heads, [(qkv, [N, 3 * D])], split(2, 1), "v_heads")
    sc = dot(h, t, q, k, [B, NH, S, S], 3, 3, batch=2)
    rows = [B, NH, S]

    def row_reduce(op, init):
        def body(p):
            b = Body(t)
            z = b.v("f32[]", "constant(%s)" % init)
            r = b.v(shp("f32", rows), "reduce(%s, %s), dimensions={3}, to_apply=%%%s_f32"
                    % (b.load(p(0), [B, NH, S, S]), z, op))
            return b.root(r)
        return body
    mx = h.fusion("kInput", shp("f32", rows), [(sc, shp(t, [B, NH, S, S]))],
                  row_reduce("max", "-inf"), "row_max")
    sq = [B, NH, S, S]

    def exp_sum(p):
        b = Body(t)
        bm = b.v(shp("f32", sq), "broadcast(%s), dimensions={0,1,2}" % p(1))
        e = b.v(shp("f32", sq), "exponential(%s)" % binop(b, "subtract", b.load(p(0), sq), bm, sq))
        z = b.v("f32[]", "constant(0)")
        s_ = b.v(shp("f32", rows), "reduce(%s, %s), dimensions={3}, to_apply=%%add_f32" % (e, z))
        tup = b.v("(%s, %s)" % (shp("f32", rows), shp("f32", sq)), "tuple(%s, %s)" % (s_, e))
        return b.root(tup)
    es = h.fusion("kInput", "(%s, %s)" % (shp("f32", rows), shp("f32", sq)),
                  [(sc, shp(t, sq)), (mx, shp("f32", rows))], exp_sum, "exp_sum")
    ssum = h.inst(shp("f32", rows), "get-tuple-element(%s), index=0" % es, "gte")
    ex = h.inst(shp("f32", sq), "get-tuple-element(%s), index=1" % es, "gte")

    def divide(p):
        b = Body(t)
        bs = b.v(shp("f32", sq), "broadcast(%s), dimensions={0,1,2}" % p(1))
        return b.root(b.store(binop(b, "divide", p(0), bs, sq), sq))
    pr = h.fusion("kLoop", shp(t, sq), [(ex, shp("f32", sq)), (ssum, shp("f32", rows))], divide,
                  "softmax_div")
    o = dot(h, t, pr, v, heads, 3, 2, batch=2)

    def merge(b, val):
        tr = b.v(shp("f32", [B, S, NH, dh]), "transpose(%s), dimensions={0,2,1,3}" % val)
        return b.v(shp("f32", [N, D]), "reshape(%s)" % tr)
    o2 = loop(h, t, [N, D], [(o, heads)], merge, "merge_heads")
    att = dot(h, t, o2, Wo, [N, D], 1, 0)
    r1 = loop(h, t, [N, D], [(x, [N, D]), (att, [N, D])],
              lambda b, a, c: binop(b, "add", a, c, [N, D]), "residual")
    u = dot(h, t, r1, W1, [N, F], 1, 0)

    def bias(b, z, bb, d, n):
        return binop(b, "add", z, b.v(shp("f32", d), "broadcast(%s), dimensions={1}" % bb), d)
    hg = loop(h, t, [N, F], [(u, [N, F]), (b1, [F])],
              lambda b, z, bb: gelu_tanh(b, bias(b, z, bb, [N, F], F), [N, F])[1], "bias_gelu")
    mo = dot(h, t, hg, W2, [N, D], 1, 0)
    n = float(N * D)
    g = loop(h, t, [N, D], [(mo, [N, D]), (b2, [D]), (r1, [N, D]), (y, [N, D])],
             lambda b, z, bb, r, yy: binop(b, "multiply", binop(b, "subtract", binop(
                 b, "add", bias(b, z, bb, [N, D], D), r, [N, D]), yy, [N, D]),
                 b.const(2 / n, [N, D]), [N, D]), "output_grad")

    def loss_sum(p):
        b = Body(t)
        gg = b.load(p(0), [N, D])
        z = b.v("f32[]", "constant(0)")
        r = b.v("f32[]", "reduce(%s, %s), dimensions={0,1}, to_apply=%%add_f32" % (
            binop(b, "multiply", gg, gg, [N, D]), z))
        return b.root(r)
    ls = h.fusion("kInput", "f32[]", [(g, shp(t, [N, D]))], loss_sum, "loss")
    loss = loop(h, "f32", [], [(ls, None)], lambda b, s_: binop(b, "multiply", s_, b.const(
        n / 4, []), []), "loss_scale")

    # Backward: MLP.
    db2 = col_sum_fusion(h, t, g, [N, D], "bias_grad_2")
    dW2 = dot(h, t, transpose_copy(h, t, hg, [N, F], "gelu_out"), g, [F, D], 1, 0)
    ghg = dot(h, t, g, W2, [N, F], 1, 1)

    def gelu_grad(p):
        b = Body(t)
        d = [N, F]
        z = bias(b, b.load(p(1), d), b.load(p(2), [F]), d, F)
        th, _ = gelu_tanh(b, z, d)
        one = b.const(1, d)
        left = binop(b, "multiply", b.const(0.5, d), binop(b, "add", one, th, d), d)
        sech2 = binop(b, "subtract", one, binop(b, "multiply", th, th, d), d)
        dinner = binop(b, "multiply", b.const(GELU_K, d), binop(b, "add", one, binop(
            b, "multiply", b.const(3 * GELU_C, d), binop(b, "multiply", z, z, d), d), d), d)
        right = binop(b, "multiply", binop(b, "multiply", binop(b, "multiply", b.const(0.5, d), z, d),
                                           sech2, d), dinner, d)
        gu = binop(b, "multiply", b.load(p(0), d), binop(b, "add", left, right, d), d)
        gus = b.store(gu, d)
        back = b.load(gus, d) if t != "f32" else gu
        zero = b.v("f32[]", "constant(0)")
        r = b.v(shp("f32", [F]), "reduce(%s, %s), dimensions={0}, to_apply=%%add_f32" % (back, zero))
        return b.root(b.v("(%s, %s)" % (shp("f32", [F]), shp(t, d)), "tuple(%s, %s)" % (r, gus)))
    gg_ = h.fusion("kInput", "(%s, %s)" % (shp("f32", [F]), shp(t, [N, F])),
                   [(ghg, shp(t, [N, F])), (u, shp(t, [N, F])), (b1, shp(t, [F]))], gelu_grad,
                   "gelu_grad")
    db1 = h.inst(shp("f32", [F]), "get-tuple-element(%s), index=0" % gg_, "gte")
    gu = h.inst(shp(t, [N, F]), "get-tuple-element(%s), index=1" % gg_, "gte")
    dW1 = dot(h, t, transpose_copy(h, t, r1, [N, D], "residual"), gu, [D, F], 1, 0)
    gr1a = dot(h, t, gu, W1, [N, D], 1, 1)
    gr1 = loop(h, t, [N, D], [(g, [N, D]), (gr1a, [N, D])],
               lambda b, a, c: binop(b, "add", a, c, [N, D]), "residual_grad")
    # Backward: attention.
    dWo = dot(h, t, transpose_copy(h, t, o2, [N, D], "attention_out"), gr1, [D, D], 1, 0)
    go2 = dot(h, t, gr1, Wo, [N, D], 1, 1)

    def split_grad(b, val):
        r = b.v(shp("f32", [B, S, NH, dh]), "reshape(%s)" % val)
        return b.v(shp("f32", heads), "transpose(%s), dimensions={0,2,1,3}" % r)
    go = loop(h, t, heads, [(go2, [N, D])], split_grad, "split_grad")
    dp = dot(h, t, go, v, sq, 3, 3, batch=2)
    dv = dot(h, t, pr, go, heads, 2, 2, batch=2)

    def rowdot(p):
        b = Body(t)
        z = b.v("f32[]", "constant(0)")
        r = b.v(shp("f32", rows), "reduce(%s, %s), dimensions={3}, to_apply=%%add_f32" % (
            binop(b, "multiply", b.load(p(0), sq), b.load(p(1), sq), sq), z))
        return b.root(r)
    rd = h.fusion("kInput", shp("f32", rows), [(dp, shp(t, sq)), (pr, shp(t, sq))], rowdot,
                  "softmax_rowdot")

    def softmax_grad(p):
        b = Body(t)
        br = b.v(shp("f32", sq), "broadcast(%s), dimensions={0,1,2}" % p(2))
        ds = binop(b, "multiply", b.load(p(1), sq), binop(b, "subtract", b.load(p(0), sq), br, sq),
                   sq)
        return b.root(b.store(ds, sq))
    ds = h.fusion("kLoop", shp(t, sq), [(dp, shp(t, sq)), (pr, shp(t, sq)),
                                         (rd, shp("f32", rows))], softmax_grad, "softmax_grad")
    dq = dot(h, t, ds, k, heads, 3, 2, batch=2)
    dk = dot(h, t, ds, q, heads, 2, 2, batch=2)

    def merge_qkv(p):
        b = Body(t)
        parts = []
        for i in range(3):
            val = b.load(p(i), heads)
            if i == 0:
                val = binop(b, "multiply", val, b.const(scale, heads), heads)
            tr = b.v(shp("f32", [B, S, NH, dh]), "transpose(%s), dimensions={0,2,1,3}" % val)
            parts.append(b.v(shp("f32", [B, S, 1, NH, dh]), "reshape(%s)" % tr))
        cat = b.v(shp("f32", [B, S, 3, NH, dh]), "concatenate(%s), dimensions={2}" % ", ".join(parts))
        r = b.v(shp("f32", [N, 3 * D]), "reshape(%s)" % cat)
        return b.root(b.store(r, [N, 3 * D]))
    gqkv = h.fusion("kLoop", shp(t, [N, 3 * D]), [(dq, shp(t, heads)), (dk, shp(t, heads)),
                                                   (dv, shp(t, heads))], merge_qkv, "merge_qkv")
    dWqkv = dot(h, t, transpose_copy(h, t, x, [N, D], "input"), gqkv, [D, 3 * D], 1, 0)
    # SGD.
    outs, shapes = [], []
    for w, gr, dims, label in ((Wqkv, dWqkv, [D, 3 * D], "w_qkv"), (Wo, dWo, [D, D], "w_o"),
                               (W1, dW1, [D, F], "w_1"), (b1, db1, [F], "b_1"),
                               (W2, dW2, [F, D], "w_2"), (b2, db2, [D], "b_2")):
        outs.append(sgd_update(h, t, w, gr, lr, dims, label))
        shapes.append(shp(t, dims))
    return h.text(("(%s, f32[])" % ", ".join(shapes), ", ".join(outs + [loss])))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    for name, text in (("mlp_f32", mlp("f32")), ("mlp_bf16", mlp("bf16")),
                       ("transformer_f32", transformer("f32")),
                       ("transformer_bf16", transformer("bf16"))):
        with open(os.path.join(out, name + ".hlo"), "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
