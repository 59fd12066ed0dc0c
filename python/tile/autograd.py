"""What every differentiable Tile call shares, above the C layer: torch's
dtypes as the library's, tensors as its TensorArgs, and the main_grad
contract (Megatron-LM, TransformerEngine) that kernels, the MLP and
tile.nn's modules keep.
"""

import torch

from . import _capi
from .custom_ops import forward_sets_attributes

# torch dtype -> tile dtype: the GPU's storage types (and float64, the
# host's exact mode), and the integer data kernels read (labels).
TILE_DTYPES = {
    torch.bfloat16: _capi.BF16,
    torch.float16: _capi.F16,
    torch.float32: _capi.F32,
    torch.float64: _capi.F64,
    torch.int64: _capi.I64,
    torch.int32: _capi.I32,
}
TORCH_DTYPES = {v: k for k, v in TILE_DTYPES.items()}
# The library's integer dtypes (a kernel's integer tensors and scalars).
INTEGER_DTYPES = (_capi.I64, _capi.I32)
# The dtypes kernels are compiled for on the GPU, by their names in the C
# API's compile options.
GPU_DTYPE_NAMES = {torch.bfloat16: "bf16", torch.float16: "f16",
                   torch.float32: "f32"}

def tensor_arg(tensor):
    """`tensor` (dense) as the C layer takes it."""
    return _capi.TensorArg(tensor.data_ptr(), tuple(tensor.shape),
                           TILE_DTYPES[tensor.dtype])


def stream_of(device):
    """The current CUDA stream of `device`, as the C layer takes it."""
    return torch._C._cuda_getCurrentRawStream(device.index)


def workspace_of(tensor):
    """(address, bytes) of a uint8 workspace tensor."""
    return tensor.data_ptr(), tensor.numel()


# -- the main_grad contract ------------------------------------------------
#
# A parameter's gradient is added in fp32 to its ``.main_grad``,
# ``grad_added_to_main_grad`` is set and autograd gets None for it, never a
# view of main_grad. Each Function that keeps it takes the main_grads as
# inputs of its node (not looked up on the parameters in the backward), so
# that a traced backward (torch.compile) sees them as the graph inputs they
# are; it keeps them on ctx, not saved: other gradients are added to them
# (or to the buffer they are views of, as in Megatron) before its backward,
# which autograd's saved-tensor version check would refuse.

def main_grad_of(param, what):
    """`param.main_grad`, checked: a contiguous fp32 tensor (float64 too
    for a float64 parameter: the CPU's exact mode) shaped like `param`, on
    its device. `what` names the parameter in errors."""
    accumulator = getattr(param, "main_grad", None)
    if accumulator is None:
        raise RuntimeError(
            f"{what} has no .main_grad: with main_grad=True its gradient is "
            "added to an fp32 tensor of its shape there")
    expected = torch.float32
    if accumulator.dtype == torch.float64 == param.dtype:
        expected = torch.float64
    if accumulator.dtype != expected or accumulator.shape != param.shape or \
            accumulator.device != param.device or \
            not accumulator.is_contiguous():
        raise RuntimeError(
            f"{what}.main_grad must be a contiguous {expected} tensor of "
            f"shape {list(param.shape)} on {param.device}, got "
            f"{accumulator.dtype} {list(accumulator.shape)} on "
            f"{accumulator.device}")
    return accumulator


def mark_main_grads(params, in_forward):
    """Sets ``grad_added_to_main_grad`` on `params` where it reaches the
    real parameters. Callers call it from the forward (`in_forward`) and
    from the backward; it acts in one of them: eagerly, in the backward
    that adds the gradients; under torch.compile, in the forward, since a
    traced backward runs ahead of time on stand-ins and could set nothing
    (the compiled forward replays the assignment)."""
    if in_forward == forward_sets_attributes(list(params)):
        for p in params:
            p.grad_added_to_main_grad = True


def main_grads_of(params, names):
    """The weights' main_grads (checked), looked up when the forward runs,
    and the weights marked (mark_main_grads); `names` name them in errors
    ("gate": "the gate weight")."""
    main_grads = [main_grad_of(p, f"the {name} weight")
                  for p, name in zip(params, names)]
    mark_main_grads(params, in_forward=True)
    return main_grads


def grad_dtype(dtype):
    """The dtype weight gradients accumulate in: fp32 (float64 for float64,
    the CPU's exact mode)."""
    return torch.float64 if dtype == torch.float64 else torch.float32
