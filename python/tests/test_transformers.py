"""tile.transformers.apply_tile on tiny Hugging Face models of every
supported type, with the untiled and the tiled MLP: on the CPU in float64
against the unpatched model (logits, loss and every parameter's gradient
within HF_RTOL; the same Parameter objects under the same names), and
unsupported or twice-patched models named in the error; on the GPU (the
tests marked gpu) in bf16 against float64, within twice bf16 PyTorch's own
error. Skipped without transformers."""

import copy
import sys
import warnings

import pytest
import torch

import tile
import tile.lm_loss
import tile.transformers
from benchmark_scripts import load

transformers = pytest.importorskip("transformers")
_CONVERGENCE = load("convergence")

# Hugging Face's RMSNorm computes in float32 even for float64 inputs: a
# float64 model patched with Tile (exact in float64) differs from it by
# float32 rounding, amplified a little through the layers.
HF_RTOL = 1e-5

# The families whose MLP is one gate_up projection.
FUSED_MLP = {"phi3", "glm4", "glm4v"}
# Families whose MLP is not gated (Nemotron's relu²): not tiled either.
NOT_GATED = {"nemotron"}
# Families whose MLP has gate and down multipliers (Falcon-H1's): not tiled.
MULTIPLIED = {"falcon_h1"}


def _config(model_type, head_dim, **sizes):
    """A config of `model_type` with the features its patch must honour
    switched on (benchmarks/convergence.py's FAMILY_CONFIG)."""
    return _CONVERGENCE.family_config(model_type, head_dim=head_dim, **sizes)


def _geglu(model_type):
    """Whether the family's MLP is GeGLU (Gemma's, PaliGemma's text)."""
    text = _config(model_type, 8).get_text_config()
    name = getattr(text, "hidden_activation", None) or text.hidden_act
    return tile.nn.ACTIVATIONS.get(name) == "geglu"


def _tiny(model_type):
    config = _config(model_type, 8, vocab_size=64, hidden_size=32,
                     intermediate_size=48, max_position_embeddings=64)
    return _CONVERGENCE.from_config(config).double()


@pytest.mark.parametrize("model_type", _CONVERGENCE.LANGUAGE_MODELS)
@pytest.mark.parametrize("tiled", [False, 2])
def test_patched_model_matches_unpatched(model_type, tiled):
    if tiled and _geglu(model_type):
        pytest.skip("Gemma's MLP is GeGLU; the tiled MLP is SwiGLU")
    torch.manual_seed(0)
    model = _tiny(model_type)
    ids = torch.randint(0, 64, (2, 9))
    torch.manual_seed(1)  # Phi-MoE's router samples its top-k in training
    expected = _CONVERGENCE.run(model, ids, labels=ids)
    expected.loss.backward()
    grads = _grads(model)
    model.zero_grad()
    params = dict(model.named_parameters())
    family = tile.transformers.family_of(model.config)
    fused = model_type in FUSED_MLP
    untileable = tiled and model_type in NOT_GATED | MULTIPLIED
    kinds = [type(m).__name__ for m in model.modules()]
    mlps = sum(kinds.count(k) for k in family.mlps)
    experts = sum(kinds.count(k) for k in family.experts)
    if untileable:
        match = "multipliers" if model_type in MULTIPLIED else \
            "take gated SwiGLU"
        with pytest.warns(UserWarning, match=match):
            _, counts = tile.transformers.apply_tile(model, tiled_mlp=tiled)
    elif family.other_rope or family.own:
        with pytest.warns(UserWarning, match="apply_tile left to"):
            _, counts = tile.transformers.apply_tile(model, tiled_mlp=tiled)
    else:
        _, counts = tile.transformers.apply_tile(model, tiled_mlp=tiled)
    layers = model.config.get_text_config().num_hidden_layers
    # Every layer's MLP or experts patched, unless the family's are its own
    # (gpt-oss's and DeepSeek-V4's clamped experts).
    assert mlps + experts >= layers or not (family.mlps or family.experts)
    assert (experts > 0) == bool(family.experts)
    assert counts["mlp"] == (0 if untileable else mlps)
    if tiled and fused:  # Phi-3's, GLM-4's: the tiled MLP on its views
        assert any(isinstance(m, tile.nn.TiledFusedSwiGLUMLP)
                   for m in model.modules())
    assert counts["experts"] == experts
    assert counts["rope"] == (0 if family.other_rope else 1)
    weightless = any(type(m).__name__ in family.norms and
                     getattr(m, "weight", None) is None
                     for m in model.modules())
    assert len(counts["skipped"]) == untileable + bool(
        family.other_rope) + len(family.own) + weightless
    # Phi-MoE's norms are LayerNorms (the model's own).
    assert counts["rms_norm"] >= (2 * layers + 1 if family.norms else 0)
    assert counts["loss"] == 1
    # The same Parameter objects, under the same names.
    assert dict(model.named_parameters()) == params
    # Training with labels: the LM head and loss in chunks, no logits (an
    # MoE model's router auxiliary loss added, its config has it on).
    torch.manual_seed(1)
    got = model(ids, labels=ids)
    assert got.logits is None and type(got) is type(expected)
    if getattr(expected, "aux_loss", None) is not None:
        assert got.router_logits is not None
        assert abs(got.aux_loss.item() - expected.aux_loss.item()) <= \
            HF_RTOL * abs(expected.aux_loss.item())
    else:  # DeepSeek's: no auxiliary loss in Hugging Face's model
        assert getattr(got, "aux_loss", None) is None
    got.loss.backward()
    assert abs(got.loss.item() - expected.loss.item()) <= HF_RTOL
    _assert_grads_close(model, grads)
    # Evaluation: the model's own head gives the logits.
    model.eval()
    logits = model(ids).logits
    scale = expected.logits.abs().max().item()
    assert (logits - expected.logits).abs().max().item() <= HF_RTOL * scale


