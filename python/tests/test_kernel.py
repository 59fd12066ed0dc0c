"""tile.Kernel and the layer every operator runs through, on the CPU (the
float64 reference evaluator; runs in CI) and on the GPU (the tests marked
gpu): a kernel of one's own in a few lines; every test/Zoo kernel against
PyTorch under both policies (float64 and gradcheck on the CPU, bf16/f16/f32
with the GPU suite's tolerances on the GPU); which arguments get gradients;
the torch custom op (opcheck); torch.compile(fullgraph=True), also as an
operator's first call; CUDA-graph capture and replay, two streams, a second
device; argument and source errors; the persistent grids' sizes and the
package's version. The operators' numerics: test_ops.py."""

import pytest
import torch

import tile
from conftest import (DTYPES, ZOO, ZOO_CASES, assert_close, zoo_kernel,
                      assert_replay_matches, grads_of, leaf, randn,
                      reference_and_grads, result_shapes, rms_norm,
                      run_and_grads)


# -- a kernel of one's own -----------------------------------------------------

def test_user_kernel_in_a_few_lines():
    source = """
    func.func @scaled_tanh(%x: tensor<?x?xf32>, %s: f32 {tile.nograd})
        -> tensor<?x?xf32> attributes {tile.kernel} {
      %sv = tile.splat %s like %x : f32, tensor<?x?xf32> -> tensor<?x?xf32>
      %t = math.tanh %x : tensor<?x?xf32>
      %y = arith.mulf %t, %sv : tensor<?x?xf32>
      return %y : tensor<?x?xf32>
    }"""
    kernel = tile.Kernel(source)
    x = leaf(torch.randn(2, 5, 7, dtype=torch.float64))
    y = kernel(x, 3.0)
    assert y.shape == (2, 5, 7)
    y.sum().backward()
    assert_close(x.grad, 3.0 * (1 - torch.tanh(x.detach()) ** 2),
                 torch.float64, "d tanh")


@pytest.mark.parametrize("kind", ["max", "min"])
def test_a_tied_row_extreme_shares_its_cotangent(kind):
    """A row's maximum (minimum) reached by several elements: each gets an
    equal share of the cotangent, as torch.amax (amin) gives it, so that the
    shares add up to the cotangent (each taking all of it made the gradient
    k times too large on a k-way tie, as bf16 rows often have)."""
    kernel = tile.Kernel(f"""
    func.func @extreme(%x: tensor<?x?xf32>) -> tensor<?xf32>
        attributes {{tile.kernel}} {{
      %m = tile.reduce {kind} %x [1] : tensor<?x?xf32> -> tensor<?xf32>
      return %m : tensor<?xf32>
    }}""")
    x = torch.tensor([[1.0, 3.0, 3.0, 2.0, 3.0], [0.0, 0.0, 5.0, -1.0, -1.0],
                      [4.0, 4.0, 4.0, 4.0, 4.0]], dtype=torch.float64)
    seed = torch.tensor([6.0, 2.0, 10.0], dtype=torch.float64)
    _, (got,) = grads_of(kernel, [x], [seed])
    _, (want,) = grads_of(lambda t: getattr(torch, f"a{kind}")(t, -1), [x],
                          [seed])
    assert_close(got, want, torch.float64, f"d {kind}")
    assert torch.allclose(got.sum(-1), seed)


def test_a_backward_reads_the_forward_result_it_would_recompute():
    """residual_rms_norm returns h = x + alpha r, which its backward needs:
    it reads h rather than recomputing it from x and r (one tensor read
    instead of two), so autograd keeps h, and a backward after h was
    changed in place is refused rather than silently wrong."""
    kernel = tile.Kernel(zoo_kernel("residual_rms_norm"))
    x, r = (leaf(torch.randn(3, 8, dtype=torch.float64)) for _ in range(2))
    w = leaf(torch.randn(8, dtype=torch.float64))
    assert kernel.results_read == [1]
    assert tile.Kernel(zoo_kernel("min_max_scale")).results_read == []
    y, h = kernel(x, r, w, 0.5, 1e-6)
    y.sum().backward(retain_graph=True)
    ref_x, ref_r, ref_w = (t.detach().clone().requires_grad_(True)
                           for t in (x, r, w))
    ref_h = ref_x + 0.5 * ref_r
    ref_y = ref_h * torch.rsqrt(ref_h.pow(2).mean(-1, keepdim=True) + 1e-6)
    (ref_y * ref_w).sum().backward()
    for got, want in ((x, ref_x), (r, ref_r), (w, ref_w)):
        assert_close(got.grad, want.grad, torch.float64, "gradient")
    with torch.no_grad():
        h.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace"):
        y.sum().backward()


