"""The C layer: ctypes bindings of libtile.so (include/tile-c/Tile.h).

The only module that touches ctypes or the library: it declares the
header's structs and signatures (python/tests/test_capi_header.py parses
Tile.h and compares), owns the library's handles, and offers each C call as
a Python function over plain values. Above it nothing knows ctypes. A
tensor crosses as a TensorArg (device or host address, shape, tile dtype);
a failed call raises :class:`TileError` with the library's message. It
does not import torch.
"""

import ctypes
import os
import threading
from collections import namedtuple
from pathlib import Path

API_VERSION = 11

# tile_dtype
BF16, F16, F32, F64, I64, I32 = range(6)

# tile_value_kind
TENSOR, FLOAT, INT = range(3)

# tile_role
INPUT, COTANGENT, SAVED, MAIN_GRAD, OUTPUT, GRADIENT, PRIMAL, FORWARD_RESULT = \
    range(8)


class TileError(RuntimeError):
    """An error reported by Tile's compiler or runtime (the message says
    what is wrong: a diagnostic with its location, a shape rule, a driver
    error)."""


class Tensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("rank", ctypes.c_int32),
        ("dtype", ctypes.c_int),
    ]


class Value(ctypes.Structure):
    _fields_ = [
        ("kind", ctypes.c_int),
        ("tensor", Tensor),
        ("scalar", ctypes.c_double),
        ("integer", ctypes.c_int64),
    ]


class DeviceDescription(ctypes.Structure):
    _fields_ = [
        ("multiprocessors", ctypes.c_int64),
        ("threads_per_sm", ctypes.c_int64),
        ("registers_per_sm", ctypes.c_int64),
        ("shared_bytes_per_sm", ctypes.c_int64),
    ]


class CompileOptions(ctypes.Structure):
    _fields_ = [
        ("chip", ctypes.c_char_p),
        ("dtype", ctypes.c_char_p),
        ("differentiate", ctypes.c_int),
        ("policy", ctypes.c_char_p),
        ("main_grad", ctypes.c_int),
        ("widths", ctypes.POINTER(ctypes.c_int64)),
        ("num_widths", ctypes.c_size_t),
        ("source_name", ctypes.c_char_p),
        ("cache_dir", ctypes.c_char_p),
        ("device", DeviceDescription),
    ]


class ValueInfo(ctypes.Structure):
    _fields_ = [
        ("is_tensor", ctypes.c_int),
        ("dtype", ctypes.c_int),
        ("rank", ctypes.c_int32),
        ("role", ctypes.c_int),
        ("differentiable", ctypes.c_int),
        ("of", ctypes.c_int64),
        ("reads_data", ctypes.c_int),
    ]


class MLPOptions(ctypes.Structure):
    _fields_ = [
        ("shards", ctypes.c_int64),
        ("memory_budget", ctypes.c_size_t),
        ("recompute", ctypes.c_int),
        ("streams", ctypes.c_int),
    ]


class Run(ctypes.Structure):
    _fields_ = [
        ("stream", ctypes.c_void_p),
        ("workspace", ctypes.c_void_p),
        ("workspace_bytes", ctypes.c_size_t),
        ("scratch", ctypes.c_void_p),
        ("scratch_bytes", ctypes.c_size_t),
    ]


def _candidates():
    if os.environ.get("TILE_LIBRARY"):
        yield Path(os.environ["TILE_LIBRARY"])
        return
    here = Path(__file__).resolve().parent
    yield here / "libtile.so"  # pip install .
    yield here.parent.parent / "build" / "lib" / "libtile.so"  # a checkout


def _load():
    tried = []
    for path in _candidates():
        tried.append(str(path))
        if path.exists():
            return ctypes.CDLL(str(path))
    raise ImportError(
        "libtile.so not found (looked at " + ", ".join(tried) + "): "
        "pip install . from the repository, or build it "
        "(./scripts/build.sh) and set TILE_LIBRARY")


lib = _load()

