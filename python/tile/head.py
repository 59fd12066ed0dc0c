"""The LM head and a loss over its logits in chunks of rows: the logits of
all rows, [rows, vocab], never exist.

    linear_cross_entropy(h, w, labels) == cross_entropy(h @ w.T, labels)
    linear_loss(h, w, kernel, *args)   == kernel(h @ w.T, *args), reduced

For each chunk of rows: the chunk's logits by a GEMM (torch's: cuBLAS on
CUDA tensors), the loss kernel's forward and the backward
tile-differentiate derived from it on them, d hidden by a GEMM, and d
weight added by a GEMM with beta = 1. Two schedules:

- eager (reduction "sum" or "mean", no main_grad): the gradients are made
  in the forward, for an incoming gradient of 1, and scaled by the real one
  in the backward (one pass over d hidden and d weight): three GEMMs per
  chunk, as many as the unchunked head and loss take. The weight's
  gradient is summed over chunks in the weight's dtype (each chunk's GEMM
  accumulates in fp32), as Liger's fused linear cross-entropy sums it: a
  float32 sum would hold a [vocab, hidden] fp32 tensor, 2 GB at Llama 3's
  shapes, more than the loss saves at short sequences.
- recompute (reduction "none", or main_grad): the forward computes the
  loss only; the backward recomputes each chunk's logits and runs the
  derived backward with the rows' real gradients (four GEMMs per chunk).
  Under the main_grad contract the weight's gradient is added to its fp32
  main_grad by cuBLASLt (gemm.matmul_into), never held in the weight's dtype.

The chunk: as many rows as fit `memory_budget` bytes of chunk buffers (the
logits, and a gradient or capped copy where the kernel needs one), at
least one; by default the bytes of the hidden states, at least 256 MiB
(default_budget); plan() says it. CPU tensors take the same steps, the GEMMs in
torch and the kernels on the reference evaluator.
"""

import math
from typing import Optional

import torch
from torch.autograd.function import once_differentiable

from .autograd import grad_dtype, main_grad_of, mark_main_grads
from .custom_ops import define_op, reads_values, register, registered
from .head_chunks import (MIN_MEMORY_BUDGET, Head, RowLoss, default_budget,
                          plan)
from .kernel import Kernel
from .losses import REDUCTIONS, check_labels, check_options, dense_labels
from .operators import kernel as operator

__all__ = ["linear_cross_entropy", "linear_loss", "plan",
           "default_budget", "MIN_MEMORY_BUDGET"]


# -- Head.compute as two ops (custom_ops) ------------------------------------
#
# An op takes no Python objects: a head's fixed parts (its row kernel,
# whether its gradient is in place, the reduction, the wanted gradients and
# the parameters' dtypes) go as the key they are registered under, made
# from their values (the same parts get the same key, so a compiled graph's
# key stays valid); its numbers go as arguments, since torch.compile may
# make them symbolic (a label smoothing over a dynamic vocabulary).

def _configuration_key(head):
    parts = (head.loss.kernel.key, head.loss.in_place, head.reduction,
             tuple(head.need), head.weight_dtype, head.bias_dtype)
    return register("head:" + ",".join(map(str, parts)), parts)


def _numbers(head):
    """The head's numbers as an op takes them: (the row loss's scalars as
    floats, which of them are ints, its softcap, the chunk budget)."""
    scalars = head.loss.scalars
    return ([float(v) for v in scalars],
            [isinstance(v, int) and not isinstance(v, bool) for v in scalars],
            head.loss.softcap, head.memory_budget)


def _configured_head(key, numbers, main_grad):
    """The Head of an op's call (the reduction's count is none of its
    parts: the op returns per-row values)."""
    kernel_key, in_place, reduction, need, weight_dtype, bias_dtype = \
        registered(key)
    scalars, integral, softcap, memory_budget = numbers
    loss = RowLoss(registered(kernel_key),
                   scalars=[int(v) if i else v
                            for v, i in zip(scalars, integral)],
                   softcap=softcap, in_place=in_place)
    return Head(loss, reduction, None, memory_budget, need, weight_dtype,
                bias_dtype, main_grad=main_grad)


