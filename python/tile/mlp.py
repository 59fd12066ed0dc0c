"""The sequence-tiled SwiGLU MLP (tile::ops::TiledSwiGLUMLP) from PyTorch.

    y = (silu(x @ gate.T) * (x @ up.T)) @ down.T

The rows of x are split into shards and nothing of size [rows, I] is kept
between the forward and the backward: the backward recomputes gate/up per
shard (cuBLASLt) and runs SwiGLU's derived backward. On CUDA tensors one C
call runs a whole step on the current stream with a workspace from torch's
allocator; weight gradients are fp32 (written, or with main_grad=True added
to each weight's ``.main_grad`` and not returned to autograd).

CPU tensors take the same steps in float64 — the GEMMs in torch, SwiGLU and
its derived backward on the reference evaluator, every intermediate rounded
to the storage dtype where the GPU rounds — so the layer is tested without
a GPU, exactly (gradcheck) in float64.
"""

import ctypes
import math
import threading

import torch

from . import _capi
from . import autograd as _autograd
from . import kernel as _kernel
from ._capi import TileError

_lock = threading.Lock()
# Per device ordinal, and per (ordinal, options): made on first use and kept
# for the process (a tile_mlp must go before its operators; neither is ever
# freed, so the order cannot go wrong at exit).
_operators = {}
_mlps = {}


def _options(shards, memory_budget, recompute=True):
    options = _capi.MLPOptions()
    options.shards = shards
    options.memory_budget = memory_budget or 0
    options.recompute = int(recompute)
    return options


def plan(rows, intermediate, dtype, *, shards=0, memory_budget=None,
         experts=1, recompute=True):
    """(shards, rows per shard, workspace bytes) of one step of `experts`
    experts (the grouped MLP's workspace also holds one cuBLASLt workspace
    per GEMM stream); no GPU."""
    if dtype not in _kernel._DTYPE_NAMES:  # the GPU's dtypes
        raise TypeError(f"the MLP runs in bfloat16, float16 or float32, not "
                        f"{dtype}")
    count, per_shard = ctypes.c_int64(), ctypes.c_int64()
    workspace = ctypes.c_size_t()
    _capi.check(_capi.lib.tile_grouped_mlp_plan(
        ctypes.byref(_options(shards, memory_budget, recompute)), rows,
        intermediate, experts, _kernel._TORCH_DTYPES[dtype],
        ctypes.byref(count), ctypes.byref(per_shard),
        ctypes.byref(workspace)))
    return count.value, per_shard.value, workspace.value


def _operators_of(device):
    """The device's tile_operators (the caller holds _lock)."""
    if device.index not in _operators:
        handle = ctypes.c_void_p()
        _capi.check(_capi.lib.tile_operators_create(
            device.index, None, ctypes.byref(handle)))
        _operators[device.index] = handle.value
    return _operators[device.index]


def _mlp(device, shards, memory_budget):
    key = (device.index, shards, memory_budget)
    with _lock:
        if key not in _mlps:
            handle = ctypes.c_void_p()
            _capi.check(_capi.lib.tile_mlp_create(
                _operators_of(device),
                ctypes.byref(_options(shards, memory_budget)),
                ctypes.byref(handle)))
            _mlps[key] = handle.value
        return _mlps[key]


class _Tensors:
    """tile_tensor structs for torch tensors (kept alive with their shapes)."""

    def __init__(self, *tensors):
        self.structs = [_capi.Tensor() for _ in tensors]
        self.shapes = [_capi.describe_tensor(s, t.data_ptr(), t.shape,
                                             _kernel._TORCH_DTYPES[t.dtype])
                       for s, t in zip(self.structs, tensors)]

    def pointers(self):
        return [ctypes.byref(s) for s in self.structs]


def _run(device, workspace_bytes):
    """The stream and a workspace for one step (the workspace is returned
    to keep it alive until the call is queued; torch's allocator orders its
    reuse with the stream)."""
    workspace = torch.empty(workspace_bytes, dtype=torch.uint8, device=device)
    return _run_in(workspace), workspace


def _run_in(workspace):
    """The current stream and `workspace` (a uint8 CUDA tensor, kept alive
    by the caller) for one call."""
    run = _capi.Run()
    run.stream = torch._C._cuda_getCurrentRawStream(workspace.device.index)
    run.workspace = workspace.data_ptr()
    run.workspace_bytes = workspace.numel()
    return run


def _rows(x):
    return math.prod(x.shape[:-1])


