"""The SwiGLU MLP, dense or grouped (tile::ops::GroupedSwiGLUMLP), from
PyTorch: one stack, since the dense MLP is the grouped one with one expert.

    y[rows of e] = (silu(x_e @ gate_e.T) * (x_e @ up_e.T)) @ down_e.T

Dense (swiglu_mlp): x [..., H], gate and up [I, H], down [H, I]. Grouped
(grouped_swiglu_mlp): x [T, H] holds the tokens grouped by expert, the
first m_splits[0] rows for expert 0, the next m_splits[1] for expert 1, …
(TransformerEngine's GroupedLinear convention; a split may be 0), with the
weights stacked as Hugging Face's MoE experts store them: gate_up
[E, 2I, H] (each expert's gate rows, then its up rows) and down [E, H, I].
The splits may stay where the router made them. A CUDA int32/int64 tensor
is read by the GPU only (on an H100/H200 with bf16 and H, I multiples of
8: each phase's GEMMs are one grouped GEMM over every expert, nothing in
the step waits for the GPU, the step can be captured in a CUDA graph, and
torch.compile sees a tensor, not new constants); counts that do not sum
to T stop the step's kernel with a message. A list or a CPU tensor are
host integers, checked here. Elsewhere a CUDA tensor is copied to the
host first, which waits for the GPU.

The rows are split into shards and nothing of size [rows, I] is kept
between the forward and the backward: the backward recomputes gate/up per
shard (cuBLASLt) and runs SwiGLU's derived backward. recompute=False gives
the untiled step instead: the forward keeps g, u and h ([T, 3I], in a
workspace the autograd node holds until its backward) and the backward
recomputes no GEMM — faster where memory allows. On CUDA tensors one C
call runs a whole step on the current stream with a workspace from torch's
allocator. Weight gradients are fp32: returned (cast to the weights'
dtype), or with main_grad=True added to each weight's ``.main_grad`` with
``grad_added_to_main_grad`` set and None handed to autograd.

CPU tensors take the same steps in float64 — the GEMMs in torch, SwiGLU and
its derived backward on the reference evaluator, every intermediate rounded
to the storage dtype where the GPU rounds — so the layer is tested without
a GPU, exactly (gradcheck) in float64.
"""

from typing import Optional

import torch
from torch.nn import functional as F

from . import _capi_operators
from . import operators
from .autograd import (GPU_DTYPE_NAMES, TILE_DTYPES, grad_dtype,
                       main_grads_of, mark_main_grads, stream_of, tensor_arg,
                       workspace_of)
from .custom_ops import define_op
from .gemm import matmul_into
from .mlp_checks import check_dense, check_grouped, check_options, \
    check_splits
from .mlp_reference import cpu_backward, cpu_forward

__all__ = ["swiglu_mlp", "grouped_swiglu_mlp", "plan"]


def plan(rows, intermediate, dtype, *, shards=0, memory_budget=None,
         experts=1, recompute=True, streams=0):
    """(shards, rows per shard, workspace bytes) of one step of `experts`
    experts (the workspace also holds one cuBLASLt workspace per GEMM
    stream: `streams` of them, 0 the operator's default); no GPU."""
    _check_dtype(dtype)
    return _capi_operators.mlp_plan(rows, intermediate, experts, TILE_DTYPES[dtype],
                          shards, memory_budget, recompute, streams)


# -- the gated MLP of torch GEMMs, its weight gradients into main_grad ------

