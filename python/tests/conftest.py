"""Shared by the test files: the `gpu` marker (a test marked gpu is skipped
without CUDA and runs with the caching allocator poisoned; `pytest -m gpu`
selects those, `pytest -m "not gpu"` the rest), PyTorch references of every
kernel the tests run through tile (the operators, test/Zoo and the MLPs),
the tolerances the GPU suite uses, and the helpers that run a function and
its reference to their gradients."""

import math
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
ZOO = ROOT / "test" / "Zoo"
EXAMPLES = ROOT / "examples"


def zoo_kernel(name):
    """The source of a Zoo case: test/Zoo/<name>.mlir, or examples/ for the
    kernels the operators embed (geglu, rope, squared_relu)."""
    path = ZOO / f"{name}.mlir"
    return path if path.exists() else EXAMPLES / f"{name}.mlir"


# The dtypes the GPU tests run the operators and kernels in.
DTYPES = [torch.bfloat16, torch.float16, torch.float32]


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "gpu: needs a CUDA GPU (skipped without one); runs with "
        "the caching allocator poisoned (poison_the_allocator)")


def pytest_collection_modifyitems(config, items):
    """Without CUDA, every test marked gpu is skipped."""
    if torch.cuda.is_available():
        return
    no_gpu = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(no_gpu)


# As tile-gpu-tests and tile-run --device: |got - ref| <= atol + rtol*|ref|,
# both scaled by max(1, max|ref|).
TOLERANCES = {torch.float32: (1e-4, 1e-4), torch.float16: (1e-2, 1e-2),
              torch.bfloat16: (1e-2, 2e-2), torch.float64: (1e-12, 1e-12)}


def assert_close(got, ref, dtype, what=""):
    atol, rtol = TOLERANCES[dtype]
    ref = ref.to(torch.float64)
    got = got.to(ref.device, torch.float64)  # a GPU result, a CPU reference
    scale = max(1.0, ref.abs().max().item()) if ref.numel() else 1.0
    error = (got - ref).abs()
    bound = atol * scale + rtol * ref.abs()
    assert torch.isfinite(got).all(), f"{what}: non-finite values"
    worst = (error - bound).max().item() if ref.numel() else -1
    assert worst <= 0, (f"{what}: max error {error.max().item():.3g} "
                        f"exceeds the {dtype} tolerance")