def _grads(model):
    """Every parameter's gradient; None where nothing reached it (a layer
    a family's config leaves unused, Gemma 4's and Llama 4's)."""
    return {n: None if p.grad is None else p.grad.clone()
            for n, p in model.named_parameters()}


def _assert_grads_close(model, grads):
    for name, p in model.named_parameters():
        g = grads[name]
        if g is None or p.grad is None:
            assert g is None and p.grad is None, name
            continue
        bound = HF_RTOL * max(1.0, g.abs().max().item())
        assert (p.grad - g).abs().max().item() <= bound, name


def _grads_of(model, **inputs):
    model.zero_grad()
    torch.manual_seed(1)  # Phi-MoE's router samples its top-k in training
    out = model(**inputs)
    out.loss.backward()
    grads = _grads(model)
    model.zero_grad()
    return out, grads


@pytest.mark.parametrize("loss_kwargs", [
    {}, {"num_items_in_batch": 7}, {"shift_labels": True}])
@pytest.mark.parametrize("linear, logits_loss", [(True, False),
                                                 (False, True)])
def test_patched_loss_keeps_hugging_faces_conventions(loss_kwargs, linear,
                                                      logits_loss):
    """ignore_index labels, num_items_in_batch (a sum divided by it) and
    shift_labels given by the caller, through the chunked head (training)
    or the logits' loss (eval mode, cross_entropy=True)."""
    torch.manual_seed(0)
    model = _tiny("llama")
    ids = torch.randint(0, 64, (2, 9))
    labels = ids.clone()
    labels[0, :4] = -100
    kwargs = dict(loss_kwargs)
    if kwargs.pop("shift_labels", False):
        kwargs["shift_labels"] = torch.nn.functional.pad(
            labels, (0, 1), value=-100)[..., 1:].contiguous()
        # Labels must be given too; the shifted ones replace them.
        inputs = dict(input_ids=ids, labels=ids, **kwargs)
    else:
        inputs = dict(input_ids=ids, labels=labels, **kwargs)
    if not linear:
        model.eval()
    expected, grads = _grads_of(model, **inputs)
    tile.transformers.apply_tile(model, rms_norm=False, mlp=False,
                                 rope=False, linear_cross_entropy=linear,
                                 cross_entropy=logits_loss)
    got, _ = _grads_of(model, **inputs)
    assert (got.logits is None) == linear
    # Hugging Face's loss casts the logits to float32 (ours stays float64).
    assert abs(got.loss.item() - expected.loss.item()) <= HF_RTOL
    model(**inputs).loss.backward()
    _assert_grads_close(model, grads)


