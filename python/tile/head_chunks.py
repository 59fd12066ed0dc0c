"""The chunked head's engine: how many rows a chunk holds (plan, the
budget), a loss kernel's calling convention over a chunk's logits
(RowLoss), and Head, which runs the chunks — each chunk's logits by a
GEMM, the loss kernel's forward and derived backward on them, d hidden and
d weight by GEMMs — in either schedule head.py describes (eager or
recompute). head.py makes it an op: its autograd node and custom ops."""

import math

import torch

from .autograd import grad_dtype
from .gemm import matmul_into
from .kernel_autograd import run_backward
from .kernel_launch import run_forward
from .operators import kernel as operator

# The default budget of chunk buffers: the bytes of the hidden states (the
# head then adds at most what the model already holds many times over as
# activations, Liger's rule for its chunks), but at least 256 MiB, 1024
# rows of a 128256-column bf16 vocabulary: below that each chunk re-reads
# and re-writes the whole weight gradient for too few rows
# (docs/LinearLoss.md has the measurements).
MIN_MEMORY_BUDGET = 256 << 20
# Chunks are a multiple of this many rows, but for the last: cuBLAS's
# Hopper GEMMs tile the rows by 256 (Qwen3-MoE's 65536 rows in chunks of
# 832, 3.25 tiles, ran its head's GEMMs 6 % slower than in chunks of 768:
# docs/Performance.md, session 29).
_ROW_MULTIPLE = 256


def default_budget(rows, hidden, dtype):
    """The chunk buffers' default bytes for `rows` rows of `hidden`
    features of `dtype`: max(MIN_MEMORY_BUDGET, the hidden states')."""
    size = dtype.itemsize
    return max(MIN_MEMORY_BUDGET, rows * hidden * size)


def plan(rows, vocab, dtype, *, hidden=0, buffers=1, memory_budget=None):
    """(chunks, rows per chunk) for `rows` rows of `hidden` features and
    `vocab` logits of `dtype`, with `buffers` [chunk, vocab] buffers held
    at once, within `memory_budget` bytes (default: default_budget); no
    GPU."""
    budget = default_budget(rows, hidden, dtype) if memory_budget is None \
        else int(memory_budget)
    if budget <= 0:
        raise ValueError(f"memory_budget must be a positive number of "
                         f"bytes, got {memory_budget!r}")
    per_row = max(1, vocab * dtype.itemsize * buffers)
    fit = budget // per_row
    if fit >= _ROW_MULTIPLE:
        fit -= fit % _ROW_MULTIPLE
    fit = max(1, min(fit, rows))
    chunks = max(1, math.ceil(rows / fit))
    # As many chunks as the budget needs, their rows balanced.
    size = math.ceil(rows / chunks)
    if size > _ROW_MULTIPLE:
        size = min(fit, math.ceil(size / _ROW_MULTIPLE) * _ROW_MULTIPLE)
    return max(1, math.ceil(rows / size)) if rows else 0, size


class RowLoss:
    """A row kernel over a chunk of logits: its per-row values, and the
    logits' gradient for the rows' gradients. `scalars` follow the chunk's
    per-row tensors in the kernel's arguments; `softcap` runs the softcap
    operator first; `in_place`: the gradient is written over the logits
    (the kernel's backward is one pass with no reduction: cross-entropy's,
    whose row statistics the forward saves)."""

    def __init__(self, kernel, scalars=(), softcap=None, in_place=False):
        self.kernel = kernel
        self.scalars = list(scalars)
        self.softcap = None if softcap is None else float(softcap)
        self.in_place = in_place

    def chunk_buffers(self):
        """[chunk, vocab] buffers a chunk holds: the logits, a gradient
        unless written in place, and the capped copy."""
        return 1 + (not self.in_place) + (self.softcap is not None)

    def rows(self, logits, per_row, rows_grad=None):
        """(per-row values, d logits or None): d logits is written over
        `logits` where the gradient is in place or goes through the cap."""
        capped = logits
        if self.softcap is not None:
            capped = run_forward(operator("softcap"),
                                 [logits, self.softcap])[0][0]
        args = [capped, *per_row, *self.scalars]
        outputs, saved = run_forward(self.kernel, args)
        if rows_grad is None:
            return outputs[0], None
        into = {0: capped} if self.in_place or self.softcap is not None \
            else None
        grad = run_backward(self.kernel, args, (rows_grad,), saved,
                            into=into)[0]
        if self.softcap is not None:
            grad = run_backward(operator("softcap"), [logits, self.softcap],
                                (grad,), [], into={0: logits})[0]
        return outputs[0], grad


def _chunks(rows, size):
    return [(start, min(rows, start + size)) for start in range(0, rows, size)]


def _logits(out, hidden, weight, bias):
    """hidden @ weight.T (+ bias) written into `out`."""
    if bias is None:
        return torch.mm(hidden, weight.t(), out=out)
    return torch.addmm(bias, hidden, weight.t(), out=out)


def _rows_grad(reduction, count, rows, grad, dtype):
    """The gradient of each of the `rows` values for the loss's gradient
    `grad` (for "none" the rows' own), made once per call: the chunks
    slice it."""
    if reduction == "none":
        return grad.to(dtype).contiguous()
    if reduction == "mean":
        grad = grad / count
    return grad.to(dtype).expand(rows).contiguous()