def matmul_into(d, a, b, *, trans_a=False, trans_b=False, beta=1.0):
    """d = op(a) @ op(b) + beta * d in place, fp32 accumulation: with d an
    fp32 main_grad and bf16/f16 a and b, the weight gradient is added
    without a gradient tensor of its own (cuBLASLt on CUDA tensors, on the
    current stream; torch in float64 on the CPU). a, b, d dense 2-D."""
    for name, t in (("a", a), ("b", b), ("d", d)):
        if t.dim() != 2 or not t.is_contiguous():
            raise ValueError(f"matmul_into: {name} must be a dense 2-D "
                             f"tensor, got shape {list(t.shape)}")
    if _autograd._tracing([d, a, b]):
        _matmul_into_op(d, a, b, trans_a, trans_b, beta)
    else:
        _matmul_into(d, a, b, trans_a, trans_b, beta)
    return d


def _matmul_into(d, a, b, trans_a, trans_b, beta):
    if d.device.type == "cpu":
        f64 = torch.float64
        op_a = a.to(f64).T if trans_a else a.to(f64)
        op_b = b.to(f64).T if trans_b else b.to(f64)
        d.copy_((op_a @ op_b + beta * d.to(f64)).to(d.dtype))
        return
    with _lock:
        operators = _operators_of(d.device)
    run, workspace = _run(d.device, _MATMUL_WORKSPACE)
    tensors = _Tensors(a, b, d)
    pa, pb, pd = tensors.pointers()
    _capi.check(_capi.lib.tile_matmul(operators, ctypes.byref(run), pa,
                                      int(trans_a), pb, int(trans_b), pd,
                                      beta))
    del workspace


@torch.library.custom_op("tile::matmul_into", mutates_args=("d",))
def _matmul_into_op(d: torch.Tensor, a: torch.Tensor, b: torch.Tensor,
                    trans_a: bool, trans_b: bool, beta: float) -> None:
    """matmul_into traced (torch.compile): it writes d, a graph input."""
    _matmul_into(d, a, b, trans_a, trans_b, beta)


@_matmul_into_op.register_fake
def _matmul_into_fake(d, a, b, trans_a, trans_b, beta):
    return None


_MATMUL_WORKSPACE = 32 << 20  # TILE_MATMUL_WORKSPACE_BYTES


# -- the two steps, on either device ---------------------------------------

def _round(t, dtype):
    """A float64 result stored in `dtype` and read back (where the GPU
    rounds)."""
    return t.to(dtype).to(torch.float64)


def _cpu_forward(x, gate, up, down):
    from . import ops
    dtype = x.dtype
    x64 = x.reshape(-1, x.shape[-1]).to(torch.float64)
    g = _round(x64 @ gate.to(torch.float64).T, dtype).to(dtype)
    u = _round(x64 @ up.to(torch.float64).T, dtype).to(dtype)
    h = ops.swiglu(g, u).to(torch.float64)
    y = (h @ down.to(torch.float64).T).to(dtype)
    return y.view(x.shape)


def _cpu_backward(x, gate, up, down, dy):
    """dx and the fp32 weight gradients, as the GPU computes them."""
    from . import ops
    dtype = x.dtype
    f64 = torch.float64
    x64 = x.reshape(-1, x.shape[-1]).to(f64)
    dy64 = dy.reshape(-1, dy.shape[-1]).to(f64)
    g = _round(x64 @ gate.to(f64).T, dtype).to(dtype).requires_grad_()
    u = _round(x64 @ up.to(f64).T, dtype).to(dtype).requires_grad_()
    dh = (dy64 @ down.to(f64)).to(dtype)
    with torch.enable_grad():
        h = ops.swiglu(g, u)
        dg, du = torch.autograd.grad(h, (g, u), dh)
    h64, dg64, du64 = h.detach().to(f64), dg.to(f64), du.to(f64)
    dx = (dg64 @ gate.to(f64) + du64 @ up.to(f64)).to(dtype).view(x.shape)
    grad_type = torch.float64 if dtype == f64 else torch.float32
    return (dx, (dg64.T @ x64).to(grad_type), (du64.T @ x64).to(grad_type),
            (dy64.T @ h64).to(grad_type))


def grad_buffers(x, weights):
    """New weight-gradient tensors as the MLP's backward writes them: fp32
    (float64 for a float64 x, the CPU's exact mode), one per weight."""
    grad_type = torch.float64 if x.dtype == torch.float64 else torch.float32
    return [torch.empty(w.shape, dtype=grad_type, device=x.device)
            for w in weights]


def add_into(into, dx, grads):
    """(dx, grads) of a CPU backward, or (dx, None) with the gradients added
    to `into` (main_grad), as the GPU's step does."""
    if into is None:
        return dx, grads
    for target, grad in zip(into, grads):
        target.add_(grad)
    return dx, None


def main_grads_of(weights, names):
    """The weights' main_grads (checked), looked up when the forward runs,
    and the weights marked (autograd.mark_main_grads)."""
    main_grads = [_autograd.main_grad_of(w, f"the {name} weight")
                  for w, name in zip(weights, names)]
    _autograd.mark_main_grads(weights, in_forward=True)
    return main_grads


