"""Tile's operators as differentiable PyTorch functions.

Each elementwise or row operator is a kernel of the operator table
(operators.py): the forward a user wrote, the backward tile-differentiate
derived. swiglu_mlp is the sequence-tiled MLP around the SwiGLU kernels and
grouped_swiglu_mlp its mixture-of-experts form (mlp.py, one stack).
"""

import torch

from .head import linear_cross_entropy, linear_loss
from .kernel_autograd import run_backward
from .kernel_launch import run_forward
from .losses import cross_entropy
from .mlp import grouped_swiglu_mlp, swiglu_mlp
from .moe import moe_experts
from .operators import gated, kernel

__all__ = ["swiglu", "geglu", "silu_and_mul", "rotary", "rope", "rms_norm",
           "swiglu_mlp", "grouped_swiglu_mlp", "moe_experts", "cross_entropy",
           "linear_cross_entropy", "linear_loss"]


def swiglu(a, b, *, inplace_backward=False):
    """silu(a) * b, elementwise; a and b of one shape [..., H].

    inplace_backward=True: the backward writes da and db over a and b, as
    Liger's LigerSiLUMulFunction always does. It allocates no [..., H]
    tensor, and is a few per cent faster where the call is small (its
    results go to lines it has just read; docs/Performance.md). Only for a
    and b that nothing reads after this call's backward, such as a gated
    MLP's projection outputs (tile.nn.GatedMLP passes them so): a and b
    themselves hold garbage afterwards."""
    return gated("swiglu", a, b, inplace_backward)


def geglu(a, b, *, inplace_backward=False):
    """gelu_tanh(a) * b, elementwise (Gemma's MLP activation); a and b of one
    shape [..., H]. inplace_backward as for swiglu."""
    return gated("geglu", a, b, inplace_backward)


def silu_and_mul(x):
    """silu(x[..., :H]) * x[..., H:] for x of shape [..., 2H]."""
    if isinstance(x, torch.Tensor) and (x.dim() == 0 or x.shape[-1] % 2):
        raise ValueError(
            "silu_and_mul needs x of shape [..., 2H] (an even last "
            f"dimension), got {list(x.shape)}")
    return kernel("silu_and_mul")(x)


