"""tile.Kernel: a tile kernel as a differentiable PyTorch function.

A Kernel holds the source; each call picks (and caches) a compiled module
for the call's device, dtype and widths, runs the forward, and under
autograd the backward tile-differentiate derived. CUDA tensors run the PTX
on the tensors' device and current stream with workspaces from torch's
allocator; CPU tensors run the float64 reference evaluator (float64 inputs
exactly, lower precisions rounded where the GPU rounds).

The forward runs the kernel (or, under the save-row-stats policy, its
`_fwd` variant that also returns row statistics); the backward runs the
derived `_bwd` function with the forward's inputs, the incoming gradients
and whatever the policy saved. In eager mode both call the library
directly; while torch.compile traces they go through the custom op
`tile::launch` (with a fake implementation that infers the result shapes),
so a compiled model holds each kernel as one opaque node, without graph
breaks.
"""

import hashlib
import math
import re
import threading
from pathlib import Path

import torch

from . import _capi
from ._capi import (COTANGENT, FLOAT, FORWARD_RESULT, GRADIENT, INPUT, INT,
                    MAIN_GRAD, OUTPUT, SAVED, TileError)
from .autograd import (GPU_DTYPE_NAMES, INTEGER_DTYPES, TILE_DTYPES,
                       TORCH_DTYPES,
                       main_grad_of, mark_main_grads, stream_of, tracing)

# Kernels by key, so that the custom op (which takes strings and tensors)
# finds the kernel a traced call belongs to.
_REGISTRY = {}
_targets = {}


def registered(key):
    """The Kernel whose key is `key` (a custom op's way to name one)."""
    return _REGISTRY[key]


def _target(device):
    """(chip, description) of a CUDA device: what its kernels compile for."""
    if device.index not in _targets:
        _targets[device.index] = (_capi.device_chip(device.index),
                                  _capi.device_description(device.index))
    return _targets[device.index]


def _argument_names(source, function):
    """The SSA names the source gives `function`'s arguments (for messages);
    the printed IR forgets them."""
    match = re.search(r"func\.func\s+@" + re.escape(function) + r"\s*\(([^)]*)\)",
                      source)
    if not match:
        return {}
    return {i: name for i, name in
            enumerate(re.findall(r"%([A-Za-z0-9_$.-]+)\s*:", match.group(1)))}


class _Call:
    """One function's calling convention in one compiled module, with the
    launch records of the shapes seen so far."""

    def __init__(self, module, info):
        self.module = module
        self.info = info
        self.records = {}