def _op_outputs(values, grads, like):
    """The op's four tensors: an empty one for a gradient not made."""
    return (values, *(like.new_empty(0) if g is None else g for g in grads))


def _compute_eager(head, hidden, weight, bias, per_row, rows_grad):
    values, grads = head.compute(hidden, weight, bias, per_row, rows_grad)
    return (values, *grads)


def _compute_body(key: str, scalars: list[float], integral: list[bool],
                  softcap: Optional[float], memory_budget: Optional[int],
                  hidden: torch.Tensor, weight: torch.Tensor,
                  bias: Optional[torch.Tensor], per_row: list[torch.Tensor],
                  rows_grad: Optional[torch.Tensor]
                  ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor,
                             torch.Tensor]:
    """The op's body: the chunks run here, on real tensors."""
    return _compute_into_body(key, scalars, integral, softcap, memory_budget,
                              hidden, weight, bias, per_row, rows_grad, None)


def _compute_into_body(key: str, scalars: list[float], integral: list[bool],
                       softcap: Optional[float],
                       memory_budget: Optional[int], hidden: torch.Tensor,
                       weight: torch.Tensor, bias: Optional[torch.Tensor],
                       per_row: list[torch.Tensor],
                       rows_grad: Optional[torch.Tensor],
                       main_grad: Optional[torch.Tensor]
                       ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor,
                                  torch.Tensor]:
    """The backward under the main_grad contract: the weight's gradient
    added to `main_grad` (fp32) in place, its output empty."""
    head = _configured_head(key, (scalars, integral, softcap, memory_budget),
                            main_grad)
    # Its inputs are autocast's already (_run_head); a compiled graph runs
    # it under the caller's autocast, which would cast the chunks' GEMMs.
    with torch.autocast(hidden.device.type, enabled=False):
        values, *grads = _compute_eager(head, hidden, weight, bias, per_row,
                                        rows_grad)
    return _op_outputs(values, grads, hidden)


def _compute_fake(key, scalars, integral, softcap, memory_budget, hidden,
                  weight, bias, per_row, rows_grad, main_grad=None):
    head = _configured_head(key, (scalars, integral, softcap, memory_budget),
                            main_grad)
    values = hidden.new_empty(hidden.shape[0], dtype=grad_dtype(hidden.dtype))
    grads = (None, None, None) if rows_grad is None else \
        head.buffers(hidden, weight, bias)
    return _op_outputs(values, grads, hidden)


def _pack(head, *tensors):
    return (_configuration_key(head), *_numbers(head), *tensors)


def _pack_into(head, *tensors):
    return (*_pack(head, *tensors), head.main_grad)


# Traced by torch.compile (without main_grad), one op whose chunk loop runs
# when the rows are known: the graph does not depend on the row count.
_chunked_head_op = define_op("chunked_head", _compute_eager, _compute_fake,
                             body=_compute_body, pack=_pack)
# The backward under main_grad, which declares that it adds to main_grad.
_chunked_head_into_op = define_op("chunked_head_into", _compute_eager,
                                  _compute_fake, mutates=("main_grad",),
                                  body=_compute_into_body, pack=_pack_into)


def compute(head, hidden, weight, bias, per_row, rows_grad=None):
    """Head.compute through its op: (per-row values, (d hidden, d weight,
    d bias)), the gradients for `rows_grad` where wanted, else None (the
    op's empty tensors, traced, become None too)."""
    into = head.main_grad is not None and rows_grad is not None
    op = _chunked_head_into_op if into else _chunked_head_op
    values, *grads = op(head, hidden, weight, bias, per_row, rows_grad)
    if rows_grad is None:
        return values, (None, None, None)
    # Under main_grad the weight's gradient went there.
    wanted = (head.need[0], head.need[1] and head.main_grad is None,
              head.need[2])
    return values, tuple(g if want else None
                         for g, want in zip(grads, wanted))