_status = ctypes.c_void_p
_handle = ctypes.c_void_p
_out_handle = ctypes.POINTER(ctypes.c_void_p)
_int64s = ctypes.POINTER(ctypes.c_int64)
_tensor = ctypes.POINTER(Tensor)
_run = ctypes.POINTER(Run)
_options = ctypes.POINTER(MLPOptions)
# Every function of Tile.h this package calls: (argument types, result).
SIGNATURES = {
    "tile_api_version": ([], ctypes.c_int),
    "tile_status_message": ([_status], ctypes.c_char_p),
    "tile_status_destroy": ([_status], None),
    "tile_device_count": ([ctypes.POINTER(ctypes.c_int)], _status),
    "tile_device_chip": ([ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t],
                         _status),
    "tile_device_describe": ([ctypes.c_int, ctypes.POINTER(DeviceDescription)],
                             _status),
    "tile_module_compile": ([ctypes.c_char_p, ctypes.c_size_t,
                             ctypes.POINTER(CompileOptions), _out_handle],
                            _status),
    "tile_module_destroy": ([_handle], None),
    "tile_module_ptx": ([_handle], ctypes.c_char_p),
    "tile_module_ir": ([_handle], ctypes.c_char_p),
    "tile_module_manifest": ([_handle], ctypes.c_char_p),
    "tile_module_num_functions": ([_handle], ctypes.c_size_t),
    "tile_module_function": ([_handle, ctypes.c_size_t], _handle),
    "tile_function_name": ([_handle], ctypes.c_char_p),
    "tile_function_num_arguments": ([_handle], ctypes.c_size_t),
    "tile_function_num_results": ([_handle], ctypes.c_size_t),
    "tile_function_argument": ([_handle, ctypes.c_size_t], ValueInfo),
    "tile_function_result": ([_handle, ctypes.c_size_t], ValueInfo),
    "tile_function_backward_of": ([_handle], ctypes.c_char_p),
    "tile_function_forward_of": ([_handle], ctypes.c_char_p),
    "tile_function_infer": ([_handle, ctypes.POINTER(Value), ctypes.c_size_t,
                             _int64s, ctypes.POINTER(ctypes.c_int32),
                             ctypes.POINTER(ctypes.c_size_t)], _status),
    "tile_function_launch": ([_handle, ctypes.c_int, ctypes.c_void_p,
                              ctypes.POINTER(Value), ctypes.c_size_t, _tensor,
                              ctypes.c_size_t, ctypes.c_void_p,
                              ctypes.c_size_t], _status),
    "tile_function_evaluate": ([_handle, ctypes.POINTER(Value),
                                ctypes.c_size_t, ctypes.c_int, _out_handle],
                               _status),
    "tile_host_results_count": ([_handle], ctypes.c_size_t),
    "tile_host_results_rank": ([_handle, ctypes.c_size_t], ctypes.c_int32),
    "tile_host_results_shape": ([_handle, ctypes.c_size_t], _int64s),
    "tile_host_results_data": ([_handle, ctypes.c_size_t],
                               ctypes.POINTER(ctypes.c_double)),
    "tile_host_results_destroy": ([_handle], None),
    "tile_operator_name": ([ctypes.c_size_t], ctypes.c_char_p),
    "tile_operator_source": ([ctypes.c_char_p], ctypes.c_char_p),
    "tile_operators_create": ([ctypes.c_int, ctypes.c_char_p, _out_handle],
                              _status),
    "tile_matmul": ([_handle, _run, _tensor, ctypes.c_int, _tensor,
                     ctypes.c_int, _tensor, ctypes.c_float], _status),
    "tile_mlp_plan": ([_options, ctypes.c_int64, ctypes.c_int64,
                       ctypes.c_int64, ctypes.c_int, _int64s, _int64s,
                       ctypes.POINTER(ctypes.c_size_t)], _status),
    "tile_mlp_workspace_layout": ([_options, ctypes.c_int64, ctypes.c_int64,
                                   ctypes.c_int, ctypes.POINTER(ctypes.c_size_t),
                                   _int64s, ctypes.POINTER(ctypes.c_size_t),
                                   ctypes.POINTER(ctypes.c_size_t), _int64s],
                                  _status),
    "tile_mlp_create": ([_handle, _options, _out_handle], _status),
    "tile_mlp_forward": ([_handle, _run, _tensor, _tensor, _tensor, _tensor,
                          _int64s, ctypes.c_int64, _tensor], _status),
    "tile_mlp_backward": ([_handle, _run, _tensor, _tensor, _tensor, _tensor,
                           _int64s, ctypes.c_int64, _tensor, _tensor, _tensor,
                           _tensor, _tensor, ctypes.c_int], _status),
    "tile_mlp_forward_device_splits": (
        [_handle, _run, _tensor, _tensor, _tensor, _tensor, _tensor, _tensor],
        _status),
    "tile_mlp_backward_device_splits": (
        [_handle, _run, _tensor, _tensor, _tensor, _tensor, _tensor, _tensor,
         _tensor, _tensor, _tensor, _tensor, ctypes.c_int], _status),
    "tile_mlp_forward_routed": (
        [_handle, _run, _tensor, _tensor, _tensor, _tensor, _tensor, _tensor],
        _status),
    "tile_mlp_backward_routed": (
        [_handle, _run, _tensor, _tensor, _tensor, _tensor, _tensor, _tensor,
         _tensor, _tensor, _tensor, _tensor, ctypes.c_int], _status),
    "tile_mlp_backward_routed_down": (
        [_handle, _run, _tensor, _tensor, _tensor, _tensor, _tensor, _tensor,
         _tensor, _tensor, ctypes.c_int], _status),
    "tile_mlp_backward_routed_gate_up": (
        [_handle, _run, _tensor, _tensor, _tensor, _tensor, _tensor, _tensor,
         _tensor, ctypes.c_int], _status),
}
# The version first: a library of another version may lack a symbol.
lib.tile_api_version.argtypes, lib.tile_api_version.restype = [], ctypes.c_int
if lib.tile_api_version() != API_VERSION:
    raise ImportError(
        f"libtile.so speaks C API version {lib.tile_api_version()}, this "
        f"package version {API_VERSION}: rebuild one of them")
