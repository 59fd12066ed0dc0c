"""tile.ops.cross_entropy (examples/cross_entropy.mlir) against PyTorch's
F.cross_entropy: every option in float64 on the CPU, loss and the logits'
gradient (CI); bf16, f16 and f32 on the GPU against the float64 reference
(the tests marked gpu)."""

import pytest
import torch
import torch.nn.functional as F
from conftest import DTYPES, assert_close

import tile


def reference(logits, labels, *, ignore_index=-100, reduction="mean",
              label_smoothing=0.0, z_loss=0.0, softcap=None):
    """PyTorch's cross-entropy with the two options it lacks: the soft-cap
    applied to the logits first, and z_loss · logsumexp² added to each row
    that is not ignored (then reduced as the loss is)."""
    x = logits.reshape(-1, logits.shape[-1]).to(torch.float64)
    flat = labels.reshape(-1).long()
    if softcap is not None:
        x = softcap * torch.tanh(x / softcap)
    rows = F.cross_entropy(x, flat, ignore_index=ignore_index,
                           reduction="none", label_smoothing=label_smoothing)
    if z_loss:
        lse = torch.logsumexp(x, dim=-1)
        rows = rows + torch.where(flat != ignore_index, z_loss * lse * lse,
                                  torch.zeros_like(lse))
    if reduction == "none":
        return rows.reshape(labels.shape)
    if reduction == "sum":
        return rows.sum()
    return rows.sum() / (flat != ignore_index).sum()


def inputs(shape, vocab, device="cpu", dtype=torch.float64, ignored=(),
           seed=0):
    generator = torch.Generator().manual_seed(seed)
    logits = (3 * torch.randn(*shape, vocab, generator=generator,
                              dtype=torch.float64)).to(device, dtype)
    labels = torch.randint(0, vocab, shape, generator=generator).to(device)
    flat = labels.view(-1)
    for row in ignored:
        flat[row] = -100
    return logits.requires_grad_(True), labels


def loss_and_gradient(function, logits, labels, **options):
    loss = function(logits, labels, **options)
    # A seeded cotangent, so that every row's gradient is weighed
    # differently (reduction="none").
    generator = torch.Generator().manual_seed(7)
    weight = torch.rand(loss.shape, generator=generator,
                        dtype=torch.float64).to(loss.device, loss.dtype)
    gradient, = torch.autograd.grad((loss * weight).sum(), logits)
    return loss, gradient


OPTIONS = [
    {},
    {"reduction": "sum"},
    {"reduction": "none"},
    {"label_smoothing": 0.1},
    {"label_smoothing": 1.0, "reduction": "sum"},
    {"z_loss": 1e-3},
    {"softcap": 2.5},
    {"ignore_index": 3},
    {"label_smoothing": 0.2, "z_loss": 1e-2, "softcap": 5.0,
     "reduction": "none"},
]


@pytest.mark.parametrize("options", OPTIONS, ids=str)
@pytest.mark.parametrize("ignored", [(), (1, 4)], ids=["all-rows",
                                                        "ignore-rows"])
