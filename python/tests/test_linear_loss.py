"""tile.ops.linear_cross_entropy and tile.ops.linear_loss (head.py), the
LM head and a loss over its logits in chunks of rows: against PyTorch in
float64 on the CPU (every option, every reduction, both schedules, the
chunked form equal to one chunk, main_grad, autocast), three losses the
library does not ship gradient-checked through linear_loss (CI); bf16,
f16 and f32 on the GPU against the float64 reference (marked gpu)."""

import pytest
import torch
import torch.nn.functional as F
from conftest import DTYPES, assert_close
from test_losses import reference

import tile
from tile.head import default_budget, plan

# Three per-row functions of a row of logits, written by a user: the
# log-probability of the chosen token (GRPO, PPO), the entropy, and a
# z-loss. Their backwards are derived.
_LSE = """
  %zero = arith.constant 0.0 : f32
  %max = tile.reduce max %logits [1] : tensor<?x?xf32> -> tensor<?xf32>
  %m = tile.stop_gradient %max : tensor<?xf32>
  %mb = tile.broadcast %m [1] like %logits
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %shifted = arith.subf %logits, %mb : tensor<?x?xf32>
  %e = math.exp %shifted : tensor<?x?xf32>
  %s = tile.reduce sum %e [1] : tensor<?x?xf32> -> tensor<?xf32>
  %logs = math.log %s : tensor<?xf32>
  %lse = arith.addf %logs, %m : tensor<?xf32>
"""

TOKEN_LOGPROB = """
func.func @token_logprob(%logits: tensor<?x?xf32>, %labels: tensor<?xi64>)
    -> tensor<?xf32> attributes {tile.kernel} {""" + _LSE + """
  %label = tile.cast %labels : tensor<?xi64> to tensor<?xf32>
  %lb = tile.broadcast %label [1] like %logits
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %column = tile.iota like %logits : tensor<?x?xf32> -> tensor<?x?xf32>
  %hit = arith.cmpf oeq, %column, %lb : tensor<?x?xf32>
  %zeros = tile.splat %zero like %logits
      : f32, tensor<?x?xf32> -> tensor<?x?xf32>
  %picked = arith.select %hit, %logits, %zeros
      : tensor<?x?xi1>, tensor<?x?xf32>
  %target = tile.reduce sum %picked [1] : tensor<?x?xf32> -> tensor<?xf32>
  %logprob = arith.subf %target, %lse : tensor<?xf32>
  return %logprob : tensor<?xf32>
}
"""

ENTROPY = """
func.func @entropy(%logits: tensor<?x?xf32>) -> tensor<?xf32>
    attributes {tile.kernel} {""" + _LSE + """
  %lseb = tile.broadcast %lse [1] like %logits
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %logp = arith.subf %logits, %lseb : tensor<?x?xf32>
  %p = math.exp %logp : tensor<?x?xf32>
  %px = arith.mulf %p, %logits : tensor<?x?xf32>
  %expected = tile.reduce sum %px [1] : tensor<?x?xf32> -> tensor<?xf32>
  %entropy = arith.subf %lse, %expected : tensor<?xf32>
  return %entropy : tensor<?xf32>
}
"""

Z_LOSS = """
func.func @z_loss(%logits: tensor<?x?xf32>, %weight: f32 {tile.nograd})
    -> tensor<?xf32> attributes {tile.kernel} {""" + _LSE + """
  %square = arith.mulf %lse, %lse : tensor<?xf32>
  %w = tile.splat %weight like %lse : f32, tensor<?xf32> -> tensor<?xf32>
  %loss = arith.mulf %w, %square : tensor<?xf32>
  return %loss : tensor<?xf32>
}
"""


def _user_losses():
    """(name, kernel, extra args for (labels), PyTorch reference of the
    per-row values from logits and labels)."""
    return [
        ("token_logprob", tile.Kernel(TOKEN_LOGPROB), lambda y: (y,),
         lambda x, y: torch.log_softmax(x, -1).gather(
             -1, y.unsqueeze(-1)).squeeze(-1)),
        ("entropy", tile.Kernel(ENTROPY), lambda y: (),
         lambda x, y: -(torch.softmax(x, -1) * torch.log_softmax(x, -1))
         .sum(-1)),
        ("z_loss", tile.Kernel(Z_LOSS), lambda y: (0.25,),
         lambda x, y: 0.25 * torch.logsumexp(x, -1) ** 2),
    ]


