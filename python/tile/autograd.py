"""Autograd and torch.compile for tile.Kernel.

The forward runs the kernel (or, under the save-row-stats policy, its
`_fwd` variant that also returns row statistics); the backward runs the
derived `_bwd` function with the forward's inputs, the incoming gradients
and whatever the policy saved. In eager mode both call the library
directly; while torch.compile traces they go through the custom op
`tile::launch` (with a fake implementation that infers the result shapes),
so a compiled model holds each kernel as one opaque node, without graph
breaks.
"""

import math

import torch

from . import kernel as _kernel  # noqa: F401  (circular: used at call time)
from ._capi import COTANGENT, GRADIENT, INPUT, MAIN_GRAD, OUTPUT, SAVED


_PLAIN = (torch.Tensor, torch.nn.Parameter)


def _tracing(tensors):
    """Whether the call is being traced (torch.compile, fake or functional
    tensors): then it goes through the custom op."""
    if torch.compiler.is_compiling():
        return True
    for t in tensors:
        if type(t) not in _PLAIN and (
                isinstance(t, torch._subclasses.FakeTensor) or
                torch._is_functional_tensor(t)):
            return True
    return False


def _pack(args):
    kinds, tensors, floats, ints = [], [], [], []
    for a in args:
        if isinstance(a, torch.Tensor):
            kinds.append("t")
            tensors.append(a)
        elif isinstance(a, int) and not isinstance(a, bool):
            kinds.append("i")
            ints.append(a)
        else:
            kinds.append("f")
            floats.append(float(a))
    return "".join(kinds), tensors, floats, ints


def _unpack(kinds, tensors, floats, ints):
    t, f, i = iter(tensors), iter(floats), iter(ints)
    return [next(t) if k == "t" else next(f) if k == "f" else next(i)
            for k in kinds]


def _resolve(kernel, function, args):
    """The compiled function for the call, and its device."""
    device = next(a.device for a in args if isinstance(a, torch.Tensor))
    call = kernel.call_for(function, device, kernel.dtype_of(args),
                           kernel.widths_of(args), args)
    return call, device


@torch.library.custom_op("tile::launch", mutates_args=())
def _launch_op(key: str, function: str, kinds: str,
               tensors: list[torch.Tensor], floats: list[float],
               ints: list[int]) -> list[torch.Tensor]:
    args = _unpack(kinds, tensors, floats, ints)
    call, device = _resolve(_kernel._REGISTRY[key], function, args)
    return _kernel.launch(call, args, device)


@_launch_op.register_fake
def _launch_fake(key, function, kinds, tensors, floats, ints):
    args = _unpack(kinds, tensors, floats, ints)
    kernel = _kernel._REGISTRY[key]
    device = tensors[0].device
    # The shapes do not depend on the chip: the host module says them.
    call = kernel.call_for(function, torch.device("cpu"),
                           kernel.dtype_of(args), ())
    flats = [_kernel._flat(a, info.rank) if isinstance(a, torch.Tensor)
             else a for a, info in zip(args, call.info.arguments)]
    results, _ = _kernel.infer(call, args, flats)
    return [torch.empty(shape, dtype=dtype, device=device)
            for shape, dtype in results]


def _run(kernel, function, args, out=None):
    """Runs `function` of `kernel` on `args`; the results flattened."""
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    if _tracing(tensors):
        kinds, tensors, floats, ints = _pack(args)
        flat = list(_launch_op(kernel.key, function, kinds, tensors, floats,
                               ints))
        # Traced, the launch stays functional and the results asked for in
        # place are copied there: torch.compile records the copy as a
        # mutation of the graph's input (a main_grad: the kernel read it as
        # an argument and returned it with the gradient added, a tensor of
        # the weight's [N] only) and may fuse or elide it.
        for index, given in (out or {}).items():
            flat[index] = given.copy_(flat[index].view(given.shape))
        return flat
    call, device = _resolve(kernel, function, args)
    try:
        return _kernel.launch(call, args, device, out)
    except _kernel.TileError as error:
        raise _kernel.TileError(kernel._name_in(str(error))) from None


def _leading(args, infos):
    """The leading shape the rows of the call came from."""
    for a, info in zip(args, infos):
        if isinstance(a, torch.Tensor) and info.is_tensor and info.rank == 2:
            return tuple(a.shape[:-1])
    return None


def _shape_results(flat, infos, leading):
    """Results as the caller sees them: rows back to the leading shape."""
    shaped = []
    for tensor, info in zip(flat, infos):
        if leading is not None and info.rank == 2 and tensor.dim() == 2:
            tensor = tensor.view(*leading, tensor.shape[-1])
        elif leading is not None and info.rank == 1 and len(leading) > 1 \
                and tensor.shape[0] == math.prod(leading):
            tensor = tensor.view(*leading)
        shaped.append(tensor)
    return shaped