def test_matches_pytorch_in_float64(options, ignored):
    logits, labels = inputs((2, 5), 13, ignored=ignored)
    if "ignore_index" in options:
        labels.view(-1)[list(ignored)] = options["ignore_index"]
    got, got_grad = loss_and_gradient(tile.ops.cross_entropy, logits, labels,
                                      **options)
    ref, ref_grad = loss_and_gradient(reference, logits, labels, **options)
    assert got.dtype == torch.float64 and got.shape == ref.shape
    torch.testing.assert_close(got, ref, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(got_grad, ref_grad, rtol=1e-12, atol=1e-12)


def test_ignored_rows_have_no_loss_and_no_gradient():
    logits, labels = inputs((6,), 9, ignored=(0, 3))
    loss, gradient = loss_and_gradient(tile.ops.cross_entropy, logits, labels,
                                       reduction="none")
    assert loss[0] == 0 and loss[3] == 0 and (loss[[1, 2, 4, 5]] > 0).all()
    assert (gradient[[0, 3]] == 0).all()


def test_every_row_ignored_gives_what_pytorch_gives():
    logits, labels = inputs((4,), 7, ignored=range(4))
    assert tile.ops.cross_entropy(logits, labels, reduction="sum") == 0
    mean = tile.ops.cross_entropy(logits, labels)
    assert torch.isnan(mean) and torch.isnan(reference(logits, labels))


def test_int32_labels_and_one_row():
    logits, labels = inputs((1,), 5)
    got = tile.ops.cross_entropy(logits, labels.int())
    torch.testing.assert_close(got, reference(logits, labels))


@pytest.mark.parametrize("softcap", [None, 4.0])
def test_inplace_backward_writes_the_gradient_over_the_logits(softcap):
    logits, labels = inputs((3, 5), 13, ignored=(2,))
    options = dict(label_smoothing=0.1, softcap=softcap)
    ref, ref_grad = loss_and_gradient(
        lambda x, y: reference(x, y, **options), logits, labels)
    heads = []

    def tile_loss(x, y):
        heads.append(x * 1.0)  # an LM head's output: nothing else reads it
        return tile.ops.cross_entropy(heads[0], y, inplace_backward=True,
                                      **options)
    got, got_grad = loss_and_gradient(tile_loss, logits, labels)
    torch.testing.assert_close(got, ref, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(got_grad, ref_grad, rtol=1e-12, atol=1e-12)
    if softcap is None:
        # The head's output now holds its gradient (d(x * 1) = dx).
        assert torch.equal(heads[0].detach(), got_grad)


def test_gradcheck():
    logits, labels = inputs((3,), 6, ignored=(1,))
    assert torch.autograd.gradcheck(
        lambda x: tile.ops.cross_entropy(x, labels, label_smoothing=0.1,
                                         z_loss=0.01, softcap=4.0), (logits,))


@pytest.mark.parametrize("call, error", [
    (lambda x, y: tile.ops.cross_entropy(x, y.float()), "int64 or int32"),
    (lambda x, y: tile.ops.cross_entropy(x, y[:1]), "one label per row"),
    (lambda x, y: tile.ops.cross_entropy(x, y, reduction="avg"),
     "reduction must be"),
    (lambda x, y: tile.ops.cross_entropy(x, y, label_smoothing=1.5),
     "label_smoothing"),
    (lambda x, y: tile.ops.cross_entropy(x, y, softcap=0.0), "softcap"),
    (lambda x, y: tile.ops.cross_entropy(x, y, z_loss=-1.0), "z_loss"),
    (lambda x, y: tile.ops.cross_entropy(x, y, ignore_index=1.5),
     "ignore_index"),
    (lambda x, y: tile.ops.cross_entropy(x, y + 100), "outside"),
    (lambda x, y: tile.ops.cross_entropy(x.long(), y), "float tensor"),
])
def test_wrong_input_is_a_clear_error(call, error):
    logits, labels = inputs((2, 3), 8)
    with pytest.raises((TypeError, ValueError, IndexError), match=error):
        call(logits.detach(), labels)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("vocab", [1, 13, 1000, 32000])
@pytest.mark.parametrize("options", [
    {}, {"reduction": "none", "label_smoothing": 0.1, "z_loss": 1e-3},
    {"softcap": 30.0, "ignore_index": 0, "reduction": "sum"}], ids=str)
def test_gpu_matches_float64(dtype, vocab, options):
    logits, labels = inputs((3, 37), vocab, device="cuda", dtype=dtype,
                            ignored=(2, 50))
    labels.view(-1)[[2, 50]] = options.get("ignore_index", -100)
    got, got_grad = loss_and_gradient(tile.ops.cross_entropy, logits, labels,
                                      **options)
    # The reference in float64 on the CPU (PyTorch's CUDA loss asserts on
    # the device, which would end the process's CUDA context).
    exact = logits.detach().double().cpu().requires_grad_(True)
    ref, ref_grad = loss_and_gradient(reference, exact, labels.cpu(),
                                      **options)
    assert got.dtype == torch.float32 and got_grad.dtype == dtype
    assert_close(got.cpu(), ref, torch.float32 if dtype == torch.float32
                 else dtype, "loss")
    assert_close(got_grad.cpu(), ref_grad, dtype, "gradient")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("vocab", [1000, 32000, 128256])
def test_gpu_inplace_backward_matches_float64(dtype, vocab):
    logits, labels = inputs((2, 150), vocab, device="cuda", dtype=dtype,
                            ignored=(2, 50))
    heads = []

    def tile_loss(x, y):
        heads.append(x * 1.0)
        return tile.ops.cross_entropy(heads[0], y, label_smoothing=0.1,
                                      inplace_backward=True)
    got, got_grad = loss_and_gradient(tile_loss, logits, labels)
    exact = logits.detach().double().cpu().requires_grad_(True)
    ref, ref_grad = loss_and_gradient(
        lambda x, y: reference(x, y, label_smoothing=0.1), exact,
        labels.cpu())
    assert_close(got.cpu(), ref, torch.float32 if dtype == torch.float32
                 else dtype, "loss")
    assert_close(got_grad.cpu(), ref_grad, dtype, "gradient")
    assert torch.equal(heads[0].detach(), got_grad)


def test_under_torch_compile_with_ignored_rows():
    """fullgraph=True: no graph break (the CPU's label check is skipped
    while tracing), and the same loss and gradient with rows ignored."""
    logits, labels = inputs((4, 3), 11, ignored=(2, 5, 7))
    compiled = torch.compile(
        lambda x, y: tile.ops.cross_entropy(x, y, label_smoothing=0.1,
                                            z_loss=1e-3),
        fullgraph=True)
    got, got_grad = loss_and_gradient(lambda x, y: compiled(x, y), logits,
                                      labels)
    ref, ref_grad = loss_and_gradient(
        lambda x, y: reference(x, y, label_smoothing=0.1, z_loss=1e-3),
        logits, labels)
    torch.testing.assert_close(got, ref, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(got_grad, ref_grad, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mask", [float("-inf"),
                                  torch.finfo(torch.bfloat16).min])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
def test_masked_logits_match_pytorch(mask, label_smoothing):
    """Columns masked with -inf or bf16's lowest value (a vocabulary
    padded to a multiple): the loss stays what PyTorch gives — without
    smoothing the row mean (-inf there) is not added, so no 0 * -inf."""
    if mask == float("-inf") and label_smoothing:
        pytest.skip("PyTorch's smoothed loss over -inf logits is inf")
    logits, labels = inputs((2, 3), 12, ignored=(4,))
    with torch.no_grad():
        logits[..., 9:] = mask
    labels.clamp_(max=8).view(-1)[4] = -100
    got, got_grad = loss_and_gradient(tile.ops.cross_entropy, logits, labels,
                                      label_smoothing=label_smoothing,
                                      reduction="none")
    ref, ref_grad = loss_and_gradient(reference, logits, labels,
                                      label_smoothing=label_smoothing,
                                      reduction="none")
    assert torch.isfinite(got).all()
    torch.testing.assert_close(got, ref, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(got_grad, ref_grad, rtol=1e-12, atol=1e-12)


def test_shifted_labels_and_logits():
    """The causal-LM shift: logits[..., :-1, :] and labels[..., 1:] are
    strided views; PyTorch takes them, so does Tile."""
    logits, labels = inputs((2, 6), 9)
    got = tile.ops.cross_entropy(logits[:, :-1, :], labels[:, 1:])
    ref = reference(logits[:, :-1, :], labels[:, 1:])
    torch.testing.assert_close(got, ref, rtol=1e-12, atol=1e-12)
