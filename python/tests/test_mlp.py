"""tile.ops.swiglu_mlp, the sequence-tiled SwiGLU MLP (tile/mlp.py). On the
CPU (runs in CI): its steps in float64 (GEMMs in torch, SwiGLU and its
derived backward on the reference evaluator) against the reference and
gradcheck, bf16/f16/f32 rounding, main_grad, torch.compile, the plan and
errors. On the GPU (the tests marked gpu; tile::ops::TiledSwiGLUMLP through
the C API): forward and gradients against float64 in bf16/f16/f32 for
several shard counts, main_grad over micro-batches, CUDA-graph replay, a
stream of its own, torch.compile (Inductor), a second device and errors.
The grouped MLP (the same code path, E experts): test_grouped_mlp.py."""

import pytest
import torch

import tile
from conftest import (assert_close, assert_replay_matches, leaf, randn,
                      swiglu_mlp)


def weights(hidden, inter, dtype, generator, scale=0.3):
    """The CPU tests' gate, up and down: float64 normal values times
    `scale`, stored in `dtype`."""
    def make(*shape):
        return (torch.randn(*shape, dtype=torch.float64, generator=generator)
                * scale).to(dtype)
    return make(inter, hidden), make(inter, hidden), make(hidden, inter)


def make(rows, hidden, inter, dtype):
    """The GPU tests' x (of shape `rows`), gate, up and down on the GPU,
    the weights scaled by their fan-in to the power -1/2."""
    x = randn(rows, dtype)
    scale = hidden ** -0.5
    return (x, randn((inter, hidden), dtype, scale),
            randn((inter, hidden), dtype, scale),
            randn((hidden, inter), dtype, inter ** -0.5))


# -- against float64 -----------------------------------------------------------

def test_float64_matches_the_reference_and_gradcheck(generator):
    x = torch.randn(2, 3, 16, dtype=torch.float64, generator=generator)
    gate, up, down = weights(16, 24, torch.float64, generator)
    args = [leaf(t) for t in (x, gate, up, down)]
    y = tile.ops.swiglu_mlp(*args)
    assert y.shape == x.shape
    assert_close(y, swiglu_mlp(x, gate, up, down), torch.float64, "forward")
    assert torch.autograd.gradcheck(
        lambda *a: tile.ops.swiglu_mlp(*a, shards=2), args)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16,
                                   torch.float32])
def test_low_precision_rounds_like_the_gpu(dtype, generator):
    x = torch.randn(37, 64, dtype=torch.float64, generator=generator)
    gate, up, down = weights(64, 100, torch.float64, generator)
    dy = torch.randn(37, 64, dtype=torch.float64, generator=generator)
    args = [leaf(t.to(dtype)) for t in (x, gate, up, down)]
    y = tile.ops.swiglu_mlp(*args)
    y.backward(dy.to(dtype))
    refs = [leaf(t.to(dtype).double()) for t in (x, gate, up, down)]
    ref = swiglu_mlp(*refs)
    ref.backward(dy.to(dtype).double())
    assert y.dtype == dtype
    assert_close(y, ref, dtype, "forward")
    for got, want, name in zip(args, refs, ("x", "gate", "up", "down")):
        assert got.grad.dtype == dtype
        assert_close(got.grad, want.grad, dtype, f"d{name}")


@pytest.mark.gpu
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


# -- main_grad -----------------------------------------------------------------

def test_main_grad_accumulates_and_autograd_gets_none(generator):
    gate, up, down = (leaf(w) for w in
                      weights(16, 24, torch.float64, generator))
    for w in (gate, up, down):
        w.main_grad = torch.zeros_like(w)
    expected = [torch.zeros_like(w) for w in (gate, up, down)]
    for _ in range(3):  # micro-batches
        x = leaf(torch.randn(5, 16, dtype=torch.float64, generator=generator))
        dy = torch.randn(5, 16, dtype=torch.float64, generator=generator)
        tile.ops.swiglu_mlp(x, gate, up, down, main_grad=True).backward(dy)
        refs = [leaf(t) for t in (x, gate, up, down)]
        swiglu_mlp(*refs).backward(dy)
        assert_close(x.grad, refs[0].grad, torch.float64, "dx")
        for e, r in zip(expected, refs[1:]):
            e += r.grad
    for w, e in zip((gate, up, down), expected):
        assert w.grad is None  # never handed to autograd as well
        assert_close(w.main_grad, e, torch.float64, "main_grad")


@pytest.mark.gpu
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


