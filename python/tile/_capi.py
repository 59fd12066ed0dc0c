"""The C layer: ctypes bindings of libtile.so (include/tile-c/Tile.h).

With _capi_functions.py (compiled modules and calls of their functions)
and _capi_operators.py (the GEMM and the SwiGLU MLP), the only modules that
touch ctypes or the library: this one loads it, declares the header's
structs and signatures (python/tests/test_capi_header.py parses Tile.h and
compares) and the device and operator-source calls; each C call is offered
as a Python function over plain values. Above them nothing knows ctypes. A
tensor crosses as a TensorArg (device or host address, shape, tile dtype);
a failed call raises :class:`TileError` with the library's message. It
does not import torch.
"""

import ctypes
import os
from collections import namedtuple
from pathlib import Path

API_VERSION = 12

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
    "tile_function_shape": ([_handle, ctypes.c_int, ctypes.c_size_t,
                             ctypes.c_size_t], ctypes.c_char_p),
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


# A tensor as the library sees it: an address (0 where only the shape
# matters), its shape and its tile dtype (BF16 ... I64). Dense.
TensorArg = namedtuple("TensorArg", "data shape dtype")


def describe(struct, tensor):
    """Fills a Tensor struct from a TensorArg; returns the shape array,
    which the caller keeps alive as long as the struct is used."""
    array = (ctypes.c_int64 * max(1, len(tensor.shape)))(*tensor.shape)
    struct.data = tensor.data
    struct.shape = array
    struct.rank = len(tensor.shape)
    struct.dtype = tensor.dtype
    return array