def head_inputs(shape, hidden, vocab, *, dtype=torch.float64, device="cpu",
                bias=True, ignored=(), seed=0):
    generator = torch.Generator().manual_seed(seed)

    def randn(*size, scale=1.0):
        t = scale * torch.randn(*size, generator=generator,
                                dtype=torch.float64)
        return t.to(device, dtype).requires_grad_()

    h = randn(*shape, hidden)
    w = randn(vocab, hidden, scale=hidden ** -0.5 * 3)
    b = randn(vocab) if bias else None
    labels = torch.randint(0, vocab, shape, generator=generator)
    flat = labels.view(-1)
    for i in ignored:
        flat[i] = -100
    return h, w, b, labels.to(device)


def _cotangent(like):
    """A seeded incoming gradient for `like` (the same for any dtype)."""
    generator = torch.Generator().manual_seed(1)
    return torch.randn(like.shape, generator=generator,
                       dtype=torch.float64).to(like.device, like.dtype)


def _grads(loss, tensors):
    present = [t for t in tensors if t is not None]
    return torch.autograd.grad(loss, present, _cotangent(loss))


OPTIONS = [{}, {"label_smoothing": 0.1}, {"z_loss": 1e-2},
           {"softcap": 3.0}, {"label_smoothing": 0.2, "z_loss": 1e-3,
                              "softcap": 2.0}]


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("options", OPTIONS)
def test_matches_pytorch_in_float64(reduction, options):
    h, w, b, labels = head_inputs((3, 7), 16, 50, ignored=(0, 5, 13))
    ref = reference(h @ w.T + b, labels, reduction=reduction, **options)
    # 4 rows per chunk: six chunks, the last one short.
    got = tile.ops.linear_cross_entropy(h, w, labels, bias=b,
                                        reduction=reduction,
                                        memory_budget=4 * 50 * 8 * 3,
                                        **options)
    assert got.shape == ref.shape and got.dtype == torch.float64
    assert_close(got, ref, torch.float64, "loss")
    for name, a, r in zip("hwb", _grads(got, (h, w, b)), _grads(ref, (h, w, b))):
        assert_close(a, r, torch.float64, f"d{name}")


@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_chunked_equals_one_chunk(reduction):
    h, w, b, labels = head_inputs((29,), 8, 40, ignored=(3,))
    one = tile.ops.linear_cross_entropy(h, w, labels, bias=b,
                                        reduction=reduction,
                                        memory_budget=1 << 30)
    assert plan(29, 40, torch.float64, memory_budget=1 << 30) == (1, 29)
    chunked = tile.ops.linear_cross_entropy(h, w, labels, bias=b,
                                            reduction=reduction,
                                            memory_budget=3 * 40 * 8)
    assert plan(29, 40, torch.float64, memory_budget=3 * 40 * 8)[0] == 10
    torch.testing.assert_close(chunked, one, rtol=1e-14, atol=1e-14)
    for a, r in zip(_grads(chunked, (h, w, b)), _grads(one, (h, w, b))):
        torch.testing.assert_close(a, r, rtol=1e-13, atol=1e-13)


def test_plan():
    # Llama 3's vocabulary in bf16 at hidden 4096: up to 16384 rows the
    # hidden states are under 256 MiB, and 1024 rows fill that.
    assert default_budget(16384, 4096, torch.bfloat16) == 256 << 20
    assert plan(16384, 128256, torch.bfloat16, hidden=4096) == (16, 1024)
    assert plan(4096, 128256, torch.bfloat16, hidden=4096) == (4, 1024)
    # 65536 rows: the hidden states' 512 MiB, 2048 rows.
    assert plan(65536, 128256, torch.bfloat16, hidden=4096) == (32, 2048)
    # Fewer rows than a chunk holds: one chunk of them all.
    assert plan(100, 128256, torch.bfloat16) == (1, 100)
    # Balanced: 1500 rows in two chunks of 768 (a multiple of 256), not
    # 1024 and 476.
    assert plan(1500, 128256, torch.bfloat16) == (2, 768)
    # Whole 256-row GEMM tiles: Qwen3's vocabulary at 65536 rows of 2048
    # fits 883 rows in the budget, chunks of 768 (not 832).
    assert plan(65536, 151936, torch.bfloat16, hidden=2048) == (86, 768)
    # Two buffers per row (a softcap's copy) halve the chunk.
    assert plan(16384, 128256, torch.bfloat16, hidden=4096,
                buffers=2) == (32, 512)
    with pytest.raises(ValueError, match="memory_budget"):
        plan(10, 10, torch.float32, memory_budget=0)