for _name, (_args, _result) in SIGNATURES.items():
    _function = getattr(lib, _name)
    _function.argtypes = _args
    _function.restype = _result

# TILE_MATMUL_WORKSPACE_BYTES: what tile_matmul's run->workspace holds.
MATMUL_WORKSPACE_BYTES = 32 << 20


def check(status):
    """Raises TileError with the status's message (and frees it)."""
    if status:
        message = lib.tile_status_message(status).decode(errors="replace")
        lib.tile_status_destroy(status)
        raise TileError(message)


# -- devices and operator sources ------------------------------------------

def device_count():
    count = ctypes.c_int(0)
    check(lib.tile_device_count(ctypes.byref(count)))
    return count.value


def device_chip(ordinal):
    buffer = ctypes.create_string_buffer(32)
    check(lib.tile_device_chip(ordinal, buffer, len(buffer)))
    return buffer.value.decode()


def device_description(ordinal):
    """(multiprocessors, threads, registers, shared bytes per SM) of GPU
    `ordinal`, as the driver reports them."""
    description = DeviceDescription()
    check(lib.tile_device_describe(ordinal, ctypes.byref(description)))
    return (description.multiprocessors, description.threads_per_sm,
            description.registers_per_sm, description.shared_bytes_per_sm)


def operator_names():
    """Every operator's name, as the library lists them."""
    names = []
    while (name := lib.tile_operator_name(len(names))) is not None:
        names.append(name.decode())
    return names


def operator_source(name):
    source = lib.tile_operator_source(name.encode())
    if source is None:
        raise ValueError(f"no operator named {name!r}")
    return source.decode()


# -- compiled modules and their functions ----------------------------------

class Info:
    """A ValueInfo as a plain Python object (torch.compile traces through
    plain attributes, not ctypes fields)."""

    __slots__ = ("is_tensor", "dtype", "rank", "role", "differentiable", "of",
                 "reads_data")

    def __init__(self, info):
        self.is_tensor = bool(info.is_tensor)
        self.dtype = int(info.dtype)
        self.rank = int(info.rank)
        self.role = int(info.role)
        self.differentiable = bool(info.differentiable)
        self.of = int(info.of)
        self.reads_data = bool(info.reads_data)


