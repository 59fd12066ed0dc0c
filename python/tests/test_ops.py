"""The operators of tile.ops -- swiglu, geglu, silu_and_mul and rms_norm
(plain and with Gemma's offset) -- against PyTorch: on the CPU in float64
(forward, gradients, gradcheck) and rounded like the GPU in bf16/f16/f32;
on the GPU (the tests marked gpu) in bf16/f16/f32 over four shapes with the
GPU suite's tolerances. Also the gated activations' in-place backward and
rms_norm's main_grad. tile.Kernel, torch.compile, CUDA graphs, streams,
devices and errors: test_kernel.py; tile.ops.rope: test_rope.py; the MLPs:
test_mlp.py and test_grouped_mlp.py."""

import pytest
import torch

import tile
from conftest import (DTYPES, assert_close, grads_of, leaf, randn,
                      reference_and_grads, rms_norm, run_and_grads, silu)


# -- against PyTorch -----------------------------------------------------------

def test_operators_float64_match_pytorch(generator):
    x = torch.randn(2, 3, 64, dtype=torch.float64, generator=generator)
    a, b = x, torch.randn(2, 3, 64, dtype=torch.float64, generator=generator)
    w = torch.randn(64, dtype=torch.float64, generator=generator)
    cases = [
        (tile.ops.swiglu, lambda a, b: silu(a) * b, [a, b]),
        (tile.ops.silu_and_mul,
         lambda x: silu(x[..., :32]) * x[..., 32:], [x]),
        (lambda x, w: tile.ops.rms_norm(x, w, 1e-6, 0.0),
         lambda x, w: rms_norm(x, w, 1e-6, 0.0), [x, w]),
        (lambda x, w: tile.ops.rms_norm(x, w, 1e-6, 1.0),  # Gemma
         lambda x, w: rms_norm(x, w, 1e-6, 1.0), [x, w]),
    ]
    for ours, reference, args in cases:
        seed = [torch.randn(2, 3, 32 if ours is tile.ops.silu_and_mul else 64,
                            dtype=torch.float64, generator=generator)]
        out, grads = grads_of(ours, args, seed)
        ref, ref_grads = grads_of(reference, args, seed)
        assert out[0].shape == ref[0].shape
        assert out[0].dtype == torch.float64
        assert_close(out[0], ref[0], torch.float64, "forward")
        for g, r in zip(grads, ref_grads):
            assert_close(g, r, torch.float64, "gradient")


def test_gradcheck_operators(generator):
    x = torch.randn(5, 16, dtype=torch.float64, generator=generator)
    w = torch.randn(16, dtype=torch.float64, generator=generator)
    assert torch.autograd.gradcheck(tile.ops.swiglu, (leaf(x), leaf(x * 0.5)))
    assert torch.autograd.gradcheck(tile.ops.silu_and_mul, (leaf(x),))
    assert torch.autograd.gradcheck(
        lambda x, w: tile.ops.rms_norm(x, w, 1e-5, 1.0), (leaf(x), leaf(w)))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16,
                                   torch.float32])
def test_operators_low_precision_round_like_the_gpu(dtype, generator):
    x = torch.randn(4, 128, generator=generator).to(dtype)
    w = torch.randn(128, generator=generator).to(dtype)
    y = tile.ops.rms_norm(x, w, 1e-6, 0.0)
    assert y.dtype == dtype and y.shape == x.shape
    assert_close(y, rms_norm(x, w, 1e-6, 0.0), dtype, "rms_norm")
    x, w = leaf(x), leaf(w)
    tile.ops.rms_norm(x, w).float().sum().backward()
    assert x.grad.dtype == dtype and w.grad.dtype == dtype
    x64, w64 = leaf(x.double()), leaf(w.double())
    rms_norm(x64, w64, 1e-6, 0.0).sum().backward()
    assert_close(x.grad, x64.grad, dtype, "dx")
    assert_close(w.grad, w64.grad, dtype, "dw")