class _MainGradGatedMLP(torch.autograd.Function):
    """The gated MLP's step with the weight gradients added to main_grad:
    the GEMMs' dgrads in torch, the wgrads by GEMMs with beta = 1 straight
    into fp32, the activation's backward derived by tile-differentiate.
    apply(x, gate, up, down, activation, *main_grads): the main_grads are
    inputs of the node so that a traced backward sees them."""

    @staticmethod
    def forward(ctx, x, gate, up, down, activation, *main_grads):
        g = F.linear(x, gate)
        u = F.linear(x, up)
        h = operators.kernel(operators.ACTIVATIONS[activation])(g, u)
        ctx.activation = activation
        ctx.save_for_backward(x, gate, up, down, g, u, h)
        ctx.main_grads = main_grads  # the main_grad contract (autograd.py)
        return F.linear(h, down)

    @staticmethod
    def backward(ctx, dy):
        x, gate, up, down, g, u, h = ctx.saved_tensors
        into_gate, into_up, into_down = ctx.main_grads
        x2 = x.reshape(-1, x.shape[-1])
        dy2 = dy.reshape(-1, dy.shape[-1]).contiguous()
        h2 = h.reshape(-1, h.shape[-1])
        matmul_into(into_down, dy2, h2, trans_a=True)
        dh = dy2 @ down
        # Written over g and u: the projections' outputs, private to this
        # node (their backward needs inputs and weights, not outputs).
        dg, du = operators.gated_backward_in_place(
            operators.ACTIVATIONS[ctx.activation], g.reshape(dh.shape),
            u.reshape(dh.shape), dh)
        matmul_into(into_gate, dg, x2, trans_a=True)
        matmul_into(into_up, du, x2, trans_a=True)
        dx = dg @ gate + du @ up
        mark_main_grads((gate, up, down), in_forward=False)
        return dx.view(x.shape), *(None,) * 7


def gated_mlp_into_main_grads(x, gate, up, down, activation, main_grads):
    """tile.nn.GatedMLP's step with accumulate_into_main_grad: the weights'
    gradients added to `main_grads` (gate, up, down; fp32), None to
    autograd."""
    return _MainGradGatedMLP.apply(x, gate, up, down, activation,
                                   *main_grads)


# -- one step, on either device ----------------------------------------------

def _stacked(weight):
    """A dense weight (or main_grad) as one expert's: [1, ...], a view;
    stacked ones and None as they are."""
    return weight if weight is None or weight.dim() == 3 else weight[None]


def _splits_or_all(splits, x):
    """The splits as the C API takes them: host ints (all rows to one expert
    where None) or a device tensor's TensorArg."""
    if isinstance(splits, torch.Tensor):
        return tensor_arg(splits)
    return list(splits) if splits is not None else [x.shape[0]]


def step_splits(splits, device_splits):
    """A step's one splits argument from an op's two (op_splits)."""
    return device_splits if device_splits is not None else splits


def _check_dtype(dtype):
    if dtype not in GPU_DTYPE_NAMES:
        raise TypeError(f"the MLP runs in bfloat16, float16 or float32, not "
                        f"{dtype}")


def untiled_workspace_bytes(rows, intermediate, dtype, *, experts=1,
                            apart=False, streams=0):
    """The untiled step's workspace (g, u and h of every row) for `rows`
    rows, an int or a torch.SymInt: by tile_mlp_workspace_layout's formula,
    so that a compiled graph's fake sizes it without specializing on the row
    count. Equal to plan(rows, ..., recompute=False)'s bytes; no GPU. With
    `apart`, (kept, scratch): the workspace of the buffers its forward
    keeps (g and u) and the scratch of the rest (cuBLASLt's workspaces and
    h), which each call allocates for itself. `streams`: the GEMM streams
    (a cuBLASLt workspace each; 0 the operator's default)."""
    _check_dtype(dtype)
    # The width and the experts specialize (ints for the C API); the rows
    # stay symbolic.
    fixed, buffers, row_bytes, alignment, kept = _capi_operators.mlp_workspace_layout(
        int(intermediate), int(experts), TILE_DTYPES[dtype], 0, None, False,
        streams)
    rounded = (rows * row_bytes + alignment - 1) // alignment * alignment
    if apart:
        return kept * rounded, fixed + (buffers - kept) * rounded
    return fixed + buffers * rounded


def workspace_bytes(x, gate, up, splits, options):
    """The workspace of a step of `options`: (shards, memory_budget,
    recompute), and the GEMM streams where a fourth is given."""
    inter = gate.shape[1] // (1 if up is not None else 2)
    experts = gate.shape[0]
    shards, memory_budget, recompute, *streams = options
    streams = streams[0] if streams else 0
    if not recompute:
        return untiled_workspace_bytes(x.shape[0], inter, x.dtype,
                                       experts=experts, streams=streams)
    *_, workspace = plan(x.shape[0], inter, x.dtype, shards=shards,
                         memory_budget=memory_budget, experts=experts,
                         recompute=recompute, streams=streams)
    return workspace