class FunctionInfo:
    """What the library says of one function: its arguments and results
    (ValueInfo each), and which kernel it was derived from."""

    def __init__(self, handle):
        self.handle = handle
        self.name = lib.tile_function_name(handle).decode()
        self.arguments = [
            Info(lib.tile_function_argument(handle, i))
            for i in range(lib.tile_function_num_arguments(handle))]
        self.results = [
            Info(lib.tile_function_result(handle, i))
            for i in range(lib.tile_function_num_results(handle))]
        backward_of = lib.tile_function_backward_of(handle)
        forward_of = lib.tile_function_forward_of(handle)
        self.backward_of = backward_of.decode() if backward_of else None
        self.forward_of = forward_of.decode() if forward_of else None


class Module:
    """A compiled module: its functions by name. Freed with the object."""

    def __init__(self, source, *, chip=None, dtype=None, policy="recompute",
                 main_grad=False, widths=(), source_name="kernel",
                 cache_dir=None, device=None):
        options = CompileOptions()
        options.chip = chip.encode() if chip else None
        # device_description()'s figures; None: an H100 SXM or H200.
        if device is not None:
            options.device = DeviceDescription(*device)
        options.dtype = dtype.encode() if dtype else None
        options.differentiate = 1
        options.policy = policy.encode()
        options.main_grad = int(bool(main_grad))
        self._widths = (ctypes.c_int64 * max(1, len(widths)))(*widths)
        options.widths = self._widths
        options.num_widths = len(widths)
        options.source_name = source_name.encode()
        options.cache_dir = cache_dir.encode() if cache_dir else None
        handle = ctypes.c_void_p()
        encoded = source.encode()
        check(lib.tile_module_compile(encoded, len(encoded),
                                      ctypes.byref(options),
                                      ctypes.byref(handle)))
        self.handle = handle.value
        self.functions = {}
        for i in range(lib.tile_module_num_functions(self.handle)):
            info = FunctionInfo(lib.tile_module_function(self.handle, i))
            self.functions[info.name] = info

    def __del__(self):
        if getattr(self, "handle", None) and lib is not None:
            lib.tile_module_destroy(self.handle)
            self.handle = None

    @property
    def ptx(self):
        return lib.tile_module_ptx(self.handle).decode()

    @property
    def ir(self):
        return lib.tile_module_ir(self.handle).decode()

    @property
    def manifest(self):
        """The launch manifest (JSON): kernels, grids, parameters."""
        return lib.tile_module_manifest(self.handle).decode()


# -- calling a function ----------------------------------------------------

# A tensor as the library sees it: an address (0 where only the shape
# matters), its shape and its tile dtype (BF16 ... I64). Dense.
TensorArg = namedtuple("TensorArg", "data shape dtype")


def _describe(struct, tensor):
    """Fills a Tensor struct from a TensorArg; returns the shape array,
    which the caller keeps alive as long as the struct is used."""
    array = (ctypes.c_int64 * max(1, len(tensor.shape)))(*tensor.shape)
    struct.data = tensor.data
    struct.shape = array
    struct.rank = len(tensor.shape)
    struct.dtype = tensor.dtype
    return array


class Arguments:
    """The C arguments of a call: per argument a TensorArg, or a number
    with its kind (INT or FLOAT). The arrays live as long as the object."""

    def __init__(self, arguments):
        self.count = len(arguments)
        self.values = (Value * max(1, self.count))()
        self._keep = []
        for value, argument in zip(self.values, arguments):
            if isinstance(argument, TensorArg):
                value.kind = TENSOR
                self._keep.append(_describe(value.tensor, argument))
            elif argument[0] == INT:
                value.kind, value.integer = INT, int(argument[1])
            else:
                value.kind, value.scalar = FLOAT, float(argument[1])