@pytest.mark.parametrize("model_type, tied", [("llama", True),
                                              ("llama", False),
                                              ("gemma", True)])
def test_a_tied_head_gets_both_gradients(model_type, tied):
    """With the head tied to the embedding (Gemma's always, Llama's by
    config), the chunked head's gradient and the embedding's land in the
    one weight as in the model's own forward; untied, each its own."""
    config = _config(model_type, 8, vocab_size=64, hidden_size=32,
                     intermediate_size=48, max_position_embeddings=64,
                     tie_word_embeddings=tied)
    torch.manual_seed(0)
    model = _CONVERGENCE.from_config(config).double()
    head, embedding = (model.get_output_embeddings().weight,
                       model.get_input_embeddings().weight)
    assert (head is embedding) == tied
    ids = torch.randint(0, 64, (2, 9))
    expected, grads = _grads_of(model, input_ids=ids, labels=ids)
    tile.transformers.apply_tile(model)
    assert (model.get_output_embeddings().weight is embedding) == tied
    model.zero_grad()
    got = model(input_ids=ids, labels=ids)
    assert got.logits is None  # the chunked head ran
    got.loss.backward()
    assert abs(got.loss.item() - expected.loss.item()) <= HF_RTOL
    _assert_grads_close(model, grads)


def test_patched_loss_honours_the_final_soft_cap():
    """Gemma 2's final_logit_softcapping, through the chunked head."""
    config = transformers.Gemma2Config(
        vocab_size=64, hidden_size=32, intermediate_size=48,
        num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2,
        head_dim=8, final_logit_softcapping=5.0)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config).double()
    ids = torch.randint(0, 64, (2, 9))
    expected, grads = _grads_of(model, input_ids=ids, labels=ids)
    assert tile.lm_loss.patch_loss(model, True, False, False) == 1
    got, _ = _grads_of(model, input_ids=ids, labels=ids)
    assert got.logits is None
    assert abs(got.loss.item() - expected.loss.item()) <= HF_RTOL
    model(input_ids=ids, labels=ids).loss.backward()
    _assert_grads_close(model, grads)


MOE = [t for t in _CONVERGENCE.LANGUAGE_MODELS if tile.transformers.family_of(
    _CONVERGENCE.family_config(t)).experts]


@pytest.mark.parametrize("model_type", MOE)
@pytest.mark.parametrize("case", ["padded", "items", "no-router-logits",
                                  "router-logits-by-call", "eval-logits"])
def test_moe_loss_adds_the_router_loss_as_the_model_does(model_type, case):
    """The router's auxiliary loss through the chunked head as the model's
    forward adds it: over the attention mask (padded rows), after the
    division by num_items_in_batch, not at all with output_router_logits
    off in the config, on when a call asks for it; and on the logits'
    path (eval mode, cross_entropy=True). aux_loss and router_logits in
    the output as the model's; every gradient (the router's included)
    as the model's."""
    torch.manual_seed(0)
    model = _tiny(model_type)
    has_aux = tile.lm_loss.router_of(model) is not None
    if case in ("no-router-logits", "router-logits-by-call"):
        if not has_aux:
            pytest.skip(f"{model_type} has no auxiliary loss")
        # Where the model's forward reads it (a vision-language model's
        # text config).
        model.config.get_text_config().output_router_logits = False
    ids = torch.randint(0, 64, (2, 9))
    inputs = dict(input_ids=ids, labels=ids)
    if case == "padded":
        mask = torch.ones_like(ids)
        mask[0, :3] = 0
        inputs["attention_mask"] = mask
    elif case == "items":
        inputs["num_items_in_batch"] = 11
    elif case == "router-logits-by-call":
        inputs["output_router_logits"] = True
    if case == "eval-logits":
        model.eval()
    expected, grads = _grads_of(model, **inputs)
    tile.transformers.apply_tile(model, rms_norm=False, mlp=False,
                                 rope=False, cross_entropy=True)
    got, _ = _grads_of(model, **inputs)
    assert (got.logits is None) != (case == "eval-logits")
    assert type(got) is type(expected)
    if case == "no-router-logits" or not has_aux:
        # DeepSeek, GLM-4-MoE, Hunyuan: no auxiliary loss in the model.
        assert got.aux_loss is None and expected.aux_loss is None
    else:
        assert got.aux_loss.item() == pytest.approx(
            expected.aux_loss.item(), rel=HF_RTOL)
        assert len(got.router_logits) == len(expected.router_logits)
    assert abs(got.loss.item() - expected.loss.item()) <= HF_RTOL
    torch.manual_seed(1)
    model(**inputs).loss.backward()
    _assert_grads_close(model, grads)
    if has_aux and case != "no-router-logits":
        # The router's weights get a gradient (through the auxiliary loss).
        router = [n for n, g in grads.items()
                  if ("router" in n or ".gate." in n) and g is not None and
                  g.abs().max() > 0]
        assert router, sorted(grads)