def test_autograd_keeps_no_input_the_backward_does_not_read():
    """softmax's backward reads the y it returns, never x; residual_rms_norm's
    reads h, never x or r (the signature's reads_data): autograd keeps none
    of them, an activation's memory per call, and the backward gets a
    stand-in of their shape. An input whose gradient is written over it, or
    that holds a main_grad, is kept whatever the backward reads."""
    softmax = tile.Kernel(zoo_kernel("softmax"))
    residual = tile.Kernel(zoo_kernel("residual_rms_norm"))
    assert softmax.arguments_unread == {0}
    assert residual.arguments_unread == {0, 1}
    assert tile.Kernel(zoo_kernel("min_max_scale")).arguments_unread == set()
    x, r = (leaf(torch.randn(2, 3, 8, dtype=torch.float64)) for _ in range(2))
    w = leaf(torch.randn(8, dtype=torch.float64))
    kept = []
    with torch.autograd.graph.saved_tensors_hooks(
            lambda t: kept.append(t.data_ptr()) or t, lambda t: t):
        y = softmax(x)
        out, h = residual(x, r, w, 0.5, 1e-6)
    assert x.data_ptr() not in kept and r.data_ptr() not in kept
    assert w.data_ptr() in kept and h.data_ptr() in kept
    seed = torch.randn(2, 3, 8, dtype=torch.float64)
    (y * seed).sum().backward()
    ref = x.detach().clone().requires_grad_(True)
    (torch.softmax(ref, -1) * seed).sum().backward()
    assert_close(x.grad, ref.grad, torch.float64, "d softmax")
    (out * seed).sum().backward()
    ref_x, ref_r, ref_w = (t.detach().clone().requires_grad_(True)
                           for t in (x, r, w))
    ref_h = ref_x + 0.5 * ref_r
    ref_out = ref_h * torch.rsqrt(ref_h.pow(2).mean(-1, keepdim=True) + 1e-6)
    (ref_out * ref_w * seed).sum().backward()
    assert_close(x.grad - ref.grad, ref_x.grad, torch.float64, "dx")
    assert_close(r.grad, ref_r.grad, torch.float64, "dr")
    assert_close(w.grad, ref_w.grad, torch.float64, "dw")


def test_an_unread_input_with_a_main_grad_is_kept():
    """layer_norm's backward never reads its bias b (db is the sum of the
    cotangent), so autograd keeps no b; with main_grad it is kept, as the
    backward marks b's gradient added to b.main_grad."""
    plain = tile.Kernel(zoo_kernel("layer_norm"))
    accumulating = tile.Kernel(zoo_kernel("layer_norm"), main_grad=True)
    assert plain.arguments_unread == {2}
    x = leaf(torch.randn(3, 8, dtype=torch.float64))
    w, b = (leaf(torch.randn(8, dtype=torch.float64)) for _ in range(2))
    for kernel, kept_b in ((plain, False), (accumulating, True)):
        for p in (w, b):
            p.grad = None
            p.main_grad = torch.zeros(8, dtype=torch.float64)
        kept = []
        with torch.autograd.graph.saved_tensors_hooks(
                lambda t: kept.append(t.data_ptr()) or t, lambda t: t):
            y = kernel(x, w, b, 1e-5)
        assert (b.data_ptr() in kept) == kept_b
        y.sum().backward()
        db = b.main_grad if kept_b else b.grad
        assert_close(db, torch.full((8,), 3.0, dtype=torch.float64),
                     torch.float64, "db")
        if kept_b:
            assert b.grad is None


def test_a_kernel_specialized_for_f32_storage_reads_the_same_results():
    """A bf16 kernel run on f32 tensors is specialized to f32 storage; its
    backward still reads h (the choice does not depend on the storage
    dtype), so every argument, main_grad included, binds by the one
    signature the host module describes."""
    kernel = tile.Kernel(zoo_kernel("residual_rms_norm"), main_grad=True)
    x, r = (leaf(torch.randn(3, 8)) for _ in range(2))
    w = leaf(torch.randn(8))
    w.main_grad = torch.zeros(8)
    y, h = kernel(x, r, w, 0.5, 1e-6)
    (y.sum() + h.sum()).backward()
    ref = [t.detach().double().requires_grad_(True) for t in (x, r, w)]
    ref_h = ref[0] + 0.5 * ref[1]
    ref_y = ref_h * torch.rsqrt(ref_h.pow(2).mean(-1, keepdim=True) + 1e-6)
    ((ref_y * ref[2]).sum() + ref_h.sum()).backward()
    assert_close(x.grad.double(), ref[0].grad, torch.float32, "dx")
    assert_close(r.grad.double(), ref[1].grad, torch.float32, "dr")
    assert_close(w.main_grad.double(), ref[2].grad, torch.float32, "dw")
    assert w.grad is None