# -- torch.compile -------------------------------------------------------------

def test_torch_compile_fullgraph(generator):
    torch._dynamo.reset()
    x = torch.randn(4, 16, dtype=torch.float64, generator=generator)
    ws = weights(16, 24, torch.float64, generator)

    def step(x, gate, up, down):
        return tile.ops.swiglu_mlp(x, gate, up, down, shards=2).sum()

    eager = [leaf(t) for t in (x, *ws)]
    step(*eager).backward()
    compiled = [leaf(t) for t in (x, *ws)]
    torch.compile(step, fullgraph=True, backend="aot_eager")(
        *compiled).backward()
    for e, c in zip(eager, compiled):
        assert_close(c.grad, e.grad, torch.float64, "compiled gradient")


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


@pytest.mark.gpu
def test_torch_compile_fullgraph_on_the_gpu():
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


# -- CUDA graphs, streams and devices ------------------------------------------

@pytest.mark.gpu
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


@pytest.mark.gpu
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


@pytest.mark.gpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="one GPU")
def test_second_device():
    torch.manual_seed(5)
    tensors = [t.to("cuda:1") for t in make((300, 128), 128, 256,
                                            torch.bfloat16)]
    with torch.cuda.device(0):  # the current device is another one
        y = tile.ops.swiglu_mlp(*tensors, shards=2)
    assert y.device == tensors[0].device
    assert_close(y, swiglu_mlp(*tensors), torch.bfloat16, "cuda:1")


# -- the plan and bad input ----------------------------------------------------

def test_plan_needs_no_gpu():
    count, rows, workspace = tile.mlp.plan(1000, 300, torch.bfloat16,
                                           shards=4)
    assert (count, rows) == (4, 250)
    assert workspace == (32 << 20) + 3 * ((250 * 300 * 2 + 255) // 256 * 256)
    count, rows, _ = tile.mlp.plan(100000, 14336, torch.bfloat16)
    assert rows % 64 == 0 and count * rows >= 100000
    with pytest.raises(tile.TileError, match="memory budget of 1000 bytes"):
        tile.mlp.plan(10, 300, torch.bfloat16, memory_budget=1000)


def test_errors_name_the_tensor_and_the_rule(generator):
    x = torch.randn(4, 16, generator=generator)
    gate, up, down = weights(16, 24, torch.float32, generator)
    mlp = tile.ops.swiglu_mlp
    with pytest.raises(ValueError, match=r"gate must be \[I, H\] = \[I, 16\]"):
        mlp(x, gate.T.contiguous(), up, down)
    with pytest.raises(ValueError, match=r"up must be \[I, H\] = \[24, 16\]"):
        mlp(x, gate, up[:20], down)
    with pytest.raises(ValueError, match=r"down must be \[H, I\]"):
        mlp(x, gate, up, down.T.contiguous())
    with pytest.raises(TypeError, match="up is torch.float16 but x is"):
        mlp(x, gate, up.half(), down)
    with pytest.raises(ValueError, match="down is not contiguous"):
        mlp(x, gate, up, torch.randn(24, 16).T)
    with pytest.raises(ValueError, match="gate is on meta but x is on cpu"):
        mlp(x, gate.to("meta"), up, down)
    with pytest.raises(TypeError, match="x has dtype torch.int64"):
        mlp(x.long(), gate, up, down)
    with pytest.raises(ValueError, match="shards must be an int"):
        mlp(x, gate, up, down, shards=-1)
    w = leaf(gate)
    with pytest.raises(RuntimeError, match="gate weight has no .main_grad"):
        mlp(x, w, up, down, main_grad=True).sum().backward()
    w.main_grad = torch.zeros(24, 16, dtype=torch.float64)
    with pytest.raises(RuntimeError, match="must be a contiguous "
                                           "torch.float32 tensor"):
        mlp(x, w, up, down, main_grad=True).sum().backward()


@pytest.mark.gpu
def test_errors():
    x, gate, up, down = make((8, 64), 64, 128, torch.bfloat16)
    with pytest.raises(ValueError, match="gate is on cpu but x is on cuda"):
        tile.ops.swiglu_mlp(x, gate.cpu(), up, down)
    with pytest.raises(tile.TileError, match="memory budget of 4096 bytes"):
        tile.ops.swiglu_mlp(x, gate, up, down, memory_budget=4096)
    with pytest.raises(TypeError, match="float64"):
        tile.ops.swiglu_mlp(*(t.double() for t in (x, gate, up, down)))