SHAPES = [(4096, 1024), (3, 7, 1000), (1, 8), (257, 2048)]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_operators_match_pytorch(dtype, shape):
    torch.manual_seed(0)
    width = shape[-1]
    x = randn(shape, dtype)
    w = randn((width,), dtype)
    cases = [
        ("swiglu", tile.ops.swiglu, lambda a, b: silu(a) * b,
         [x, randn(shape, dtype)], shape),
        ("rms_norm", lambda x, w: tile.ops.rms_norm(x, w, 1e-6, 0.0),
         lambda x, w: rms_norm(x, w, 1e-6, 0.0), [x, w], shape),
        ("rms_norm gemma", lambda x, w: tile.ops.rms_norm(x, w, 1e-6, 1.0),
         lambda x, w: rms_norm(x, w, 1e-6, 1.0), [x, w], shape),
    ]
    if width % 2 == 0:
        half = shape[:-1] + (width // 2,)
        cases.append(("silu_and_mul", tile.ops.silu_and_mul,
                      lambda x: silu(x[..., :width // 2]) * x[..., width // 2:],
                      [x], half))
    for name, ours, reference, args, out_shape in cases:
        seed = [randn(out_shape, torch.float32)]
        out, grads = run_and_grads(ours, args, seed)
        ref, ref_grads = reference_and_grads(reference, args, seed)
        assert out[0].dtype == dtype and out[0].shape == ref[0].shape
        assert_close(out[0], ref[0], dtype, f"{name} forward")
        for g, r in zip(grads, ref_grads):
            if r is not None:
                # A cross-row gradient (dW) sums `rows` terms: relative to
                # its scale, as the GPU suite compares it.
                assert_close(g, r, dtype, f"{name} gradient")


# -- the in-place backward -----------------------------------------------------

@pytest.mark.parametrize("name", ["swiglu", "geglu"])
def test_inplace_backward_writes_the_gradients_over_the_inputs(name,
                                                               generator):
    op = getattr(tile.ops, name)
    a0, b0 = (torch.randn(3, 64, dtype=torch.float64, generator=generator)
              for _ in range(2))
    seed = torch.randn(3, 64, dtype=torch.float64, generator=generator)
    out, grads = grads_of(op, [a0, b0], [seed])
    a1, b1 = leaf(a0), leaf(b0)
    # Not leaves: private to the call, as a gated MLP's projections are.
    a, b = a1 * 1, b1 * 1
    y = op(a, b, inplace_backward=True)
    assert torch.equal(y, out[0])
    y.backward(seed)
    assert torch.equal(a1.grad, grads[0]) and torch.equal(b1.grad, grads[1])
    assert torch.equal(a, grads[0]) and torch.equal(b, grads[1])
    x = torch.randn(4, 8)
    with pytest.raises(tile.TileError, match=r"#1 \(b\).*dtype"):
        op(x.half(), x.bfloat16(), inplace_backward=True)


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["swiglu", "geglu"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_inplace_backward_gives_the_same_bits(name, dtype):
    torch.manual_seed(6)
    op = getattr(tile.ops, name)
    a0, b0, dy = (randn((4096, 1024), dtype) for _ in range(3))
    a1, b1 = leaf(a0), leaf(b0)
    op(a1, b1).backward(dy)
    a2, b2 = leaf(a0), leaf(b0)
    a, b = a2 * 1, b2 * 1  # private to the call, as in a gated MLP
    y = op(a, b, inplace_backward=True)
    assert torch.equal(y, op(a0, b0))
    y.backward(dy)
    assert torch.equal(a2.grad, a1.grad) and torch.equal(b2.grad, b1.grad)
    assert torch.equal(a, a1.grad) and torch.equal(b, b1.grad)


# -- main_grad -----------------------------------------------------------------

def test_main_grad_accumulates_the_weight_gradient(generator):
    x = leaf(torch.randn(4, 16, dtype=torch.float64, generator=generator))
    w = leaf(torch.randn(16, dtype=torch.float64, generator=generator))
    w.main_grad = torch.ones(16, dtype=torch.float32)
    tile.ops.rms_norm(x, w, 1e-6, 0.0, main_grad=True).sum().backward()
    x2, w2 = leaf(x), leaf(w)
    rms_norm(x2, w2, 1e-6, 0.0).sum().backward()
    assert w.grad is None  # it went to main_grad
    assert_close(w.main_grad - 1, w2.grad, torch.float32, "main_grad")
    assert_close(x.grad, x2.grad, torch.float64, "dx")


def test_main_grad_missing_is_an_error():
    """The accumulator is looked up when the forward runs (it is an input
    of the node), so a missing one fails there, before any kernel."""
    x = leaf(torch.randn(4, 16, dtype=torch.float64))
    w = leaf(torch.randn(16, dtype=torch.float64))
    with pytest.raises(RuntimeError, match=r"\(w\).*main_grad"):
        tile.ops.rms_norm(x, w, main_grad=True)
    assert not hasattr(w, "grad_added_to_main_grad")


@pytest.mark.gpu
def test_main_grad_on_the_gpu():
    torch.manual_seed(4)
    x = leaf(randn((300, 1024), torch.bfloat16))
    w = leaf(randn((1024,), torch.bfloat16))
    w.main_grad = torch.full((1024,), 0.5, device="cuda")
    dy = randn((300, 1024), torch.bfloat16)
    tile.ops.rms_norm(x, w, 1e-6, 0.0, main_grad=True).backward(dy)
    x2, w2 = leaf(x.double()), leaf(w.double())
    rms_norm(x2, w2, 1e-6, 0.0).backward(dy.double())
    assert w.grad is None
    assert_close(w.main_grad - 0.5, w2.grad, torch.bfloat16, "main_grad")