def infer(function, arguments):
    """([result shape, ...], workspace bytes) of `function` (a FunctionInfo)
    called on `arguments` (an Arguments; addresses are not read)."""
    count = len(function.results)
    shapes = (ctypes.c_int64 * (2 * max(1, count)))()
    ranks = (ctypes.c_int32 * max(1, count))()
    workspace = ctypes.c_size_t(0)
    check(lib.tile_function_infer(function.handle, arguments.values,
                                  arguments.count, shapes, ranks,
                                  ctypes.byref(workspace)))
    return ([tuple(shapes[2 * i + d] for d in range(ranks[i]))
             for i in range(count)], workspace.value)


class Launch:
    """What every launch of one function on one set of shapes shares: the
    C arrays of its arguments and results without their addresses. Each
    launch copies them and writes its own addresses and FLOAT scalars: a
    few field writes instead of building them."""

    def __init__(self, function, arguments, results):
        self.function = function.handle
        self.count = arguments.count
        self._arguments = arguments  # keeps the shape arrays alive
        self.tensor_slots = [i for i, v in enumerate(arguments.values)
                             if i < self.count and v.kind == TENSOR]
        self.float_slots = [i for i, v in enumerate(arguments.values)
                            if i < self.count and v.kind == FLOAT]
        self.results = (Tensor * max(1, len(results)))()
        self.num_results = len(results)
        self._keep = [_describe(s, r) for s, r in zip(self.results, results)]

    def __call__(self, device, stream, addresses, floats, result_addresses,
                 workspace, workspace_bytes):
        """Launches on GPU `device` and `stream` with the tensors at
        `addresses` (one per tensor slot), `floats` (one per FLOAT slot),
        the results at `result_addresses` and a workspace (an address or
        None, and its bytes)."""
        values = type(self._arguments.values).from_buffer_copy(
            self._arguments.values)
        for index, address in zip(self.tensor_slots, addresses):
            values[index].tensor.data = address
        for index, number in zip(self.float_slots, floats):
            values[index].scalar = number
        results = type(self.results).from_buffer_copy(self.results)
        for index, address in enumerate(result_addresses):
            results[index].data = address
        check(lib.tile_function_launch(
            self.function, device, stream, values, self.count, results,
            self.num_results, workspace, workspace_bytes))


def evaluate(function, arguments, exact):
    """The host evaluator's results of `function` on `arguments` (float64
    TensorArgs on the host): [(shape, bytes of float64 data)]."""
    handle = ctypes.c_void_p()
    check(lib.tile_function_evaluate(function.handle, arguments.values,
                                     arguments.count, int(exact),
                                     ctypes.byref(handle)))
    try:
        results = []
        for index in range(lib.tile_host_results_count(handle)):
            rank = lib.tile_host_results_rank(handle, index)
            shape_ptr = lib.tile_host_results_shape(handle, index)
            shape = tuple(shape_ptr[d] for d in range(rank))
            size = 8
            for extent in shape:
                size *= extent
            data = lib.tile_host_results_data(handle, index)
            results.append((shape, ctypes.string_at(data, size)
                            if size else b""))
        return results
    finally:
        lib.tile_host_results_destroy(handle)


# -- the operators: GEMM and the SwiGLU MLP --------------------------------

_lock = threading.Lock()
# Per device ordinal, and per (ordinal, options): made on first use and kept
# for the process (a tile_mlp must go before its operators; neither is ever
# freed, so the order cannot go wrong at exit).
_operators = {}
_mlps = {}


def _operators_of(device):
    """The tile_operators of GPU `device` (the caller holds _lock)."""
    if device not in _operators:
        handle = ctypes.c_void_p()
        check(lib.tile_operators_create(device, None, ctypes.byref(handle)))
        _operators[device] = handle.value
    return _operators[device]


def _run_of(stream, workspace, scratch=(None, 0)):
    """A tile_run: the stream, a workspace and a scratch (address, bytes
    each; a scratch apart is the untiled MLP's)."""
    run = Run()
    run.stream = stream
    run.workspace, run.workspace_bytes = workspace
    run.scratch, run.scratch_bytes = scratch
    return run