def _forward(x, gate, up, down, splits, options):
    """y of x [T, H] and stacked weights, and for the untiled step
    (options' recompute False) the workspace that holds g, u and h for its
    backward (None otherwise, and on the CPU). options: (shards,
    memory_budget, recompute)."""
    if x.device.type == "cpu":
        return cpu_forward(x, gate, up, down, splits), None
    y = torch.empty_like(x)
    workspace = torch.empty(workspace_bytes(x, gate, up, splits, options),
                            dtype=torch.uint8, device=x.device)
    _capi_operators.mlp_forward(
        x.device.index, options, stream_of(x.device),
        workspace_of(workspace), tensor_args((gate, up, down)),
        tensor_arg(x), _splits_or_all(splits, x), tensor_arg(y))
    return y, (None if options[2] else workspace)


def _backward(x, gate, up, down, dy, splits, shards, memory_budget, kept,
              grads, overwrite):
    """dx; the weight gradients written to (`overwrite`) or added to
    `grads` (fp32, stacked as the weights). `kept`: the untiled forward's
    workspace (its g, u and h become dg, du and dh here), or None for the
    tiled step of `shards` and `memory_budget`."""
    if x.device.type == "cpu":
        return cpu_backward(x, gate, up, down, dy, splits, grads, overwrite)
    dx = torch.empty_like(x)
    if kept is None:
        options = (shards, memory_budget, True)
        kept = torch.empty(workspace_bytes(x, gate, up, splits, options),
                           dtype=torch.uint8, device=x.device)
    else:  # the untiled forward's handle
        options = (0, 0, False)
    # The gradients as Tile.h takes them: laid out as the weights.
    grads = grads if up is not None else [grads[0], None, grads[1]]
    _capi_operators.mlp_backward(
        x.device.index, options, stream_of(x.device), workspace_of(kept),
        tensor_args((gate, up, down)), tensor_arg(x),
        _splits_or_all(splits, x), tensor_arg(dy), tensor_arg(dx),
        tensor_args(grads), overwrite)
    return dx


def tensor_args(tensors):
    """TensorArgs of (gate, up or None, down)-shaped tensors."""
    return [None if t is None else tensor_arg(t) for t in tensors]


def grad_buffers(x, weights, untiled):
    """New weight-gradient tensors as the backward writes them: in the
    weights' dtype for the untiled step, which is the GPU's alone (one
    overwrite, rounded once from the GEMM's fp32 accumulator: what a cast
    of fp32 gradients gives, without their bytes or the cast), else fp32
    (float64 on the CPU), added over the shards."""
    return [torch.empty(w.shape, dtype=w.dtype if untiled
                        else grad_dtype(x.dtype), device=x.device)
            for w in weights if w is not None]


# -- the steps as ops (custom_ops): torch.compile sees each as one ---------
#
# A step's splits are one argument (host ints, a device tensor, or None for
# one expert); an op's are two, one of them None (an op's argument has one
# type): host ints are part of the graph's guards, a device tensor is an
# input like any other.

def op_splits(splits):
    """An op's two splits arguments, (host ints, device tensor), from a
    step's one."""
    on_device = isinstance(splits, torch.Tensor)
    return (None if on_device else splits), (splits if on_device else None)


def kept_or_empty(x, kept):
    # An op takes and returns tensors: on the CPU, where nothing is kept,
    # and for the tiled step, an empty one.
    return kept if kept is not None else x.new_empty(0, dtype=torch.uint8)


def _tiled_forward(x, gate, up, down, splits, shards, memory_budget):
    return _forward(x, gate, up, down, splits,
                    (shards, memory_budget, True))[0]


def _tiled_forward_body(x: torch.Tensor, gate: torch.Tensor,
                        up: Optional[torch.Tensor], down: torch.Tensor,
                        splits: Optional[list[int]],
                        device_splits: Optional[torch.Tensor], shards: int,
                        memory_budget: int) -> torch.Tensor:
    return _tiled_forward(x, gate, up, down, step_splits(splits, device_splits),
                          shards, memory_budget)


