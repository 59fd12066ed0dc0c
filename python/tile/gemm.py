"""matmul_into: a GEMM into an fp32 tensor in place (cuBLASLt on CUDA
tensors, torch on the CPU), beta scaling what is there: how weight
gradients are added to main_grad without a temporary of the weight's size
(the gated MLP's, the chunked head's); traced, the custom op
tile::matmul_into, which mutates d."""

import torch

from . import _capi, _capi_operators
from .autograd import stream_of, tensor_arg, workspace_of
from .custom_ops import define_op


def matmul_into(d, a, b, *, trans_a=False, trans_b=False, beta=1.0):
    """d = op(a) @ op(b) + beta * d in place, fp32 accumulation: with d an
    fp32 main_grad and bf16/f16 a and b, the weight gradient is added
    without a gradient tensor of its own (cuBLASLt on CUDA tensors, on the
    current stream; torch in float64 on the CPU). a, b, d dense 2-D."""
    for name, t in (("a", a), ("b", b), ("d", d)):
        if t.dim() != 2 or not t.is_contiguous():
            raise ValueError(f"matmul_into: {name} must be a dense 2-D "
                             f"tensor, got shape {list(t.shape)}")
    _matmul_into_op(d, a, b, trans_a, trans_b, beta)
    return d


def _matmul_into(d: torch.Tensor, a: torch.Tensor, b: torch.Tensor,
                 trans_a: bool, trans_b: bool, beta: float) -> None:
    if d.device.type == "cpu":
        f64 = torch.float64
        op_a = a.to(f64).T if trans_a else a.to(f64)
        op_b = b.to(f64).T if trans_b else b.to(f64)
        product = op_a @ op_b
        # beta = 0 reads nothing of d (as cuBLASLt): it may be uninitialized
        # memory, whose NaNs 0 * d would keep.
        if beta != 0.0:
            product += beta * d.to(f64)
        d.copy_(product.to(d.dtype))
        return
    workspace = torch.empty(_capi.MATMUL_WORKSPACE_BYTES, dtype=torch.uint8,
                            device=d.device)
    _capi_operators.matmul(d.device.index, stream_of(d.device), workspace_of(workspace),
                 tensor_arg(a), trans_a, tensor_arg(b), trans_b,
                 tensor_arg(d), beta)


def _matmul_into_fake(d, a, b, trans_a, trans_b, beta):
    return None


# Traced (torch.compile), it writes d, a graph input.
_matmul_into_op = define_op("matmul_into", _matmul_into, _matmul_into_fake,
                            mutates=("d",))
