"""ctypes bindings of libtile.so (include/tile-c/Tile.h).

The only module that touches ctypes: everything above it deals in Python
values and raises :class:`TileError` with the library's message.
"""

import ctypes
import os
from pathlib import Path

API_VERSION = 4

# tile_dtype
BF16, F16, F32, F64, I64 = range(5)

# tile_value_kind
TENSOR, FLOAT, INT = range(3)

# tile_role
INPUT, COTANGENT, SAVED, MAIN_GRAD, OUTPUT, GRADIENT, PRIMAL = range(7)


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


def describe_tensor(struct, data, shape, dtype):
    """Fills a Tensor struct (dense: no strides); returns the shape array,
    which the caller keeps alive as long as the struct is used."""
    array = (ctypes.c_int64 * max(1, len(shape)))(*shape)
    struct.data = data
    struct.shape = array
    struct.rank = len(shape)
    struct.dtype = dtype
    return array


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
_signatures = {
    "tile_api_version": ([], ctypes.c_int),
    "tile_status_message": ([_status], ctypes.c_char_p),
    "tile_status_destroy": ([_status], None),
    "tile_device_count": ([ctypes.POINTER(ctypes.c_int)], _status),
    "tile_device_chip": ([ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t],
                         _status),
    "tile_device_describe": ([ctypes.c_int, ctypes.POINTER(DeviceDescription)],
                             _status),
    "tile_module_compile": ([ctypes.c_char_p, ctypes.c_size_t,
                             ctypes.POINTER(CompileOptions),
                             ctypes.POINTER(ctypes.c_void_p)], _status),
    "tile_module_destroy": ([ctypes.c_void_p], None),
    "tile_module_ptx": ([ctypes.c_void_p], ctypes.c_char_p),
    "tile_module_ir": ([ctypes.c_void_p], ctypes.c_char_p),
    "tile_module_manifest": ([ctypes.c_void_p], ctypes.c_char_p),
    "tile_module_num_functions": ([ctypes.c_void_p], ctypes.c_size_t),
    "tile_module_function": ([ctypes.c_void_p, ctypes.c_size_t],
                             ctypes.c_void_p),
    "tile_function_name": ([ctypes.c_void_p], ctypes.c_char_p),
    "tile_function_num_arguments": ([ctypes.c_void_p], ctypes.c_size_t),
    "tile_function_num_results": ([ctypes.c_void_p], ctypes.c_size_t),
    "tile_function_argument": ([ctypes.c_void_p, ctypes.c_size_t], ValueInfo),
    "tile_function_result": ([ctypes.c_void_p, ctypes.c_size_t], ValueInfo),
    "tile_function_backward_of": ([ctypes.c_void_p], ctypes.c_char_p),
    "tile_function_forward_of": ([ctypes.c_void_p], ctypes.c_char_p),
    "tile_function_infer": ([ctypes.c_void_p, ctypes.POINTER(Value),
                             ctypes.c_size_t, ctypes.POINTER(ctypes.c_int64),
                             ctypes.POINTER(ctypes.c_int32),
                             ctypes.POINTER(ctypes.c_size_t)], _status),
    "tile_function_launch": ([ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p,
                              ctypes.POINTER(Value), ctypes.c_size_t,
                              ctypes.POINTER(Tensor), ctypes.c_size_t,
                              ctypes.c_void_p, ctypes.c_size_t], _status),
    "tile_function_evaluate": ([ctypes.c_void_p, ctypes.POINTER(Value),
                                ctypes.c_size_t, ctypes.c_int,
                                ctypes.POINTER(ctypes.c_void_p)], _status),
    "tile_host_results_count": ([ctypes.c_void_p], ctypes.c_size_t),
    "tile_host_results_rank": ([ctypes.c_void_p, ctypes.c_size_t],
                               ctypes.c_int32),
    "tile_host_results_shape": ([ctypes.c_void_p, ctypes.c_size_t],
                                ctypes.POINTER(ctypes.c_int64)),
    "tile_host_results_data": ([ctypes.c_void_p, ctypes.c_size_t],
                               ctypes.c_void_p),
    "tile_host_results_destroy": ([ctypes.c_void_p], None),
    "tile_operator_source": ([ctypes.c_char_p], ctypes.c_char_p),
    "tile_operators_create": ([ctypes.c_int, ctypes.c_char_p,
                               ctypes.POINTER(ctypes.c_void_p)], _status),
    "tile_matmul": ([ctypes.c_void_p, ctypes.POINTER(Run),
                     ctypes.POINTER(Tensor), ctypes.c_int,
                     ctypes.POINTER(Tensor), ctypes.c_int,
                     ctypes.POINTER(Tensor), ctypes.c_float], _status),
    "tile_mlp_create": ([ctypes.c_void_p, ctypes.POINTER(MLPOptions),
                         ctypes.POINTER(ctypes.c_void_p)], _status),
    "tile_mlp_plan": ([ctypes.POINTER(MLPOptions), ctypes.c_int64,
                       ctypes.c_int64, ctypes.c_int,
                       ctypes.POINTER(ctypes.c_int64),
                       ctypes.POINTER(ctypes.c_int64),
                       ctypes.POINTER(ctypes.c_size_t)], _status),
    "tile_mlp_forward": ([ctypes.c_void_p, ctypes.POINTER(Run)] +
                         [ctypes.POINTER(Tensor)] * 5, _status),
    "tile_mlp_backward": ([ctypes.c_void_p, ctypes.POINTER(Run)] +
                          [ctypes.POINTER(Tensor)] * 9 + [ctypes.c_int],
                          _status),
    "tile_grouped_mlp_plan": ([ctypes.POINTER(MLPOptions), ctypes.c_int64,
                               ctypes.c_int64, ctypes.c_int64, ctypes.c_int,
                               ctypes.POINTER(ctypes.c_int64),
                               ctypes.POINTER(ctypes.c_int64),
                               ctypes.POINTER(ctypes.c_size_t)], _status),
    "tile_grouped_mlp_create": ([ctypes.c_void_p, ctypes.POINTER(MLPOptions),
                                 ctypes.POINTER(ctypes.c_void_p)], _status),
    "tile_grouped_mlp_forward": (
        [ctypes.c_void_p, ctypes.POINTER(Run)] + [ctypes.POINTER(Tensor)] * 4
        + [ctypes.POINTER(ctypes.c_int64), ctypes.c_int64,
           ctypes.POINTER(Tensor)], _status),
    "tile_grouped_mlp_backward": (
        [ctypes.c_void_p, ctypes.POINTER(Run)] + [ctypes.POINTER(Tensor)] * 4
        + [ctypes.POINTER(ctypes.c_int64), ctypes.c_int64]
        + [ctypes.POINTER(Tensor)] * 5 + [ctypes.c_int], _status),
}
# The version first: a library of another version may lack a symbol.
lib.tile_api_version.argtypes, lib.tile_api_version.restype = [], ctypes.c_int
if lib.tile_api_version() != API_VERSION:
    raise ImportError(
        f"libtile.so speaks C API version {lib.tile_api_version()}, this "
        f"package version {API_VERSION}: rebuild one of them")
for _name, (_args, _result) in _signatures.items():
    _function = getattr(lib, _name)
    _function.argtypes = _args
    _function.restype = _result


def check(status):
    """Raises TileError with the status's message (and frees it)."""
    if status:
        message = lib.tile_status_message(status).decode(errors="replace")
        lib.tile_status_destroy(status)
        raise TileError(message)


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


def operator_source(name):
    source = lib.tile_operator_source(name.encode())
    if source is None:
        raise ValueError(f"no operator named {name!r}")
    return source.decode()


class Info:
    """A ValueInfo as a plain Python object (torch.compile traces through
    plain attributes, not ctypes fields)."""

    __slots__ = ("is_tensor", "dtype", "rank", "role", "differentiable", "of")

    def __init__(self, info):
        self.is_tensor = bool(info.is_tensor)
        self.dtype = int(info.dtype)
        self.rank = int(info.rank)
        self.role = int(info.role)
        self.differentiable = bool(info.differentiable)
        self.of = int(info.of)


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