def test_moe_loss_without_the_model_s_balancing_function_is_refused():
    """A model taking output_router_logits whose modeling module has no
    load_balancing_loss_func: the patch says so instead of training
    without the auxiliary loss."""
    model = _tiny("qwen3_moe")
    modeling = sys.modules[type(model).__module__]
    balance = modeling.load_balancing_loss_func
    del modeling.load_balancing_loss_func
    try:
        with pytest.raises(ValueError, match="no load_balancing_loss_func"):
            tile.transformers.apply_tile(model, rms_norm=False, mlp=False,
                                         rope=False)
    finally:
        modeling.load_balancing_loss_func = balance


@pytest.mark.parametrize("model_type", ["gemma3", "paligemma"])
def test_vision_language_soft_cap_as_the_model_applies_it(model_type):
    """A text config's final_logit_softcapping: PaliGemma's forward applies
    it, Gemma 3's vision-language forward does not; the chunked head does
    as each model does."""
    torch.manual_seed(0)
    model = _tiny(model_type)
    model.config.get_text_config().final_logit_softcapping = 0.5
    ids = torch.randint(0, 64, (2, 9))
    expected, grads = _grads_of(model, input_ids=ids, labels=ids)
    tile.transformers.apply_tile(model, rms_norm=False, mlp=False,
                                 rope=False)
    got, _ = _grads_of(model, input_ids=ids, labels=ids)
    assert got.logits is None
    assert abs(got.loss.item() - expected.loss.item()) <= HF_RTOL
    torch.manual_seed(1)
    model(input_ids=ids, labels=ids).loss.backward()
    _assert_grads_close(model, grads)


def test_unsupported_models_are_named():
    config = transformers.GPT2Config(n_layer=1, n_embd=32, n_head=4,
                                     vocab_size=64)
    model = transformers.GPT2LMHeadModel(config)
    with pytest.raises(ValueError, match="'gpt2'.*supported: deepseek_v2, "
                       "deepseek_v3, .*gemma, gemma2, .*llama, .*llava, "
                       "ministral"):
        tile.transformers.apply_tile(model)
    llama = _tiny("llama")
    tile.transformers.apply_tile(llama)
    with pytest.raises(ValueError, match="patched already"):
        tile.transformers.apply_tile(llama)


def _moe_config_for_bf16(config):
    """Two experts, both chosen by every token: a router's top-k is a
    discontinuous function, and bf16 rounding (Hugging Face's own as much
    as Tile's) moves a token whose scores nearly tie to other experts,
    which changes its logits wholesale. On the H200 that moved whole
    tokens of GLM-4-MoE and DeepSeek-V3 (0.06 and 0.36 relative, each of
    Tile's kernels alone within bf16 of float64): the bf16 test would
    measure the router's ties, not the kernels. The routing itself is
    checked exactly in float64 on the CPU, and so is the auxiliary loss,
    off here: Granite-MoE's own forward in transformers 5.17 (the GPU
    machine's) does not pass output_router_logits to its base model and
    fails adding a missing auxiliary loss."""
    config.output_router_logits = False
    for count in (*_CONVERGENCE.EXPERT_COUNTS, "num_experts_per_tok",
                  "moe_topk"):
        if hasattr(config, count):
            setattr(config, count, 2)
    for groups in ("n_group", "topk_group"):
        if hasattr(config, groups):
            setattr(config, groups, 1)
    return config


def _model(model_type, dtype):
    config = _config(model_type, 64, vocab_size=256, hidden_size=256,
                     intermediate_size=768, max_position_embeddings=256)
    if _CONVERGENCE.has_experts(config):
        # Experts, Tile's or the model's own (gpt-oss's, Llama 4's: their
        # routers' ties move tokens all the same); set where the model
        # reads them (a vision-language model's text config).
        _moe_config_for_bf16(config.get_text_config())
    torch.manual_seed(0)
    return _CONVERGENCE.from_config(config).to("cuda", dtype)


