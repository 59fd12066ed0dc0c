"""tile from PyTorch on the CPU: the float64 reference evaluator under the
whole Python layer (autograd, shapes, policies, main_grad, torch.compile,
errors). Runs in CI without a GPU."""

import pytest
import torch

import tile
from conftest import ZOO, ZOO_CASES, assert_close, leaf, rms_norm, silu



def grads_of(function, args, seed):
    """Gradients of sum(outputs * seed_i) with respect to the tensor args."""
    args = [leaf(a) if isinstance(a, torch.Tensor) else a for a in args]
    out = function(*args)
    out = out if isinstance(out, tuple) else (out,)
    loss = sum((o.double() * s).sum() for o, s in zip(out, seed))
    loss.backward()
    return out, [a.grad if isinstance(a, torch.Tensor) else None
                 for a in args]


# -- operators ---------------------------------------------------------------

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


# -- every test/Zoo kernel -----------------------------------------------------

@pytest.mark.parametrize("name", sorted(ZOO_CASES))
@pytest.mark.parametrize("policy", ["recompute", "save-row-stats"])
def test_zoo_kernel_matches_pytorch(name, policy, generator):
    reference, make = ZOO_CASES[name]
    kernel = tile.Kernel(ZOO / f"{name}.mlir", policy=policy)
    args = make(6, 24, torch.float64, generator)
    seed = [torch.randn(6, 24, dtype=torch.float64,
                        generator=torch.Generator().manual_seed(7))
            for _ in kernel.forward_info.results]
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
    kernel = tile.Kernel(ZOO / f"{name}.mlir")
    # Only what the kernel differentiates asks for a gradient (rope's cos
    # and sin are tile.nograd: their gradient is not derived).
    args = [leaf(a) if isinstance(a, torch.Tensor) and info.differentiable
            else a for a, info in zip(make(3, 8, torch.float64, generator),
                                      kernel.forward_info.arguments)]
    assert torch.autograd.gradcheck(kernel, tuple(args))


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


# -- torch.compile -------------------------------------------------------------

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


def test_custom_op_passes_opcheck(generator):
    kernel = tile.operators.kernel("rms_norm")
    x = torch.randn(3, 16, dtype=torch.float32, generator=generator)
    w = torch.randn(16, dtype=torch.float32, generator=generator)
    torch.library.opcheck(torch.ops.tile.launch.default,
                          (kernel.key, "rms_norm", "ttff", [x, w],
                           [1e-6, 0.0], []),
                          test_utils=("test_schema", "test_faketensor"))


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


def test_no_gpu_is_a_clear_error_here():
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(tile.TileError, match="driver|libcuda"):
        tile.device_count()


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


def test_persistent_grids_are_sized_for_the_device_described():
    """The kernels compile for the SMs of the GPU they will run on (the
    driver's figures on a GPU; here given): an H100 PCIe's 114 SMs give
    228 CTAs of 256 threads where the default 132 gives 264."""
    from tile import _capi
    source = _capi.operator_source("rms_norm")
    default = _capi.Module(source, chip="sm_90a", cache_dir="none")
    pcie = _capi.Module(source, chip="sm_90a", cache_dir="none",
                        device=(114, 2048, 65536, 233472))
    assert '"min(rows, 264)"' in default.manifest
    assert '"min(rows, 228)"' in pcie.manifest
    with pytest.raises(RuntimeError, match="every figure positive"):
        _capi.Module(source, chip="sm_90a", cache_dir="none",
                     device=(114, 0, 65536, 233472))