def _tiled_forward_fake(x, gate, up, down, splits, device_splits, shards,
                        memory_budget):
    return torch.empty_like(x)


def _untiled_forward(x, gate, up, down, splits):
    """(y, the workspace its backward reads: None on the CPU)."""
    return _forward(x, gate, up, down, splits, (0, 0, False))


def _untiled_forward_body(x: torch.Tensor, gate: torch.Tensor,
                          up: Optional[torch.Tensor], down: torch.Tensor,
                          splits: Optional[list[int]],
                          device_splits: Optional[torch.Tensor]
                          ) -> tuple[torch.Tensor, torch.Tensor]:
    y, kept = _untiled_forward(x, gate, up, down,
                               step_splits(splits, device_splits))
    return y, kept_or_empty(x, kept)


def _untiled_forward_fake(x, gate, up, down, splits, device_splits):
    size = 0 if x.device.type == "cpu" else workspace_bytes(
        x, gate, up, splits, (0, 0, False))
    return torch.empty_like(x), x.new_empty(size, dtype=torch.uint8)


def _backward_body(x: torch.Tensor, gate: torch.Tensor,
                   up: Optional[torch.Tensor], down: torch.Tensor,
                   dy: torch.Tensor, splits: Optional[list[int]],
                   device_splits: Optional[torch.Tensor], shards: int,
                   memory_budget: int, kept: torch.Tensor,
                   grads: list[torch.Tensor], overwrite: bool) -> torch.Tensor:
    """dx; the weight gradients written to or added to `grads` in place.
    `kept`: the untiled forward's workspace, whose g, u and h the step
    overwrites, or an empty tensor for the tiled step (or the CPU)."""
    return _backward(x, gate, up, down, dy, step_splits(splits, device_splits),
                     shards, memory_budget, kept if kept.numel() else None,
                     grads, overwrite)


def _backward_fake(x, gate, up, down, dy, splits, device_splits, shards,
                   memory_budget, kept, grads, overwrite):
    return torch.empty_like(x)


def _pack_forward(x, gate, up, down, splits, *rest):
    return (x, gate, up, down, *op_splits(splits), *rest)


def _pack_backward(x, gate, up, down, dy, splits, shards, memory_budget, kept,
                   grads, overwrite):
    return (x, gate, up, down, dy, *op_splits(splits), shards, memory_budget,
            kept_or_empty(x, kept), grads, overwrite)


_tiled_forward_op = define_op("swiglu_mlp", _tiled_forward,
                              _tiled_forward_fake, body=_tiled_forward_body,
                              pack=_pack_forward)
_untiled_forward_op = define_op("swiglu_mlp_untiled", _untiled_forward,
                                _untiled_forward_fake,
                                body=_untiled_forward_body,
                                pack=_pack_forward)
_backward_op = define_op("swiglu_mlp_backward", _backward, _backward_fake,
                         mutates=("kept", "grads"), body=_backward_body,
                         pack=_pack_backward)


# -- autograd ----------------------------------------------------------------

