"""A mixture of experts' experts as a router leaves them (moe_experts): the
tokens gathered by expert on the device, the grouped MLP of mlp.py run with
each row's routing weight applied before the down projection, and the rows
summed back into their tokens, in one autograd node that keeps nothing of
size [T*K, H]. CPU tensors take mlp.py's float64 reference step.
"""

from typing import Optional

import torch

from . import _capi_operators
from .autograd import grad_dtype, main_grads_of, mark_main_grads, \
    stream_of, tensor_arg, workspace_of
from .custom_ops import define_op, sizes_known
from .mlp import (grad_buffers, kept_or_empty, op_splits, step_splits,
                  tensor_args, untiled_workspace_bytes, workspace_bytes)
from .mlp_checks import check_grouped, check_options
from .mlp_reference import cpu_backward, cpu_forward

__all__ = ["moe_experts"]


def moe_experts(x, top_k_index, top_k_weights, gate_up, down, *, shards=0,
                memory_budget=None, main_grad=False, recompute=False):
    """A mixture-of-experts layer's experts as a router leaves them (Hugging
    Face's MoE experts' forward): x [T, H]; top_k_index [T, K] each token's
    experts, top_k_weights [T, K] their routing weights; gate_up
    [E, 2I, H], down [E, H, I]. Returns sum_k w[t, k] * mlp_{e[t, k]}(x[t])
    [T, H] in x's dtype.

    The tokens are gathered by expert (a stable sort of the T*K choices),
    each expert's count made on the device, and the grouped MLP run with
    those device splits and each row's routing weight applied to h before
    the down projection (scaled_silu_and_mul: down is linear, so
    w * down(h) = down(w * h)); each token's K rows are gathered and
    summed back into it in fp32 (deterministic): nothing waits for the
    GPU. An index of E or more (a
    dropped choice, as Hugging Face's one_hot over E + 1 allows) adds
    nothing. recompute=False by default: PyTorch's implementations keep the
    [T*K, I] activations too. Nothing of size [T*K, H] is kept for the
    backward: the gathered tokens are gathered again, the experts' outputs
    are summed and dropped (the weights' gradient is a row sum over h's
    width, made by the derived backward), and x's rows, gathered again
    only once the backward is done with the gathered gradient, take its
    buffer and then dx's rows."""
    if x.dim() != 2 or top_k_index.dim() != 2 or \
            top_k_weights.shape != top_k_index.shape or \
            top_k_index.shape[0] != x.shape[0]:
        raise ValueError(f"moe_experts takes x [T, H], top_k_index and "
                         f"top_k_weights [T, K]; got {list(x.shape)}, "
                         f"{list(top_k_index.shape)}, "
                         f"{list(top_k_weights.shape)}")
    if top_k_index.dtype.is_floating_point:
        raise TypeError(f"top_k_index must hold integers, got "
                        f"{top_k_index.dtype}")
    if not top_k_weights.dtype.is_floating_point:
        raise TypeError(f"top_k_weights must be floating point, got "
                        f"{top_k_weights.dtype}")
    x = x.contiguous()
    check_grouped(x, gate_up, down)
    check_options(shards, memory_budget, recompute)
    experts, choices = gate_up.shape[0], top_k_index.shape[1]
    flat = top_k_index.reshape(-1).long()  # scatter_add_ takes int64
    kept = flat < experts
    # A dropped choice goes to expert 0 with weight 0 (computed, its result
    # multiplied by 0: a router drops few, and nothing here may depend on
    # how many on the host).
    flat = torch.where(kept, flat, torch.zeros_like(flat))
    weights = torch.where(kept, top_k_weights.reshape(-1),
                          torch.zeros_like(top_k_weights.reshape(-1)))
    order = torch.argsort(flat, stable=True)
    token = order // choices
    # Where each choice went in expert order (order's inverse): the rows
    # are summed back into their tokens through it.
    place = torch.empty_like(order).scatter_(
        0, order, torch.arange(order.numel(), device=order.device))
    # The counts by scatter_add: bincount would read its size on the host.
    counts = torch.zeros(experts, dtype=torch.int64, device=x.device)
    counts.scatter_add_(0, flat, torch.ones_like(flat, dtype=torch.int64))
    if x.device.type == "cpu":
        counts = counts.tolist()
    params = (gate_up, down)
    training = torch.is_grad_enabled() and any(
        t.requires_grad for t in (x, top_k_weights, *params))
    main_grads = main_grads_of(params, ("gate_up", "down")) \
        if main_grad and training else []
    # Without a backward to come, the tiled forward: nothing is kept.
    options = (shards, memory_budget or 0, recompute or not training)
    return _RoutedExperts.apply(x, weights.index_select(0, order), gate_up,
                                down, token, place, counts, options,
                                *main_grads)


