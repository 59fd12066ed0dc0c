"""The convergence suite's fp32 mode on the CPU (Tile's kernels through
its evaluator): a mini model of every family apply_tile supports, trained
30 AdamW steps patched and unpatched from the same weights on the same
batches, every step's loss, the eval batch's top-20 log-probabilities and
every final parameter within benchmarks/convergence.py's FP32_TOLERANCE,
or (where the model's own fp32 rounding is past it) no farther from a
float64 run than the unpatched run is.
The GPU modes (bf16 autocast, pure bf16) run from the same script; their
table is in docs/Python.md. Skipped without transformers."""

import copy

import pytest
import torch

import tile.transformers
from benchmark_scripts import load

pytest.importorskip("transformers")

convergence = load("convergence")


@pytest.mark.filterwarnings("ignore:apply_tile left to")
@pytest.mark.parametrize("model_type", convergence.FAMILIES)
def test_fp32_training_matches_unpatched(model_type):
    row = convergence.compare(model_type, "fp32", "cpu")
    # It learned something: the check is not of two models that stand still.
    assert row["last_loss"] < row["first_loss"] - 0.3, row
    for key, bound in row["bound"].items():
        assert row[key] <= bound, (key, row)
    if "against" not in row:
        assert row["bound"] == convergence.FP32_TOLERANCE
    assert row["within"]
    family = tile.transformers.family_of(
        convergence.family_config(model_type))
    assert bool(row["patched"]["rms_norm"]) == bool(family.norms)
    # The loss through the chunked head (a mixture of experts' with its
    # router's auxiliary loss, on in FAMILY_CONFIG where the family has
    # one), the experts Tile's.
    assert row["patched"]["loss"] == 1
    assert bool(row["patched"]["experts"]) == bool(family.experts)


@pytest.mark.parametrize("fault", ["gradient", "forward"])
def test_a_wrong_patch_is_caught(fault):
    """The suite can fail: a patched RMSNorm whose weight gradient never
    arrives (as FSDP2's main_grad once did), or whose epsilon is off
    (1e-3 for 1e-6), exceeds the fp32 tolerance. A gradient merely scaled
    would not: AdamW's update does not depend on a gradient's scale."""
    original = tile.transformers._rms_norm

    def wrong(module, offset, main_grad):
        patched = original(module, offset, main_grad)
        if fault == "gradient":
            patched.weight.register_hook(lambda g: g * 0)
        else:
            patched.eps = 1e-3
        return patched
    tile.transformers._rms_norm = wrong
    try:
        row = convergence.compare("llama", "fp32", "cpu")
    finally:
        tile.transformers._rms_norm = original
    assert not row["within"], row


@pytest.mark.filterwarnings("ignore:apply_tile left to")
def test_vision_encoder_fp32_training_matches_unpatched():
    """Pixtral's encoder (SwiGLU MLP), patched and not, trained 30 AdamW
    steps in fp32 from the same weights to regress fixed features: every
    step's loss and every final parameter within the fp32 bounds."""
    import transformers
    config = transformers.PixtralVisionConfig(
        hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, image_size=32, patch_size=8, hidden_act="silu")
    torch.manual_seed(0)
    plain = transformers.AutoModel.from_config(config)
    patched = copy.deepcopy(plain)
    _, counts = tile.transformers.apply_tile(patched)
    assert counts["rms_norm"] == 5 and counts["mlp"] == 2
    generator = torch.Generator().manual_seed(1)
    images = torch.randn(4, 3, 32, 32, generator=generator)
    target = torch.randn(1, 16, 64, generator=generator)  # 16 patches

    def train(model):
        optimizer = torch.optim.AdamW(model.parameters(), lr=convergence.LR)
        losses = []
        for step in range(convergence.STEPS):
            optimizer.zero_grad(set_to_none=True)
            x = images[step % 4:step % 4 + 1]
            loss = (model(pixel_values=x).last_hidden_state - target) \
                .pow(2).mean()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        return losses, dict(model.named_parameters())
    want, got = train(plain), train(patched)
    assert want[0][-1] < want[0][0] - 0.3  # it learned something
    bound = convergence.FP32_TOLERANCE
    assert max(abs(a - b) / b for a, b in zip(got[0], want[0])) <= \
        bound["loss"]
    assert max((got[1][n] - p).abs().max().item()
               for n, p in want[1].items()) <= bound["param"]