class _MLPFunction(torch.autograd.Function):
    """apply(x, gate, up, down, splits, shards, memory_budget, recompute,
    *main_grads): x [T, H], the caller's weights (dense or stacked; up None
    with a fused gate_up), splits None for one expert. With main_grads (one
    per weight) the backward adds the weight gradients to them (inputs of
    the node, kept on ctx: the main_grad contract in autograd.py)."""

    @staticmethod
    def forward(ctx, x, gate, up, down, splits, shards, memory_budget,
                recompute, *main_grads):
        # Device splits are saved as tensors, host ones kept as ints.
        device_splits = splits if isinstance(splits, torch.Tensor) else None
        host_splits = None if device_splits is not None else splits
        ctx.options = (host_splits, shards, memory_budget)
        ctx.main_grads = main_grads
        weights = [_stacked(w) for w in (gate, up, down)]
        if recompute:
            y, kept = _tiled_forward_op(x, *weights, splits, shards,
                                        memory_budget), None
        else:
            y, kept = _untiled_forward_op(x, *weights, splits)
            if x.device.type == "cpu":  # which recomputes in float64
                kept = None
        # The untiled step: the node keeps the forward's g, u and h (a
        # workspace, neither input nor output) until its backward.
        ctx.save_for_backward(x, gate, up, down, kept, device_splits)
        return y

    @staticmethod
    def backward(ctx, dy):
        x, gate, up, down, kept, device_splits = ctx.saved_tensors
        splits, shards, memory_budget = ctx.options
        params = [w for w in (gate, up, down) if w is not None]
        weights = [_stacked(w) for w in (gate, up, down)]
        main_grads = list(ctx.main_grads)
        grads = [_stacked(g) for g in main_grads] if main_grads \
            else grad_buffers(x, weights, untiled=kept is not None)
        dy = dy.contiguous()
        overwrite = not main_grads
        dx = _backward_op(x, *weights, dy, step_splits(splits, device_splits),
                          shards, memory_budget, kept, grads, overwrite)
        rest = (None,) * (4 + len(main_grads))
        if main_grads:
            mark_main_grads(params, in_forward=False)
            return dx, None, None, None, *rest
        # Cast to the weights' dtype where autograd asks (weights are inputs
        # 1, 2 and 3 of the node).
        grads = iter(grads)
        weight_grads = [None, None, None]
        for index, weight in enumerate((gate, up, down)):
            if weight is not None:
                grad = next(grads)
                if ctx.needs_input_grad[index + 1]:
                    weight_grads[index] = grad.view(weight.shape).to(
                        weight.dtype)
        return dx, *weight_grads, *rest


def _step(x, weights, names, splits, shards, memory_budget, main_grad,
          recompute):
    """y of x [T, H]: through the autograd node where a tensor requires
    grad, else the forward alone (the tiled one: nothing is kept)."""
    # A budget too small for one row fails in the forward's plan, before
    # anything is launched.
    budget = memory_budget or 0
    gate, up, down = weights
    params = [w for w in weights if w is not None]
    if torch.is_grad_enabled() and any(t.requires_grad for t in (x, *params)):
        main_grads = main_grads_of(params, names) if main_grad else []
        return _MLPFunction.apply(x, gate, up, down, splits, shards, budget,
                                  recompute, *main_grads)
    return _tiled_forward_op(x, *[_stacked(w) for w in weights], splits,
                             shards, budget)


def swiglu_mlp(x, gate, up, down, *, shards=0, memory_budget=None,
               main_grad=False, recompute=True):
    """(silu(x @ gate.T) * (x @ up.T)) @ down.T for x [..., H], gate and up
    [I, H], down [H, I], sequence-tiled: `shards` splits the rows (0: the
    fewest whose workspace fits `memory_budget` bytes, default 1 GiB).
    With main_grad=True the weights' gradients are added in fp32 to their
    ``.main_grad`` and autograd gets None for them. recompute=False runs
    the untiled step: [rows, 3I] kept from the forward to the backward, no
    GEMM recomputed (one shard: `shards` must be 0 or 1)."""
    check_dense(x, gate, up, down)
    check_options(shards, memory_budget, recompute)
    rows = x.reshape(-1, x.shape[-1])
    y = _step(rows, (gate, up, down), ("gate", "up", "down"), None, shards,
              memory_budget, main_grad, recompute)
    return y.view(x.shape)


def grouped_swiglu_mlp(x, gate_up, down, m_splits, *, shards=0,
                       memory_budget=None, main_grad=False, recompute=True):
    """The grouped SwiGLU MLP of x [T, H] (tokens grouped by expert,
    m_splits[e] rows for expert e) with gate_up [E, 2I, H] and down
    [E, H, I]; `shards`, `memory_budget`, `main_grad` and `recompute` as
    for swiglu_mlp (main_grad: one fp32 [E, …] tensor per weight)."""
    check_grouped(x, gate_up, down)
    splits = check_splits(m_splits, gate_up.shape[0], x)
    check_options(shards, memory_budget, recompute)
    if not isinstance(splits, torch.Tensor):
        splits = list(splits)
    return _step(x, (gate_up, None, down), ("gate_up", "down"), splits,
                 shards, memory_budget, main_grad, recompute)
