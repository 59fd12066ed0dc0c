"""tile.ops.swiglu_mlp on the GPU (tile::ops::TiledSwiGLUMLP through the C
API): forward and gradients against float64 in bf16/f16/f32 for several
shard counts, main_grad over micro-batches, CUDA-graph replay, a stream of
its own, torch.compile and errors. Skipped without CUDA."""

import pytest
import torch

import tile
from conftest import (assert_close, assert_replay_matches, leaf, randn,
                      swiglu_mlp)

pytestmark = [pytest.mark.skipif(not torch.cuda.is_available(),
                                 reason="no CUDA device"),
              pytest.mark.usefixtures("poison_the_allocator")]



def make(rows, hidden, inter, dtype):
    x = randn(rows, dtype)
    scale = hidden ** -0.5
    return (x, randn((inter, hidden), dtype, scale),
            randn((inter, hidden), dtype, scale),
            randn((hidden, inter), dtype, inter ** -0.5))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16,
                                   torch.float32])
@pytest.mark.parametrize("rows,hidden,inter,shards", [
    ((512,), 256, 512, 0), ((3, 100), 128, 300, 3), ((1000,), 64, 128, 7),
    ((2, 2048), 512, 1536, 4), ((1,), 64, 128, 1)])
def test_matches_float64(dtype, rows, hidden, inter, shards):
    torch.manual_seed(0)
    tensors = make(rows + (hidden,), hidden, inter, dtype)
    dy = randn(rows + (hidden,), dtype)
    args = [leaf(t) for t in tensors]
    y = tile.ops.swiglu_mlp(*args, shards=shards)
    y.backward(dy)
    refs = [leaf(t.double()) for t in tensors]
    ref = swiglu_mlp(*refs)
    ref.backward(dy.double())
    assert_close(y, ref, dtype, "forward")
    for got, want, name in zip(args, refs, ("x", "gate", "up", "down")):
        assert got.grad.dtype == dtype
        assert_close(got.grad, want.grad, dtype, f"d{name}")


def test_main_grad_over_micro_batches():
    torch.manual_seed(1)
    _, *ws = make((1,), 256, 768, torch.bfloat16)
    gate, up, down = (leaf(w) for w in ws)
    for w in (gate, up, down):
        w.main_grad = torch.full(w.shape, 0.25, device="cuda")
    expected = [torch.full(w.shape, 0.25, dtype=torch.float64, device="cuda")
                for w in (gate, up, down)]
    for _ in range(3):
        x = leaf(randn((700, 256), torch.bfloat16))
        dy = randn((700, 256), torch.bfloat16)
        tile.ops.swiglu_mlp(x, gate, up, down, shards=3,
                            main_grad=True).backward(dy)
        refs = [leaf(t.double()) for t in (x, gate, up, down)]
        swiglu_mlp(*refs).backward(dy.double())
        assert_close(x.grad, refs[0].grad, torch.bfloat16, "dx")
        for e, r in zip(expected, refs[1:]):
            e += r.grad
    for w, e in zip((gate, up, down), expected):
        assert w.grad is None
        assert_close(w.main_grad, e, torch.bfloat16, "main_grad")


def test_cuda_graph_replay_gives_the_eager_bits():
    torch.manual_seed(2)
    x0, *ws0 = make((1024, 512), 512, 1024, torch.bfloat16)
    dy = randn((1024, 512), torch.bfloat16)

    def step(x, gate, up, down):
        y = tile.ops.swiglu_mlp(x, gate, up, down, shards=4)
        loss = (y.float() * dy.float()).sum()
        return (y, *torch.autograd.grad(loss, (x, gate, up, down)))

    eager = [t.detach().clone() for t in step(*[leaf(t) for t in (x0, *ws0)])]
    args = [leaf(t) for t in (x0, *ws0)]
    assert_replay_matches(step, args, eager)


def test_runs_on_the_current_stream():
    torch.manual_seed(3)
    tensors = make((2048, 1024), 1024, 2048, torch.bfloat16)
    expected = tile.ops.swiglu_mlp(*tensors, shards=2)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(5):
            got = tile.ops.swiglu_mlp(*tensors, shards=2)
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    assert torch.equal(got, expected)


class MLP(torch.nn.Module):
    def __init__(self, hidden, inter):
        super().__init__()
        s = hidden ** -0.5
        self.gate = torch.nn.Parameter(randn((inter, hidden), torch.bfloat16, s))
        self.up = torch.nn.Parameter(randn((inter, hidden), torch.bfloat16, s))
        self.down = torch.nn.Parameter(randn((hidden, inter), torch.bfloat16,
                                             inter ** -0.5))

    def forward(self, x):
        return x + tile.ops.swiglu_mlp(x, self.gate, self.up, self.down,
                                       shards=2)


def test_torch_compile_fullgraph():
    torch._dynamo.reset()
    torch.manual_seed(4)
    model = MLP(256, 512)
    x = randn((4, 64, 256), torch.bfloat16)
    expected = model(leaf(x))
    expected.float().sum().backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    got = torch.compile(model, fullgraph=True)(leaf(x))
    got.float().sum().backward()
    assert_close(got, expected, torch.bfloat16, "compiled forward")
    for p, e in zip(model.parameters(), grads):
        assert_close(p.grad, e, torch.bfloat16, "compiled gradient")


def test_errors():
    x, gate, up, down = make((8, 64), 64, 128, torch.bfloat16)
    with pytest.raises(ValueError, match="gate is on cpu but x is on cuda"):
        tile.ops.swiglu_mlp(x, gate.cpu(), up, down)
    with pytest.raises(tile.TileError, match="memory budget of 4096 bytes"):
        tile.ops.swiglu_mlp(x, gate, up, down, memory_budget=4096)
    with pytest.raises(TypeError, match="float64"):
        tile.ops.swiglu_mlp(*(t.double() for t in (x, gate, up, down)))


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="one GPU")
def test_second_device():
    torch.manual_seed(5)
    tensors = [t.to("cuda:1") for t in make((300, 128), 128, 256,
                                            torch.bfloat16)]
    with torch.cuda.device(0):  # the current device is another one
        y = tile.ops.swiglu_mlp(*tensors, shards=2)
    assert y.device == tensors[0].device
    assert_close(y, swiglu_mlp(*tensors), torch.bfloat16, "cuda:1")