def _may_be_other_than_one(grad):
    """Whether the loss's gradient may differ from 1: known only by reading
    it, which synchronizes with the GPU — done eagerly (the forward has
    queued everything it could already), never while torch.compile traces
    or a CUDA graph captures (then: may)."""
    if not reads_values([grad]):
        return True
    return bool(grad != 1)


class _ChunkedHead(torch.autograd.Function):
    """apply(head, hidden [rows, H], weight [V, H], bias [V] or None,
    *per_row tensors): the reduced loss. Its node holds the gradients
    (eager schedule) or the inputs (recompute)."""

    @staticmethod
    def forward(ctx, head, hidden, weight, bias, *per_row):
        ctx.head = head
        ctx.eager = head.eager()
        if ctx.eager:
            one = torch.ones((), dtype=grad_dtype(hidden.dtype),
                             device=hidden.device)
            values, into = compute(
                head, hidden, weight, bias, per_row,
                head.rows_grad(hidden.shape[0], one, hidden))
            ctx.present = [t is not None for t in into]
            ctx.save_for_backward(*[t for t in into if t is not None])
        else:
            values, _ = compute(head, hidden, weight, bias, per_row)
            ctx.save_for_backward(hidden, weight, bias, *per_row)
        return head.reduce(values)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        head = ctx.head
        if ctx.eager:
            if getattr(ctx, "used", False):
                raise RuntimeError(
                    "a second backward through linear_cross_entropy (or "
                    "linear_loss) with reduction 'mean' or 'sum': its "
                    "gradients were made in the forward and handed to the "
                    "first backward. Use reduction='none' (and reduce the "
                    "rows yourself), whose backward recomputes them")
            ctx.used = True
            # Nothing of the call is read again (a second backward is
            # refused above): the Head and its `count` tensor go now, not
            # with the graph (at the end of the backward, where a whole
            # step's memory peaks).
            ctx.head = None
            stored = iter(ctx.saved_tensors)
            grads = [next(stored) if present else None
                     for present in ctx.present]
            # They were made for an incoming gradient of 1: scaled unless
            # it is 1 (loss.backward()), as Liger does; the test waits for
            # the GPU, so not while traced or captured in a CUDA graph.
            if _may_be_other_than_one(grad):
                # In the gradient's fp32, not rounded to the buffers' bf16
                # first (1/7 would scale every gradient by 0.998).
                grads = [None if g is None else g.mul_(grad) for g in grads]
        else:
            hidden, weight, bias, *per_row = ctx.saved_tensors
            _, grads = compute(
                head, hidden, weight, bias, per_row,
                head.rows_grad(hidden.shape[0], grad, hidden))
        if head.main_grad is not None:
            mark_main_grads([head.weight], in_forward=False)
        dhidden, dweight, dbias = grads
        if dbias is not None:
            dbias = dbias.to(head.bias_dtype)
        return (None, dhidden, dweight, dbias, *[None] * (
            len(ctx.needs_input_grad) - 4))