class Kernel:
    """A tile kernel callable on torch tensors, forward and derived backward.

    ``source_or_path``: the kernel's MLIR text, or a path to it.
    ``function``: which ``tile.kernel`` function to call (default: the only
    forward one). ``policy``: what the backward keeps from the forward,
    ``"recompute"`` (nothing: it recomputes from the inputs) or
    ``"save-row-stats"`` (the forward also returns row statistics, saved
    for the backward). ``main_grad``: the gradients of arguments reduced
    across rows (a norm's weight) are added in fp32 to the argument's
    ``.main_grad`` tensor instead of being returned.

    Calling it checks every argument (a tensor, on one device, contiguous,
    of a supported dtype) and raises TypeError, ValueError or TileError
    naming the argument before anything runs.
    """

    def __init__(self, source_or_path, function=None, *, policy="recompute",
                 main_grad=False, cache_dir=None):
        source, name = self._read(source_or_path)
        self.source = source
        self.source_name = name
        self.policy = policy
        self.main_grad = bool(main_grad)
        self.cache_dir = cache_dir
        if policy not in ("recompute", "save-row-stats"):
            raise ValueError(f"unknown policy {policy!r}: expected "
                             "'recompute' or 'save-row-stats'")
        # Compiling for the host verifies and derives the source now: a
        # kernel that does not verify fails here, with its location.
        # The host module owns the functions' handles: kept with the kernel.
        self._host = _capi.Module(source, policy=policy, main_grad=main_grad,
                                  source_name=name, cache_dir=cache_dir)
        # Every function of the source, forward and derived, by name.
        self.functions = self._host.functions
        forwards = [f for f in self.functions.values()
                    if f.backward_of is None and f.forward_of is None]
        if function is None:
            if len(forwards) != 1:
                raise ValueError(
                    f"{name} has {len(forwards)} kernels "
                    f"({', '.join(f.name for f in forwards)}): "
                    "say which with function=")
            function = forwards[0].name
        if function not in {f.name for f in forwards}:
            raise ValueError(f"{name} has no kernel {function!r} (it has "
                             f"{', '.join(f.name for f in forwards)})")
        self.function = function
        self.forward_info = self.functions[function]
        self.names = _argument_names(source, function)
        backward = [f for f in self.functions.values()
                    if f.backward_of == function]
        self.backward_function = backward[0].name if backward else None
        # The arguments whose gradient the backward adds to a main_grad
        # (looked up once: every call with autograd needs them).
        self.main_grad_arguments = [] if not (main_grad and backward) else [
            value.of for value in backward[0].arguments
            if value.role == MAIN_GRAD]
        # The forward results the backward reads (instead of recomputing
        # them from inputs it then need not read): autograd keeps them.
        self.results_read = [] if not backward else [
            value.of for value in backward[0].arguments
            if value.role == FORWARD_RESULT]
        # The tensor arguments the backward never reads the elements of
        # (softmax's x: it reads its output y): autograd keeps no tensor for
        # them, and the backward gets a stand-in of their shape (_stand_in).
        self.arguments_unread = set() if not backward else {
            index for index, value in enumerate(backward[0].arguments)
            if value.role == INPUT and value.is_tensor and
            not value.reads_data}
        saving = [f for f in self.functions.values()
                  if f.forward_of == function]
        self.saving_function = saving[0].name if saving else None
        self._modules = {}
        self._lock = threading.Lock()
        self.key = hashlib.sha256(
            "\0".join([source, function, policy, str(self.main_grad),
                       str(cache_dir)]).encode()).hexdigest()[:24]
        _REGISTRY[self.key] = self

    @staticmethod
    def _read(source_or_path):
        if isinstance(source_or_path, Path) or (
                isinstance(source_or_path, str) and "func.func" not in
                source_or_path and Path(source_or_path).is_file()):
            path = Path(source_or_path)
            return path.read_text(), str(path)
        if not isinstance(source_or_path, str):
            raise TypeError("Kernel takes the kernel's source text or a path, "
                            f"got {type(source_or_path).__name__}")
        return source_or_path, "kernel"

    def __repr__(self):
        return f"tile.Kernel({self.function}, policy={self.policy!r})"

    # -- naming --------------------------------------------------------------

    def describe(self, index):
        name = self.names.get(index)
        return (f"argument #{index} ({name}) of {self.function}" if name
                else f"argument #{index} of {self.function}")

    def name_in(self, message):
        """The library's message with argument names added."""
        def named(match):
            index = int(match.group(1))
            name = self.names.get(index)
            return match.group(0) + (f" ({name})" if name else "")
        return re.sub(r"argument #(\d+)", named, message)

    # -- checking ------------------------------------------------------------

    def check(self, args):
        """Checks the forward's arguments (raises naming the argument)."""
        expected = self.forward_info.arguments
        if len(args) != len(expected):
            raise TypeError(f"{self.function} takes {len(expected)} "
                            f"arguments, {len(args)} given")
        device = None
        for index, (arg, info) in enumerate(zip(args, expected)):
            what = self.describe(index)
            if not info.is_tensor:
                if isinstance(arg, torch.Tensor) or not isinstance(
                        arg, (int, float)):
                    raise TypeError(f"{what} must be a Python number, got "
                                    f"{type(arg).__name__}")
                continue
            if not isinstance(arg, torch.Tensor):
                raise TypeError(f"{what} must be a tensor, got "
                                f"{type(arg).__name__}")
            integer = info.dtype in INTEGER_DTYPES
            if integer and arg.dtype != TORCH_DTYPES[info.dtype]:
                raise TypeError(
                    f"{what} has dtype {arg.dtype}; the kernel reads it as "
                    f"{TORCH_DTYPES[info.dtype]} integer data (labels): "
                    f"convert it with .to({TORCH_DTYPES[info.dtype]})")
            if not integer and (arg.dtype not in TILE_DTYPES or
                                arg.dtype in (torch.int64, torch.int32)):
                raise TypeError(f"{what} has dtype {arg.dtype}; Tile takes "
                                "bfloat16, float16, float32 (and float64 on "
                                "the CPU)")
            if arg.device.type not in ("cpu", "cuda", "meta"):
                raise ValueError(f"{what} is on {arg.device}; Tile runs on "
                                 "CUDA devices and on the CPU")
            if device is None:
                device = arg.device
            elif arg.device != device:
                raise ValueError(f"{what} is on {arg.device}, but the "
                                 f"arguments before it are on {device}")
            if not arg.is_contiguous():
                raise ValueError(f"{what} is not contiguous (strides "
                                 f"{tuple(arg.stride())}); call .contiguous()")
            if info.rank == 2 and arg.dim() == 0:
                raise ValueError(f"{what} must have at least one dimension "
                                 "[..., width], got a 0-d tensor")
            if info.rank == 1 and arg.dim() != 1 and not integer:
                raise ValueError(f"{what} must be 1-D [width], got shape "
                                 f"{list(arg.shape)}")
            if arg.dtype == torch.float64 and device.type == "cuda":
                raise TypeError(f"{what} is float64: on the GPU Tile takes "
                                "bfloat16, float16 or float32")
        if device is None:
            raise ValueError(f"{self.function} has no tensor argument to say "
                             "where it runs")
        return device

    def dtype_of(self, args):
        """The storage dtype of the call: the first tensor argument's whose
        source type is bf16/f16 (what one source specializes)."""
        for arg, info in zip(args, self.forward_info.arguments):
            if info.is_tensor and info.dtype in (_capi.BF16, _capi.F16):
                return arg.dtype
        return None

    # -- compiling -----------------------------------------------------------

    def call_for(self, function, device, dtype, widths, args=None):
        """The compiled `function` for a device, storage dtype and widths.
        Before compiling for a GPU, `args` are checked on the host module:
        kernels specialized for widths that do not fit together would
        otherwise fail to compile instead of naming the rule."""
        if device.type == "cuda":
            chip, description = _target(device)
        else:  # the host: no PTX, nothing specialized but the dtype
            chip, description, widths = None, None, ()
        # float64 (the CPU's exact mode) keeps the source's types.
        name = GPU_DTYPE_NAMES.get(dtype)
        key = (chip, description, name, widths)
        if chip and args is not None and key not in self._modules:
            host = self.call_for(function, torch.device("cpu"), dtype, ())
            infer(host, args, flatten(host, args))
        with self._lock:
            module = self._modules.get(key)
            if module is None:
                module = _capi.Module(
                    self.source, chip=chip, dtype=name, policy=self.policy,
                    main_grad=self.main_grad,
                    widths=widths if chip else (),
                    source_name=self.source_name, cache_dir=self.cache_dir,
                    device=description)
                module.calls = {}
                self._check_reads(module)
                self._modules[key] = module
            call = module.calls.get(function)
            if call is None:
                call = module.calls[function] = _Call(
                    module, module.functions[function])
        return call

    def _check_reads(self, module):
        """Keeps, from now on, every input a newly compiled module's
        backward reads: autograd keeps none of arguments_unread, so a
        specialized backward that read one would read a stand-in. (None
        does: the host module's backward and every specialization read the
        same inputs. A forward already run on another module keeps what
        that module's backward reads, which is all it will read.)"""
        if self.backward_function is None:
            return
        values = module.functions[self.backward_function].arguments
        self.arguments_unread = {index for index in self.arguments_unread
                                 if not values[index].reads_data}

    def widths_of(self, args):
        """The last dimension of every float tensor argument of the forward
        (the kernels are specialized for them, as tile::ops specializes).
        Integer data is per row (a label per row): its length is the row
        count, which no kernel is specialized for."""
        return tuple(arg.shape[-1] if isinstance(arg, torch.Tensor) and
                     info.is_tensor and info.dtype not in INTEGER_DTYPES
                     else 0
                     for arg, info in zip(args, self.forward_info.arguments))

    # -- calling -------------------------------------------------------------

    def __call__(self, *args):
        self.check(args)
        return apply(self, args)