# Rows gathered at once by _sum_by_token: 128 MiB at H = 2048 in bf16.
_SUM_ROWS = 32768


def _sum_by_token(rows, place, tokens):
    """out [tokens, H], out[t] = sum over k of rows[place[t * K + k]]: the
    experts' rows summed back into their tokens, each token's K rows
    gathered and summed in fp32 (torch's sum), rounded once:
    deterministic, without the atomics of index_add (which added them one
    by one in bf16, at ~10 ms a call at 65536 tokens of Qwen3-MoE on an
    H200). Eager calls gather _SUM_ROWS rows at a time; a traced one (its
    token count symbolic) all at once."""
    choices = place.numel() // max(tokens, 1)
    width = rows.shape[1]
    if not sizes_known([rows]) or place.numel() <= _SUM_ROWS:
        return rows.index_select(0, place).view(tokens, choices, width) \
            .sum(1)
    out = rows.new_empty(tokens, width)
    step = max(1, _SUM_ROWS // choices)
    for first in range(0, tokens, step):
        last = min(tokens, first + step)
        gathered = rows.index_select(0, place[first * choices:
                                              last * choices])
        torch.sum(gathered.view(last - first, choices, width), 1,
                  out=out[first:last])
    return out


# -- the routed step: a mixture of experts' experts in one node -------------

def _routing_of(w, x):
    """The routing weights as the step takes them: f32 (float64 in an exact
    CPU step)."""
    return w.to(grad_dtype(x.dtype))


# The routed step's GEMMs run on one stream. Its splits are on the device:
# the grouped GEMM (CUTLASS) reads them there and needs one stream's scratch
# alone; the other streams' cuBLASLt workspaces (32 MiB each) would only
# serve its fallback (no grouped GEMM for the dtype or alignment), which
# copies the splits to the host, and would be held at every layer's
# backward, where the step's memory peaks (with the default four, 96 MiB
# more at 65536 tokens of Qwen3-MoE and DeepSeek-V3: Performance.md,
# session 29).
_ROUTED_STREAMS = 1


def _step_options(options):
    """The C API's options of a routed step: (shards, memory_budget,
    recompute) and its GEMM streams."""
    return (*options, _ROUTED_STREAMS)


def _untiled_bytes(rows, gate_up):
    """(kept, scratch) bytes of the untiled routed step over `rows` rows:
    its forward keeps g and u alone; cuBLASLt's workspace and h are each
    call's scratch (h made again by the backward), so nothing waits in
    them from a layer's forward to its backward."""
    return untiled_workspace_bytes(rows.shape[0], gate_up.shape[1] // 2,
                                   rows.dtype, experts=gate_up.shape[0],
                                   apart=True, streams=_ROUTED_STREAMS)


def _bytes_on(rows, size):
    return torch.empty(size, dtype=torch.uint8, device=rows.device)


def _routed_forward(rows, gate_up, down, splits, routing, options):
    """y of the gathered rows (written over them on the GPU, where the step
    reads all of x before it writes y) and the untiled step's kept
    workspace (g and u)."""
    if rows.device.type == "cpu":
        return cpu_forward(rows, gate_up, None, down, splits, routing), None
    options = _step_options(options)
    if options[2]:  # the tiled step keeps nothing
        workspace = _bytes_on(rows, workspace_bytes(rows, gate_up, None,
                                                    splits, options))
        scratch = None
    else:
        kept, scratch = _untiled_bytes(rows, gate_up)
        workspace, scratch = _bytes_on(rows, kept), _bytes_on(rows, scratch)
    _capi_operators.mlp_forward_routed(
        rows.device.index, options, stream_of(rows.device),
        workspace_of(workspace), tensor_args((gate_up, down)),
        tensor_arg(rows), tensor_arg(splits), tensor_arg(routing),
        tensor_arg(rows),
        (None, 0) if scratch is None else workspace_of(scratch))
    return rows, (None if options[2] else workspace)


def _routed_backward(x, token, gate_up, down, splits, routing, dy, options,
                     kept, grads, overwrite):
    """(dx, d_routing) of the rows x[token], dx written over dy on the GPU
    (a shard's dy is read before its dx is written); the weights' gradients
    written to or added to `grads`. The untiled step (kept given) gathers
    x's rows only once its first call is done with dy, into dy's buffer,
    and its second call writes dx over them: of size [T*K, H] the
    backward holds dy's buffer alone."""
    d_routing = torch.empty_like(routing)
    if x.device.type == "cpu":
        dx = cpu_backward(x.index_select(0, token), gate_up, None, down, dy,
                          splits, grads, overwrite, routing, d_routing)
        return dx, d_routing
    device, stream = x.device.index, stream_of(x.device)
    options = _step_options(options)
    weights = tensor_args((gate_up, down))
    if kept is None:  # the tiled step reads x's rows and dy shard by shard
        kept = _bytes_on(dy, workspace_bytes(dy, gate_up, None, splits,
                                             options))
        _capi_operators.mlp_backward_routed(
            device, options, stream, workspace_of(kept), weights,
            tensor_arg(x.index_select(0, token)), tensor_arg(splits),
            tensor_arg(routing), tensor_arg(dy), tensor_arg(dy),
            tensor_arg(d_routing), tensor_args(grads), overwrite)
        return dy, d_routing
    # Alive until both calls are queued.
    scratch_buffer = _bytes_on(dy, _untiled_bytes(dy, gate_up)[1])
    scratch = workspace_of(scratch_buffer)
    _capi_operators.mlp_backward_routed_down(
        device, options, stream, workspace_of(kept), scratch, weights,
        tensor_arg(splits), tensor_arg(routing), tensor_arg(dy),
        tensor_arg(d_routing), tensor_args(grads), overwrite)
    rows = torch.index_select(x, 0, token, out=dy)
    _capi_operators.mlp_backward_routed_gate_up(
        device, options, stream, workspace_of(kept), scratch, weights,
        tensor_arg(rows), tensor_arg(splits), tensor_arg(rows),
        tensor_args(grads), overwrite)
    return rows, d_routing


# -- the routed step as ops (custom_ops); splits as mlp's ------------------

def _routed_forward_step(rows, gate_up, down, splits, routing, shards,
                         memory_budget, recompute):
    """(y, the untiled step's kept workspace, None where nothing is)."""
    return _routed_forward(rows, gate_up, down, splits, routing,
                           (shards, memory_budget, recompute))


def _on_gpu_a_copy(tensor):
    # The GPU step writes its result over this argument: traced, it gets a
    # copy (a traced graph may not write over its input). The CPU's step
    # writes new tensors.
    return tensor.clone() if tensor.is_cuda else tensor


def _routed_forward_body(rows: torch.Tensor, gate_up: torch.Tensor,
                         down: torch.Tensor, splits: Optional[list[int]],
                         device_splits: Optional[torch.Tensor],
                         routing: torch.Tensor, shards: int,
                         memory_budget: int, recompute: bool
                         ) -> tuple[torch.Tensor, torch.Tensor]:
    """Traced: y a new tensor; the kept workspace or an empty one."""
    y, kept = _routed_forward_step(_on_gpu_a_copy(rows), gate_up, down,
                                   step_splits(splits, device_splits),
                                   routing, shards, memory_budget, recompute)
    return y, kept_or_empty(rows, kept)


def _routed_forward_fake(rows, gate_up, down, splits, device_splits, routing,
                         shards, memory_budget, recompute):
    size = 0 if recompute or rows.device.type == "cpu" else \
        _untiled_bytes(rows, gate_up)[0]
    return torch.empty_like(rows), rows.new_empty(size, dtype=torch.uint8)


def _routed_backward_step(x, token, gate_up, down, splits, routing, dy,
                          shards, memory_budget, recompute, kept, grads,
                          overwrite):
    return _routed_backward(x, token, gate_up, down, splits, routing, dy,
                            (shards, memory_budget, recompute), kept, grads,
                            overwrite)


def _routed_backward_body(x: torch.Tensor, token: torch.Tensor,
                          gate_up: torch.Tensor, down: torch.Tensor,
                          splits: Optional[list[int]],
                          device_splits: Optional[torch.Tensor],
                          routing: torch.Tensor, dy: torch.Tensor,
                          shards: int, memory_budget: int, recompute: bool,
                          kept: torch.Tensor, grads: list[torch.Tensor],
                          overwrite: bool
                          ) -> tuple[torch.Tensor, torch.Tensor]:
    """Traced: dx a new tensor, not dy's buffer; an empty `kept`: none."""
    return _routed_backward_step(x, token, gate_up, down,
                                 step_splits(splits, device_splits), routing,
                                 _on_gpu_a_copy(dy), shards, memory_budget,
                                 recompute, kept if kept.numel() else None,
                                 grads, overwrite)


def _routed_backward_fake(x, token, gate_up, down, splits, device_splits,
                          routing, dy, shards, memory_budget, recompute, kept,
                          grads, overwrite):
    return torch.empty_like(dy), torch.empty_like(routing)


def _pack_forward(rows, gate_up, down, splits, *rest):
    return (rows, gate_up, down, *op_splits(splits), *rest)


def _pack_backward(x, token, gate_up, down, splits, routing, dy, shards,
                   memory_budget, recompute, kept, grads, overwrite):
    return (x, token, gate_up, down, *op_splits(splits), routing, dy, shards,
            memory_budget, recompute, kept_or_empty(x, kept), grads,
            overwrite)


_routed_forward_op = define_op("moe_experts_forward", _routed_forward_step,
                               _routed_forward_fake,
                               body=_routed_forward_body,
                               pack=_pack_forward)
_routed_backward_op = define_op("moe_experts_backward",
                                _routed_backward_step, _routed_backward_fake,
                                mutates=("kept", "grads"),
                                body=_routed_backward_body,
                                pack=_pack_backward)


class _RoutedExperts(torch.autograd.Function):
    """apply(x, w, gate_up, down, token, place, splits, options,
    *main_grads): out [T, H], out[token[r]] += w[r] * mlp_e(x[token[r]])
    over the rows r in expert order (splits[e] of them for expert e: a
    device tensor, or host ints on the CPU); place is token's inverse (row
    r = place[t * K + k] is token t's k-th choice). options: (shards,
    memory_budget, recompute).
    Keeps x, token, the routing weights (f32) and the untiled step's
    workspace: of size [T*K, H] nothing (the rows are gathered again in the
    backward, the gathered gradient becomes dx in place). main_grads as
    _MLPFunction's."""

    @staticmethod
    def forward(ctx, x, w, gate_up, down, token, place, splits, options,
                *main_grads):
        routing = _routing_of(w, x)
        rows = x.index_select(0, token)
        on_device = isinstance(splits, torch.Tensor)
        y, kept = _routed_forward_op(rows, gate_up, down, splits, routing,
                                     *options)
        # Nothing is kept by the tiled step or on the CPU (traced: the op's
        # empty tensor).
        if options[2] or not x.is_cuda:
            kept = None
        ctx.options, ctx.main_grads = options, main_grads
        ctx.host_splits = None if on_device else splits
        ctx.weights_dtype = w.dtype  # routing is w in f32: w is not kept
        ctx.save_for_backward(x, routing, gate_up, down, token, place, kept,
                              splits if on_device else None)
        # Out of place (an in-place index_add_ here once made torch.compile
        # hand this node's backward a zero gradient).
        return _sum_by_token(y, place, x.shape[0])

    @staticmethod
    def backward(ctx, dout):
        x, routing, gate_up, down, token, place, kept, device_splits = \
            ctx.saved_tensors
        splits = device_splits if device_splits is not None \
            else ctx.host_splits
        main_grads = list(ctx.main_grads)
        weights = (gate_up, down)
        grads = main_grads or grad_buffers(x, weights,
                                           untiled=kept is not None)
        overwrite = not main_grads
        dy = dout.contiguous().index_select(0, token)
        drows, d_routing = _routed_backward_op(
            x, token, gate_up, down, splits, routing, dy, *ctx.options, kept,
            grads, overwrite)
        dx = _sum_by_token(drows, place, x.shape[0]) \
            if ctx.needs_input_grad[0] else None
        dw = d_routing.to(ctx.weights_dtype) if ctx.needs_input_grad[1] \
            else None
        rest = (None,) * (4 + len(main_grads))
        if main_grads:
            mark_main_grads(list(weights), in_forward=False)
            return dx, dw, None, None, *rest
        weight_grads = [grad.to(weight.dtype)
                        if ctx.needs_input_grad[index + 2] else None
                        for index, (weight, grad) in
                        enumerate(zip(weights, grads))]
        return dx, dw, *weight_grads, *rest
