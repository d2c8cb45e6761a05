#!/usr/bin/env python3
"""The training steps of bench/training in PyTorch (Debian's python3-torch):
the same math as mlp_f32 / transformer_f32 (.hlo and .mlir), forward and
backward through autograd, the optimizer in place as torch.optim's Adam and
SGD do it (with the step's bias-corrected rate given, as the programs take it).

  torch_steps.py {mlp|transformer} THREADS RUNS
prints "first F ms; runs 2-N: min M ms" (wall time of whole steps).
Run it with OPENBLAS_NUM_THREADS=1 (bench/run_training_jax.sh does).
"""

import sys
import time

import torch
import torch.nn.functional as F


def mlp_step(B=256, D=512, H=1024, O=256):
    g = torch.Generator().manual_seed(0)

    def rnd(*s, scale=1.0):
        return (torch.randn(*s, generator=g) * scale).requires_grad_(False)
    params = [rnd(D, H, scale=D ** -0.5), rnd(H, scale=0.1), rnd(H, O, scale=H ** -0.5),
              rnd(O, scale=0.1)]
    for p in params:
        p.requires_grad_(True)
    state = [(torch.full_like(p, 1e-3), torch.full_like(p, 1e-4)) for p in params]
    x, y = rnd(B, D), rnd(B, O)
    lr_t = 1e-3

    def step():
        w1, b1, w2, b2 = params
        a1 = torch.relu(x @ w1 + b1)
        loss = F.mse_loss(a1 @ w2 + b2, y)
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            for p, gr, (m, v) in zip(params, grads, state):
                m.mul_(0.9).add_(gr, alpha=0.1)
                v.mul_(0.999).addcmul_(gr, gr, value=0.001)
                p.addcdiv_(m, v.sqrt().add_(1e-8), value=-lr_t)
        return loss
    return step


def transformer_step(B=4, S=128, D=256, NH=4, Fd=1024):
    dh, N = D // NH, B * S
    g = torch.Generator().manual_seed(0)
    shapes = [(D, 3 * D), (D, D), (D, Fd), (Fd,), (Fd, D), (D,)]
    params = [(torch.randn(*s, generator=g) * s[0] ** -0.5).requires_grad_(True) for s in shapes]
    x, y = torch.randn(N, D, generator=g), torch.randn(N, D, generator=g)
    lr = 1e-3

    def heads(t):
        return t.reshape(B, S, NH, dh).transpose(1, 2)

    def step():
        wqkv, wo, w1, b1, w2, b2 = params
        q, k, v = (heads(t) for t in (x @ wqkv).split(D, dim=1))
        p = torch.softmax((q * dh ** -0.5) @ k.transpose(2, 3), dim=-1)
        o2 = (p @ v).transpose(1, 2).reshape(N, D)
        r1 = x + o2 @ wo
        h = F.gelu(r1 @ w1 + b1, approximate="tanh")
        loss = F.mse_loss(h @ w2 + b2 + r1, y)
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            for w, gr in zip(params, grads):
                w.sub_(lr * gr)
        return loss
    return step


def main():
    prog, threads, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    torch.set_num_threads(threads)
    step = {"mlp": mlp_step, "transformer": transformer_step}[prog]()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        step()
        times.append((time.perf_counter() - t0) * 1e3)
    later = times[1:] or times
    print("first %.3f ms; runs 2-%d: min %.3f ms" % (times[0], runs, min(later)))


if __name__ == "__main__":
    main()