# -- running one compiled function ------------------------------------------

def _flat(arg, info):
    """The tensor as the kernels see it: leading dimensions as rows, and a
    per-row vector (integer data, a label per row; the cotangent of a
    per-row result, which the forward shaped [...]) as one value per row."""
    if info.rank == 2:
        return arg.reshape(-1, arg.shape[-1]) if arg.dim() != 2 else arg
    if info.rank == 1 and arg.dim() != 1:
        return arg.reshape(-1)
    return arg


def flatten(call, args):
    """`args` as `call`'s function takes them: tensors flattened to rows."""
    if len(args) != len(call.info.arguments):
        raise TileError(f"{call.info.name} takes "
                        f"{len(call.info.arguments)} arguments, "
                        f"{len(args)} given")
    return [_flat(a, info) if isinstance(a, torch.Tensor) else a
            for a, info in zip(args, call.info.arguments)]


def _is_exact(flats):
    """A call with a float64 tensor is evaluated exactly, in float64 (an
    fp32 main_grad beside it is only an accumulator)."""
    return any(isinstance(f, torch.Tensor) and f.dtype == torch.float64
               for f in flats)


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
        elif info.dtype in INTEGER_DTYPES or isinstance(arg, bool):
            described.append((INT, arg))
        else:
            described.append((FLOAT, arg))
    return _capi.Arguments(described)


