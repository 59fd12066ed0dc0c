"""tile.Kernel: a tile kernel as a differentiable PyTorch function.

A Kernel holds the source; each call picks (and caches) a compiled module
for the call's device, dtype and widths, runs the forward, and under
autograd the backward tile-differentiate derived. CUDA tensors run the PTX
on the tensors' device and current stream with workspaces from torch's
allocator; CPU tensors run the float64 reference evaluator (float64 inputs
exactly, lower precisions rounded where the GPU rounds).
"""

import ctypes
import hashlib
import re
import threading
from pathlib import Path

import torch

from . import _capi
from . import autograd as _autograd
from ._capi import TileError

_TORCH_DTYPES = {
    torch.bfloat16: _capi.BF16,
    torch.float16: _capi.F16,
    torch.float32: _capi.F32,
    torch.float64: _capi.F64,
}
_FROM_TILE = {v: k for k, v in _TORCH_DTYPES.items()}
_DTYPE_NAMES = {torch.bfloat16: "bf16", torch.float16: "f16",
                torch.float32: "f32"}

# Kernels by key, so that the custom op (which takes strings and tensors)
# finds the kernel a traced call belongs to.
_REGISTRY = {}
_targets = {}


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
        self._host = _capi.Module(source, policy=policy, main_grad=main_grad,
                                  source_name=name, cache_dir=cache_dir)
        forwards = [f for f in self._host.functions.values()
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
        self.forward_info = self._host.functions[function]
        self.names = _argument_names(source, function)
        backward = [f for f in self._host.functions.values()
                    if f.backward_of == function]
        self.backward_function = backward[0].name if backward else None
        # The arguments whose gradient the backward adds to a main_grad
        # (looked up once: every call with autograd needs them).
        self.main_grad_arguments = [] if not (main_grad and backward) else [
            value.of for value in backward[0].arguments
            if value.role == _capi.MAIN_GRAD]
        saving = [f for f in self._host.functions.values()
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

    def _name_in(self, message):
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
            if arg.dtype not in _TORCH_DTYPES:
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
            if info.rank == 1 and arg.dim() != 1:
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
        name = _DTYPE_NAMES.get(dtype)
        key = (chip, description, name, widths)
        if chip and args is not None and key not in self._modules:
            host = self.call_for(function, torch.device("cpu"), dtype, ())
            infer(host, args, [_flat(a, i.rank) if isinstance(
                a, torch.Tensor) else a for a, i in zip(
                    args, host.info.arguments)])
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
                self._modules[key] = module
            call = module.calls.get(function)
            if call is None:
                call = module.calls[function] = _Call(
                    module, module.functions[function])
        return call

    def widths_of(self, args):
        """The last dimension of every tensor argument of the forward (the
        kernels are specialized for them, as tile::ops specializes)."""
        return tuple(arg.shape[-1] if isinstance(arg, torch.Tensor) and
                     info.is_tensor else 0
                     for arg, info in zip(args, self.forward_info.arguments))

    # -- calling -------------------------------------------------------------

    def __call__(self, *args):
        self.check(args)
        return _autograd.apply(self, args)


def _flat(arg, rank):
    """The tensor as the kernels see it: leading dimensions as rows."""
    if rank == 2:
        return arg.reshape(-1, arg.shape[-1]) if arg.dim() != 2 else arg
    return arg


def _values(call, args, flats, with_data=True):
    """ctypes Values for a call: tensors (their flattened shapes) and
    scalars; the shape arrays are kept alive by the returned list. Without
    data (inferring shapes) tensors may be fake."""
    values = (_capi.Value * max(1, len(args)))()
    keep = []
    for index, (arg, info) in enumerate(zip(args, call.info.arguments)):
        value = values[index]
        if isinstance(arg, torch.Tensor):
            flat = flats[index]
            value.kind = _capi.TENSOR
            # Shapes of an exact (float64) host call are those of the
            # kernel's own types.
            keep.append(_capi.describe_tensor(
                value.tensor, flat.data_ptr() if with_data else 0,
                flat.shape, info.dtype if flat.dtype == torch.float64
                else _TORCH_DTYPES[flat.dtype]))
        elif info.dtype == _capi.I64 or isinstance(arg, bool):
            value.kind = _capi.INT
            value.integer = int(arg)
        else:
            value.kind = _capi.FLOAT
            value.scalar = float(arg)
    return values, keep


def infer(call, args, flats):
    """[(flat shape, torch dtype)] of the results, and workspace bytes
    (launches keep them in their _Record; the host and tracing ask anew)."""
    values, keep = _values(call, args, flats, with_data=False)
    count = len(call.info.results)
    shapes = (ctypes.c_int64 * (2 * max(1, count)))()
    ranks = (ctypes.c_int32 * max(1, count))()
    workspace = ctypes.c_size_t(0)
    _capi.check(_capi.lib.tile_function_infer(
        call.info.handle, values, len(args), shapes, ranks,
        ctypes.byref(workspace)))
    exact = _is_exact(flats)
    results = [(tuple(shapes[2 * i + d] for d in range(ranks[i])),
                torch.float64 if exact else
                _FROM_TILE[call.info.results[i].dtype]) for i in range(count)]
    return results, workspace.value


def launch(call, args, device, out=None):
    """Runs `call` on `args` (tensors, already checked, and numbers) and
    returns its results, flattened. `out` gives preallocated results by
    index (main_grad accumulators)."""
    flats = [_flat(a, info.rank) if isinstance(a, torch.Tensor) else a
             for a, info in zip(args, call.info.arguments)]
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
    # The call's arrays are copied from the record's, then given this call's
    # pointers and numbers: a few field writes instead of building them.
    values = record.values_type.from_buffer_copy(record.values)
    for index in record.tensor_slots:
        values[index].tensor.data = flats[index].data_ptr()
    for index in record.float_slots:
        values[index].scalar = args[index]
    tensors = record.tensors_type.from_buffer_copy(record.tensors)
    for index, output in enumerate(outputs):
        tensors[index].data = output.data_ptr()
    _capi.check(_capi.lib.tile_function_launch(
        call.info.handle, device.index,
        torch._C._cuda_getCurrentRawStream(device.index), values,
        len(args), tensors, len(outputs),
        workspace.data_ptr() if workspace is not None else None,
        record.workspace_bytes))
    return outputs


class _Record:
    """What every call of one function on one set of shapes shares: the
    results' shapes and dtypes, the workspace size, and the C arrays of
    the arguments and results without their pointers."""

    def __init__(self, call, args, flats):
        self.results, self.workspace_bytes = infer(call, args, flats)
        self.values, self.keep = _values(call, args, flats, with_data=False)
        self.values_type = type(self.values)
        self.tensor_slots = [i for i, f in enumerate(flats)
                             if isinstance(f, torch.Tensor)]
        self.float_slots = [i for i, f in enumerate(flats)
                            if self.values[i].kind == _capi.FLOAT]
        self.tensors = (_capi.Tensor * max(1, len(self.results)))()
        self.tensors_type = type(self.tensors)
        for index, (shape, dtype) in enumerate(self.results):
            self.keep.append(_capi.describe_tensor(
                self.tensors[index], 0, shape, _TORCH_DTYPES[dtype]))


def _record(call, args, flats):
    signature = tuple(f.shape if isinstance(f, torch.Tensor) else
                      (f if isinstance(f, int) else None) for f in flats)
    record = call.records.get(signature)
    if record is None:
        record = call.records[signature] = _Record(call, args, flats)
    return record


def _is_exact(flats):
    """A call with a float64 tensor is evaluated exactly, in float64 (an
    fp32 main_grad beside it is only an accumulator)."""
    return any(isinstance(f, torch.Tensor) and f.dtype == torch.float64
               for f in flats)


def _evaluate(call, args, flats):
    """The reference evaluator: float64 on the host, results in the dtype
    the kernel gives them (float64 where the inputs were)."""
    exact = _is_exact(flats)
    host = [f.detach().to(torch.float64).contiguous()
            if isinstance(f, torch.Tensor) else f for f in flats]
    values, keep = _values(call, args, host)
    for index, f in enumerate(host):
        if isinstance(f, torch.Tensor):
            values[index].tensor.dtype = _capi.F64
    handle = ctypes.c_void_p()
    _capi.check(_capi.lib.tile_function_evaluate(
        call.info.handle, values, len(args), int(exact),
        ctypes.byref(handle)))
    try:
        outputs = []
        lib = _capi.lib
        for index in range(lib.tile_host_results_count(handle)):
            rank = lib.tile_host_results_rank(handle, index)
            shape_ptr = lib.tile_host_results_shape(handle, index)
            shape = [shape_ptr[d] for d in range(rank)]
            result = torch.empty(shape, dtype=torch.float64)
            if result.numel():
                ctypes.memmove(result.data_ptr(),
                               lib.tile_host_results_data(handle, index),
                               result.numel() * 8)
            dtype = (torch.float64 if exact else
                     _FROM_TILE[call.info.results[index].dtype])
            outputs.append(result.to(dtype))
        return outputs
    finally:
        _capi.lib.tile_host_results_destroy(handle)
