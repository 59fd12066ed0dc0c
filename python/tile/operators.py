"""The operator table: every kernel tile.ops runs, by name.

Each elementwise or row operator is a kernel whose source libtile.so holds
(tile_operator_source) as a tile.Kernel: the forward a user wrote, the
backward tile-differentiate derived, compiled for the call's device, dtype
and widths on first use.
"""

from . import _capi
from .custom_ops import writes_in_place
from .kernel import Kernel
from .kernel_autograd import apply, run_backward

# Every operator's kernel, plain and with main_grad (where that changes
# anything: a cross-row gradient added to main_grad), made when the package
# is imported (a millisecond each: the host module is verified and derived,
# nothing is compiled for a GPU until a call needs it). Made on first use
# instead, a first call inside torch.compile would trace the construction,
# whose calls into libtile Dynamo cannot follow: fullgraph=True would fail.
# The operators whose backward takes the forward's row statistics rather
# than recomputing them (save-row-stats): cross_entropy's rows are a
# vocabulary wide, and recomputing its max and sum of exponentials would
# read each row twice more.
_SAVE_ROW_STATS = {"cross_entropy"}


def _operator_kernels():
    kernels = {}
    for name in _capi.operator_names():
        source = _capi.operator_source(name)
        policy = "save-row-stats" if name in _SAVE_ROW_STATS else "recompute"
        plain = kernels[(name, False)] = Kernel(source, policy=policy)
        accumulating = Kernel(source, policy=policy, main_grad=True)
        kernels[(name, True)] = accumulating \
            if accumulating.main_grad_arguments else plain
    return kernels


_kernels = _operator_kernels()


# Hugging Face's activation names -> the gated kernel.
ACTIVATIONS = {"silu": "swiglu", "swish": "swiglu",
               "gelu_pytorch_tanh": "geglu", "gelu_tanh": "geglu"}


def kernel(name, main_grad=False):
    """The operator's Kernel (a plain dict: torch.compile traces through
    it)."""
    return _kernels[(name, main_grad)]


def gated_backward_in_place(name, a, b, dh):
    """(da, db) of the gated kernel `name` ("swiglu" or "geglu"), written
    over a and b: the kernel is elementwise, so no element is read after it
    is overwritten, and the backward allocates no [..., H] tensor. Traced
    (torch.compile), it is the functional custom op and writes new tensors
    (a traced graph may not mutate what it did not create)."""
    into = {0: a, 1: b} if writes_in_place([a, b, dh]) else None
    return run_backward(kernel(name), [a, b], (dh,), [], into=into)


def gated(name, a, b, inplace_backward):
    """The gated kernel `name` of a and b; with `inplace_backward` its
    backward writes da and db over a and b (apply's `overwritten`: the
    kernel is elementwise)."""
    if not inplace_backward:
        return kernel(name)(a, b)
    kernel(name).check((a, b))  # the checks the kernel's own call makes
    return apply(kernel(name), (a, b), overwritten=(0, 1))