def capture(step, *args):
    """(graph, its outputs): step(*args) warmed up on a side stream, as
    torch says, then captured in a CUDA graph."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        step(*args)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = step(*args)
    return graph, captured


def assert_replay_matches(step, args, eager):
    """Captures step(*args) in a CUDA graph, poisons what it returned,
    replays it and checks the bits against `eager` (step's results from
    an eager call). `args` are the graph's own leaves: an autograd node made
    on another stream and kept alive would join the capture."""
    graph, captured = capture(step, *args)
    for t in captured:
        t.detach().fill_(float("nan"))
    for _ in range(3):
        graph.replay()
    torch.cuda.synchronize()
    for got, want in zip(captured, eager):
        assert torch.equal(got, want)


def silu(x):
    return x * torch.sigmoid(x)


def rms_norm(x, w, eps, offset):
    x = x.double()
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * (
        w.double() + offset)


def gelu_tanh(x):
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) *
                                     (x + 0.044715 * x ** 3)))


def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdim=True)
    var = (x - mu).pow(2).mean(-1, keepdim=True)
    return (x - mu) * torch.rsqrt(var + eps) * w + b


def residual_rms_norm(x, r, w, alpha, eps):
    h = x + alpha * r
    return h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps) * w, h


def min_max_scale(x, eps):
    low = x.amin(-1, keepdim=True)
    return (x - low) / (x.amax(-1, keepdim=True) - low + eps)


def three_uses(x):
    u = x / 2
    return u ** 3 + u ** 2 + torch.sin(u)


def swap_halves(x, block):
    """tile.swap_halves: in every block of `block` columns the halves trade
    places."""
    blocks = x.unflatten(-1, (-1, 2, block // 2))
    return blocks.flip(-2).flatten(-3)


def rope(x, cos, sin, sign):
    heads = x.shape[-1] // cos.shape[-1]
    return (x * cos.repeat(1, heads) +
            swap_halves(x, cos.shape[-1]) * (sin * sign).repeat(1, heads))


def _rope_args(r, w, d, g):
    """x [r, w] of w / D heads, cos and sin [r, D], sign [D] (random: any
    table works); None where w is odd (no even head divides it)."""
    if w % 2:
        return None
    head = next(h for h in (128, 8, 4, 2) if w % h == 0)
    return [_t((r, w), d, generator=g), _t((r, head), d, generator=g),
            _t((r, head), d, generator=g),
            _t((head,), torch.float64 if d == torch.float64 else torch.float32,
               generator=g)]


# name -> (reference, argument makers(rows, width, dtype) -> args)
def _t(shape, dtype, low=-2.0, high=2.0, generator=None):
    return (torch.rand(shape, dtype=torch.float64, generator=generator) *
            (high - low) + low).to(dtype)


ZOO_CASES = {
    "geglu": (lambda a, b: gelu_tanh(a) * b,
              lambda r, w, d, g: [_t((r, w), d, generator=g),
                                  _t((r, w), d, generator=g)]),
    "layer_norm": (layer_norm,
                   lambda r, w, d, g: [_t((r, w), d, generator=g),
                                       _t((w,), d, generator=g),
                                       _t((w,), d, generator=g), 1e-5]),
    "residual_rms_norm": (residual_rms_norm,
                          lambda r, w, d, g: [_t((r, w), d, generator=g),
                                              _t((r, w), d, generator=g),
                                              _t((w,), d, generator=g),
                                              0.5, 1e-6]),
    "softmax": (lambda x: torch.softmax(x, -1),
                lambda r, w, d, g: [_t((r, w), d, generator=g)]),
    # Away from the kink at 0, where the derivative is not defined.
    "squared_relu": (lambda x: torch.relu(x) ** 2,
                     lambda r, w, d, g: [_away_from_zero(
                         _t((r, w), d, generator=g))]),
    "three_uses": (three_uses,
                   lambda r, w, d, g: [_t((r, w), d, generator=g)]),
    "rope": (rope, _rope_args),
    # One value per row: the seeds take the reference's result shapes.
    "logsumexp": (lambda x: torch.logsumexp(x, -1),
                  lambda r, w, d, g: [_t((r, w), d, generator=g)]),
    # p is tile.nograd: a target distribution (each row sums to 1).
    "soft_cross_entropy": (lambda x, p: torch.logsumexp(x, -1) -
                           (p * x).sum(-1),
                           lambda r, w, d, g: [
                               _t((r, w), d, generator=g),
                               torch.softmax(_t((r, w), torch.float64,
                                                generator=g), -1).to(d)]),
    "min_max_scale": (min_max_scale,
                      lambda r, w, d, g: [_t((r, w), d, generator=g), 1e-5]),
}


def _away_from_zero(x):
    return torch.where(x.abs() < 0.1, x.sign() * 0.1 + (x == 0) * 0.1, x)


def result_shapes(reference, args):
    """The shapes of reference(*args)'s results, which the cotangents seeding
    them take: [rows, width], or [rows] for a result of one value per row
    (logsumexp's)."""
    with torch.no_grad():
        out = reference(*[a.double() if isinstance(a, torch.Tensor) else a
                          for a in args])
    return [o.shape for o in (out if isinstance(out, tuple) else (out,))]


@pytest.fixture(autouse=True)
def _unpatched_rope():
    """apply_tile replaces a modeling module's RoPE function for the whole
    process (tile.transformers imports no Hugging Face module itself): every
    test starts and ends with Hugging Face's own."""
    import tile.transformers
    tile.transformers.revert_rope()
    yield
    tile.transformers.revert_rope()


@pytest.fixture
def generator():
    return torch.Generator().manual_seed(1234)


@pytest.fixture(autouse=True)
def poison_the_allocator(request):
    """Before every test marked gpu, freed blocks of torch's caching
    allocator hold NaN: a result the kernels leave unwritten (torch.empty
    reuses them) cannot pass. Other tests: nothing."""
    if request.node.get_closest_marker("gpu") is not None:
        # Both pools: blocks of at most 1 MiB (row results, weight
        # gradients) come from the small one.
        block = torch.full((1 << 28,), float("nan"), device="cuda")
        small = [torch.full((1 << 18,), float("nan"), device="cuda")
                 for _ in range(64)]
        del block, small
    yield


def randn(shape, dtype, scale=1.0):
    """Normal values on the GPU, scaled, stored in `dtype`."""
    return (torch.randn(shape, device="cuda") * scale).to(dtype)


def leaf(t):
    """A fresh leaf with t's values that requires grad."""
    return t.detach().clone().requires_grad_(True)


def grads_of(function, args, seed):
    """Gradients of sum(outputs * seed_i) with respect to the tensor args."""
    args = [leaf(a) if isinstance(a, torch.Tensor) else a for a in args]
    out = function(*args)
    out = out if isinstance(out, tuple) else (out,)
    loss = sum((o.double() * s).sum() for o, s in zip(out, seed))
    loss.backward()
    return out, [a.grad if isinstance(a, torch.Tensor) else None
                 for a in args]


def run_and_grads(function, args, seed):
    """function(*args) and the tensor args' gradients, its outputs seeded
    with `seed` (cast to their dtypes): the GPU tests' side."""
    args = [leaf(a) if isinstance(a, torch.Tensor) else a for a in args]
    out = function(*args)
    out = out if isinstance(out, tuple) else (out,)
    torch.autograd.backward([o for o in out], [s.to(o.dtype) for o, s in
                                               zip(out, seed)])
    return out, [a.grad if isinstance(a, torch.Tensor) else None
                 for a in args]


def reference_and_grads(reference, args, seed):
    """As run_and_grads, for a PyTorch reference evaluated in float64."""
    args = [leaf(a.double()) if isinstance(a, torch.Tensor) else a
            for a in args]
    out = reference(*args)
    out = out if isinstance(out, tuple) else (out,)
    torch.autograd.backward(list(out), [s.double() for s in seed])
    return out, [a.grad if isinstance(a, torch.Tensor) else None
                 for a in args]


def gated_mlp(x, gate, up, down, act=silu):
    """The gated MLP in float64: (act(x gateᵀ) ⊙ (x upᵀ)) downᵀ."""
    x, gate, up, down = (t.double() for t in (x, gate, up, down))
    return (act(x @ gate.T) * (x @ up.T)) @ down.T


def swiglu_mlp(x, gate, up, down):
    return gated_mlp(x, gate, up, down)


def grouped_swiglu_mlp(x, gate_up, down, splits):
    """The grouped MLP in float64, expert by expert: x [T, H] grouped by
    `splits`, gate_up [E, 2I, H] (gate rows first), down [E, H, I]."""
    inter = gate_up.shape[1] // 2
    parts, first = [], 0
    for e, rows in enumerate(splits):
        parts.append(swiglu_mlp(x[first:first + rows], gate_up[e, :inter],
                                gate_up[e, inter:], down[e]))
        first += rows
    return torch.cat(parts) if parts else x.double()[:0]