def _loss_and_grads(model, ids):
    """(loss, logits, gradients): the loss and gradients of a training
    step (a patched model's through its chunked head), the logits from
    eval mode (where a patched model makes them)."""
    model.zero_grad()
    out = _CONVERGENCE.run(model, ids, labels=ids)
    out.loss.backward()
    model.eval()
    with torch.no_grad():
        logits = _CONVERGENCE.run(model, ids).logits
    model.train()
    # A vision-language model's vision tower gets no gradient from text:
    # None, compared as such (the patched model must agree).
    return out.loss, logits, {
        n: None if p.grad is None else p.grad.float().clone()
        for n, p in model.named_parameters()}


@pytest.mark.gpu
@pytest.mark.parametrize("model_type", _CONVERGENCE.LANGUAGE_MODELS)
@pytest.mark.parametrize("tiled", [False, True])
def test_patched_bf16_model_matches_float64(model_type, tiled):
    """Both bf16 models against the float64 one: the patched model's error
    may not exceed the unpatched model's by more than a small margin."""
    if tiled and _geglu(model_type):
        pytest.skip("Gemma's MLP is GeGLU; the tiled MLP is SwiGLU")
    ids = torch.randint(0, 256, (2, 128), device="cuda",
                        generator=torch.Generator("cuda").manual_seed(1))
    exact, exact_logits, exact_grads = _loss_and_grads(
        _model(model_type, torch.float64), ids)
    plain, plain_logits, plain_grads = _loss_and_grads(
        _model(model_type, torch.bfloat16), ids)
    patched_model = _model(model_type, torch.bfloat16)
    tile.transformers.apply_tile(patched_model, tiled_mlp=tiled)
    patched, patched_logits, patched_grads = _loss_and_grads(patched_model,
                                                             ids)

    def error(a, b):
        return ((a.double() - b.double()).abs().max() /
                b.double().abs().max().clamp_min(1e-30)).item()
    # Stated tolerance: within 2x of bf16 PyTorch's own error, + 1e-2.
    assert error(patched_logits, exact_logits) <= \
        2 * error(plain_logits, exact_logits) + 1e-2
    assert abs(patched.item() - exact.item()) <= \
        2 * abs(plain.item() - exact.item()) + 1e-2
    for name, g in exact_grads.items():
        if g is None:
            assert patched_grads[name] is None, name
            continue
        assert error(patched_grads[name], g) <= \
            2 * error(plain_grads[name], g) + 2e-2, name


def test_patched_loss_outputs_and_fallbacks():
    """The loss is the output's first field (and the tuple's) on both
    paths; a head with a forward hook (or any wrapper) runs its own
    forward, so what it adds is kept; a tensor logits_to_keep works."""
    torch.manual_seed(0)
    model = _tiny("llama")
    ids = torch.randint(0, 64, (2, 9))
    tile.transformers.apply_tile(model, rms_norm=False, mlp=False,
                                 rope=False, cross_entropy=True)
    calls = []
    original = tile.ops.cross_entropy

    def counted(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)
    try:
        tile.ops.cross_entropy = counted
        model.eval()
        out = model(ids, labels=ids)
        assert calls and out[0] is out.loss
        as_tuple = model(ids, labels=ids, return_dict=False)
        assert torch.equal(as_tuple[0], out.loss)
        kept = model(ids, logits_to_keep=torch.tensor([8]))
        assert kept.logits.shape[1] == 1
    finally:
        tile.ops.cross_entropy = original
    model.train()
    fused = model(ids, labels=ids, return_dict=False)
    assert torch.equal(fused[0], model(ids, labels=ids).loss)
    # A hook on the head: its forward runs, as unpatched.
    model.lm_head.register_forward_hook(lambda m, i, o: o * 0.5)
    hooked = model(ids, labels=ids)
    assert hooked.logits is not None
    torch.manual_seed(0)
    unpatched = _tiny("llama")
    unpatched.lm_head.register_forward_hook(lambda m, i, o: o * 0.5)
    expected = unpatched(ids, labels=ids).loss
    assert abs(hooked.loss.item() - expected.item()) <= HF_RTOL


