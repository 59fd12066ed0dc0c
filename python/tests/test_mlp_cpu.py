"""tile.ops.swiglu_mlp on the CPU: the tiled MLP's steps in float64 (GEMMs
in torch, SwiGLU and its derived backward on the reference evaluator),
its autograd, main_grad, torch.compile and errors. Runs in CI."""

import pytest
import torch

import tile
from conftest import assert_close, leaf, swiglu_mlp


def weights(hidden, inter, dtype, generator, scale=0.3):
    def make(*shape):
        return (torch.randn(*shape, dtype=torch.float64, generator=generator)
                * scale).to(dtype)
    return make(inter, hidden), make(inter, hidden), make(hidden, inter)



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