# -- every test/Zoo kernel -----------------------------------------------------

@pytest.mark.parametrize("name", sorted(ZOO_CASES))
@pytest.mark.parametrize("policy", ["recompute", "save-row-stats"])
def test_zoo_kernel_matches_pytorch(name, policy, generator):
    reference, make = ZOO_CASES[name]
    kernel = tile.Kernel(zoo_kernel(name), policy=policy)
    args = make(6, 24, torch.float64, generator)
    seed = [torch.randn(shape, dtype=torch.float64,
                        generator=torch.Generator().manual_seed(7))
            for shape in result_shapes(reference, args)]
    out, grads = grads_of(kernel, args, seed)
    ref, ref_grads = grads_of(reference, args, seed)
    # The kernels' constants are f32 (gelu's sqrt(2/pi)): exact evaluation
    # of the kernel differs from the float64 formula by their rounding.
    for o, r in zip(out, ref):
        assert_close(o, r, torch.float32, f"{name} forward")
    differentiable = [info.differentiable
                      for info in kernel.forward_info.arguments]
    for g, r, d in zip(grads, ref_grads, differentiable):
        if d:
            assert_close(g, r, torch.float32, f"{name} gradient")
        else:
            assert g is None


@pytest.mark.parametrize("name", sorted(ZOO_CASES))
def test_zoo_gradcheck(name, generator):
    reference, make = ZOO_CASES[name]
    kernel = tile.Kernel(zoo_kernel(name))
    # Only what the kernel differentiates asks for a gradient (rope's cos
    # and sin are tile.nograd: their gradient is not derived).
    args = [leaf(a) if isinstance(a, torch.Tensor) and info.differentiable
            else a for a, info in zip(make(3, 8, torch.float64, generator),
                                      kernel.forward_info.arguments)]
    assert torch.autograd.gradcheck(kernel, tuple(args))


def _zoo_dtypes(name):
    source = (zoo_kernel(name)).read_text()
    return DTYPES if ("bf16" in source or "xf16" in source) else [
        torch.float32]


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(ZOO_CASES))
@pytest.mark.parametrize("policy", ["recompute", "save-row-stats"])
def test_zoo_kernels_match_pytorch(name, policy):
    reference, make = ZOO_CASES[name]
    kernel = tile.Kernel(zoo_kernel(name), policy=policy)
    for dtype in _zoo_dtypes(name):
        for rows, width in [(64, 1024), (5, 333)]:
            g = torch.Generator().manual_seed(rows)
            args = make(rows, width, dtype, g)
            if args is None:  # the kernel takes no such width
                continue
            args = [a.cuda() if isinstance(a, torch.Tensor) else a
                    for a in args]
            seed = [randn(shape, torch.float32)
                    for shape in result_shapes(reference, args)]
            out, grads = run_and_grads(kernel, args, seed)
            ref, ref_grads = reference_and_grads(reference, args, seed)
            for o, r in zip(out, ref):
                assert_close(o, r, dtype, f"{name} {dtype} forward")
            for g_, r, info in zip(grads, ref_grads,
                                   kernel.forward_info.arguments):
                if info.differentiable and r is not None:
                    assert_close(g_, r, dtype, f"{name} {dtype} gradient")


# -- autograd ------------------------------------------------------------------

def test_nograd_arguments_get_no_gradient(generator):
    x = leaf(torch.randn(3, 8, dtype=torch.float64, generator=generator))
    w = leaf(torch.randn(8, dtype=torch.float64, generator=generator))
    kernel = tile.operators.kernel("rms_norm")
    assert [a.differentiable for a in kernel.forward_info.arguments] == [
        True, True, False, False]
    out = tile.ops.rms_norm(x, w, 1e-6, 0.0)
    grads = torch.autograd.grad(out.sum(), (x, w))
    assert all(g is not None for g in grads)


def test_no_autograd_without_requires_grad(generator):
    x = torch.randn(3, 8, dtype=torch.float64, generator=generator)
    y = tile.ops.swiglu(x, x)
    assert y.grad_fn is None
    with torch.no_grad():
        assert tile.ops.swiglu(leaf(x), x).grad_fn is None


# -- the custom op and torch.compile -------------------------------------------