def test_a_rope_of_another_signature_is_not_replaced(monkeypatch):
    """A modeling module whose apply_rotary_pos_emb is not (q, k, cos,
    sin, ...) (Gemma 4's and DeepSeek-V4's rotate one tensor a call) is
    refused, never replaced by a function that computes something else."""
    model = _tiny("llama")
    modeling = sys.modules[type(model).__module__]

    def one_at_a_time(x, cos, sin, unsqueeze_dim=1):
        return x
    monkeypatch.setattr(modeling, "apply_rotary_pos_emb", one_at_a_time)
    before = {n: type(m) for n, m in model.named_modules()}
    with pytest.raises(ValueError, match=r"takes \(x, cos, sin, "):
        tile.transformers.apply_tile(model)
    # Refused before anything changed: patched again as the message says.
    assert modeling.apply_rotary_pos_emb is one_at_a_time
    assert {n: type(m) for n, m in model.named_modules()} == before
    assert "forward" not in vars(model)
    _, counts = tile.transformers.apply_tile(model, rope=False)
    assert counts["rope"] == 0 and counts["loss"] == 1


def test_what_a_patch_leaves_is_said():
    """A fused gate_up MLP under main_grad stays the model's own (its
    projections' gradients arrive in .grad, which a main_grad engine adds):
    listed in "skipped" and warned about; the rest is patched. DeepSeek-V3's
    RoPE (interleaved pairs, its result de-interleaved) stays the model's,
    said; GLM-4's is Tile's."""
    phi3 = _tiny("phi3")
    with pytest.warns(UserWarning, match="accumulate_into_main_grad is not "
                      "implemented for a fused gate_up"):
        _, counts = tile.transformers.apply_tile(
            phi3, accumulate_into_main_grad=True)
    assert counts["mlp"] == 0 and counts["rms_norm"] > 0
    assert counts["skipped"] == [
        "Phi3MLP: accumulate_into_main_grad is not implemented for a fused "
        "gate_up projection (2 modules)"]
    assert type(phi3.model.layers[0].mlp).__name__ == "Phi3MLP"
    # A norm without a weight (Gemma 4 has scale-free ones) stays too.
    llama = _tiny("llama")
    llama.model.norm.weight = None
    with pytest.warns(UserWarning, match="LlamaRMSNorm without a weight"):
        _, counts = tile.transformers.apply_tile(llama)
    assert counts["skipped"] == ["LlamaRMSNorm without a weight"]
    assert counts["rms_norm"] == 2 * llama.config.num_hidden_layers
    deepseek = _tiny("deepseek_v3")
    with pytest.warns(UserWarning, match="RoPE rotates interleaved pairs"):
        _, counts = tile.transformers.apply_tile(deepseek)
    assert counts["experts"] > 0 and counts["rope"] == 0
    # GLM-4's interleaved RoPE is Tile's (examples/rope_interleaved.mlir).
    glm4 = _tiny("glm4")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, counts = tile.transformers.apply_tile(glm4)
    assert counts["mlp"] == 2 and counts["rope"] == 1
    assert counts["skipped"] == []
    assert isinstance(glm4.model.layers[0].mlp, tile.nn.FusedSwiGLUMLP)


# A vision-language model's language model patched on its own (Liger's
# instance patch reaches it so): its text stack's type, and the vision-
# language family whose tiny test model holds one.
TEXT_STACK_OF = {"qwen2_vl_text": "qwen2_vl", "qwen2_5_vl_text": "qwen2_5_vl",
                 "qwen3_vl_text": "qwen3_vl",
                 "qwen3_vl_moe_text": "qwen3_vl_moe",
                 "mllama_text_model": "mllama", "glm4v_text": "glm4v",
                 "glm4v_moe_text": "glm4v_moe",
                 "muse_glimmer_text": "muse_glimmer"}


def test_every_text_stack_is_tested_alone():
    assert sorted(TEXT_STACK_OF) == sorted(tile.transformers.TEXT_STACKS)


