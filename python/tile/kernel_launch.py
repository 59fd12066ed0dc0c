"""Running one compiled function of a tile.Kernel: the arguments flattened
to rows, the library called eagerly (a CUDA launch on the tensors' stream,
or the float64 evaluator for CPU tensors) or, while torch.compile traces,
through the op tile::launch (custom_ops), whose fake body infers the
result shapes from the function's shape expressions; the results shaped
back. Kernels are registered by key so that the op (strings and tensors
only) finds the one a traced call belongs to."""

import torch

from . import _capi, _capi_functions, shape_expressions
from ._capi import FLOAT, INT, OUTPUT, SAVED, TileError
from .autograd import INTEGER_DTYPES, TILE_DTYPES, TORCH_DTYPES, stream_of
from .custom_ops import define_op, registered


def flat_argument(arg, info, shape):
    """The tensor as the kernels see it: leading dimensions as rows, and a
    per-row vector (its shape expressions `shape` lead with the rows:
    integer data, a label per row; the cotangent of a per-row result, which
    the forward shaped [...]) as one value per row. Any other vector is
    passed as it is (the library refuses one that is not 1-D)."""
    if info.rank == 2:
        return arg.reshape(-1, arg.shape[-1]) if arg.dim() != 2 else arg
    if arg.dim() != 1 and shape_expressions.is_per_row(shape):
        return arg.reshape(-1)
    return arg


def flatten(call, args):
    """`args` as `call`'s function takes them: tensors flattened to rows."""
    if len(args) != len(call.info.arguments):
        raise TileError(f"{call.info.name} takes "
                        f"{len(call.info.arguments)} arguments, "
                        f"{len(args)} given")
    return [flat_argument(a, info, shape) if isinstance(a, torch.Tensor)
            else a for a, info, shape in zip(args, call.info.arguments,
                                             call.info.argument_shapes)]


def _is_exact(flats):
    """A call with a float64 tensor is evaluated exactly, in float64 (an
    fp32 main_grad beside it is only an accumulator)."""
    return any(isinstance(f, torch.Tensor) and f.dtype == torch.float64
               for f in flats)


def _is_integer(arg, info):
    """Whether a number argument is passed as an integer (an `arg<i>` of
    the launch rules), not as an f32."""
    return info.dtype in INTEGER_DTYPES or isinstance(arg, bool)


def _arguments(call, args, flats, with_data=True, host=False,
               shape_of=lambda flat: tuple(flat.shape)):
    """The C layer's Arguments of a call: tensors (their flattened shapes,
    or what `shape_of` makes of them) and numbers. Without data (inferring
    shapes) tensors may be fake; on the host (evaluating) every tensor
    holds float64."""
    described = []
    for arg, flat, info in zip(args, flats, call.info.arguments):
        if isinstance(arg, torch.Tensor):
            # Shapes of an exact (float64) call are those of the kernel's
            # own types.
            dtype = _capi.F64 if host else (
                info.dtype if flat.dtype == torch.float64
                else TILE_DTYPES[flat.dtype])
            described.append(_capi.TensorArg(
                flat.data_ptr() if with_data else 0, shape_of(flat), dtype))
        elif _is_integer(arg, info):
            described.append((INT, arg))
        else:
            described.append((FLOAT, arg))
    return _capi_functions.Arguments(described)


def infer(call, args, flats, shape_of=lambda flat: tuple(flat.shape)):
    """[(flat shape, torch dtype)] of the results, and workspace bytes
    (launches keep them in their _Record; the host and tracing ask anew).
    `shape_of`: the shape the C layer is told for each flat tensor."""
    shapes, workspace = _capi_functions.infer(
        call.info, _arguments(call, args, flats, with_data=False,
                              shape_of=shape_of))
    exact = _is_exact(flats)
    return [(shape, torch.float64 if exact else TORCH_DTYPES[info.dtype])
            for shape, info in zip(shapes, call.info.results)], workspace


def _hinted(flat):
    """A traced tensor's flattened shape with each symbolic size at the value
    it was traced with (no guard added), for the shape rules' checks."""
    return tuple(d.node.hint if isinstance(d, torch.SymInt) and
                 d.node.hint is not None else d for d in flat.shape)


def _traced_shapes(call, args, flats):
    """infer's result shapes for a traced call (torch.compile) whose sizes
    may be symbolic: each result's shape expressions (FunctionInfo.
    result_shapes) evaluated with the arguments' sizes, the rows kept
    symbolic so that a new sequence length reuses the graph, every width
    read (so guarded: the kernels are specialized for widths). The shape
    rules are checked on the traced sizes, with their messages."""
    results = infer(call, args, flats, _hinted)[0]
    integers = {i for i, (arg, info) in enumerate(zip(args,
                                                      call.info.arguments))
                if not isinstance(arg, torch.Tensor) and _is_integer(arg, info)}
    symbols = shape_expressions.bind(call.info.argument_shapes, flats,
                                     integers)
    return [(shape_expressions.shape(texts, symbols), dtype)
            for texts, (_, dtype) in zip(call.info.result_shapes, results)]


class _Record:
    """What every call of one function on one set of shapes shares: the
    results' shapes and dtypes, the workspace size, and the C layer's
    Launch of those shapes."""

    def __init__(self, call, args, flats):
        self.results, self.workspace_bytes = infer(call, args, flats)
        self.launch = _capi_functions.Launch(
            call.info, _arguments(call, args, flats, with_data=False),
            [_capi.TensorArg(0, shape, TILE_DTYPES[dtype])
             for shape, dtype in self.results])


