"""The grouped (mixture-of-experts) SwiGLU MLP (tile::ops::GroupedSwiGLUMLP)
from PyTorch.

    y[rows of e] = (silu(x_e @ gate_e.T) * (x_e @ up_e.T)) @ down_e.T

x [T, H] holds the tokens grouped by expert: the first m_splits[0] rows
go to expert 0, the next m_splits[1] to expert 1, … (TransformerEngine's
GroupedLinear convention; a split may be 0). The weights are stacked as
Hugging Face's MoE experts store them: gate_up [E, 2I, H] (each expert's
gate rows, then its up rows) and down [E, H, I].

On CUDA tensors one C call runs a whole step (per-expert cuBLASLt GEMMs
and SwiGLU's derived kernels, sequence-tiled as the dense MLP) on the
current stream with a workspace from torch's allocator. The splits are
host integers: a list, or a CPU tensor, costs nothing; a CUDA tensor is
copied to the host first, which waits for the GPU (the one
synchronization of the step) — keep the splits on the host where the
router can.

Weight gradients are fp32: returned (cast to the weights' dtype), or with
main_grad=True added to ``gate_up.main_grad`` and ``down.main_grad`` (one
[E, …] fp32 tensor each) with ``grad_added_to_main_grad`` set and None
handed to autograd — never a view of main_grad.

recompute=False gives the untiled step: the forward keeps g, u and h
([T, 3I], in a workspace from torch's allocator that the autograd node
holds until its backward) and the backward recomputes no GEMM — faster
where memory allows, as PyTorch's own MoE MLPs run.

CPU tensors run the dense MLP's float64 reference (mlp.py) expert by expert,
so the layer is tested without a GPU.
"""

import ctypes

import torch

from . import _capi
from . import autograd as _autograd
from . import mlp as _mlp

_grouped = {}  # (ordinal, shards, budget, recompute) -> tile_grouped_mlp


def _handle(device, shards, memory_budget, recompute):
    key = (device.index, shards, memory_budget, recompute)
    with _mlp._lock:
        if key not in _grouped:
            handle = ctypes.c_void_p()
            _capi.check(_capi.lib.tile_grouped_mlp_create(
                _mlp._operators_of(device),
                ctypes.byref(_mlp._options(shards, memory_budget, recompute)),
                ctypes.byref(handle)))
            _grouped[key] = handle.value
        return _grouped[key]


def _splits_array(splits):
    return (ctypes.c_int64 * len(splits))(*splits)


def _halves(gate_up):
    """gate [E, I, H] and up [E, I, H] views of gate_up [E, 2I, H]."""
    inter = gate_up.shape[1] // 2
    return gate_up[:, :inter], gate_up[:, inter:]


def _expert_rows(splits):
    first = 0
    for e, rows in enumerate(splits):
        yield e, first, rows
        first += rows


# -- the two steps, on either device ---------------------------------------

def _cpu_forward(x, gate_up, down, splits):
    gate, up = _halves(gate_up)
    y = torch.empty_like(x)
    for e, first, rows in _expert_rows(splits):
        if rows:
            y[first:first + rows] = _mlp._cpu_forward(
                x[first:first + rows], gate[e], up[e], down[e])
    return y


def _cpu_backward(x, gate_up, down, dy, splits):
    """dx and the stacked fp32 (float64 for float64) weight gradients."""
    gate, up = _halves(gate_up)
    grad_type = torch.float64 if x.dtype == torch.float64 else torch.float32
    dx = torch.zeros_like(x)
    grad_gate_up = torch.zeros(gate_up.shape, dtype=grad_type)
    grad_down = torch.zeros(down.shape, dtype=grad_type)
    inter = gate.shape[1]
    for e, first, rows in _expert_rows(splits):
        if not rows:
            continue  # no tokens: zero gradients
        rows_of = slice(first, first + rows)
        dx[rows_of], g_gate, g_up, g_down = _mlp._cpu_backward(
            x[rows_of], gate[e], up[e], down[e], dy[rows_of])
        grad_gate_up[e, :inter] = g_gate
        grad_gate_up[e, inter:] = g_up
        grad_down[e] = g_down
    return dx, [grad_gate_up, grad_down]


def _plan_bytes(x, gate_up, shards, memory_budget, recompute):
    """The workspace of one step: g, u, h of a shard and one cuBLASLt
    workspace per GEMM stream."""
    *_, workspace = _mlp.plan(x.shape[0], gate_up.shape[1] // 2, x.dtype,
                              shards=shards, memory_budget=memory_budget,
                              experts=gate_up.shape[0], recompute=recompute)
    return workspace


