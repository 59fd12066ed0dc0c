"""tile.nn and tile.transformers on the CPU (the reference evaluator): the
modules against PyTorch, state dicts shared with Hugging Face modules, the
main_grad contract over micro-batches (with Megatron-style hooks), and
patched tiny Hugging Face models against the unpatched ones. Runs in CI."""

import pytest
import torch

import tile
import tile.transformers
from conftest import assert_close, leaf, rms_norm, swiglu_mlp

transformers = pytest.importorskip("transformers")

# Hugging Face's RMSNorm computes in float32 even for float64 inputs: a
# float64 model patched with Tile (exact in float64) differs from it by
# float32 rounding, amplified a little through the layers.
HF_RTOL = 1e-5


def _rope_inputs(layout, dtype=torch.float64, generator=None):
    """q, k as the attention makes them (transposed views of the
    projections' [B, S, heads, D]) and Llama's cos, sin."""
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding
    config = transformers.LlamaConfig(hidden_size=64, num_attention_heads=4,
                                      num_key_value_heads=2)
    cos, sin = LlamaRotaryEmbedding(config)(
        torch.zeros(1, dtype=dtype), torch.arange(9).expand(2, 9))
    q = torch.randn(2, 9, 4, 16, dtype=dtype, generator=generator)
    k = torch.randn(2, 9, 2, 16, dtype=dtype, generator=generator)
    if layout == 1:
        q, k = q.transpose(1, 2), k.transpose(1, 2)
    return leaf(q), leaf(k), cos.to(dtype), sin.to(dtype)


@pytest.mark.parametrize("unsqueeze_dim", [1, 2])
def test_rope_matches_hugging_face(unsqueeze_dim, generator):
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb
    q, k, cos, sin = _rope_inputs(unsqueeze_dim, generator=generator)
    got = tile.ops.rope(q, k, cos, sin, unsqueeze_dim)
    rq, rk = leaf(q.detach()), leaf(k.detach())
    want = apply_rotary_pos_emb(rq, rk, cos, sin, unsqueeze_dim)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.stride() == w.stride()
        assert_close(g, w, torch.float64, "rope")
    dq, dk = (torch.randn_like(w) for w in want)
    torch.autograd.backward(got, (dq, dk))
    torch.autograd.backward(want, (dq, dk))
    assert_close(q.grad, rq.grad, torch.float64, "rope dq")
    assert_close(k.grad, rk.grad, torch.float64, "rope dk")


def test_rope_gradcheck_and_errors(generator):
    q, _, cos, sin = _rope_inputs(1, generator=generator)
    q = leaf(q.detach()[:, :2].contiguous())  # not a transposed view
    assert torch.autograd.gradcheck(
        lambda x: tile.ops.rotary(x, cos, sin), (q,))
    with pytest.raises(ValueError, match="unsqueeze_dim must be 1 or 2"):
        tile.ops.rotary(q, cos, sin, 3)
    with pytest.raises(ValueError, match=r"cos and sin must be \[2 or 1, 9, 16\]"):
        tile.ops.rotary(q, cos[..., :8], sin[..., :8])
    with pytest.raises(ValueError, match="x must be 4-D"):
        tile.ops.rotary(q[0], cos, sin)


def test_rms_norm_module_matches_and_loads_hf_state(generator):
    from transformers.models.llama.modeling_llama import LlamaRMSNorm
    from transformers.models.gemma.modeling_gemma import GemmaRMSNorm
    x = torch.randn(3, 5, 32, dtype=torch.float64, generator=generator)
    for hf_class, offset in ((LlamaRMSNorm, 0.0), (GemmaRMSNorm, 1.0)):
        hf = hf_class(32, eps=1e-5).double()
        ours = tile.nn.RMSNorm(32, 1e-5, offset, dtype=torch.float64)
        assert torch.equal(ours.weight, hf.weight)  # the same initial state
        with torch.no_grad():
            hf.weight.uniform_(-0.5, 0.5, generator=generator)
        ours.load_state_dict(hf.state_dict())
        assert_close(ours(x), rms_norm(x, hf.weight, 1e-5, offset),
                     torch.float64, hf_class.__name__)
        assert set(ours.state_dict()) == set(hf.state_dict())