@pytest.mark.parametrize("model_type", sorted(TEXT_STACK_OF))
def test_text_stack_alone_matches_unpatched(model_type):
    """apply_tile on the language model alone (a base model: no head, no
    loss): its norms, MLPs or experts and RoPE patched, its hidden states
    and every gradient as the unpatched model's in float64."""
    torch.manual_seed(0)
    plain = _tiny(TEXT_STACK_OF[model_type]).model.language_model
    assert plain.config.model_type == model_type
    patched = copy.deepcopy(plain)
    family = tile.transformers.family_of(plain.config)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a RoPE left to the model's own
        _, counts = tile.transformers.apply_tile(patched)
    layers = plain.config.num_hidden_layers
    assert counts["loss"] == 0 and counts["rms_norm"] >= 2 * layers + 1
    assert counts["mlp"] + counts["experts"] >= layers
    assert (counts["experts"] > 0) == bool(family.experts)
    assert counts["rope"] == (0 if family.other_rope else 1)
    ids = torch.randint(0, 64, (2, 9))
    # A fixed cotangent of unit scale: the hidden states' gradient as a
    # loss would give it (Hugging Face's RMSNorms round through fp32 even
    # in a float64 model, which a squared sum would amplify past HF_RTOL).
    cotangent = torch.randn(2, 9, plain.config.hidden_size,
                            dtype=torch.float64) / 9
    outputs = []
    for model in (plain, patched):
        torch.manual_seed(1)
        hidden = model(input_ids=ids).last_hidden_state
        (hidden * cotangent).sum().backward()
        outputs.append(hidden.detach())
    scale = outputs[0].abs().max().item()
    assert (outputs[1] - outputs[0]).abs().max().item() <= HF_RTOL * scale
    _assert_grads_close(patched, _grads(plain))


def test_experts_with_their_own_gate_stay_the_models():
    """Experts whose activation is their own (DeepSeek-V4's and gpt-oss's
    clamped SwiGLU) are never given the grouped MLP's plain SwiGLU, even
    where a family lists them; Hugging Face's default gate is patched."""
    for model_type, patched in (("deepseek_v4", False), ("gpt_oss", False),
                                ("qwen3_moe", True)):
        model = _tiny(model_type)
        config = model.config.get_text_config()
        experts = [m for m in model.modules()
                   if type(m).__name__.endswith("Experts")]
        assert experts, model_type
        got = tile.transformers._experts(experts[0], config, False)
        if patched:
            assert isinstance(got, tile.nn.MoEExperts), model_type
        else:
            assert isinstance(got, str) and "gate is their own" in got, \
                (model_type, got)


def _pixtral(activation, dtype=torch.float64):
    config = transformers.PixtralVisionConfig(
        hidden_size=32, intermediate_size=48, num_hidden_layers=2,
        num_attention_heads=4, image_size=32, patch_size=8,
        hidden_act=activation)
    torch.manual_seed(0)
    return transformers.AutoModel.from_config(config).to(dtype)


@pytest.mark.parametrize("activation", ["silu", "gelu"])
def test_vision_encoder_matches_unpatched(activation):
    """Pixtral, a vision encoder that is a model type of its own: its norms,
    (SwiGLU) MLPs and 2-D RoPE ([patches, D] tables) patched, an exact-gelu
    MLP left to the model and listed; its hidden states and every gradient
    as the unpatched model's in float64."""
    plain = _pixtral(activation)
    patched = copy.deepcopy(plain)
    params = dict(patched.named_parameters())
    x = torch.randn(2, 3, 32, 32, dtype=torch.float64)
    want = plain(pixel_values=x).last_hidden_state
    weights = torch.randn_like(want)
    (want * weights).sum().backward()
    grads = _grads(plain)
    silu = activation == "silu"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _, counts = tile.transformers.apply_tile(patched)
    left = [str(w.message) for w in caught if "apply_tile" in str(w.message)]
    assert len(left) == (0 if silu else 1)
    assert counts["rms_norm"] == 5 and counts["loss"] == 0
    assert counts["mlp"] == (2 if silu else 0) and counts["rope"] == 1
    assert len(counts["skipped"]) == (0 if silu else 1)
    assert dict(patched.named_parameters()) == params
    got = patched(pixel_values=x).last_hidden_state
    scale = want.abs().max().item()
    assert (got - want).abs().max().item() <= HF_RTOL * scale
    (got * weights).sum().backward()
    _assert_grads_close(patched, grads)