def test_custom_op_passes_opcheck(generator):
    kernel = tile.operators.kernel("rms_norm")
    x = torch.randn(3, 16, dtype=torch.float32, generator=generator)
    w = torch.randn(16, dtype=torch.float32, generator=generator)
    torch.library.opcheck(torch.ops.tile.launch.default,
                          (kernel.key, "rms_norm", "ttff", [x, w],
                           [1e-6, 0.0], []),
                          test_utils=("test_schema", "test_faketensor"))


class Block(torch.nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = torch.nn.Parameter(torch.rand(width, dtype=torch.float64))
        self.up = torch.nn.Linear(width, 4 * width, dtype=torch.float64)

    def forward(self, x):
        h = tile.ops.rms_norm(x, self.norm, 1e-6, 0.0)
        return tile.ops.silu_and_mul(self.up(h)).sum(-1)


def test_torch_compile_fullgraph_without_graph_breaks(generator):
    torch._dynamo.reset()
    model = Block(16)
    x = torch.randn(3, 16, dtype=torch.float64, generator=generator)
    eager_params = [p.detach().clone() for p in model.parameters()]
    expected = model(leaf(x))
    expected.sum().backward()
    expected_grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    compiled = torch.compile(model, fullgraph=True, backend="aot_eager")
    got = compiled(leaf(x))
    got.sum().backward()
    assert_close(got, expected, torch.float64, "compiled forward")
    for p, e in zip(model.parameters(), expected_grads):
        assert_close(p.grad, e, torch.float64, "compiled gradient")
    del eager_params


def test_first_call_may_be_compiled():
    """In a fresh process, the first call of every tile.ops operator (and
    of RMSNorm's main_grad variant) is inside torch.compile(fullgraph):
    tile.ops makes its kernels at import, so nothing the trace cannot
    follow runs under it."""
    import subprocess
    import sys
    script = """
import torch, tile
x = torch.randn(4, 16, dtype=torch.float64, requires_grad=True)
w = torch.randn(16, dtype=torch.float64, requires_grad=True)
w.main_grad = torch.zeros(16, dtype=torch.float64)
def step(x, w):
    h = tile.ops.rms_norm(x, w) + tile.ops.rms_norm(x, w, main_grad=True)
    h = tile.ops.swiglu(h, x) + tile.ops.geglu(h, x)
    return tile.ops.silu_and_mul(h).sum()
torch.compile(step, backend="aot_eager", fullgraph=True)(x, w).backward()
assert x.grad is not None and w.grad is not None
assert torch.count_nonzero(w.main_grad) > 0
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", \
        done.stderr[-3000:]


class ResidualBlock(torch.nn.Module):
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


@pytest.mark.gpu
def test_torch_compile_fullgraph():
    torch._dynamo.reset()
    torch.manual_seed(2)
    model = ResidualBlock(256, torch.bfloat16).cuda()
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


# -- CUDA graphs, streams and devices ------------------------------------------

@pytest.mark.gpu
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


@pytest.mark.gpu
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


@pytest.mark.gpu
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


def test_no_gpu_is_a_clear_error_here():
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(tile.TileError, match="driver|libcuda"):
        tile.device_count()


def test_persistent_grids_are_sized_for_the_device_described():
    """The kernels compile for the SMs of the GPU they will run on (the
    driver's figures on a GPU; here given): an H100 PCIe's 114 SMs give
    228 CTAs of 256 threads where the default 132 gives 264."""
    from tile import _capi, _capi_functions
    source = _capi.operator_source("rms_norm")
    default = _capi_functions.Module(source, chip="sm_90a", cache_dir="none")
    pcie = _capi_functions.Module(source, chip="sm_90a", cache_dir="none",
                        device=(114, 2048, 65536, 233472))
    assert '"min(rows, 264)"' in default.manifest
    assert '"min(rows, 228)"' in pcie.manifest
    with pytest.raises(RuntimeError, match="every figure positive"):
        _capi_functions.Module(source, chip="sm_90a", cache_dir="none",
                     device=(114, 0, 65536, 233472))


# -- bad input -----------------------------------------------------------------

def test_errors_name_the_argument_and_the_rule():
    x = torch.randn(4, 8)
    w = torch.randn(8)
    with pytest.raises(TypeError, match=r"argument #1 \(w\).*must be a tensor"):
        tile.ops.rms_norm(x, 3.0)
    with pytest.raises(TypeError, match=r"#0 \(x\).*dtype torch.int32"):
        tile.ops.rms_norm(x.int(), w)
    with pytest.raises(ValueError, match=r"#0 \(x\).*not contiguous"):
        tile.ops.rms_norm(torch.randn(8, 4).t(), w)
    with pytest.raises(ValueError, match=r"#1 \(w\) .*1-D"):
        tile.ops.rms_norm(x, w.view(1, 8))
    with pytest.raises(ValueError, match=r"#1 \(w\).*on meta"):
        tile.ops.rms_norm(x, torch.empty(8, device="meta"))
    with pytest.raises(ValueError, match=r"even last dimension.*\[4, 7\]"):
        tile.ops.silu_and_mul(torch.randn(4, 7))
    with pytest.raises(TypeError, match="takes 4 arguments, 3 given"):
        tile.operators.kernel("rms_norm")(x, w, 1e-6)
    with pytest.raises(tile.TileError, match=r"w1 == w0"):
        tile.ops.rms_norm(x, torch.randn(7))
    with pytest.raises(tile.TileError, match=r"#1 \(b\).*dtype bf16, "
                       r"expected f16|#1 \(b\).*has dtype"):
        tile.ops.swiglu(x.half(), x.bfloat16())


@pytest.mark.gpu
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


def test_a_source_that_does_not_verify_reports_its_location(tmp_path):
    path = tmp_path / "bad.mlir"
    path.write_text("func.func @f(%x: tensor<?x?xf32>) -> tensor<?x?xf32>\n"
                    "    attributes {tile.kernel} {\n"
                    "  %y = arith.addf %x, %nope : tensor<?x?xf32>\n"
                    "  return %y : tensor<?x?xf32>\n}\n")
    with pytest.raises(tile.TileError, match=str(path) + r":3:\d+: error:"):
        tile.Kernel(path)
    with pytest.raises(ValueError, match="unknown policy"):
        tile.Kernel(ZOO / "softmax.mlir", policy="keep-everything")
    with pytest.raises(TypeError, match="source text or a path"):
        tile.Kernel(42)


# -- packaging -----------------------------------------------------------------

def test_version_matches_cmake_project():
    """CMakeLists.txt's project() version is the release (the tools print
    it); the wheel's and tile.__version__ must say the same."""
    import pathlib
    import re
    root = pathlib.Path(__file__).resolve().parents[2]
    cmake = re.search(r"project\(tile VERSION ([0-9.]+)",
                      (root / "CMakeLists.txt").read_text()).group(1)
    wheel = re.search(r'^version = "([0-9.]+)"',
                      (root / "pyproject.toml").read_text(), re.M).group(1)
    assert tile.__version__ == cmake == wheel


def test_shape_expressions_are_the_launch_rules_language():
    """The library's shape expressions as Python evaluates them for traced
    calls: the launcher's language and nothing more."""
    from tile import shape_expressions as se
    symbols = {"rows": 7, "w0": 13, "arg2": 3}
    assert se.evaluate("(w0 / 2) + (w0 / 2)", symbols) == 12
    assert se.evaluate("min(rows, 264) * arg2", symbols) == 21
    assert se.evaluate("max(rows, w0) - ceildiv(w0, 4) % 3", symbols) == 12
    for text in ("__import__('os')", "w0 ** 2", "w0 if 1 else 2", "w0.real",
                 "min(w0)", "frob(1, 2)", "1.5", "True", "w0 +"):
        with pytest.raises(se.ShapeExpressionError, match="not a shape"):
            se.evaluate(text, symbols)
    with pytest.raises(se.ShapeExpressionError, match="unbound symbol 'w9'"):
        se.evaluate("w9 + 1", symbols)
    # C's division and remainder, as the launcher's (an integer argument may
    # be negative: ignore_index = -100).
    neg = {"arg1": -7}
    assert se.evaluate("arg1 / 2", neg) == -3
    assert se.evaluate("arg1 % 2", neg) == -1
    assert se.evaluate("7 / (0 - 2)", neg) == -3
    for text, match in (("w0 / (w0 - 13)", "division by zero"),
                        ("w0 % 0", "division by zero"),
                        ("ceildiv(w0, 0)", "ceildiv by 0"),
                        ("(" * 300 + "1" + ")" * 300, "not a shape")):
        with pytest.raises(se.ShapeExpressionError, match=match):
            se.evaluate(text, symbols)
    assert se.symbol(" rows ") == "rows" and se.symbol("(w0)") == "w0"
    assert se.symbol("w0 + 1") is None
    # Binding: the first plain occurrence, in argument order; integers.
    x, w = torch.zeros(5, 4), torch.zeros(4)
    bound = se.bind([("rows", "w0"), ("w0",), ()], [x, w, 3], {2})
    assert bound == {"rows": 5, "w0": 4, "arg2": 3}
    assert se.is_per_row(("rows",)) and not se.is_per_row(("w0",))