def test_every_row_ignored_gives_what_pytorch_gives():
    h, w, b, labels = head_inputs((4,), 8, 10, ignored=range(4))
    got = tile.ops.linear_cross_entropy(h, w, labels, bias=b)
    ref = F.cross_entropy(h @ w.T + b, labels)
    assert torch.isnan(got) and torch.isnan(ref)
    for a, r in zip(_grads(got, (h, w, b)), _grads(ref, (h, w, b))):
        torch.testing.assert_close(a, r)


def test_no_rows_gives_what_pytorch_gives():
    h, w, b, labels = head_inputs((0,), 8, 10)
    for reduction in ("mean", "sum", "none"):
        got = tile.ops.linear_cross_entropy(h, w, labels, bias=b,
                                            reduction=reduction)
        ref = F.cross_entropy(h @ w.T + b, labels, reduction=reduction)
        torch.testing.assert_close(got, ref, equal_nan=True)
        if reduction != "none":
            for a, r in zip(_grads(got, (h, w, b)), _grads(ref, (h, w, b))):
                torch.testing.assert_close(a, r)


@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_under_torch_compile_with_ignored_rows(reduction):
    """fullgraph=True, both schedules, ignore_index rows present (Liger's
    fused linear cross-entropy has returned a wrong loss there): the same
    loss and gradients as eagerly."""
    h, w, b, labels = head_inputs((2, 9), 16, 40, ignored=(0, 3, 4, 11))

    def step(h, w, b, labels):
        return tile.ops.linear_cross_entropy(
            h, w, labels, bias=b, reduction=reduction, label_smoothing=0.1,
            memory_budget=4 * 40 * 8)
    compiled = torch.compile(step, fullgraph=True)
    got = compiled(h, w, b, labels)
    ref = reference(h @ w.T + b, labels, reduction=reduction,
                    label_smoothing=0.1)
    torch.testing.assert_close(got, ref, rtol=1e-12, atol=1e-12)
    for a, r in zip(_grads(got, (h, w, b)), _grads(ref, (h, w, b))):
        torch.testing.assert_close(a, r, rtol=1e-12, atol=1e-12)


def test_gradcheck():
    # gradcheck runs many backwards through one forward: the recompute
    # schedule (reduction "none"), whose backward can be run again.
    h, w, b, labels = head_inputs((5,), 4, 7, ignored=(2,))
    torch.autograd.gradcheck(
        lambda h, w, b: tile.ops.linear_cross_entropy(
            h, w, labels, bias=b, label_smoothing=0.1, z_loss=0.01,
            softcap=3.0, reduction="none", memory_budget=2 * 7 * 8 * 2),
        (h, w, b))


def test_the_loss_gradient_scales_in_fp32():
    """The eager schedule's gradients, made for 1, are scaled by the loss's
    gradient in its fp32, not rounded to bf16 first (1/7 in bf16 is 0.2%
    off: every gradient would be)."""
    h, w, _, labels = head_inputs((512,), 64, 96, dtype=torch.bfloat16,
                                  bias=False)
    (one,) = torch.autograd.grad(
        tile.ops.linear_cross_entropy(h, w, labels), h)
    (seventh,) = torch.autograd.grad(
        tile.ops.linear_cross_entropy(h, w, labels) / 7, h)
    big = one.double().abs() > one.double().abs().max() / 4
    ratio = (7 * seventh.double()[big] / one.double()[big]).mean().item()
    assert abs(ratio - 1) < 5e-4, ratio


def test_a_second_backward_of_the_eager_schedule_is_an_error():
    h, w, b, labels = head_inputs((5,), 4, 7)
    loss = tile.ops.linear_cross_entropy(h, w, labels, bias=b)
    torch.autograd.grad(loss, (h,), retain_graph=True)
    with pytest.raises(RuntimeError, match="second backward"):
        torch.autograd.grad(loss, (h,))