def _record(call, args, flats):
    signature = tuple(f.shape if isinstance(f, torch.Tensor) else
                      (f if isinstance(f, int) else None) for f in flats)
    record = call.records.get(signature)
    if record is None:
        record = call.records[signature] = _Record(call, args, flats)
    return record


def launch(call, args, device, out=None):
    """Runs `call` on `args` (tensors, already checked, and numbers) and
    returns its results, flattened. `out` gives preallocated results by
    index (main_grad accumulators)."""
    flats = flatten(call, args)
    if device.type == "cpu":
        infer(call, args, flats)  # the GPU's shape rules and messages
        results = _evaluate(call, args, flats)
        for index, given in (out or {}).items():
            given.copy_(results[index].view(given.shape))
            results[index] = given
        return results
    record = _record(call, args, flats)
    outputs = []
    for index, (shape, dtype) in enumerate(record.results):
        given = out.get(index) if out else None
        outputs.append(given if given is not None else
                       torch.empty(shape, dtype=dtype, device=device))
    workspace = (torch.empty(record.workspace_bytes, dtype=torch.uint8,
                             device=device) if record.workspace_bytes else None)
    record.launch(
        device.index, stream_of(device),
        [flats[i].data_ptr() for i in record.launch.tensor_slots],
        [args[i] for i in record.launch.float_slots],
        [output.data_ptr() for output in outputs],
        workspace.data_ptr() if workspace is not None else None,
        record.workspace_bytes)
    return outputs


def _evaluate(call, args, flats):
    """The reference evaluator: float64 on the host, results in the dtype
    the kernel gives them (float64 where the inputs were)."""
    exact = _is_exact(flats)
    host = [f.detach().to(torch.float64).contiguous()
            if isinstance(f, torch.Tensor) else f for f in flats]
    arguments = _arguments(call, args, host, host=True)
    outputs = []
    for (shape, data), info in zip(_capi_functions.evaluate(call.info, arguments,
                                                   exact),
                                   call.info.results):
        result = torch.frombuffer(bytearray(data), dtype=torch.float64) \
            if data else torch.empty(0, dtype=torch.float64)
        outputs.append(result.view(shape).to(
            torch.float64 if exact else TORCH_DTYPES[info.dtype]))
    return outputs


# -- autograd and torch.compile ---------------------------------------------

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


def _launch_body(key: str, function: str, kinds: str,
                 tensors: list[torch.Tensor], floats: list[float],
                 ints: list[int]) -> list[torch.Tensor]:
    args = _unpack(kinds, tensors, floats, ints)
    call, device = _resolve(registered(key), function, args)
    return launch(call, args, device)


def _launch_fake(key, function, kinds, tensors, floats, ints):
    args = _unpack(kinds, tensors, floats, ints)
    kernel = registered(key)
    device = tensors[0].device
    # The shapes do not depend on the chip: the host module says them.
    call = kernel.call_for(function, torch.device("cpu"),
                           kernel.dtype_of(args), ())
    results = _traced_shapes(call, args, flatten(call, args))
    return [torch.empty(shape, dtype=dtype, device=device)
            for shape, dtype in results]


def _launch_eager(kernel, function, args, out=None):
    # Errors name the argument, whether the host module's check before a
    # first compile for a GPU raised them or the launch.
    try:
        call, device = _resolve(kernel, function, args)
        return launch(call, args, device, out)
    except TileError as error:
        raise TileError(kernel.name_in(str(error))) from None


def _launch_pack(kernel, function, args):
    return (kernel.key, function, *_pack(args))


# Traced, the launch stays functional and the results asked for in place
# (a main_grad: the kernel read it as an argument and returned it with the
# gradient added) are copied there (Op's `out`).
_launch_op = define_op("launch", _launch_eager, _launch_fake,
                       body=_launch_body, pack=_launch_pack)


def run(kernel, function, args, out=None):
    """Runs `function` of `kernel` on `args`; the results flattened. `out`
    maps a result's index to the tensor it is written into."""
    return _launch_op(kernel, function, args, out=out)


def _leading(args, infos):
    """The leading shape the rows of the call came from."""
    for a, info in zip(args, infos):
        if isinstance(a, torch.Tensor) and info.is_tensor and info.rank == 2:
            return tuple(a.shape[:-1])
    return None


def _shape_results(flat, per_row, leading):
    """Results as the caller sees them: a result whose flattened shape leads
    with the rows (`per_row`, from its shape expressions) gets the leading
    shape back; any other keeps its own (a [width] sum over the rows, even
    where the width equals the rows)."""
    if leading is None:
        return list(flat)
    return [tensor.view(*leading, *tensor.shape[1:]) if rows else tensor
            for tensor, rows in zip(flat, per_row)]


def run_forward(kernel, args):
    """(outputs as the caller sees them, the row statistics the policy
    saves for the backward)."""
    infos = kernel.forward_info.arguments
    leading = _leading(args, infos)
    if kernel.policy == "save-row-stats" and kernel.saving_function:
        flat = run(kernel, kernel.saving_function, args)
        info = kernel.functions[kernel.saving_function]
        outputs = [t for t, r in zip(flat, info.results) if r.role == OUTPUT]
        saved = [t for t, r in zip(flat, info.results) if r.role == SAVED]
    else:
        outputs, saved = run(kernel, kernel.function, args), []
    return _shape_results(outputs, kernel.outputs_per_row, leading), saved