@pytest.mark.parametrize("activation", ["silu", "gelu_pytorch_tanh"])
def test_gated_mlp_matches_hf(activation, generator):
    from transformers.models.llama.modeling_llama import LlamaMLP
    config = transformers.LlamaConfig(hidden_size=32, intermediate_size=48,
                                      hidden_act=activation)
    hf = LlamaMLP(config).double()
    ours = tile.nn.GatedMLP(32, 48, activation, dtype=torch.float64)
    ours.load_state_dict(hf.state_dict())
    x = torch.randn(2, 7, 32, dtype=torch.float64, generator=generator)
    a, b = leaf(x), leaf(x)
    hf(a).sum().backward()
    ours(b).sum().backward()
    # GeGLU's constants (sqrt(2/pi), 0.044715) are f32 in the kernel.
    dtype = torch.float64 if activation == "silu" else torch.float32
    assert_close(ours(x), hf(x), dtype, activation)
    assert_close(b.grad, a.grad, dtype, "dx")
    for p, q in zip(ours.parameters(), hf.parameters()):
        assert_close(p.grad, q.grad, dtype, "weight gradient")


def test_gated_mlp_compiles_fullgraph(generator):
    """The in-place activation backward (eager) and its functional form
    (traced) give the same gradients; torch.compile sees no graph break."""
    mlp = tile.nn.SwiGLUMLP(16, 32, dtype=torch.float64)
    x = torch.randn(4, 16, dtype=torch.float64, generator=generator)
    a, b = leaf(x), leaf(x)
    eager = mlp(a)
    eager.sum().backward()
    expected = [p.grad.clone() for p in mlp.parameters()]
    mlp.zero_grad(set_to_none=True)
    compiled = torch.compile(mlp, backend="aot_eager", fullgraph=True)(b)
    compiled.sum().backward()
    assert torch.equal(compiled, eager)
    assert torch.equal(b.grad, a.grad)
    for p, grad in zip(mlp.parameters(), expected):
        assert torch.equal(p.grad, grad)


def _modules(main_grad, generator):
    torch.manual_seed(int(torch.randint(0, 1 << 30, (1,),
                                        generator=generator)))
    kwargs = dict(accumulate_into_main_grad=main_grad, dtype=torch.float64)
    return [tile.nn.RMSNorm(16, 1e-6, **kwargs),
            tile.nn.SwiGLUMLP(16, 24, **kwargs),
            tile.nn.TiledSwiGLUMLP(16, 24, 2, **kwargs)]


@pytest.mark.parametrize("index", [0, 1, 2], ids=["RMSNorm", "SwiGLUMLP",
                                                  "TiledSwiGLUMLP"])
@pytest.mark.parametrize("hooks", [False, True])
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_main_grad_contract(index, hooks, compiled, generator):
    """Compiled (fullgraph), the traced backward adds to main_grad as a
    graph input, and the forward sets the flag."""
    state = torch.Generator().manual_seed(7)
    module = _modules(True, state)[index]
    reference = _modules(False, torch.Generator().manual_seed(7))[index]
    reference.load_state_dict(module.state_dict())
    run = module
    if compiled:
        torch._dynamo.reset()
        run = torch.compile(tile.nn.attach_main_grads(module),
                            backend="aot_eager", fullgraph=True)
    fired = []
    if hooks:
        # Megatron's DDP: a hook on each parameter's gradient accumulator
        # adds .grad to main_grad unless grad_added_to_main_grad says it is
        # there already; here it must find nothing to add.
        for p in module.parameters():
            def hook(param):
                fired.append(param.grad is not None)
                if param.grad is not None and \
                        not getattr(param, "grad_added_to_main_grad", False):
                    param.main_grad.add_(param.grad)
                param.grad = None
            p.register_post_accumulate_grad_hook(hook)
    for _ in range(3):  # micro-batches
        x = torch.randn(3, 5, 16, dtype=torch.float64, generator=generator)
        dy = torch.randn(3, 5, 16, dtype=torch.float64, generator=generator)
        a, b = leaf(x), leaf(x)
        run(a).backward(dy)
        reference(b).backward(dy)
        assert_close(a.grad, b.grad, torch.float64, "dx")
    for p, r in zip(module.parameters(), reference.parameters()):
        assert p.grad is None
        assert p.grad_added_to_main_grad is True
        assert p.main_grad.dtype == torch.float64
        assert p.main_grad.data_ptr() != r.grad.data_ptr()
        assert_close(p.main_grad, r.grad, torch.float64,
                     "main_grad = the sum of the micro-batches' gradients")
    # The hooks run (autograd visits the accumulators, which Megatron's
    # buckets count on to know a parameter is ready) but find no .grad.
    if hooks:
        assert len(fired) == 3 * len(list(module.parameters()))
    assert not any(fired)