def test_logit_scale_only_where_the_forward_applies_it():
    """A logit scale is applied where the model's own forward applies it
    (LOGIT_SCALES): LLaVA over a Granite text stack whose config carries
    logits_scaling gets none from LLaVA's forward, nor from Tile's."""
    config = _config("llava", 8, vocab_size=64, hidden_size=32,
                     intermediate_size=48, max_position_embeddings=64)
    config.text_config = transformers.GraniteConfig(
        vocab_size=64, hidden_size=32, intermediate_size=48,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        head_dim=8, max_position_embeddings=64, pad_token_id=0,
        logits_scaling=4.0)
    torch.manual_seed(0)
    model = _CONVERGENCE.from_config(config).double()
    ids = torch.randint(0, 64, (2, 9))
    expected = model(ids, labels=ids)
    expected.loss.backward()
    grads = _grads(model)
    model.zero_grad()
    tile.transformers.apply_tile(model)
    got = model(ids, labels=ids)
    got.loss.backward()
    assert abs(got.loss.item() - expected.loss.item()) <= HF_RTOL
    _assert_grads_close(model, grads)


@pytest.mark.filterwarnings("ignore:apply_tile left to")
def test_llama4_vision_language_model_with_an_image():
    """Llama 4's vision-language model (a whole causal LM at
    .language_model, no .model) with an image: Tile's forward runs the
    model's own steps (the image features projected into the image
    tokens' rows) and hands the labels to the patched language model; the
    loss and every gradient, the vision tower's too, as the model's own
    computation's in float64."""
    config = _config("llama4", 8, vocab_size=64, hidden_size=32,
                     intermediate_size=48, max_position_embeddings=64)
    # One 56x56 image: 16 patches, pixel-shuffled to 4 image tokens.
    vision = config.vision_config
    for key, value in dict(image_size=56, patch_size=14, intermediate_size=64,
                           vision_output_dim=32, projector_input_dim=32,
                           projector_output_dim=32).items():
        setattr(vision, key, value)
    config.image_token_id = 5
    torch.manual_seed(0)
    model = _CONVERGENCE.from_config(config).double()
    ids = torch.randint(6, 64, (1, 12))
    ids[0, 2:6] = 5
    labels = ids.masked_fill(ids == 5, -100)
    pixels = torch.randn(1, 3, 56, 56, dtype=torch.float64)

    try:  # transformers 5.17's forward; 5.24's fails at its return
        expected, grads = _grads_of(model, input_ids=ids,
                                    pixel_values=pixels, labels=labels)
    except AttributeError as error:
        if "image_outputs" not in str(error):
            raise
        # Its steps as 5.24's forward takes them, before its return.
        def steps(input_ids, pixel_values, labels):
            embeds = model.get_input_embeddings()(input_ids)
            features = model.get_image_features(
                pixel_values=pixel_values, return_dict=True).last_hidden_state
            flat = model.multi_modal_projector(
                features.view(-1, features.size(-1)))
            embeds = embeds.masked_scatter(
                (input_ids == 5).unsqueeze(-1), flat)
            return model.language_model(inputs_embeds=embeds, labels=labels)
        model.forward = steps
        expected, grads = _grads_of(model, input_ids=ids,
                                    pixel_values=pixels, labels=labels)
        del model.forward
    assert any(g is not None for n, g in grads.items()
               if n.startswith("vision_model"))
    _, counts = tile.transformers.apply_tile(model)
    assert counts["loss"] == 1 and counts["rms_norm"] > 0
    got = model(input_ids=ids, pixel_values=pixels, labels=labels)
    assert got.logits is None
    got.loss.backward()
    assert abs(got.loss.item() - expected.loss.item()) <= HF_RTOL
    _assert_grads_close(model, grads)
    # A tuple where asked, its loss first; input_ids and inputs_embeds
    # both or neither, pixels with embeddings: refused as the model's own
    # forward refuses them.
    assert torch.equal(model(input_ids=ids, pixel_values=pixels,
                             labels=labels, return_dict=False)[0], got.loss)
    with pytest.raises(ValueError, match="exactly one of input_ids"):
        model(labels=labels)
    with pytest.raises(ValueError, match="pixel_values with inputs_embeds"):
        model(inputs_embeds=torch.zeros(1, 12, 32, dtype=torch.float64),
              pixel_values=pixels, labels=labels)