class Head:
    """One call's fixed parts: the row loss, the reduction, the chunk
    budget and which gradients are wanted. The chunk plan is made from the
    rows where they are known (run): under torch.compile, inside the
    traced call's op."""

    def __init__(self, loss, reduction, count, memory_budget, need,
                 weight_dtype, bias_dtype, param=None, main_grad=None):
        self.loss = loss
        self.reduction = reduction
        self.count = count          # rows that count for "mean": a tensor
        self.memory_budget = memory_budget
        self.need = need            # (hidden, weight, bias) need gradients
        self.weight_dtype = weight_dtype  # the weight Parameter's
        self.bias_dtype = bias_dtype      # the bias's, or None
        self.weight = param         # the weight Parameter (main_grad)
        self.main_grad = main_grad  # its main_grad, or None

    def eager(self):
        """Whether the gradients are made in the forward (the schedules in
        the module's docstring)."""
        return self.reduction != "none" and self.main_grad is None

    def rows_grad(self, rows, grad, hidden):
        """The rows' gradients for the loss's gradient `grad`."""
        return _rows_grad(self.reduction, self.count, rows, grad,
                          grad_dtype(hidden.dtype))

    def compute(self, hidden, weight, bias, per_row, rows_grad=None):
        """(per-row values, (d hidden, d weight, d bias)): the gradients
        for `rows_grad` where wanted, else None. Eager; head.compute is
        this or, traced, its op."""
        into = (None, None, None) if rows_grad is None else \
            self.buffers(hidden, weight, bias)
        return self.run(hidden, weight, bias, per_row, rows_grad, into), into

    def run(self, hidden, weight, bias, per_row, rows_grad=None, into=None):
        """Every chunk: the per-row values, and with `rows_grad` (the rows'
        gradients) the gradients, into `into` = (d hidden, d weight,
        d bias) where wanted (d weight None under main_grad: added
        there)."""
        rows = hidden.shape[0]
        _, chunk = plan(rows, weight.shape[0], hidden.dtype,
                        hidden=hidden.shape[1],
                        buffers=self.loss.chunk_buffers(),
                        memory_budget=self.memory_budget)
        chunk = max(1, chunk)
        values = torch.empty(rows, dtype=grad_dtype(hidden.dtype),
                             device=hidden.device)
        buffer = torch.empty(min(chunk, rows), weight.shape[0],
                             dtype=hidden.dtype, device=hidden.device)
        for start, end in _chunks(rows, chunk):
            h = hidden[start:end]
            logits = _logits(buffer[:end - start], h, weight, bias)
            chunk_values, dlogits = self.loss.rows(
                logits, [t[start:end] for t in per_row],
                None if rows_grad is None else rows_grad[start:end])
            values[start:end] = chunk_values
            if dlogits is not None:
                self._gradients(dlogits, h, weight, into, start, end)
        return values

    def _gradients(self, dlogits, h, weight, into, start, end):
        """The chunk's gradients: d hidden's rows written, d weight (and d
        bias) written by the first chunk and added to by the others (the
        first writes: nothing is zeroed and read back)."""
        dhidden, dweight, dbias = into
        need_hidden, need_weight, need_bias = self.need
        if need_hidden:
            torch.mm(dlogits, weight, out=dhidden[start:end])
        if need_weight:
            # Under main_grad, autograd gets None for the weight.
            if self.main_grad is not None:
                matmul_into(self.main_grad, dlogits, h, trans_a=True)
            elif start == 0:
                self._weight_grad(dweight, dlogits, h, first=True)
            else:
                self._weight_grad(dweight, dlogits, h, first=False)
        if need_bias:
            if start == 0:
                torch.sum(dlogits, 0, dtype=dbias.dtype, out=dbias)
            else:
                dbias += dlogits.sum(0, dtype=dbias.dtype)

    def _weight_grad(self, dweight, dlogits, h, first):
        """dweight = (first ? 0 : dweight) + dlogits.T @ h."""
        if dweight.dtype != dlogits.dtype:
            matmul_into(dweight, dlogits, h, trans_a=True,
                        beta=0.0 if first else 1.0)
        elif first:
            torch.mm(dlogits.t(), h, out=dweight)
        else:
            torch.addmm(dweight, dlogits.t(), h, out=dweight)

    def buffers(self, hidden, weight, bias):
        """The gradient buffers (d hidden, d weight, d bias) where wanted
        (the first chunk writes them whole)."""
        need_hidden, need_weight, need_bias = self.need
        # Without rows no chunk writes them: zeros. The weight's gradient
        # is summed over chunks in the Parameter's dtype: an fp32 weight
        # under autocast sums in fp32 and is rounded to the GEMMs' dtype
        # once (by autograd), as autocast's linear rounds it.
        make = torch.empty if hidden.shape[0] else torch.zeros
        return (torch.empty_like(hidden) if need_hidden else None,
                make(weight.shape, dtype=self.weight_dtype,
                     device=weight.device)
                if need_weight and self.main_grad is None else None,
                make(weight.shape[0],
                            dtype=grad_dtype(weight.dtype),
                            device=weight.device) if need_bias else None)

    def reduce(self, values):
        if self.reduction == "none":
            return values
        total = values.sum()
        return total if self.reduction == "sum" else total / self.count