def test_main_grad_under_compile_needs_it_attached_first(generator):
    """A compiled step cannot make main_grad (the backward adds to it as a
    graph input): the error says what to do, and attach_main_grads does
    it for every Tile module that uses the contract, and only those."""
    torch._dynamo.reset()
    model = torch.nn.Sequential(
        tile.nn.RMSNorm(16, accumulate_into_main_grad=True,
                        dtype=torch.float64),
        tile.nn.RMSNorm(16, dtype=torch.float64))
    x = leaf(torch.randn(4, 16, dtype=torch.float64, generator=generator))
    with pytest.raises(Exception, match="attach_main_grads"):
        torch.compile(model, backend="aot_eager", fullgraph=True)(x)
    assert getattr(model[0].weight, "main_grad", None) is None
    assert tile.nn.attach_main_grads(model) is model
    assert model[0].weight.main_grad.dtype == torch.float64
    assert torch.count_nonzero(model[0].weight.main_grad) == 0
    assert getattr(model[1].weight, "main_grad", None) is None


def test_main_grad_compiled_by_inductor(generator):
    """The same contract through Inductor (which may fuse the copy into
    main_grad): a norm and a tiled MLP, two micro-batches."""
    torch._dynamo.reset()
    kwargs = dict(accumulate_into_main_grad=True, dtype=torch.float64)
    model = torch.nn.Sequential(tile.nn.RMSNorm(16, **kwargs),
                                tile.nn.TiledSwiGLUMLP(16, 24, 2, **kwargs))
    reference = torch.nn.Sequential(
        tile.nn.RMSNorm(16, dtype=torch.float64),
        tile.nn.TiledSwiGLUMLP(16, 24, 2, dtype=torch.float64))
    reference.load_state_dict(model.state_dict())
    run = torch.compile(tile.nn.attach_main_grads(model), fullgraph=True)
    for _ in range(2):
        x = torch.randn(6, 16, dtype=torch.float64, generator=generator)
        a, b = leaf(x), leaf(x)
        run(a).sum().backward()
        reference(b).sum().backward()
        assert_close(a.grad, b.grad, torch.float64, "dx")
    for p, r in zip(model.parameters(), reference.parameters()):
        assert p.grad is None and p.grad_added_to_main_grad is True
        assert_close(p.main_grad, r.grad, torch.float64, "main_grad")


def test_tiled_mlp_module_matches_reference(generator):
    mlp = tile.nn.TiledSwiGLUMLP(16, 24, "auto", dtype=torch.float64)
    x = torch.randn(4, 16, dtype=torch.float64, generator=generator)
    ref = swiglu_mlp(x, mlp.gate_proj.weight, mlp.up_proj.weight,
                     mlp.down_proj.weight)
    assert_close(mlp(x), ref, torch.float64, "tiled MLP")
    with pytest.raises(ValueError, match="shards must be 'auto'"):
        tile.nn.TiledSwiGLUMLP(16, 24, 0)
    with pytest.raises(ValueError, match="activation 'relu'"):
        tile.nn.GatedMLP(16, 24, "relu")


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
