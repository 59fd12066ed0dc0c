"""The C layer's operators (tile_operators, tile_mlp): the GEMM into an
fp32 tensor and the SwiGLU MLP's steps, dense, grouped and routed, each a
C call on a stream with a workspace the caller allocated."""

import ctypes
import threading

from ._capi import MLPOptions, Run, Tensor, TensorArg, check, describe, lib


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
        self._keep = [describe(s, t) for s, t in zip(self.structs, tensors)
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