def _forward(kernel, args):
    """(outputs as shaped, saved row statistics, flat)."""
    infos = kernel.forward_info.arguments
    leading = _leading(args, infos)
    if kernel.policy == "save-row-stats" and kernel.saving_function:
        flat = _run(kernel, kernel.saving_function, args)
        info = kernel._host.functions[kernel.saving_function]
        outputs = [t for t, r in zip(flat, info.results) if r.role == OUTPUT]
        saved = [t for t, r in zip(flat, info.results) if r.role == SAVED]
    else:
        outputs, saved = _run(kernel, kernel.function, args), []
    results = kernel.forward_info.results
    return _shape_results(outputs, results, leading), saved


class _KernelFunction(torch.autograd.Function):
    """apply(key, count, *args, *main_grads): the kernel's `count`
    arguments, then the main_grad accumulators of the arguments
    `kernel.main_grad_arguments` names. The accumulators are inputs of the node
    (not looked up on the parameters in the backward) so that a traced
    backward (torch.compile) sees them as the graph inputs they are; they
    are kept on ctx, not saved: other gradients are added to them (or to
    the buffer they are views of, as in Megatron) before this backward,
    which autograd's saved-tensor version check would refuse."""

    @staticmethod
    def forward(ctx, key, count, *inputs):
        kernel = _kernel._REGISTRY[key]
        args, main_grads = inputs[:count], inputs[count:]
        outputs, saved = _forward(kernel, args)
        ctx.key = key
        ctx.kinds = ["t" if isinstance(a, torch.Tensor) else a for a in args]
        ctx.save_for_backward(*[a for a in args
                                if isinstance(a, torch.Tensor)], *saved)
        ctx.main_grads = main_grads
        ctx.num_saved = len(saved)
        return tuple(outputs)

    @staticmethod
    def backward(ctx, *grads):
        kernel = _kernel._REGISTRY[ctx.key]
        stored = list(ctx.saved_tensors)
        saved = stored[len(stored) - ctx.num_saved:]
        tensors = iter(stored[:len(stored) - ctx.num_saved])
        args = [next(tensors) if k == "t" else k for k in ctx.kinds]
        accumulators = dict(zip(kernel.main_grad_arguments, ctx.main_grads))
        return (None, None,
                *backward(kernel, args, grads, saved,
                          main_grads=accumulators),
                *[None] * len(ctx.main_grads))


def mark_main_grads(params, in_forward):
    """Sets ``grad_added_to_main_grad`` on `params` (the main_grad contract)
    where it reaches the real parameters. Callers call it from the forward
    (`in_forward`) and from the backward; it acts in one of them: eagerly,
    in the backward that adds the gradients; under torch.compile, in the
    forward, since a traced backward runs ahead of time on stand-ins and
    could set nothing (the compiled forward replays the assignment)."""
    if in_forward == _tracing(list(params)):
        for p in params:
            p.grad_added_to_main_grad = True


def backward(kernel, args, grads, saved, into=None, main_grads=None):
    """The gradients of `args` (None where there is none) from the
    gradients of the forward's results. `into` maps an argument's index to
    a tensor its gradient is written into (contiguous, of the argument's
    shape and dtype; it may be the argument itself where the kernel is
    elementwise: each element is read before the same thread writes it).
    `main_grads` maps an argument's index to the main_grad its gradient is
    added to (every argument `kernel.main_grad_arguments` names)."""
    if kernel.backward_function is None:
        raise RuntimeError(f"{kernel.function} has no derived backward")
    info = kernel._host.functions[kernel.backward_function]
    outputs = kernel.forward_info.results
    call_args, out, accumulators = [], {}, {}
    for value in info.arguments:
        if value.role == INPUT:
            call_args.append(args[len(call_args)])
        elif value.role == COTANGENT:
            # autograd materializes the gradient of an unused result as
            # zeros; an expanded one (from .sum()) has zero strides.
            grad = grads[value.of].contiguous()
            call_args.append(_kernel._flat(grad, outputs[value.of].rank))
        elif value.role == SAVED:
            call_args.append(saved[value.of])
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
            out[index] = _kernel._flat(
                into[value.of], kernel.forward_info.arguments[value.of].rank)
    flat = _run(kernel, kernel.backward_function, call_args, out)
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


def apply(kernel, args):
    differentiable = [a for a, info in zip(args,
                                           kernel.forward_info.arguments)
                      if isinstance(a, torch.Tensor) and info.differentiable]
    if torch.is_grad_enabled() and any(a.requires_grad
                                       for a in differentiable):
        indices = kernel.main_grad_arguments
        main_grads = [main_grad_of(args[i], kernel.describe(i))
                      for i in indices]
        mark_main_grads([args[i] for i in indices], in_forward=True)
        outputs = _KernelFunction.apply(kernel.key, len(args), *args,
                                        *main_grads)
    else:
        outputs, _ = _forward(kernel, args)
    return outputs[0] if len(outputs) == 1 else tuple(outputs)