def autograd_grads(ctx, grads, weights):
    """The weight gradients for autograd: cast to the weights' dtype where
    asked for (weights are inputs 1, 2, ... of the Function)."""
    return [g.to(w.dtype) if ctx.needs_input_grad[i + 1] else None
            for i, (g, w) in enumerate(zip(grads, weights))]


def _forward(x, gate, up, down, shards, memory_budget):
    if x.device.type == "cpu":
        return _cpu_forward(x, gate, up, down)
    y = torch.empty_like(x)
    *_, workspace_bytes = plan(_rows(x), gate.shape[0], x.dtype,
                               shards=shards, memory_budget=memory_budget)
    run, workspace = _run(x.device, workspace_bytes)
    tensors = _Tensors(gate, up, down, x, y)
    _capi.check(_capi.lib.tile_mlp_forward(
        _mlp(x.device, shards, memory_budget), ctypes.byref(run),
        *tensors.pointers()))
    return y


def _backward(x, gate, up, down, dy, shards, memory_budget, into=None):
    """dx and the weight gradients (fp32); with `into` (three fp32 tensors)
    the gradients are added to those and not returned."""
    if x.device.type == "cpu":
        dx, *grads = _cpu_backward(x, gate, up, down, dy)
        return add_into(into, dx, grads)
    dx = torch.empty_like(x)
    grads = into if into is not None else grad_buffers(x, (gate, up, down))
    *_, workspace_bytes = plan(_rows(x), gate.shape[0], x.dtype,
                               shards=shards, memory_budget=memory_budget)
    run, workspace = _run(x.device, workspace_bytes)
    tensors = _Tensors(gate, up, down, x, dy, dx, *grads)
    _capi.check(_capi.lib.tile_mlp_backward(
        _mlp(x.device, shards, memory_budget), ctypes.byref(run),
        *tensors.pointers(), int(into is None)))
    return dx, (None if into is not None else grads)


# -- torch.compile: the steps as custom ops ----------------------------------

@torch.library.custom_op("tile::swiglu_mlp", mutates_args=())
def _forward_op(x: torch.Tensor, gate: torch.Tensor, up: torch.Tensor,
                down: torch.Tensor, shards: int,
                memory_budget: int) -> torch.Tensor:
    return _forward(x, gate, up, down, shards, memory_budget)


@_forward_op.register_fake
def _forward_fake(x, gate, up, down, shards, memory_budget):
    return torch.empty_like(x)


@torch.library.custom_op("tile::swiglu_mlp_backward", mutates_args=())
def _backward_op(x: torch.Tensor, gate: torch.Tensor, up: torch.Tensor,
                 down: torch.Tensor, dy: torch.Tensor, shards: int,
                 memory_budget: int) -> list[torch.Tensor]:
    dx, grads = _backward(x, gate, up, down, dy, shards, memory_budget)
    return [dx, *grads]


@_backward_op.register_fake
def _backward_fake(x, gate, up, down, dy, shards, memory_budget):
    return [torch.empty_like(x)] + grad_buffers(x, (gate, up, down))


@torch.library.custom_op("tile::swiglu_mlp_backward_into",
                         mutates_args=("into",))
def _backward_into_op(x: torch.Tensor, gate: torch.Tensor, up: torch.Tensor,
                      down: torch.Tensor, dy: torch.Tensor, shards: int,
                      memory_budget: int,
                      into: list[torch.Tensor]) -> torch.Tensor:
    """dx; the weight gradients added to `into` (their main_grads) in
    place, as the eager step does: no gradient tensor of their own."""
    return _backward(x, gate, up, down, dy, shards, memory_budget, into)[0]


@_backward_into_op.register_fake
def _backward_into_fake(x, gate, up, down, dy, shards, memory_budget, into):
    return torch.empty_like(x)


class _MLPFunction(torch.autograd.Function):
    """apply(x, gate, up, down, shards, memory_budget, *main_grads): with
    main_grads (one per weight) the backward adds the weight gradients to
    them; they are inputs of the node so that a traced backward sees
    them."""

    @staticmethod
    def forward(ctx, x, gate, up, down, shards, memory_budget, *main_grads):
        ctx.save_for_backward(x, gate, up, down)
        ctx.main_grads = main_grads  # not saved: see _KernelFunction
        ctx.options = (shards, memory_budget)
        if _autograd._tracing([x, gate, up, down]):
            return _forward_op(x, gate, up, down, shards, memory_budget)
        return _forward(x, gate, up, down, shards, memory_budget)

    @staticmethod
    def backward(ctx, dy):
        x, gate, up, down = ctx.saved_tensors
        main_grads = list(ctx.main_grads)
        shards, memory_budget = ctx.options
        dy = dy.contiguous()
        weights = (gate, up, down)
        tracing = _autograd._tracing([x, dy])
        none = (None,) * (2 + len(main_grads))
        if main_grads:
            if tracing:
                dx = _backward_into_op(x, gate, up, down, dy, shards,
                                       memory_budget, main_grads)
            else:
                dx = _backward(x, gate, up, down, dy, shards, memory_budget,
                               main_grads)[0]
            _autograd.mark_main_grads(weights, in_forward=False)
            return dx, None, None, None, *none
        if tracing:
            dx, *grads = _backward_op(x, gate, up, down, dy, shards,
                                      memory_budget)
        else:
            dx, grads = _backward(x, gate, up, down, dy, shards,
                                  memory_budget)
        return (dx, *autograd_grads(ctx, grads, weights), *none)