class _Structs:
    """Tensor structs for TensorArgs (None stays NULL), kept alive with
    their shapes."""

    def __init__(self, *tensors):
        self.structs = [None if t is None else Tensor() for t in tensors]
        self._keep = [_describe(s, t) for s, t in zip(self.structs, tensors)
                      if t is not None]

    def pointers(self):
        return [None if s is None else ctypes.byref(s) for s in self.structs]


def matmul(device, stream, workspace, a, trans_a, b, trans_b, d, beta):
    """d = op(a) @ op(b) + beta * d (tile_matmul) on GPU `device`'s
    `stream`; a, b, d TensorArgs; workspace (address, bytes) of
    MATMUL_WORKSPACE_BYTES."""
    with _lock:
        operators = _operators_of(device)
    run = _run_of(stream, workspace)
    pa, pb, pd = _Structs(a, b, d).pointers()
    check(lib.tile_matmul(operators, ctypes.byref(run), pa, int(trans_a), pb,
                          int(trans_b), pd, beta))


def _mlp_options(shards, memory_budget, recompute, streams=0):
    options = MLPOptions()
    options.shards = shards
    options.memory_budget = memory_budget or 0
    options.recompute = int(recompute)
    options.streams = streams  # 0: the operator's default
    return options


def mlp_plan(rows, intermediate, experts, dtype, shards, memory_budget,
             recompute, streams=0):
    """(shards, rows per shard, workspace bytes) of one MLP step
    (tile_mlp_plan); `dtype` a tile dtype. No GPU."""
    count, per_shard = ctypes.c_int64(), ctypes.c_int64()
    workspace = ctypes.c_size_t()
    check(lib.tile_mlp_plan(
        ctypes.byref(_mlp_options(shards, memory_budget, recompute,
                                  streams)), rows,
        intermediate, experts, dtype, ctypes.byref(count),
        ctypes.byref(per_shard), ctypes.byref(workspace)))
    return count.value, per_shard.value, workspace.value


def mlp_workspace_layout(intermediate, experts, dtype, shards, memory_budget,
                         recompute, streams=0):
    """(fixed bytes, buffers, bytes a row, alignment, kept buffers) of an
    MLP step's workspace (tile_mlp_workspace_layout); `dtype` a tile dtype.
    No GPU."""
    fixed, row, alignment = (ctypes.c_size_t() for _ in range(3))
    buffers, kept = ctypes.c_int64(), ctypes.c_int64()
    check(lib.tile_mlp_workspace_layout(
        ctypes.byref(_mlp_options(shards, memory_budget, recompute,
                                  streams)),
        intermediate, experts, dtype, ctypes.byref(fixed),
        ctypes.byref(buffers), ctypes.byref(row), ctypes.byref(alignment),
        ctypes.byref(kept)))
    return fixed.value, buffers.value, row.value, alignment.value, kept.value


def _mlp_of(device, shards, memory_budget, recompute, streams=0):
    """The operator of these options (shards, memory_budget, recompute and
    the GEMM streams, 0 the default), one per device: a step's forward and
    backward must reach the same one (it keeps the untiled step's record)."""
    key = (device, shards, memory_budget, recompute, streams)
    with _lock:
        if key not in _mlps:
            handle = ctypes.c_void_p()
            check(lib.tile_mlp_create(
                _operators_of(device),
                ctypes.byref(_mlp_options(shards, memory_budget, recompute,
                                          streams)),
                ctypes.byref(handle)))
            _mlps[key] = handle.value
        return _mlps[key]


def _splits_array(splits):
    return (ctypes.c_int64 * len(splits))(*splits)


def mlp_forward(device, options, stream, workspace, weights, x, splits, y):
    """One MLP forward (tile_mlp_forward) on GPU `device`'s `stream`.
    options: (shards, memory_budget, recompute); workspace (address, bytes);
    weights (gate, up or None, down); x, y and the weights TensorArgs;
    splits the experts' row counts: host ints, or a TensorArg of a device
    [E] tensor (tile_mlp_forward_device_splits)."""
    run = _run_of(stream, workspace)
    mlp = _mlp_of(device, *options)
    if isinstance(splits, TensorArg):
        gate, up, down, px, ps, py = _Structs(*weights, x, splits,
                                              y).pointers()
        check(lib.tile_mlp_forward_device_splits(
            mlp, ctypes.byref(run), gate, up, down, px, ps, py))
        return
    gate, up, down, px, py = _Structs(*weights, x, y).pointers()
    check(lib.tile_mlp_forward(mlp, ctypes.byref(run), gate, up, down, px,
                               _splits_array(splits), len(splits), py))