def _forward(x, gate_up, down, splits, shards, memory_budget,
             recompute=True):
    """y, and for the untiled step (recompute False) the workspace that
    holds g, u and h for its backward (None otherwise, and on the CPU)."""
    if x.device.type == "cpu":
        return _cpu_forward(x, gate_up, down, splits), None
    y = torch.empty_like(x)
    workspace = torch.empty(
        _plan_bytes(x, gate_up, shards, memory_budget, recompute),
        dtype=torch.uint8, device=x.device)
    tensors = _mlp._Tensors(gate_up, down, x, y)
    gate_p, down_p, x_p, y_p = tensors.pointers()
    _capi.check(_capi.lib.tile_grouped_mlp_forward(
        _handle(x.device, shards, memory_budget, recompute),
        ctypes.byref(_mlp._run_in(workspace)), gate_p, None, down_p, x_p,
        _splits_array(splits), len(splits), y_p))
    return y, (None if recompute else workspace)


def _backward(x, gate_up, down, dy, splits, shards, memory_budget,
              into=None, kept=None):
    """dx and the stacked weight gradients (fp32); with `into` (main_grad of
    gate_up and of down) the gradients are added to those and not
    returned. `kept` is the untiled forward's workspace (its g, u and h
    become dg, du and dh here); None runs the tiled step."""
    if x.device.type == "cpu":
        dx, grads = _cpu_backward(x, gate_up, down, dy, splits)
        return _mlp.add_into(into, dx, grads)
    recompute = kept is None
    dx = torch.empty_like(x)
    grads = into if into is not None else _mlp.grad_buffers(x, (gate_up,
                                                                down))
    workspace = kept if kept is not None else torch.empty(
        _plan_bytes(x, gate_up, shards, memory_budget, True),
        dtype=torch.uint8, device=x.device)
    tensors = _mlp._Tensors(gate_up, down, x, dy, dx, *grads)
    gate_p, down_p, x_p, dy_p, dx_p, grad_gate_p, grad_down_p = \
        tensors.pointers()
    _capi.check(_capi.lib.tile_grouped_mlp_backward(
        _handle(x.device, shards, memory_budget, recompute),
        ctypes.byref(_mlp._run_in(workspace)), gate_p, None, down_p, x_p,
        _splits_array(splits), len(splits), dy_p, dx_p, grad_gate_p, None,
        grad_down_p, int(into is None)))
    return dx, (None if into is not None else grads)


# -- torch.compile: the steps as custom ops ----------------------------------

@torch.library.custom_op("tile::grouped_swiglu_mlp", mutates_args=())
def _forward_op(x: torch.Tensor, gate_up: torch.Tensor, down: torch.Tensor,
                splits: list[int], shards: int,
                memory_budget: int) -> torch.Tensor:
    return _forward(x, gate_up, down, splits, shards, memory_budget)[0]


@_forward_op.register_fake
def _forward_fake(x, gate_up, down, splits, shards, memory_budget):
    return torch.empty_like(x)


def _kept_or_empty(x, kept):
    # A custom op returns tensors: on the CPU, where nothing is kept, an
    # empty one.
    return kept if kept is not None else x.new_empty(0, dtype=torch.uint8)


@torch.library.custom_op("tile::grouped_swiglu_mlp_untiled", mutates_args=())
def _untiled_forward_op(x: torch.Tensor, gate_up: torch.Tensor,
                        down: torch.Tensor, splits: list[int]
                        ) -> tuple[torch.Tensor, torch.Tensor]:
    y, kept = _forward(x, gate_up, down, splits, 0, 0, recompute=False)
    return y, _kept_or_empty(x, kept)


@_untiled_forward_op.register_fake
def _untiled_forward_fake(x, gate_up, down, splits):
    size = 0 if x.device.type == "cpu" else _plan_bytes(x, gate_up, 0, 0,
                                                        False)
    return torch.empty_like(x), x.new_empty(size, dtype=torch.uint8)


@torch.library.custom_op("tile::grouped_swiglu_mlp_backward", mutates_args=())
def _backward_op(x: torch.Tensor, gate_up: torch.Tensor, down: torch.Tensor,
                 dy: torch.Tensor, splits: list[int], shards: int,
                 memory_budget: int) -> list[torch.Tensor]:
    dx, grads = _backward(x, gate_up, down, dy, splits, shards,
                          memory_budget)
    return [dx, *grads]


@_backward_op.register_fake
def _backward_fake(x, gate_up, down, dy, splits, shards, memory_budget):
    return [torch.empty_like(x)] + _mlp.grad_buffers(x, (gate_up, down))


