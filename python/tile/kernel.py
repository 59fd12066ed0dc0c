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
and whatever the policy saved (kernel_autograd.py). In eager mode both
call the library directly; while torch.compile traces they go through the
custom op `tile::launch` (with a fake implementation that infers the
result shapes; kernel_launch.py), so a compiled model holds each kernel as
one opaque node, without graph breaks.
"""

import hashlib
import re
import threading
from pathlib import Path

import torch

from . import _capi, _capi_functions, shape_expressions
from ._capi import FORWARD_RESULT, INPUT, MAIN_GRAD, OUTPUT
from .autograd import GPU_DTYPE_NAMES, INTEGER_DTYPES, TILE_DTYPES, \
    TORCH_DTYPES
from .kernel_autograd import apply
from .custom_ops import register
from .kernel_launch import flatten, infer

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
        # The host module owns the functions' handles: kept with the kernel.
        self._host = _capi_functions.Module(source, policy=policy, main_grad=main_grad,
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
        # Which outputs lead with the rows (and get the caller's leading
        # shape back), decided once: every call shapes its results by it.
        self.outputs_per_row = [
            shape_expressions.is_per_row(texts) for texts, result in
            zip(self.forward_info.result_shapes, self.forward_info.results)
            if result.role == OUTPUT]
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
        # Findable by its key: an op names the kernel a traced call runs.
        register(self.key, self)

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
                module = _capi_functions.Module(
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