def mlp_forward_routed(device, options, stream, workspace, weights, x,
                       splits, routing, y, scratch=(None, 0)):
    """A mixture of experts' MLP forward (tile_mlp_forward_routed): weights
    (gate_up, down); splits and routing TensorArgs of device tensors; y may
    be x."""
    run = _run_of(stream, workspace, scratch)
    mlp = _mlp_of(device, *options)
    pointers = _Structs(*weights, x, splits, routing, y).pointers()
    check(lib.tile_mlp_forward_routed(mlp, ctypes.byref(run), *pointers))


def mlp_backward_routed(device, options, stream, workspace, weights, x,
                        splits, routing, dy, dx, d_routing, grads, overwrite):
    """Its backward (tile_mlp_backward_routed): dx may be dy; d_routing and
    grads (gate_up, down; fp32) TensorArgs, grads overwritten or added to."""
    run = _run_of(stream, workspace)
    mlp = _mlp_of(device, *options)
    pointers = _Structs(*weights, x, splits, routing, dy, dx, d_routing,
                        *grads).pointers()
    check(lib.tile_mlp_backward_routed(mlp, ctypes.byref(run), *pointers,
                                       int(overwrite)))


def mlp_backward_routed_down(device, options, stream, workspace, scratch,
                             weights, splits, routing, dy, d_routing, grads,
                             overwrite):
    """The untiled routed backward's first call
    (tile_mlp_backward_routed_down): dy read, d_routing and down's grad
    written; then mlp_backward_routed_gate_up."""
    run = _run_of(stream, workspace, scratch)
    mlp = _mlp_of(device, *options)
    pointers = _Structs(*weights, splits, routing, dy, d_routing,
                        *grads).pointers()
    check(lib.tile_mlp_backward_routed_down(mlp, ctypes.byref(run),
                                            *pointers, int(overwrite)))


def mlp_backward_routed_gate_up(device, options, stream, workspace, scratch,
                                weights, x, splits, dx, grads, overwrite):
    """Its second call (tile_mlp_backward_routed_gate_up): x read, dx
    (which may be x) and gate_up's grad written."""
    run = _run_of(stream, workspace, scratch)
    mlp = _mlp_of(device, *options)
    pointers = _Structs(*weights, x, splits, dx, *grads).pointers()
    check(lib.tile_mlp_backward_routed_gate_up(mlp, ctypes.byref(run),
                                               *pointers, int(overwrite)))


def mlp_backward(device, options, stream, workspace, weights, x, splits, dy,
                 dx, grads, overwrite):
    """One MLP backward (tile_mlp_backward), arguments as for mlp_forward;
    grads (gate, up or None, down) fp32 TensorArgs, overwritten or (with
    overwrite False) added to."""
    run = _run_of(stream, workspace)
    mlp = _mlp_of(device, *options)
    if isinstance(splits, TensorArg):
        gate, up, down, px, ps, pdy, pdx, g_gate, g_up, g_down = _Structs(
            *weights, x, splits, dy, dx, *grads).pointers()
        check(lib.tile_mlp_backward_device_splits(
            mlp, ctypes.byref(run), gate, up, down, px, ps, pdy, pdx, g_gate,
            g_up, g_down, int(overwrite)))
        return
    gate, up, down, px, pdy, pdx, g_gate, g_up, g_down = _Structs(
        *weights, x, dy, dx, *grads).pointers()
    check(lib.tile_mlp_backward(
        mlp, ctypes.byref(run), gate, up, down, px, _splits_array(splits),
        len(splits), pdy, pdx, g_gate, g_up, g_down, int(overwrite)))
