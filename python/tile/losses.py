"""Losses over rows of logits, forward and backward from one tile kernel.

cross_entropy runs examples/cross_entropy.mlir: PyTorch's F.cross_entropy
(class-index targets) with z-loss, one loss per row; the backward, softmax
minus the (smoothed) one-hot, is the one tile-differentiate derived from
it. Soft-capping runs examples/softcap.mlir first. The reduction over rows
is PyTorch's own sum, so the gradient each row receives is autograd's.
"""

import torch

from .custom_ops import reads_values
from .kernel_autograd import apply
from .operators import kernel

__all__ = ["cross_entropy"]

REDUCTIONS = ("mean", "sum", "none")
# Labels and columns meet as f32 in the kernel (tile.cast, tile.iota):
# exact for every integer of magnitude up to 2^24.
_EXACT_IN_F32 = 1 << 24


def check_options(vocab, ignore_index, reduction, label_smoothing, z_loss,
                  softcap):
    """The cross-entropy options, for logits `vocab` columns wide."""
    if vocab > _EXACT_IN_F32:
        raise ValueError(f"a vocabulary of {vocab} is over the "
                         f"{_EXACT_IN_F32} columns whose index f32 holds "
                         "exactly")
    if isinstance(ignore_index, bool) or not isinstance(ignore_index, int) \
            or abs(ignore_index) > _EXACT_IN_F32:
        raise ValueError(f"ignore_index must be an int of magnitude up to "
                         f"{_EXACT_IN_F32}, got {ignore_index!r}")
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be one of {REDUCTIONS}, got "
                         f"{reduction!r}")
    if not 0.0 <= float(label_smoothing) <= 1.0:
        raise ValueError(f"label_smoothing must be in [0, 1], got "
                         f"{label_smoothing!r}")
    if float(z_loss) < 0.0:
        raise ValueError(f"z_loss must be ≥ 0, got {z_loss!r}")
    if softcap is not None and not float(softcap) > 0.0:
        raise ValueError(f"softcap must be > 0 or None, got {softcap!r}")


def check_labels(labels, rows_shape, vocab, device, ignore_index):
    """Labels of one row each of rows of shape `rows_shape` on `device`."""
    if not isinstance(labels, torch.Tensor) or \
            labels.dtype not in (torch.int64, torch.int32):
        raise TypeError(
            "the labels must be an int64 or int32 tensor of class "
            "indices, got "
            + (str(labels.dtype) if isinstance(labels, torch.Tensor)
               else type(labels).__name__))
    if tuple(labels.shape) != tuple(rows_shape):
        raise ValueError(
            f"labels have shape {list(labels.shape)}; they take one label "
            f"per row, shape {list(rows_shape)}")
    if labels.device != device:
        raise ValueError(f"labels are on {labels.device}, the rows on "
                         f"{device}")
    if device.type == "cpu" and reads_values([labels]):
        # A label outside [0, vocab) picks no logit: its row's loss would be
        # the logsumexp alone. The CPU checks (PyTorch raises) where it runs
        # eagerly; on the GPU the check would cost a synchronization per
        # call, and such a row gives that logsumexp (PyTorch's CUDA kernel
        # asserts instead).
        wrong = (labels != ignore_index) & ((labels < 0) | (labels >= vocab))
        if bool(wrong.any()):
            bad = labels[wrong][0].item()
            raise IndexError(f"label {bad} is outside [0, {vocab}) and is "
                             f"not ignore_index ({ignore_index})")


def dense_labels(labels):
    """int64 and dense, as the kernel reads them (shifted labels,
    labels[..., 1:], are views with strides)."""
    return (labels if labels.dtype == torch.int64
            else labels.long()).contiguous()


def cross_entropy(logits, labels, *, ignore_index=-100, reduction="mean",
                  label_smoothing=0.0, z_loss=0.0, softcap=None,
                  inplace_backward=False):
    """Cross-entropy of logits [..., vocab] (bf16, f16 or f32; float64 on
    the CPU) against class indices `labels` [...] (int64 or int32).

    - ignore_index, reduction, label_smoothing: as F.cross_entropy. "mean"
      divides by the number of rows whose label is not ignore_index, so a
      batch with every row ignored gives NaN, as PyTorch does.
    - z_loss: adds z_loss · logsumexp² per row (PaLM's z-loss; Liger's
      lse_square_scale).
    - softcap: applies softcap · tanh(logits / softcap) first (Gemma 2),
      as a kernel of its own (a capped copy of the logits).

    The loss is fp32 (float64 for float64 logits); the logits' gradient has
    their dtype.

    inplace_backward=True: the backward writes the gradient over the logits
    (as Liger's kernel does) and allocates no [..., vocab] tensor. Only for
    logits nothing reads after this loss's backward (an LM head's output):
    they hold the gradient afterwards. With softcap it is written over the
    capped copy. Labels outside [0, vocab) other than ignore_index are an
    IndexError on the CPU; on the GPU, where checking would synchronize,
    such a row's loss is its logsumexp."""
    if not isinstance(logits, torch.Tensor) or \
            not logits.dtype.is_floating_point or logits.dim() == 0:
        raise TypeError("cross_entropy takes logits as a float tensor "
                        "[..., vocab]")
    check_options(logits.shape[-1], ignore_index, reduction, label_smoothing,
                  z_loss, softcap)
    check_labels(labels, logits.shape[:-1], logits.shape[-1], logits.device,
                 ignore_index)
    # Shifted logits (logits[:, :-1]) are views with strides; the kernel
    # reads dense rows.
    logits = logits.contiguous()
    labels = dense_labels(labels)
    if softcap is not None:
        # A kernel of its own: fused behind a select on the parameter, it
        # slowed every call (docs/Performance.md). It costs a capped copy
        # of the logits (and the read and write of it).
        logits = kernel("softcap")(logits, float(softcap))
    scalars = (float(ignore_index), float(label_smoothing), float(z_loss))
    if inplace_backward:
        # Its backward, with the saved row statistics, is one pass with no
        # reduction: the gradient may go over the logits.
        kernel("cross_entropy").check((logits, labels, *scalars))
        rows = apply(kernel("cross_entropy"), (logits, labels, *scalars),
                     overwritten=(0,))
    else:
        rows = kernel("cross_entropy")(logits, labels, *scalars)
    if reduction == "none":
        return rows
    total = rows.sum()
    if reduction == "sum":
        return total
    return total / (labels != ignore_index).sum()
