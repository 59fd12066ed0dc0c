"""The convergence suite's fp32 mode on the CPU (Tile's kernels through
its evaluator): a mini model of every family apply_tile supports, trained
30 AdamW steps patched and unpatched from the same weights on the same
batches, every step's loss, the eval batch's top-20 log-probabilities and
every final parameter within benchmarks/convergence.py's FP32_TOLERANCE,
or (where the model's own fp32 rounding is past it) no farther from a
float64 run than the unpatched run is.
The GPU modes (bf16 autocast, pure bf16) run from the same script; their
table is in docs/Python.md. Skipped without transformers."""

import pytest

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
    # one; a vision encoder has none), the experts Tile's.
    assert row["patched"]["loss"] == (
        model_type not in convergence.ENCODER_CONFIG)
    if model_type in convergence.ENCODER_CONFIG:  # Pixtral's 2 layers
        assert row["patched"]["rms_norm"] == 5 and \
            row["patched"]["mlp"] == 2, row
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


def test_a_wrong_rope_is_caught(monkeypatch):
    """apply_tile replaces a modeling module's RoPE for the whole process:
    the unpatched run must still run the model's own (compare reverts it
    around every unpatched and reference run), or a wrong RoPE of Tile's
    would sit on both sides and pass. One that rotates nothing is caught;
    the process is left with the model's own."""
    from transformers.models.llama import modeling_llama
    own = modeling_llama.apply_rotary_pos_emb
    monkeypatch.setitem(tile.transformers.ROPE_LAYOUTS, "rotate_half",
                        lambda q, k, *args, **kwargs: (q, k))
    row = convergence.compare("llama", "fp32", "cpu")
    assert row["patched"]["rope"] == 1
    assert not row["within"], row
    assert modeling_llama.apply_rotary_pos_emb is own