def check_operands(named):
    """The rules every MLP operand follows: a tensor of the GPU's dtypes
    (float64 too on the CPU), x's dtype and device, contiguous. `named` is
    ((name, tensor), ...) with x first."""
    for name, t in named:
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a tensor, got "
                            f"{type(t).__name__}")
    x = named[0][1]
    allowed = set(_kernel._DTYPE_NAMES)  # the GPU's dtypes
    if x.device.type == "cpu":
        allowed.add(torch.float64)
    for name, t in named:
        if t.dtype not in allowed:
            raise TypeError(
                f"{name} has dtype {t.dtype}; the MLP runs in bfloat16, "
                "float16 or float32 (float64 on the CPU)")
        if t.dtype != x.dtype:
            raise TypeError(f"{name} is {t.dtype} but x is {x.dtype}")
        if t.device != x.device:
            raise ValueError(f"{name} is on {t.device} but x is on "
                             f"{x.device}")
        if t.device.type not in ("cpu", "cuda", "meta"):
            raise ValueError(f"{name} is on {t.device}; Tile runs on CUDA "
                             "devices and on the CPU")
        if not t.is_contiguous():
            raise ValueError(f"{name} is not contiguous (strides "
                             f"{tuple(t.stride())}); call .contiguous()")


def check(x, gate, up, down):
    """Raises naming the tensor and the rule; nothing runs after a failed
    check."""
    check_operands((("x", x), ("gate", gate), ("up", up), ("down", down)))
    if x.dim() == 0:
        raise ValueError("x must be [..., H], not a 0-d tensor")
    hidden = x.shape[-1]
    if gate.dim() != 2 or gate.shape[1] != hidden:
        raise ValueError(f"gate must be [I, H] = [I, {hidden}], got "
                         f"{list(gate.shape)}")
    inter = gate.shape[0]
    if hidden == 0 or inter == 0:
        raise ValueError(f"the MLP needs H > 0 and I > 0, got H = {hidden}, "
                         f"I = {inter}")
    if list(up.shape) != [inter, hidden]:
        raise ValueError(f"up must be [I, H] = {[inter, hidden]} like gate, "
                         f"got {list(up.shape)}")
    if list(down.shape) != [hidden, inter]:
        raise ValueError(f"down must be [H, I] = {[hidden, inter]}, got "
                         f"{list(down.shape)}")


def swiglu_mlp(x, gate, up, down, *, shards=0, memory_budget=None,
               main_grad=False):
    """(silu(x @ gate.T) * (x @ up.T)) @ down.T for x [..., H], gate and up
    [I, H], down [H, I], sequence-tiled: `shards` splits the rows (0: the
    fewest whose workspace fits `memory_budget` bytes, default 1 GiB).
    With main_grad=True the weights' gradients are added in fp32 to their
    ``.main_grad`` and autograd gets None for them."""
    check(x, gate, up, down)
    if isinstance(shards, bool) or not isinstance(shards, int) or shards < 0:
        raise ValueError(f"shards must be an int ≥ 0 (0: automatic), got "
                         f"{shards!r}")
    if memory_budget is not None and (not isinstance(memory_budget, int) or
                                      memory_budget <= 0):
        raise ValueError(f"memory_budget must be a positive number of "
                         f"bytes, got {memory_budget!r}")
    # A budget too small for one row fails in the forward's plan, before
    # anything is launched.
    budget = memory_budget or 0
    if torch.is_grad_enabled() and any(
            t.requires_grad for t in (x, gate, up, down)):
        main_grads = main_grads_of((gate, up, down), ("gate", "up", "down")) \
            if main_grad else []
        return _MLPFunction.apply(x, gate, up, down, shards, budget,
                                  *main_grads)
    if _autograd._tracing([x, gate, up, down]):
        return _forward_op(x, gate, up, down, shards, budget)
    return _forward(x, gate, up, down, shards, budget)


__all__ = ["swiglu_mlp", "plan", "matmul_into", "TileError"]
