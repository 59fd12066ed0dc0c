"""Tile's operators as differentiable PyTorch functions.

Each elementwise or row operator is the kernel in examples/ (embedded in
libtile.so) as a tile.Kernel: the forward a user wrote, the backward
tile-differentiate derived, compiled for the call's device, dtype and widths
on first use. swiglu_mlp is the sequence-tiled MLP around the SwiGLU kernels
(mlp.py), grouped_swiglu_mlp its mixture-of-experts form (grouped_mlp.py).
"""

import torch

from . import _capi
from .kernel import Kernel
from .grouped_mlp import grouped_swiglu_mlp  # noqa: F401
from .mlp import swiglu_mlp  # noqa: F401  (tile.ops.swiglu_mlp)


_kernels = {}


def _kernel(name, policy="recompute", main_grad=False):
    """The operator's Kernel, made on first use (a plain dict: torch.compile
    traces through it)."""
    key = (name, policy, main_grad)
    if key not in _kernels:
        _kernels[key] = Kernel(_capi.operator_source(name), policy=policy,
                               main_grad=main_grad)
    return _kernels[key]


def swiglu(a, b):
    """silu(a) * b, elementwise; a and b of one shape [..., H]."""
    return _kernel("swiglu")(a, b)


def geglu(a, b):
    """gelu_tanh(a) * b, elementwise (Gemma's MLP activation); a and b of one
    shape [..., H]."""
    return _kernel("geglu")(a, b)


def silu_and_mul(x):
    """silu(x[..., :H]) * x[..., H:] for x of shape [..., 2H]."""
    if isinstance(x, torch.Tensor) and (x.dim() == 0 or x.shape[-1] % 2):
        raise ValueError(
            "silu_and_mul needs x of shape [..., 2H] (an even last "
            f"dimension), got {list(x.shape)}")
    return _kernel("silu_and_mul")(x)


def rms_norm(x, weight, eps=1e-6, offset=0.0, *, main_grad=False):
    """x * rsqrt(mean(x^2, -1) + eps) * (weight + offset) over the last
    dimension; offset=1.0 for Gemma-style weights. With main_grad=True the
    weight's gradient is added in fp32 to ``weight.main_grad``."""
    return _kernel("rms_norm", main_grad=main_grad)(x, weight, eps, offset)
