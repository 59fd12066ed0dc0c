"""What the MLP's GPU path hands the C layer, checked without a GPU: the
step runs on meta tensors with the library's MLP calls replaced by
recorders, and each call must give gate, up (None for a fused gate_up) and
down, and the gradients laid out as the weights. A mismatch here once
passed every CPU test and failed only on the GPU."""

import pytest
import torch

from tile import _capi, _capi_operators
from tile import mlp as tile_mlp


@pytest.fixture
def recorded(monkeypatch):
    calls = []

    def record(name):
        def call(*args):
            calls.append((name, args))
        return call
    monkeypatch.setattr(tile_mlp, "stream_of", lambda device: None)
    monkeypatch.setattr(_capi_operators, "mlp_forward", record("forward"))
    monkeypatch.setattr(_capi_operators, "mlp_backward", record("backward"))
    return calls


def meta(*shape):
    return torch.empty(shape, dtype=torch.bfloat16, device="meta")


def shapes(tensors):
    return [None if t is None else tuple(t.shape) for t in tensors]


@pytest.mark.parametrize("fused", [False, True], ids=["dense", "fused"])
def test_the_c_calls_get_weights_and_grads_as_the_header_says(recorded,
                                                              fused):
    tokens, hidden, inter, experts = 6, 8, 16, (2 if fused else 1)
    x, dy = meta(tokens, hidden), meta(tokens, hidden)
    if fused:
        gate, up = meta(experts, 2 * inter, hidden), None
        splits = [4, 2]
    else:
        gate, up = meta(1, inter, hidden), meta(1, inter, hidden)
        splits = None
    down = meta(experts, hidden, inter)
    grads = [torch.empty(w.shape, dtype=torch.float32, device="meta")
             for w in (gate, up, down) if w is not None]
    tile_mlp._forward(x, gate, up, down, splits, (0, 0, True))
    tile_mlp._backward(x, gate, up, down, dy, splits, 0, 0, None, grads,
                       True)
    (_, forward), (_, backward) = recorded
    device, options, stream, workspace, weights, x_arg, split_arg, y = forward
    assert shapes(weights) == shapes((gate, up, down))
    assert split_arg == (splits or [tokens])
    assert workspace[1] > 0 and x_arg.shape == y.shape == (tokens, hidden)
    (device, options, stream, workspace, weights, x_arg, split_arg, dy_arg,
     dx_arg, grad_args, overwrite) = backward
    # The gradients as the weights: gate, up or None, down (fp32).
    assert shapes(grad_args) == shapes((gate, up, down))
    assert all(g is None or g.dtype == _capi.F32 for g in grad_args)
    assert overwrite is True and dx_arg.shape == dy_arg.shape