def infer(call, args, flats, shape_of=lambda flat: tuple(flat.shape)):
    """[(flat shape, torch dtype)] of the results, and workspace bytes
    (launches keep them in their _Record; the host and tracing ask anew).
    `shape_of`: the shape the C layer is told for each flat tensor."""
    shapes, workspace = _capi.infer(
        call.info, _arguments(call, args, flats, with_data=False,
                              shape_of=shape_of))
    exact = _is_exact(flats)
    return [(shape, torch.float64 if exact else TORCH_DTYPES[info.dtype])
            for shape, info in zip(shapes, call.info.results)], workspace


# Two row counts no width equals both of: a traced call's shapes are
# inferred for each, and a result dimension that follows them is the row
# count (_traced_shapes).
_ROW_PROBES = (1009, 1013)


def _traced_shapes(call, args, flats):
    """infer's result shapes for a traced call (torch.compile) whose row
    count is symbolic: the rows stay symbolic, so a new sequence length
    reuses the graph; every other dimension (a width, which the kernels
    are specialized for) is read, and so guarded. The C layer sees
    concrete shapes only: it is asked twice, with the rows at each of
    _ROW_PROBES, and a result dimension equal to the probe both times is
    the rows. A call whose rows are not one symbol, or that the probes do
    not explain, is inferred on its concrete sizes (specialized)."""
    rows = next((flat.shape[0] for flat, info in zip(flats, call.info.arguments)
                 if isinstance(flat, torch.Tensor) and info.rank == 2), None)
    if not isinstance(rows, torch.SymInt):
        return infer(call, args, flats)[0]
    expr = rows.node.expr

    def probed(probe):
        def shape_of(flat):
            return tuple(probe if isinstance(d, torch.SymInt) and
                         d.node.expr == expr else int(d) for d in flat.shape)
        return infer(call, args, flats, shape_of)[0]
    try:
        first, second = (probed(probe) for probe in _ROW_PROBES)
    except TileError:
        return infer(call, args, flats)[0]
    results = []
    for (a, dtype), (b, _) in zip(first, second):
        if len(a) != len(b) or any(x != y and (x, y) != _ROW_PROBES
                                   for x, y in zip(a, b)):
            return infer(call, args, flats)[0]
        results.append((tuple(x if x == y else rows for x, y in zip(a, b)),
                        dtype))
    return results


