"""A tile.Kernel under autograd: apply runs the forward (and, under the
save-row-stats policy, keeps its row statistics) and records the node
whose backward runs the derived `_bwd` function with the forward's inputs
(an input the backward only needs the shape of is not kept: a stand-in),
the incoming gradients and whatever the policy saved; main_grad
accumulators are inputs of the node (the contract in autograd.py)."""

import torch

from ._capi import COTANGENT, FORWARD_RESULT, GRADIENT, INPUT, MAIN_GRAD, \
    SAVED
from .autograd import main_grad_of, mark_main_grads
from .custom_ops import registered, writes_in_place
from .kernel_launch import flat_argument, run, run_forward


def _unread(tensor):
    """What the backward needs of an input it does not read: its shape,
    dtype and device (a tuple on ctx: torch.compile traces plain values)."""
    return ("unread", tuple(tensor.shape), tensor.dtype, tensor.device)


def _stand_in(unread):
    """A tensor for an unread input: one element expanded to its shape (no
    memory of the input's size), whose elements no kernel loads (so left
    uninitialized: no fill kernel per backward)."""
    _, shape, dtype, device = unread
    return torch.empty(1, dtype=dtype, device=device).expand(shape)


class _KernelFunction(torch.autograd.Function):
    """apply(key, count, overwritten, *args, *main_grads): the kernel's
    `count` arguments, then the main_grad accumulators of the arguments
    `kernel.main_grad_arguments` names (inputs of the node, kept on ctx:
    the main_grad contract in autograd.py). The gradients of the arguments
    `overwritten` (indices) are written over them (apply)."""

    @staticmethod
    def forward(ctx, key, count, overwritten, *inputs):
        kernel = registered(key)
        args, main_grads = inputs[:count], inputs[count:]
        outputs, saved = run_forward(kernel, args)
        ctx.key = key
        ctx.overwritten = overwritten
        # An input the backward does not read is not kept (its shape and
        # dtype are), unless its gradient is written over it or it holds a
        # main_grad the backward marks.
        kept = [isinstance(a, torch.Tensor) and (
            i not in kernel.arguments_unread or i in overwritten or
            i in kernel.main_grad_arguments) for i, a in enumerate(args)]
        ctx.kinds = ["t" if keep else
                     _unread(a) if isinstance(a, torch.Tensor) else a
                     for a, keep in zip(args, kept)]
        # The outputs the backward reads are saved as outputs: autograd
        # refuses a backward after an in-place change to one.
        read = [outputs[i] for i in kernel.results_read]
        ctx.save_for_backward(*[a for a, keep in zip(args, kept) if keep],
                              *saved, *read)
        ctx.main_grads = main_grads
        ctx.num_saved = len(saved)
        ctx.num_read = len(read)
        return tuple(outputs)

    @staticmethod
    def backward(ctx, *grads):
        kernel = registered(ctx.key)
        stored = list(ctx.saved_tensors)
        read = stored[len(stored) - ctx.num_read:]
        stored = stored[:len(stored) - ctx.num_read]
        saved = stored[len(stored) - ctx.num_saved:]
        tensors = iter(stored[:len(stored) - ctx.num_saved])
        args = [next(tensors) if k == "t" else
                _stand_in(k) if isinstance(k, tuple) else k
                for k in ctx.kinds]
        accumulators = dict(zip(kernel.main_grad_arguments, ctx.main_grads))
        into = None
        if ctx.overwritten and writes_in_place([*stored, *grads]):
            into = {i: args[i] for i in ctx.overwritten}
        results = dict(zip(kernel.results_read, read))
        gradients = run_backward(kernel, args, grads, saved, into=into,
                                 main_grads=accumulators, results=results)
        for i in into or {}:
            # Anything else that saved the argument sees the write.
            torch.autograd.graph.increment_version(args[i])
        return (None, None, None, *gradients, *[None] * len(ctx.main_grads))


