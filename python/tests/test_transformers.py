"""tile.transformers.apply_tile on tiny Hugging Face models of every
supported type, with the untiled and the tiled MLP: on the CPU in float64
against the unpatched model (logits, loss and every parameter's gradient
within HF_RTOL; the same Parameter objects under the same names), and
unsupported or twice-patched models named in the error; on the GPU (the
tests marked gpu) in bf16 against float64, within twice bf16 PyTorch's own
error. Skipped without transformers."""

import pytest
import torch

import tile
import tile.transformers

transformers = pytest.importorskip("transformers")

# Hugging Face's RMSNorm computes in float32 even for float64 inputs: a
# float64 model patched with Tile (exact in float64) differs from it by
# float32 rounding, amplified a little through the layers.
HF_RTOL = 1e-5


def _tiny(model_type):
    common = dict(vocab_size=64, hidden_size=32, intermediate_size=48,
                  num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=64)
    configs = {
        "llama": transformers.LlamaConfig,
        "mistral": transformers.MistralConfig,
        "qwen2": transformers.Qwen2Config,
        "qwen3": transformers.Qwen3Config,
        "gemma": transformers.GemmaConfig,
    }
    extra = {"gemma": dict(head_dim=8), "qwen3": dict(head_dim=8)}
    config = configs[model_type](**common, **extra.get(model_type, {}))
    return transformers.AutoModelForCausalLM.from_config(config).double()


@pytest.mark.parametrize("model_type", sorted(tile.transformers.SUPPORTED))
@pytest.mark.parametrize("tiled", [False, 2])
def test_patched_model_matches_unpatched(model_type, tiled):
    if tiled and model_type == "gemma":
        pytest.skip("Gemma's MLP is GeGLU; the tiled MLP is SwiGLU")
    torch.manual_seed(0)
    model = _tiny(model_type)
    ids = torch.randint(0, 64, (2, 9))
    expected = model(ids, labels=ids)
    expected.loss.backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters()}
    model.zero_grad()
    params = dict(model.named_parameters())
    _, counts = tile.transformers.apply_tile(model, tiled_mlp=tiled)
    layers = model.config.num_hidden_layers
    assert counts["mlp"] == layers and counts["rope"] == 1
    assert counts["rms_norm"] >= 2 * layers + 1
    # The same Parameter objects, under the same names.
    assert dict(model.named_parameters()) == params
    got = model(ids, labels=ids)
    got.loss.backward()
    scale = expected.logits.abs().max().item()
    assert (got.logits - expected.logits).abs().max().item() <= HF_RTOL * scale
    assert abs(got.loss.item() - expected.loss.item()) <= HF_RTOL
    for name, p in model.named_parameters():
        g = grads[name]
        bound = HF_RTOL * max(1.0, g.abs().max().item())
        assert (p.grad - g).abs().max().item() <= bound, name


def test_unsupported_models_are_named():
    config = transformers.GPT2Config(n_layer=1, n_embd=32, n_head=4,
                                     vocab_size=64)
    model = transformers.GPT2LMHeadModel(config)
    with pytest.raises(ValueError, match="'gpt2'.*supported: gemma, llama"):
        tile.transformers.apply_tile(model)
    llama = _tiny("llama")
    tile.transformers.apply_tile(llama)
    with pytest.raises(ValueError, match="patched already"):
        tile.transformers.apply_tile(llama)


def _model(model_type, dtype):
    common = dict(vocab_size=256, hidden_size=256, intermediate_size=768,
                  num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=256)
    configs = {"llama": transformers.LlamaConfig,
               "mistral": transformers.MistralConfig,
               "qwen2": transformers.Qwen2Config,
               "qwen3": transformers.Qwen3Config,
               "gemma": transformers.GemmaConfig}
    extra = {"gemma": dict(head_dim=64), "qwen3": dict(head_dim=64)}
    config = configs[model_type](**common, **extra.get(model_type, {}))
    torch.manual_seed(0)
    return transformers.AutoModelForCausalLM.from_config(config).to(
        "cuda", dtype)


def _loss_and_grads(model, ids):
    model.zero_grad()
    out = model(ids, labels=ids)
    out.loss.backward()
    return out, {n: p.grad.float().clone()
                 for n, p in model.named_parameters()}


@pytest.mark.gpu
@pytest.mark.parametrize("model_type", sorted(tile.transformers.SUPPORTED))
@pytest.mark.parametrize("tiled", [False, True])
def test_patched_bf16_model_matches_float64(model_type, tiled):
    """Both bf16 models against the float64 one: the patched model's error
    may not exceed the unpatched model's by more than a small margin."""
    if tiled and model_type == "gemma":
        pytest.skip("Gemma's MLP is GeGLU; the tiled MLP is SwiGLU")
    ids = torch.randint(0, 256, (2, 128), device="cuda",
                        generator=torch.Generator("cuda").manual_seed(1))
    exact, exact_grads = _loss_and_grads(_model(model_type, torch.float64),
                                         ids)
    plain, plain_grads = _loss_and_grads(_model(model_type, torch.bfloat16),
                                         ids)
    patched_model = _model(model_type, torch.bfloat16)
    tile.transformers.apply_tile(patched_model, tiled_mlp=tiled)
    patched, patched_grads = _loss_and_grads(patched_model, ids)

    def error(a, b):
        return ((a.double() - b.double()).abs().max() /
                b.double().abs().max().clamp_min(1e-30)).item()
    # Stated tolerance: within 2x of bf16 PyTorch's own error, + 1e-2.
    assert error(patched.logits, exact.logits) <= \
        2 * error(plain.logits, exact.logits) + 1e-2
    assert abs(patched.loss.item() - exact.loss.item()) <= \
        2 * abs(plain.loss.item() - exact.loss.item()) + 1e-2
    for name, g in exact_grads.items():
        assert error(patched_grads[name], g) <= \
            2 * error(plain_grads[name], g) + 2e-2, name
