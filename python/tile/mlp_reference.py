"""The MLP step on the CPU, the reference: in float64, the GEMMs in torch,
SwiGLU (with routing weights: scaled_silu_and_mul) and its derived
backward on the reference evaluator, every intermediate rounded to the
storage dtype where the GPU rounds; dense (one expert) and grouped
(mlp.py and moe.py call it for CPU tensors)."""

import torch

from . import operators
from .autograd import grad_dtype
from .kernel_autograd import run_backward


#
# Weights are stacked throughout: gate and up [E, I, H] with down
# [E, H, I], or a fused gate [E, 2I, H] with up None. `splits` None is one
# expert over every row.

def _expert_rows(splits, rows):
    first = 0
    for e, count in enumerate(splits if splits is not None else [rows]):
        yield e, slice(first, first + count)
        first += count


def _halves(gate, up):
    """gate and up [E, I, H] of either layout."""
    if up is not None:
        return gate, up
    inter = gate.shape[1] // 2
    return gate[:, :inter], gate[:, inter:]


def _round(t, dtype):
    """A float64 result stored in `dtype` and read as float64 again (where
    the GPU rounds)."""
    return t.to(dtype).to(torch.float64)


def _gate_up(x64, gate, up, dtype):
    """g and u of one expert, in the storage dtype."""
    f64 = torch.float64
    return (_round(x64 @ gate.to(f64).T, dtype).to(dtype),
            _round(x64 @ up.to(f64).T, dtype).to(dtype))


def _product(g, u, routing, rows):
    """h = silu(g) * u (* the rows' routing weights, f32, or float64 in an
    exact step: moe.py's _routing_of) by the operators' kernels, in g's
    storage dtype."""
    if routing is None:
        return operators.kernel("swiglu")(g, u)
    return operators.kernel("scaled_silu_and_mul")(
        torch.cat([g, u], 1), routing[rows])


def cpu_forward(x, gate, up, down, splits, routing=None):
    gates, ups = _halves(gate, up)
    f64 = torch.float64
    y = torch.zeros_like(x)
    for e, rows in _expert_rows(splits, x.shape[0]):
        g, u = _gate_up(x[rows].to(f64), gates[e], ups[e], x.dtype)
        h = _product(g, u, routing, rows).to(f64)
        y[rows] = (h @ down[e].to(f64).T).to(x.dtype)
    return y


def cpu_backward(x, gate, up, down, dy, splits, grads, overwrite,
                  routing=None, d_routing=None):
    """dx; the fp32 (float64 for float64) weight gradients written to or
    added to `grads`, stacked as the weights, as the GPU's step does; with
    `routing`, the routing weights' gradient written to d_routing."""
    gates, ups = _halves(gate, up)
    dtype, f64 = x.dtype, torch.float64
    swiglu = operators.kernel("swiglu")
    scaled = operators.kernel("scaled_silu_and_mul")
    dx = torch.zeros_like(x)
    computed = [torch.zeros(g.shape, dtype=f64) for g in grads]
    grad_gate, grad_up = _halves(computed[0],
                                 None if up is None else computed[1])
    for e, rows in _expert_rows(splits, x.shape[0]):
        if rows.start == rows.stop:
            continue  # no tokens: zero gradients (and no routing weights)
        x64, dy64 = x[rows].to(f64), dy[rows].to(f64)
        g, u = _gate_up(x64, gates[e], ups[e], dtype)
        h64 = _product(g, u, routing, rows).to(f64)
        dh = (dy64 @ down[e].to(f64)).to(dtype)
        if routing is None:
            dg, du = (t.to(f64)
                      for t in run_backward(swiglu, [g, u], (dh,), []))
        else:
            gu, w = torch.cat([g, u], 1), routing[rows]
            dgu, dw = run_backward(scaled, [gu, w], (dh,), [])
            dg, du = dgu.to(f64).chunk(2, 1)
            d_routing[rows] = dw.to(d_routing.dtype)
        dx[rows] = (dg @ gates[e].to(f64) + du @ ups[e].to(f64)).to(dtype)
        grad_gate[e] = dg.T @ x64
        grad_up[e] = du.T @ x64
        computed[-1][e] = dy64.T @ h64
    for target, grad in zip(grads, computed):
        grad = grad.to(grad_dtype(dtype))
        target.copy_(grad) if overwrite else target.add_(grad)
    return dx