@torch.library.custom_op("tile::grouped_swiglu_mlp_untiled_backward",
                         mutates_args=("kept",))
def _untiled_backward_op(x: torch.Tensor, gate_up: torch.Tensor,
                         down: torch.Tensor, dy: torch.Tensor,
                         splits: list[int],
                         kept: torch.Tensor
                         ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    # g, u and h in `kept` become dg, du and dh: the op writes its input.
    # (A tuple, not a list: torch cannot functionalize a mutating op that
    # returns a list.)
    dx, grads = _backward(x, gate_up, down, dy, splits, 0, 0,
                          kept=kept if kept.numel() else None)
    return dx, *grads


@_untiled_backward_op.register_fake
def _untiled_backward_fake(x, gate_up, down, dy, splits, kept):
    return torch.empty_like(x), *_mlp.grad_buffers(x, (gate_up, down))


@torch.library.custom_op("tile::grouped_swiglu_mlp_backward_into",
                         mutates_args=("kept", "into"))
def _backward_into_op(x: torch.Tensor, gate_up: torch.Tensor,
                      down: torch.Tensor, dy: torch.Tensor,
                      splits: list[int], shards: int, memory_budget: int,
                      kept: torch.Tensor,
                      into: list[torch.Tensor]) -> torch.Tensor:
    """dx; the weight gradients added to `into` (their main_grads) in
    place. `kept`: the untiled forward's workspace, or an empty tensor for
    the tiled step (or the CPU)."""
    return _backward(x, gate_up, down, dy, splits, shards, memory_budget,
                     into, kept=kept if kept.numel() else None)[0]


@_backward_into_op.register_fake
def _backward_into_fake(x, gate_up, down, dy, splits, shards, memory_budget,
                        kept, into):
    return torch.empty_like(x)


class _GroupedMLPFunction(torch.autograd.Function):
    """apply(x, gate_up, down, splits, shards, memory_budget, recompute,
    *main_grads): with main_grads (of gate_up and of down) the backward
    adds the weight gradients to them; they are inputs of the node so that
    a traced backward sees them."""

    @staticmethod
    def forward(ctx, x, gate_up, down, splits, shards, memory_budget,
                recompute, *main_grads):
        ctx.options = (splits, shards, memory_budget)
        ctx.main_grads = main_grads  # not saved: see _KernelFunction
        tracing = _autograd._tracing([x, gate_up, down])
        if recompute:
            ctx.save_for_backward(x, gate_up, down, None)
            if tracing:
                return _forward_op(x, gate_up, down, list(splits), shards,
                                   memory_budget)
            return _forward(x, gate_up, down, splits, shards,
                            memory_budget)[0]
        # The untiled step: the node keeps the forward's g, u and h (a
        # workspace, neither input nor output) until its backward.
        if tracing:
            y, kept = _untiled_forward_op(x, gate_up, down, list(splits))
        else:  # kept is None on the CPU, which recomputes in float64
            y, kept = _forward(x, gate_up, down, splits, 0, 0,
                               recompute=False)
        ctx.save_for_backward(x, gate_up, down, kept)
        return y

    @staticmethod
    def backward(ctx, dy):
        # `kept`: the untiled step's workspace (a tensor while tracing, the
        # workspace or, on the CPU, None when eager); None when tiled.
        x, gate_up, down, kept = ctx.saved_tensors
        main_grads = list(ctx.main_grads)
        splits, shards, memory_budget = ctx.options
        dy = dy.contiguous()
        # splits, shards, budget, recompute, main_grads
        none = (None,) * (4 + len(main_grads))
        tracing = _autograd._tracing([x, dy])
        if main_grads:
            if tracing:
                dx = _backward_into_op(x, gate_up, down, dy, list(splits),
                                       shards, memory_budget,
                                       _kept_or_empty(x, kept), main_grads)
            else:
                dx = _backward(x, gate_up, down, dy, splits, shards,
                               memory_budget, main_grads, kept=kept)[0]
            _autograd.mark_main_grads((gate_up, down), in_forward=False)
            return dx, None, None, *none
        if tracing and kept is not None:
            dx, *grads = _untiled_backward_op(x, gate_up, down, dy,
                                              list(splits), kept)
        elif tracing:
            dx, *grads = _backward_op(x, gate_up, down, dy, list(splits),
                                      shards, memory_budget)
        else:
            dx, grads = _backward(x, gate_up, down, dy, splits, shards,
                                  memory_budget, kept=kept)
        return (dx, *_mlp.autograd_grads(ctx, grads, (gate_up, down)), *none)


def _check_splits(m_splits, experts, tokens):
    """The splits as a tuple of ints, checked against E and T."""
    if isinstance(m_splits, torch.Tensor):
        if m_splits.dim() != 1 or m_splits.dtype.is_floating_point or \
                m_splits.dtype.is_complex or m_splits.dtype == torch.bool:
            raise TypeError(f"m_splits must be a 1-D integer tensor, got "
                            f"{m_splits.dtype} {list(m_splits.shape)}")
        # A CUDA tensor waits for the GPU here (see the module's docstring).
        m_splits = m_splits.tolist()
    splits = tuple(m_splits)
    if any(isinstance(s, bool) or not isinstance(s, int) for s in splits):
        raise TypeError(f"m_splits must hold ints, got {list(splits)}")
    if len(splits) != experts:
        raise ValueError(f"m_splits has {len(splits)} entries for {experts} "
                         "experts")
    if any(s < 0 for s in splits):
        raise ValueError(f"m_splits must be ≥ 0, got {list(splits)}")
    if sum(splits) != tokens:
        raise ValueError(f"m_splits add up to {sum(splits)} but x has "
                         f"{tokens} rows")
    return splits


def check(x, gate_up, down):
    """Raises naming the tensor and the rule; nothing runs after a failed
    check."""
    _mlp.check_operands((("x", x), ("gate_up", gate_up), ("down", down)))
    if x.dim() != 2:
        raise ValueError(f"x must be [T, H] (tokens grouped by expert), got "
                         f"{list(x.shape)}")
    hidden = x.shape[1]
    if gate_up.dim() != 3 or gate_up.shape[2] != hidden or \
            gate_up.shape[1] % 2 or gate_up.shape[0] == 0:
        raise ValueError(f"gate_up must be [E, 2I, H] with E ≥ 1 and H = "
                         f"{hidden}, got {list(gate_up.shape)}")
    experts, inter = gate_up.shape[0], gate_up.shape[1] // 2
    if hidden == 0 or inter == 0:
        raise ValueError(f"the MLP needs H > 0 and I > 0, got H = {hidden}, "
                         f"I = {inter}")
    if list(down.shape) != [experts, hidden, inter]:
        raise ValueError(f"down must be [E, H, I] = "
                         f"{[experts, hidden, inter]}, got "
                         f"{list(down.shape)}")


def grouped_swiglu_mlp(x, gate_up, down, m_splits, *, shards=0,
                       memory_budget=None, main_grad=False, recompute=True):
    """The grouped SwiGLU MLP of x [T, H] (tokens grouped by expert,
    m_splits[e] rows for expert e) with gate_up [E, 2I, H] and down
    [E, H, I]; `shards` and `memory_budget` as for tile.ops.swiglu_mlp. With
    main_grad=True the weights' gradients are added in fp32 to their
    ``.main_grad`` and autograd gets None for them. recompute=False runs
    the untiled step: [T, 3I] kept from the forward to the backward, no
    GEMM recomputed (one shard: `shards` must be 0 or 1)."""
    check(x, gate_up, down)
    splits = _check_splits(m_splits, gate_up.shape[0], x.shape[0])
    if isinstance(shards, bool) or not isinstance(shards, int) or shards < 0:
        raise ValueError(f"shards must be an int ≥ 0 (0: automatic), got "
                         f"{shards!r}")
    if memory_budget is not None and (not isinstance(memory_budget, int) or
                                      memory_budget <= 0):
        raise ValueError(f"memory_budget must be a positive number of "
                         f"bytes, got {memory_budget!r}")
    if not isinstance(recompute, bool):
        raise TypeError(f"recompute must be a bool, got {recompute!r}")
    if not recompute and shards > 1:
        raise ValueError(f"recompute=False keeps every row in one shard; "
                         f"shards must be 0 or 1, got {shards}")
    budget = memory_budget or 0
    if torch.is_grad_enabled() and any(
            t.requires_grad for t in (x, gate_up, down)):
        main_grads = _mlp.main_grads_of((gate_up, down),
                                        ("gate_up", "down")) \
            if main_grad else []
        return _GroupedMLPFunction.apply(x, gate_up, down, splits, shards,
                                         budget, recompute, *main_grads)
    # Without autograd nothing is kept: the tiled forward is the same y.
    if _autograd._tracing([x, gate_up, down]):
        return _forward_op(x, gate_up, down, list(splits), shards, budget)
    return _forward(x, gate_up, down, splits, shards, budget)[0]


__all__ = ["grouped_swiglu_mlp"]
