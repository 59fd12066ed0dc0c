"""tile from PyTorch on the GPU: operators and every test/Zoo kernel against
PyTorch references in bf16/f16/f32 (the GPU suite's tolerances), CUDA-graph
capture and replay, torch.compile(fullgraph=True), two streams, main_grad,
a second device where there is one, and errors. Skipped without CUDA."""

import pytest
import torch

import tile
from conftest import (ZOO, ZOO_CASES, assert_close, assert_replay_matches,
                      leaf, randn, rms_norm, silu)

pytestmark = [pytest.mark.skipif(not torch.cuda.is_available(),
                                 reason="no CUDA device"),
              pytest.mark.usefixtures("poison_the_allocator")]

DTYPES = [torch.bfloat16, torch.float16, torch.float32]
SHAPES = [(4096, 1024), (3, 7, 1000), (1, 8), (257, 2048)]



def run_and_grads(function, args, seed):
    args = [leaf(a) if isinstance(a, torch.Tensor) else a for a in args]
    out = function(*args)
    out = out if isinstance(out, tuple) else (out,)
    torch.autograd.backward([o for o in out], [s.to(o.dtype) for o, s in
                                               zip(out, seed)])
    return out, [a.grad if isinstance(a, torch.Tensor) else None
                 for a in args]


def reference_and_grads(reference, args, seed):
    args = [leaf(a.double()) if isinstance(a, torch.Tensor) else a
            for a in args]
    out = reference(*args)
    out = out if isinstance(out, tuple) else (out,)
    torch.autograd.backward(list(out), [s.double() for s in seed])
    return out, [a.grad if isinstance(a, torch.Tensor) else None
                 for a in args]


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


def _zoo_dtypes(name):
    source = (ZOO / f"{name}.mlir").read_text()
    return DTYPES if ("bf16" in source or "xf16" in source) else [
        torch.float32]


@pytest.mark.parametrize("name", sorted(ZOO_CASES))
@pytest.mark.parametrize("policy", ["recompute", "save-row-stats"])
def test_zoo_kernels_match_pytorch(name, policy):
    reference, make = ZOO_CASES[name]
    kernel = tile.Kernel(ZOO / f"{name}.mlir", policy=policy)
    for dtype in _zoo_dtypes(name):
        for rows, width in [(64, 1024), (5, 333)]:
            g = torch.Generator().manual_seed(rows)
            args = make(rows, width, dtype, g)
            if args is None:  # the kernel takes no such width
                continue
            args = [a.cuda() if isinstance(a, torch.Tensor) else a
                    for a in args]
            seed = [randn((rows, width), torch.float32)
                    for _ in kernel.forward_info.results]
            out, grads = run_and_grads(kernel, args, seed)
            ref, ref_grads = reference_and_grads(reference, args, seed)
            for o, r in zip(out, ref):
                assert_close(o, r, dtype, f"{name} {dtype} forward")
            for g_, r, info in zip(grads, ref_grads,
                                   kernel.forward_info.arguments):
                if info.differentiable and r is not None:
                    assert_close(g_, r, dtype, f"{name} {dtype} gradient")


def test_cuda_graph_replay_gives_the_eager_bits():
    torch.manual_seed(1)
    x0 = randn((512, 2048), torch.bfloat16)
    w0 = randn((2048,), torch.bfloat16)
    dy = randn((512, 2048), torch.bfloat16)

    def step(x, w):  # grads returned, not accumulated into .grad
        y = tile.ops.rms_norm(x, w, 1e-6, 0.0)
        # The loss (and so the gradients' seed) is made inside the step:
        # a seed from outside the capture would tie its stream to it.
        loss = (y.float() * dy.float()).sum()
        return (y, *torch.autograd.grad(loss, (x, w)))

    eager = [t.detach().clone() for t in step(leaf(x0), leaf(w0))]
    # The captured leaves are the graph's own (an autograd node made on the
    # default stream and kept alive would join the capture).
    assert_replay_matches(step, [leaf(x0), leaf(w0)], eager)


class Block(torch.nn.Module):
    def __init__(self, width, dtype):
        super().__init__()
        self.norm = torch.nn.Parameter(torch.rand(width, dtype=dtype) + 0.5)
        self.up = torch.nn.Linear(width, 4 * width, dtype=dtype,
                                  bias=False)
        self.down = torch.nn.Linear(2 * width, width, dtype=dtype,
                                    bias=False)

    def forward(self, x):
        h = tile.ops.rms_norm(x, self.norm, 1e-6, 0.0)
        return x + self.down(tile.ops.silu_and_mul(self.up(h)))


def test_torch_compile_fullgraph():
    torch._dynamo.reset()
    torch.manual_seed(2)
    model = Block(256, torch.bfloat16).cuda()
    x = randn((8, 32, 256), torch.bfloat16)
    expected = model(leaf(x))
    expected.float().sum().backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    compiled = torch.compile(model, fullgraph=True)
    got = compiled(leaf(x))
    got.float().sum().backward()
    assert_close(got, expected, torch.bfloat16, "compiled forward")
    for p, e in zip(model.parameters(), grads):
        assert_close(p.grad, e, torch.bfloat16, "compiled gradient")


def test_two_streams():
    torch.manual_seed(3)
    a = [randn((1024, 4096), torch.bfloat16) for _ in range(2)]
    b = [randn((1024, 4096), torch.bfloat16) for _ in range(2)]
    expected = [tile.ops.swiglu(x, y) for x, y in zip(a, b)]
    streams = [torch.cuda.Stream(), torch.cuda.Stream()]
    results = [None, None]
    for i, stream in enumerate(streams):
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(20):
                results[i] = tile.ops.swiglu(a[i], b[i])
    for stream in streams:
        torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    for got, want in zip(results, expected):
        assert torch.equal(got, want)


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


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="one GPU")
def test_second_device():
    torch.manual_seed(5)
    x = randn((64, 512), torch.bfloat16).to("cuda:1")
    w = randn((512,), torch.bfloat16).to("cuda:1")
    with torch.cuda.device(0):  # the current device is another one
        y = tile.ops.rms_norm(x, w, 1e-6, 0.0)
    assert y.device == x.device
    assert_close(y, rms_norm(x, w, 1e-6, 0.0), torch.bfloat16, "cuda:1")
    with pytest.raises(ValueError, match="on cuda:0, but"):
        tile.ops.swiglu(x, x.to("cuda:0"))


def test_gpu_errors():
    x = randn((4, 8), torch.bfloat16)
    with pytest.raises(ValueError, match=r"#1 \(b\) of swiglu is on cpu, but"):
        tile.ops.swiglu(x, x.cpu())
    with pytest.raises(TypeError, match="float64: on the GPU"):
        tile.ops.swiglu(x.double(), x.double())
    with pytest.raises(tile.TileError, match=r"#1 \(w\).*dtype f16, expected bf16"):
        tile.ops.rms_norm(x, randn((8,), torch.float16))
    with pytest.raises(tile.TileError, match="w1 == w0"):
        tile.ops.rms_norm(x, randn((9,), torch.bfloat16))