def _rope_sign(head_dim, device, interleaved=False):
    """[-1]*(D/2) + [1]*(D/2) in f32: rotate_half's signs (interleaved:
    -1 on even columns, +1 on odd ones, the pairs' signs). Made each call
    (two fills) and freed by the rope's backward, not kept by the process:
    a whole step's memory peaks at the end of its backward, where a kept
    one would be the only block Tile holds beyond what the model's own
    layers hold (Qwen3-MoE at 4096 tokens: 512 bytes above Liger)."""
    sign = torch.ones(head_dim, dtype=torch.float32, device=device)
    if interleaved:
        sign[0::2] = -1.0
    else:
        sign[: head_dim // 2] = -1.0
    return sign


class _Rotary(torch.autograd.Function):
    """The rope kernel and its derived backward, saving cos, sin and sign
    only. The derived backward takes x but reads nothing of it but its
    shape (test/Examples/rope.test checks that no op reads it), so the
    cotangent, which has x's shape, stands in for it: the pre-rotation q
    and k are not kept alive until the backward (tile.Kernel's autograd
    would keep every input: 640 MiB per Llama-8B layer at 65536 tokens),
    as Hugging Face's own RoPE keeps only cos and sin."""

    @staticmethod
    def forward(ctx, name, rows, cos, sin, sign):
        ctx.name = name
        ctx.save_for_backward(cos, sin, sign)
        outputs, _ = run_forward(kernel(name), [rows, cos, sin, sign])
        return outputs[0]

    @staticmethod
    def backward(ctx, dy):
        cos, sin, sign = ctx.saved_tensors
        dy = dy.contiguous()
        dx = run_backward(kernel(ctx.name), [dy, cos, sin, sign], (dy,),
                          [])[0]
        return None, dx, None, None, None


def rotary(x, cos, sin, unsqueeze_dim=1, *, sign=None, interleaved=False):
    """x * cos + rotate_half(x) * sin for every head of x, as Hugging Face's
    apply_rotary_pos_emb computes it for one of q and k (interleaved=True:
    the pairs 2i, 2i+1 of a head rotated, GLM-4's rotate_half_llm, cos and
    sin holding each angle's value twice in a row; examples/
    rope_interleaved.mlir): x is
    [B, heads, S, D] (unsqueeze_dim=1, the heads a transposed view of the
    projection's [B, S, heads, D], which is read in place) or
    [B, S, heads, D] (unsqueeze_dim=2); cos and sin are [B or 1, S, D].
    The result has x's shape and layout. The math is f32, rounded once.
    `sign`: rotate_half's signs where the caller made them (rope: one for
    q and k)."""
    if unsqueeze_dim not in (1, 2):
        raise ValueError(f"rotary: unsqueeze_dim must be 1 or 2, got "
                         f"{unsqueeze_dim}")
    if not all(isinstance(t, torch.Tensor) for t in (x, cos, sin)):
        raise TypeError("rotary: x, cos and sin must be tensors")
    if x.dim() != 4 or cos.dim() != 3 or sin.shape != cos.shape:
        raise ValueError(
            f"rotary: x must be 4-D and cos, sin 3-D of one shape; got x "
            f"{list(x.shape)}, cos {list(cos.shape)}, sin {list(sin.shape)}")
    tokens = x.transpose(1, 2) if unsqueeze_dim == 1 else x  # [B, S, H, D]
    batch, seq, heads, head_dim = tokens.shape
    if cos.shape[1:] != (seq, head_dim) or cos.shape[0] not in (1, batch) \
            or head_dim % 2:
        raise ValueError(
            f"rotary: cos and sin must be [{batch} or 1, {seq}, {head_dim}] "
            f"with an even head size for x {list(x.shape)} (unsqueeze_dim="
            f"{unsqueeze_dim}); got {list(cos.shape)}")
    rows = tokens.reshape(batch * seq, heads * head_dim)
    table = [t.expand(batch, seq, head_dim).reshape(batch * seq, head_dim)
             .to(x.dtype) for t in (cos, sin)]
    if sign is None:
        sign = _rope_sign(head_dim, x.device, interleaved)
    name = "rope_interleaved" if interleaved else "rope"
    out = _Rotary.apply(name, rows, *table, sign)
    out = out.view(batch, seq, heads, head_dim)
    return out.transpose(1, 2) if unsqueeze_dim == 1 else out


def rope(q, k, cos, sin, unsqueeze_dim=1, *, interleaved=False):
    """Hugging Face's apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim):
    (rotary(q, ...), rotary(k, ...)); the backward is derived (a rotation's
    transpose, nothing saved but cos and sin). interleaved: as rotary's."""
    # One sign for both where their heads agree (rotary checks the rest).
    same = all(isinstance(t, torch.Tensor) and t.dim() for t in (q, k)) \
        and q.shape[-1] == k.shape[-1] and q.device == k.device
    sign = _rope_sign(q.shape[-1], q.device, interleaved) if same else None
    return (rotary(q, cos, sin, unsqueeze_dim, sign=sign,
                   interleaved=interleaved),
            rotary(k, cos, sin, unsqueeze_dim, sign=sign,
                   interleaved=interleaved))


def rms_norm(x, weight, eps=1e-6, offset=0.0, *, main_grad=False):
    """x * rsqrt(mean(x^2, -1) + eps) * (weight + offset) over the last
    dimension; offset=1.0 for Gemma-style weights. With main_grad=True the
    weight's gradient is added in fp32 to ``weight.main_grad``."""
    return kernel("rms_norm", main_grad=main_grad)(x, weight, eps, offset)