class _Record:
    """What every call of one function on one set of shapes shares: the
    results' shapes and dtypes, the workspace size, and the C layer's
    Launch of those shapes."""

    def __init__(self, call, args, flats):
        self.results, self.workspace_bytes = infer(call, args, flats)
        self.launch = _capi.Launch(
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
    for (shape, data), info in zip(_capi.evaluate(call.info, arguments,
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


@torch.library.custom_op("tile::launch", mutates_args=())
def _launch_op(key: str, function: str, kinds: str,
               tensors: list[torch.Tensor], floats: list[float],
               ints: list[int]) -> list[torch.Tensor]:
    args = _unpack(kinds, tensors, floats, ints)
    call, device = _resolve(_REGISTRY[key], function, args)
    return launch(call, args, device)


@_launch_op.register_fake
def _launch_fake(key, function, kinds, tensors, floats, ints):
    args = _unpack(kinds, tensors, floats, ints)
    kernel = _REGISTRY[key]
    device = tensors[0].device
    # The shapes do not depend on the chip: the host module says them.
    call = kernel.call_for(function, torch.device("cpu"),
                           kernel.dtype_of(args), ())
    results = _traced_shapes(call, args, flatten(call, args))
    return [torch.empty(shape, dtype=dtype, device=device)
            for shape, dtype in results]


def _run(kernel, function, args, out=None):
    """Runs `function` of `kernel` on `args`; the results flattened."""
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    if tracing(tensors):
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
    # Errors name the argument, whether the host module's check before a
    # first compile for a GPU raised them or the launch.
    try:
        call, device = _resolve(kernel, function, args)
        return launch(call, args, device, out)
    except TileError as error:
        raise TileError(kernel.name_in(str(error))) from None


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


def run_forward(kernel, args):
    """(outputs as the caller sees them, the row statistics the policy
    saves for the backward)."""
    infos = kernel.forward_info.arguments
    leading = _leading(args, infos)
    if kernel.policy == "save-row-stats" and kernel.saving_function:
        flat = _run(kernel, kernel.saving_function, args)
        info = kernel.functions[kernel.saving_function]
        outputs = [t for t, r in zip(flat, info.results) if r.role == OUTPUT]
        saved = [t for t, r in zip(flat, info.results) if r.role == SAVED]
    else:
        outputs, saved = _run(kernel, kernel.function, args), []
    results = kernel.forward_info.results
    return _shape_results(outputs, results, leading), saved


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
        kernel = _REGISTRY[key]
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
        kernel = _REGISTRY[ctx.key]
        stored = list(ctx.saved_tensors)
        read = stored[len(stored) - ctx.num_read:]
        stored = stored[:len(stored) - ctx.num_read]
        saved = stored[len(stored) - ctx.num_saved:]
        tensors = iter(stored[:len(stored) - ctx.num_saved])
        args = [next(tensors) if k == "t" else
                _stand_in(k) if isinstance(k, tuple) else k
                for k in ctx.kinds]
        accumulators = dict(zip(kernel.main_grad_arguments, ctx.main_grads))
        # Traced, the gradients are new tensors: a traced graph may not
        # mutate its inputs.
        into = None
        if ctx.overwritten and not tracing([*stored, *grads]):
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
    outputs = kernel.forward_info.results
    call_args, out, accumulators = [], {}, {}
    for value in info.arguments:
        if value.role == INPUT:
            call_args.append(args[len(call_args)])
        elif value.role == COTANGENT:
            # autograd materializes the gradient of an unused result as
            # zeros; an expanded one (from .sum()) has zero strides.
            grad = grads[value.of].contiguous()
            call_args.append(_flat(grad, outputs[value.of]))
        elif value.role == SAVED:
            call_args.append(saved[value.of])
        elif value.role == FORWARD_RESULT:
            if not results or value.of not in results:
                raise RuntimeError(
                    f"{kernel.backward_function} reads the forward's result "
                    f"#{value.of}; pass it (results=)")
            call_args.append(_flat(results[value.of].contiguous(),
                                   outputs[value.of]))
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
            out[index] = _flat(
                into[value.of], kernel.forward_info.arguments[value.of])
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