def test_frozen_weight_and_no_bias():
    h, w, _, labels = head_inputs((6,), 8, 12, bias=False)
    w.requires_grad_(False)
    got = tile.ops.linear_cross_entropy(h, w, labels, memory_budget=2 * 96)
    (dh,) = torch.autograd.grad(got, h)
    (ref,) = torch.autograd.grad(F.cross_entropy(h @ w.T, labels), h)
    assert_close(dh, ref, torch.float64, "dh")


def test_no_grad_gives_the_loss_only():
    h, w, b, labels = head_inputs((6,), 8, 12)
    with torch.no_grad():
        got = tile.ops.linear_cross_entropy(h, w, labels, bias=b)
    assert got.grad_fn is None
    assert_close(got, F.cross_entropy(h @ w.T + b, labels), torch.float64)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_main_grad_gets_the_weight_gradient(reduction):
    h, w, b, labels = head_inputs((2, 5), 8, 12, bias=False, ignored=(1,))
    w = torch.nn.Parameter(w.detach())
    w.main_grad = torch.full_like(w, 0.5)
    loss = tile.ops.linear_cross_entropy(h, w, labels, reduction=reduction,
                                         memory_budget=3 * 12 * 8,
                                         main_grad=True)
    # The loss's own gradient (here 0.3) must reach main_grad: Megatron
    # scales the loss.
    (0.3 * loss.sum()).backward()
    ref = reference(h @ w.T, labels, reduction=reduction)
    dh, dw = torch.autograd.grad(0.3 * ref.sum(), (h, w))
    assert w.grad is None and w.grad_added_to_main_grad
    assert_close(w.main_grad, dw + 0.5, torch.float64, "main_grad")
    assert_close(h.grad, dh, torch.float64, "dh")


def test_autocast_runs_the_head_in_autocast_dtype():
    """Under autocast the head computes in bf16 as torch's linear would:
    the same loss as explicitly bf16-cast inputs give, fp32 gradients for
    fp32 tensors, and a weight gradient summed over the chunks in fp32
    (rounded to bf16 once, as autocast's linear rounds it), not in bf16."""
    h, w, b, labels = head_inputs((256,), 32, 64, dtype=torch.float32)
    budget = 8 * 64 * 2  # 8 rows of bf16 logits: 32 chunks
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = tile.ops.linear_cross_entropy(h, w, labels, bias=b,
                                            memory_budget=budget)
    cast = [t.detach().bfloat16().requires_grad_() for t in (h, w, b)]
    explicit = tile.ops.linear_cross_entropy(*cast[:2], labels, bias=cast[2],
                                             memory_budget=budget)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, explicit)
    dh, dw, db = torch.autograd.grad(got, (h, w, b))
    assert (dh.dtype, dw.dtype, db.dtype) == (torch.float32,) * 3
    exact = reference(h.double() @ w.double().T + b.double(), labels)
    (dw64,) = torch.autograd.grad(exact, w)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        torch_loss = F.cross_entropy((h @ w.T + b).float(), labels)
    (dw_torch,) = torch.autograd.grad(torch_loss, w)

    def error(g):
        return ((g.double() - dw64).abs().max() / dw64.abs().max()).item()
    assert error(dw) <= 1.5 * error(dw_torch) + 1e-3, \
        (error(dw), error(dw_torch))


def test_matmul_into_with_beta_zero_reads_nothing():
    """The head's first chunk writes an fp32 weight gradient into
    uninitialized memory with beta = 0: NaNs there must not survive (the
    CPU reference once computed 0 * d)."""
    a = torch.randn(5, 3, dtype=torch.bfloat16)
    b = torch.randn(5, 4, dtype=torch.bfloat16)
    d = torch.full((3, 4), float("nan"))
    tile.gemm.matmul_into(d, a, b, trans_a=True, beta=0.0)
    torch.testing.assert_close(d, (a.double().T @ b.double()).float())


