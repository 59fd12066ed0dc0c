"""The C layer's compiled modules (tile_module) and calls of their
functions: compiling a kernel's source for a device (cached on disk by the
library), describing a function's arguments and results, inferring result
shapes, launching on a stream, and the float64 evaluator for host data."""

import ctypes

from ._capi import (FLOAT, INT, TENSOR, CompileOptions, DeviceDescription,
                    Tensor, TensorArg, Value, check, describe, lib)


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


def _shape(handle, result, index):
    """The launch rules' expressions of one buffer's flattened shape (Tile.h's
    tile_function_shape), a tuple of strings; () for a scalar."""
    dims = []
    while (dim := lib.tile_function_shape(handle, result, index,
                                          len(dims))) is not None:
        dims.append(dim.decode())
    return tuple(dims)


class FunctionInfo:
    """What the library says of one function: its arguments and results
    (ValueInfo each) with their flattened shapes as expressions
    (argument_shapes, result_shapes: shape_expressions.py evaluates them),
    and which kernel it was derived from."""

    def __init__(self, handle):
        self.handle = handle
        self.name = lib.tile_function_name(handle).decode()
        self.arguments = [
            Info(lib.tile_function_argument(handle, i))
            for i in range(lib.tile_function_num_arguments(handle))]
        self.results = [
            Info(lib.tile_function_result(handle, i))
            for i in range(lib.tile_function_num_results(handle))]
        self.argument_shapes = [_shape(handle, 0, i)
                                for i in range(len(self.arguments))]
        self.result_shapes = [_shape(handle, 1, i)
                              for i in range(len(self.results))]
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
                self._keep.append(describe(value.tensor, argument))
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
        self._keep = [describe(s, r) for s, r in zip(self.results, results)]

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