def _rows_of(hidden, weight, bias):
    """hidden [..., H], weight [V, H] and bias [V] checked (one dtype
    unless autocast casts them to its own: _autocast)."""
    for name, t in (("hidden", hidden), ("weight", weight)):
        if not isinstance(t, torch.Tensor) or not t.dtype.is_floating_point:
            raise TypeError(f"{name} must be a float tensor, got "
                            f"{getattr(t, 'dtype', type(t).__name__)}")
    if weight.dim() != 2 or hidden.dim() < 1 or \
            hidden.shape[-1] != weight.shape[1]:
        raise ValueError(f"hidden {list(hidden.shape)} and weight "
                         f"{list(weight.shape)}: the head takes hidden "
                         "[..., H] and weight [vocab, H]")
    if bias is not None and (not isinstance(bias, torch.Tensor) or
                             tuple(bias.shape) != (weight.shape[0],)):
        raise ValueError(f"bias must be a tensor of shape "
                         f"[{weight.shape[0]}] (one per vocabulary entry)")
    tensors = [t for t in (hidden, weight, bias) if t is not None]
    if len({t.device for t in tensors}) != 1:
        raise ValueError("hidden, weight and bias must be on one device, "
                         f"got {', '.join(str(t.device) for t in tensors)}")
    if len({t.dtype for t in tensors}) != 1 and \
            not torch.is_autocast_enabled(hidden.device.type):
        raise TypeError(
            "hidden, weight and bias must have one dtype (under autocast "
            "the head casts them to autocast's), got "
            + ", ".join(str(t.dtype) for t in tensors))


def _autocast(hidden, weight, bias):
    """hidden, weight and bias as autocast would give them to a linear
    layer: cast to its dtype where autocast is on (the casts keep their
    autograd nodes)."""
    device = hidden.device.type
    if not torch.is_autocast_enabled(device):
        return hidden, weight, bias
    dtype = torch.get_autocast_dtype(device)
    return tuple(None if t is None else t.to(dtype)
                 for t in (hidden, weight, bias))


def _run_head(loss, hidden, weight, bias, per_row, reduction, count,
              memory_budget, main_grad):
    """The chunked head over `per_row` tensors of hidden's leading shape."""
    param = weight
    accumulator = None
    if main_grad and weight.requires_grad and torch.is_grad_enabled():
        accumulator = main_grad_of(param, "the head's weight")
        mark_main_grads([param], in_forward=True)
    hidden, weight, bias = _autocast(hidden, weight, bias)
    leading = hidden.shape[:-1]
    flat = hidden.reshape(-1, hidden.shape[-1]).contiguous()
    rows = flat.shape[0]
    grad_on = torch.is_grad_enabled()
    need = (grad_on and hidden.requires_grad,
            grad_on and weight.requires_grad,
            grad_on and bias is not None and bias.requires_grad)
    head = Head(loss, reduction, count, memory_budget, need, param.dtype,
                 None if bias is None else bias.dtype, param, accumulator)
    weight_c = weight.contiguous()
    bias_c = None if bias is None else bias.contiguous()
    per_row = [t.reshape(rows, *t.shape[len(leading):]).contiguous()
               for t in per_row]
    with torch.autocast(hidden.device.type, enabled=False):
        if any(need):
            result = _ChunkedHead.apply(head, flat, weight_c, bias_c,
                                        *per_row)
        else:
            result = head.reduce(
                compute(head, flat, weight_c, bias_c, per_row)[0])
    if reduction == "none":
        result = result.view(leading)
    return result


def linear_cross_entropy(hidden, weight, labels, *, bias=None,
                         ignore_index=-100, reduction="mean",
                         label_smoothing=0.0, z_loss=0.0, softcap=None,
                         memory_budget=None, main_grad=False):
    """cross_entropy(hidden @ weight.T + bias, labels, ...) without the
    logits: hidden [..., H], weight [vocab, H] (an LM head's), labels [...]
    (int64 or int32), bias [vocab] or None; bf16, f16 or f32 (float64 on the
    CPU), one dtype (under autocast, autocast's). The options are
    tile.ops.cross_entropy's.

    The rows run in chunks of as many rows as `memory_budget` bytes of
    logits hold; by default the bytes of the hidden states, at least 256
    MiB (1024 rows of a 128256 vocabulary in bf16; with softcap, half as
    many): default_budget() and plan() say the chunks. With reduction
    "mean" or "sum" every gradient is made in the forward (Liger's
    schedule: no GEMM is recomputed) and held until the backward, the
    weight's summed over chunks in its own dtype; with reduction "none"
    the backward recomputes the logits chunk by chunk.
    main_grad=True: the weight's gradient is added in fp32 to
    ``weight.main_grad`` (the main_grad contract) and the backward
    recomputes the logits (the loss's gradient scales the weight's, and is
    known only then)."""
    _rows_of(hidden, weight, bias)
    vocab = weight.shape[0]
    check_options(vocab, ignore_index, reduction, label_smoothing, z_loss,
                  softcap)
    check_labels(labels, hidden.shape[:-1], vocab, hidden.device,
                 ignore_index)
    labels = dense_labels(labels)
    loss = RowLoss(operator("cross_entropy"),
                    scalars=(float(ignore_index), float(label_smoothing),
                             float(z_loss)),
                    softcap=softcap, in_place=True)
    count = (labels != ignore_index).sum() if reduction == "mean" else None
    return _run_head(loss, hidden, weight, bias, [labels], reduction, count,
                     memory_budget, main_grad)