def run_backward(kernel, args, grads, saved, into=None, main_grads=None,
                 results=None):
    """The gradients of `args` (None where there is none) from the
    gradients of the forward's results. `into` maps an argument's index to
    a tensor its gradient is written into (contiguous, of the argument's
    shape and dtype; it may be the argument itself where the kernel is
    elementwise: each element is read before the same thread writes it).
    `main_grads` maps an argument's index to the main_grad its gradient is
    added to (every argument `kernel.main_grad_arguments` names).
    `results` maps the index of each forward result the backward reads
    (`kernel.results_read`) to that result, as the forward returned it."""
    if kernel.backward_function is None:
        raise RuntimeError(f"{kernel.function} has no derived backward")
    info = kernel.functions[kernel.backward_function]
    forward = kernel.forward_info
    outputs = forward.results
    call_args, out, accumulators = [], {}, {}
    for value in info.arguments:
        if value.role == INPUT:
            call_args.append(args[len(call_args)])
        elif value.role == COTANGENT:
            # autograd materializes the gradient of an unused result as
            # zeros; an expanded one (from .sum()) has zero strides.
            grad = grads[value.of].contiguous()
            call_args.append(flat_argument(grad, outputs[value.of],
                                           forward.result_shapes[value.of]))
        elif value.role == SAVED:
            call_args.append(saved[value.of])
        elif value.role == FORWARD_RESULT:
            if not results or value.of not in results:
                raise RuntimeError(
                    f"{kernel.backward_function} reads the forward's result "
                    f"#{value.of}; pass it (results=)")
            call_args.append(flat_argument(results[value.of].contiguous(),
                                           outputs[value.of],
                                           forward.result_shapes[value.of]))
        elif value.role == MAIN_GRAD:
            accumulators[value.of] = main_grads[value.of]
            call_args.append(accumulators[value.of])
    # Gradients written in place: an accumulated one into main_grad, others
    # where the caller asked.
    for index, value in enumerate(info.results):
        if value.role != GRADIENT:
            continue
        if value.of in accumulators:
            out[index] = accumulators[value.of]
        elif into and value.of in into:
            out[index] = flat_argument(into[value.of],
                                       forward.arguments[value.of],
                                       forward.argument_shapes[value.of])
    flat = run(kernel, kernel.backward_function, call_args, out)
    # The main_grad contract (Megatron, TransformerEngine): the gradient is
    # in main_grad, and autograd gets None for it, never a view of it.
    mark_main_grads([args[of] for of in accumulators], in_forward=False)
    gradients = [None] * len(args)
    for tensor, value in zip(flat, info.results):
        if value.role != GRADIENT or value.of in accumulators:
            continue
        arg = args[value.of]
        if isinstance(arg, torch.Tensor) and \
                kernel.forward_info.arguments[value.of].differentiable:
            gradients[value.of] = tensor.view(arg.shape)
    return gradients


def apply(kernel, args, overwritten=()):
    """The kernel's forward on checked `args`, with an autograd node where a
    differentiable argument requires grad. The backward writes the
    gradients of the arguments `overwritten` (indices) over them: only for
    a backward that reads no element after writing it (one pass with no
    reduction: an elementwise kernel, cross-entropy's with its saved row
    statistics), and for arguments nothing reads after it."""
    differentiable = [a for a, info in zip(args,
                                           kernel.forward_info.arguments)
                      if isinstance(a, torch.Tensor) and info.differentiable]
    if torch.is_grad_enabled() and any(a.requires_grad
                                       for a in differentiable):
        indices = kernel.main_grad_arguments
        main_grads = [main_grad_of(args[i], kernel.describe(i))
                      for i in indices]
        mark_main_grads([args[i] for i in indices], in_forward=True)
        outputs = _KernelFunction.apply(kernel.key, len(args),
                                        tuple(overwritten), *args,
                                        *main_grads)
    else:
        outputs, _ = run_forward(kernel, args)
    return outputs[0] if len(outputs) == 1 else tuple(outputs)
