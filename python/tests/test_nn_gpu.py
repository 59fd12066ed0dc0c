"""tile.nn and tile.transformers on the GPU: patched tiny Hugging Face
models in bf16 against the unpatched ones, the main_grad contract through
cuBLASLt (GEMMs with beta = 1 into fp32), and the modules against float64.
Skipped without CUDA."""

import pytest
import torch

import tile
import tile.transformers
from conftest import assert_close, gated_mlp, gelu_tanh, leaf, rms_norm

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(),
                                reason="no CUDA device")
transformers = pytest.importorskip("transformers")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16,
                                   torch.float32])
@pytest.mark.parametrize("shape", [(1, 4096, 32, 8, 128), (2, 333, 4, 2, 64),
                                   (3, 17, 6, 3, 8)])
def test_rope_against_float64(dtype, shape, poison_the_allocator):
    """tile.ops.rope on q, k as Llama's attention makes them (transposed
    views of [B, S, heads, D]) against Hugging Face's formula in float64."""
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb
    batch, seq, heads, kv_heads, head_dim = shape
    g = torch.Generator("cuda").manual_seed(seq)
    q = torch.randn(batch, seq, heads, head_dim, device="cuda", generator=g)
    k = torch.randn(batch, seq, kv_heads, head_dim, device="cuda",
                    generator=g)
    angle = torch.rand(batch, seq, head_dim // 2, device="cuda",
                       generator=g) * 100
    cos = torch.cat([angle.cos()] * 2, -1).to(dtype)
    sin = torch.cat([angle.sin()] * 2, -1).to(dtype)
    q, k = (leaf(t.to(dtype).transpose(1, 2)) for t in (q, k))
    got = tile.ops.rope(q, k, cos, sin)
    exact_q, exact_k = (leaf(t.detach().double()) for t in (q, k))
    want = apply_rotary_pos_emb(exact_q, exact_k, cos.double(),
                                sin.double())
    dy = [torch.randn_like(w).to(dtype) for w in want]
    torch.autograd.backward(got, dy)
    torch.autograd.backward(want, [d.double() for d in dy])
    for o, w, name in zip(got, want, "qk"):
        assert o.dtype == dtype and o.stride() == w.stride()
        assert_close(o, w, dtype, f"rope {name}")
    assert_close(q.grad, exact_q.grad, dtype, "rope dq")
    assert_close(k.grad, exact_k.grad, dtype, "rope dk")



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


@pytest.mark.parametrize("make", [
    lambda: tile.nn.RMSNorm(512, 1e-6, accumulate_into_main_grad=True,
                            device="cuda", dtype=torch.bfloat16),
    lambda: tile.nn.SwiGLUMLP(512, 1024, accumulate_into_main_grad=True,
                              device="cuda", dtype=torch.bfloat16),
    lambda: tile.nn.GatedMLP(512, 1024, "gelu_pytorch_tanh",
                             accumulate_into_main_grad=True, device="cuda",
                             dtype=torch.bfloat16),
    lambda: tile.nn.TiledSwiGLUMLP(512, 1024, 3,
                                   accumulate_into_main_grad=True,
                                   device="cuda", dtype=torch.bfloat16),
], ids=["RMSNorm", "SwiGLUMLP", "GeGLUMLP", "TiledSwiGLUMLP"])
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_main_grad_on_the_gpu(make, compiled):
    """Compiled: torch.compile(fullgraph) with Inductor, the main_grads
    attached first (tile.nn.attach_main_grads)."""
    torch.manual_seed(2)
    module = make()
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn_like(p.float()) * p.shape[-1] ** -0.5)
    run = module
    if compiled:
        torch._dynamo.reset()
        run = torch.compile(tile.nn.attach_main_grads(module),
                            fullgraph=True)
    exact = [p.detach().double() for p in module.parameters()]
    expected = [torch.zeros_like(e) for e in exact]
    for _ in range(3):
        x = leaf(torch.randn(700, 512, device="cuda").bfloat16())
        dy = torch.randn(700, 512, device="cuda").bfloat16()
        run(x).backward(dy)
        # The float64 reference: the same module's math on float64 copies.
        ref_params = [leaf(e) for e in exact]
        ref_x = leaf(x.double())
        _reference(module, ref_x, ref_params).backward(dy.double())
        assert_close(x.grad, ref_x.grad, torch.bfloat16, "dx")
        for e, r in zip(expected, ref_params):
            e += r.grad
    for p, e in zip(module.parameters(), expected):
        assert p.grad is None and p.grad_added_to_main_grad
        assert p.main_grad.dtype == torch.float32
        assert_close(p.main_grad, e, torch.bfloat16, "main_grad")


def _reference(module, x, params):
    if isinstance(module, tile.nn.RMSNorm):
        return rms_norm(x, params[0], module.eps, module.offset)
    if getattr(module, "activation", "silu") != "silu":
        return gated_mlp(x, *params, act=gelu_tanh)
    return gated_mlp(x, *params)