def _check_row_kernel(kernel, per_row):
    if not isinstance(kernel, Kernel):
        raise TypeError(f"linear_loss takes a tile.Kernel, got "
                        f"{type(kernel).__name__}")
    arguments = kernel.forward_info.arguments
    results = kernel.forward_info.results
    if not arguments or not arguments[0].is_tensor or \
            arguments[0].rank != 2 or not arguments[0].differentiable:
        raise ValueError(f"{kernel.function}'s first argument must be the "
                         "logits, a [rows, vocab] tensor")
    if len(results) != 1 or kernel.forward_info.result_shapes[0] != ("rows",):
        raise ValueError(f"{kernel.function} must return one value per row "
                         "(a single result of shape [rows])")
    if kernel.backward_function is None:
        raise ValueError(f"{kernel.function} has no derived backward")
    for index, arg in enumerate(per_row, start=1):
        if isinstance(arg, torch.Tensor) and arg.requires_grad:
            raise ValueError(
                f"{kernel.describe(index)} requires grad: linear_loss "
                "differentiates the logits (hidden, weight, bias) only")


def linear_loss(hidden, weight, kernel, *args, bias=None, reduction="none",
                memory_budget=None, main_grad=False):
    """kernel(hidden @ weight.T + bias, *args), reduced, without the
    logits: `kernel` is a tile.Kernel whose first argument is a row of
    logits and whose one result is a value per row (a log-probability, an
    entropy, a loss); its backward is the one tile-differentiate derived.
    `args` are the kernel's other arguments: tensors of hidden's leading
    shape (one per row: a label, a reference log-probability) split into
    chunks with the rows, and scalars. reduction "none" (the per-row values,
    of hidden's leading shape), "sum" or "mean" (over all rows). Chunks,
    schedules and main_grad as for linear_cross_entropy; the gradient of
    each chunk's logits has a buffer of its own."""
    _rows_of(hidden, weight, bias)
    _check_row_kernel(kernel, args)
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be one of {REDUCTIONS}, got "
                         f"{reduction!r}")
    leading = tuple(hidden.shape[:-1])
    per_row, scalars = [], []
    for index, arg in enumerate(args, start=1):
        if isinstance(arg, torch.Tensor):
            if scalars:
                raise ValueError(f"{kernel.describe(index)}: linear_loss "
                                 "takes the per-row tensors before the "
                                 "scalars")
            if tuple(arg.shape[:len(leading)]) != leading:
                raise ValueError(
                    f"{kernel.describe(index)} has shape {list(arg.shape)}; "
                    f"a per-row argument's leading shape is hidden's, "
                    f"{list(leading)}")
            per_row.append(arg)
        else:
            scalars.append(arg)
    loss = RowLoss(kernel, scalars=scalars)
    rows = math.prod(leading)
    count = torch.tensor(float(rows), device=hidden.device) \
        if reduction == "mean" else None
    return _run_head(loss, hidden, weight, bias, per_row, reduction, count,
                     memory_budget, main_grad)