@pytest.mark.parametrize("call, error", [
    (lambda h, w, y: tile.ops.linear_cross_entropy(h, w.float(), y),
     "one dtype"),
    (lambda h, w, y: tile.ops.linear_cross_entropy(h, w[:, :3], y),
     "weight \\[vocab, H\\]"),
    (lambda h, w, y: tile.ops.linear_cross_entropy(h, w, y[:1]),
     "one label per row"),
    (lambda h, w, y: tile.ops.linear_cross_entropy(h, w, y.float()),
     "int64 or int32"),
    (lambda h, w, y: tile.ops.linear_cross_entropy(h, w, y, bias=w[0]),
     "bias must be"),
    (lambda h, w, y: tile.ops.linear_cross_entropy(h, w, y + 100),
     "outside"),
    (lambda h, w, y: tile.ops.linear_cross_entropy(h, w, y, reduction="x"),
     "reduction must be"),
    (lambda h, w, y: tile.ops.linear_cross_entropy(h, w, y, main_grad=True),
     "no .main_grad"),
    (lambda h, w, y: tile.ops.linear_loss(h, w, tile.Kernel(TOKEN_LOGPROB),
                                          y[:, :2]),
     "leading shape is hidden's"),
    (lambda h, w, y: tile.ops.linear_loss(h, w, tile.Kernel(TOKEN_LOGPROB),
                                          y.double().requires_grad_()),
     "requires grad"),
])
def test_wrong_input_is_a_clear_error(call, error):
    h, w, _, labels = head_inputs((2, 3), 8, 10, bias=False)
    with pytest.raises((TypeError, ValueError, IndexError, RuntimeError),
                       match=error):
        call(h, w, labels)


@pytest.mark.parametrize("name, kernel, extra, ref",
                         _user_losses(), ids=lambda v: v
                         if isinstance(v, str) else "")
def test_user_losses_gradcheck(name, kernel, extra, ref):
    h, w, b, labels = head_inputs((6,), 5, 9)
    for reduction in ("none", "sum", "mean"):
        got = tile.ops.linear_loss(h, w, kernel, *extra(labels), bias=b,
                                   reduction=reduction,
                                   memory_budget=4 * 9 * 8 * 2)
        rows = ref(h @ w.T + b, labels)
        expected = {"none": rows, "sum": rows.sum(),
                    "mean": rows.mean()}[reduction]
        assert_close(got, expected, torch.float64, f"{name} {reduction}")
        for a, r in zip(_grads(got, (h, w, b)),
                        _grads(expected, (h, w, b))):
            assert_close(a, r, torch.float64, f"d {name} {reduction}")
    torch.autograd.gradcheck(
        lambda h, w: tile.ops.linear_loss(h, w, kernel, *extra(labels),
                                          memory_budget=2 * 9 * 8 * 2),
        (h, w))


def test_linear_loss_refuses_a_kernel_that_is_not_a_row_loss():
    h, w, _, _ = head_inputs((4,), 8, 10, bias=False)
    elementwise = tile.Kernel(
        "func.func @f(%x: tensor<?x?xf32>) -> tensor<?x?xf32> "
        "attributes {tile.kernel} { return %x : tensor<?x?xf32> }")
    with pytest.raises(ValueError, match="one value per row"):
        tile.ops.linear_loss(h, w, elementwise)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("vocab, options", [
    (1000, {}),
    (32000, {"label_smoothing": 0.1, "z_loss": 1e-3}),
    (32000, {"softcap": 30.0, "reduction": "sum"}),
    (32000, {"reduction": "none"}),
])
def test_gpu_matches_float64(dtype, vocab, options):
    h, w, b, labels = head_inputs((3, 300), 256, vocab, dtype=dtype,
                                  device="cuda", ignored=(0, 7, 100))
    got = tile.ops.linear_cross_entropy(h, w, labels, bias=b,
                                        memory_budget=128 * vocab * 2 * 2,
                                        **options)
    # The reference: the same bf16 logits PyTorch's head gives, in float64.
    logits = (h @ w.T + b).detach().double().requires_grad_()
    ref = reference(logits, labels, **options)
    assert_close(got, ref, dtype, "loss")
    grads = _grads(got, (h, w, b))
    (dlogits,) = torch.autograd.grad(ref, logits, _cotangent(ref))
    hd, wd = h.double(), w.double()
    flat = dlogits.reshape(-1, vocab)
    expected = (flat @ wd).view(hd.shape), flat.T @ hd.reshape(-1, 256), \
        flat.sum(0)
    for name, a, r in zip("hwb", grads, expected):
        assert_close(a, r, dtype, f"d{name}")
