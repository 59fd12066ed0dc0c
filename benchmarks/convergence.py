#!/usr/bin/env python3
"""Convergence of patched models, in the manner of Liger's mini-model tests:
a mini model of every family tile.transformers.apply_tile supports, seeded,
trained with AdamW on fixed token batches, patched against unpatched from
the same initial weights. Compared: every step's loss, the eval batch's
top-k log-probabilities after training, and every final parameter. A
vision encoder (Pixtral's) is trained to regress fixed features from
images instead; its features after training stand for the log-probs.

    python3 benchmarks/convergence.py --device cuda --json out.json
    python3 benchmarks/convergence.py --modes fp32 --families llama,phi3

Modes (FP32_TOLERANCE, FP32_FACTOR and BF16_FACTOR say what each must
meet):
  fp32           fp32 weights and math
  bf16-autocast  fp32 weights, the forward under torch.autocast(bfloat16)
  bf16           bf16 weights and math, AdamW on the bf16 weights

Each row is one family and mode: the largest differences between the two
runs and whether they are within the mode's tolerances. On the CPU Tile's
kernels run through its evaluator (python/tests/test_convergence.py runs the
fp32 mode in CI); the GPU table is in docs/Python.md.
"""

import argparse
import contextlib
import copy
import os
import sys
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))

import tile.transformers  # noqa: E402

# DeepSeek V2 and V3: its first layer dense, 2 groups of 2 experts (V3:
# the best group only), a shared expert, multi-head latent attention (as
# many key heads as query heads); no auxiliary loss in Hugging Face's model.
_DEEPSEEK = dict(n_routed_experts=4, num_experts_per_tok=2,
                 n_shared_experts=1, moe_intermediate_size=64,
                 first_k_dense_replace=1, n_group=2, topk_group=1,
                 kv_lora_rank=16, q_lora_rank=24, qk_rope_head_dim=8,
                 qk_nope_head_dim=8, v_head_dim=8, num_key_value_heads=4,
                 head_dim=8)
# Qwen's later MoE stacks: 4 experts, 2 a token, a shared expert, the
# router's auxiliary loss on.
_QWEN_MOE = dict(num_experts=4, num_experts_per_tok=2,
                 moe_intermediate_size=64, shared_expert_intermediate_size=48,
                 output_router_logits=True)
_LINEAR_ATTENTION = dict(
    layer_types=["linear_attention", "full_attention"],
    linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=8,
    linear_value_head_dim=8, linear_conv_kernel_dim=4)

_GEMMA4 = dict(layer_types=["sliding_attention", "full_attention"],
               sliding_window=4, global_head_dim=16,
               hidden_size_per_layer_input=8,
               final_logit_softcapping=30.0)

# What each family needs beyond the common sizes: the features its patch
# must honour switched on (a soft-cap, a partial rotary factor, Granite's
# multipliers, layers without RoPE).
FAMILY_CONFIG = {
    "gemma2": dict(final_logit_softcapping=5.0),
    "phi3": dict(partial_rotary_factor=0.5),
    "granite": dict(logits_scaling=4.0, embedding_multiplier=2.0,
                    residual_multiplier=0.5, attention_multiplier=0.2),
    "smollm3": dict(no_rope_layers=[1, 0]),
    # Mixture of experts: 4 experts, 2 a token, the router's auxiliary loss
    # on (it must stay in the loss); Qwen3-MoE's second layer a dense MLP.
    "qwen3_moe": dict(num_experts=4, num_experts_per_tok=2,
                      moe_intermediate_size=64, output_router_logits=True,
                      mlp_only_layers=[1]),
    "mixtral": dict(num_local_experts=4, num_experts_per_tok=2,
                    output_router_logits=True),
    "qwen2_moe": dict(_QWEN_MOE, mlp_only_layers=[1]),
    "deepseek_v2": dict(_DEEPSEEK),
    "deepseek_v3": dict(_DEEPSEEK),
    "glm4_moe": dict(n_routed_experts=4, num_experts_per_tok=2,
                     n_shared_experts=1, moe_intermediate_size=64,
                     first_k_dense_replace=1, n_group=1, topk_group=1),
    "hunyuan_v1_moe": dict(num_experts=4, moe_topk=2, num_shared_expert=1,
                           moe_intermediate_size=64),
    "olmoe": dict(num_experts=4, num_experts_per_tok=2,
                  output_router_logits=True),
    "flex_olmo": dict(num_experts=4, num_experts_per_tok=2,
                      output_router_logits=True),
    "granitemoe": dict(num_local_experts=4, num_experts_per_tok=2,
                       output_router_logits=True),
    "phimoe": dict(num_local_experts=4, num_experts_per_tok=2,
                   output_router_logits=True),
    # Qwen3.5 and Qwen3-Next: one gated DeltaNet layer, one of attention
    # (small linear-attention heads).
    "qwen3_5_text": dict(**_LINEAR_ATTENTION),
    "qwen3_next": dict(_QWEN_MOE, **_LINEAR_ATTENTION),
    "qwen3_5_moe_text": dict(_QWEN_MOE, **_LINEAR_ATTENTION),
    # Vision-language models: their text stacks' settings.
    "qwen3_5": dict(**_LINEAR_ATTENTION),
    "qwen3_5_moe": dict(_QWEN_MOE, **_LINEAR_ATTENTION),
    "qwen3_vl_moe": dict(num_experts=4, num_experts_per_tok=2,
                         moe_intermediate_size=64, output_router_logits=True),
    # GLM-4V-MoE's text stack: GLM-4-MoE's sizes, and (unlike GLM-4-MoE)
    # an auxiliary loss its forward adds.
    "glm4v_moe": dict(n_routed_experts=4, num_experts_per_tok=2,
                      n_shared_experts=1, moe_intermediate_size=64,
                      first_k_dense_replace=1, n_group=1, topk_group=1,
                      output_router_logits=True),
    # Gemma 4 (text): a sliding and a full layer (the full one's head 16,
    # not 512), small per-layer embeddings, the logit soft-cap on.
    "gemma4_text": dict(_GEMMA4),
    "gemma4": dict(_GEMMA4),
    # Falcon-H1: every multiplier off 1 (the MLP's and the head's patched,
    # the rest the model's), a small Mamba2 mixer.
    "falcon_h1": dict(mamba_d_ssm=32, mamba_n_heads=4, mamba_d_head=8,
                      mamba_d_state=8, mamba_chunk_size=8,
                      mamba_rms_norm=True, lm_head_multiplier=0.5,
                      embedding_multiplier=2.0, mlp_multipliers=[0.7, 1.3],
                      key_multiplier=0.9, attention_in_multiplier=1.1,
                      attention_out_multiplier=0.8,
                      ssm_multipliers=[1.0, 0.9, 1.1, 1.2, 0.8],
                      ssm_in_multiplier=1.05, ssm_out_multiplier=0.95),
    # MuseGlimmer: a sliding layer with RoPE, a full one without; its logit
    # multiplier 0.5 (its own 0.196 leaves a mini model little to learn in
    # 30 steps).
    "muse_glimmer": dict(layer_types=["sliding_attention", "full_attention"],
                         layer_rope_theta=[10000.0, 0], sliding_window=4,
                         output_multiplier=0.5),
    "gpt_oss": dict(num_local_experts=4, num_experts_per_tok=2,
                    sliding_window=8, output_router_logits=True,
                    attn_implementation="eager"),
    "deepseek_v4": dict(
        n_routed_experts=4, num_experts_per_tok=2, q_lora_rank=24,
        o_groups=2, o_lora_rank=16, index_n_heads=2, index_head_dim=8,
        index_topk=4, sliding_window=8, hc_mult=2, hc_sinkhorn_iters=3,
        layer_types=["sliding_attention", "compressed_sparse_attention"],
        mlp_layer_types=["hash_moe", "moe"],
        compress_rates={"compressed_sparse_attention": 4,
                        "heavily_compressed_attention": 8},
        output_router_logits=True, attn_implementation="eager"),
    "llama4_text": dict(num_local_experts=4, num_experts_per_tok=1,
                        intermediate_size_mlp=96, interleave_moe_layer_step=2),
    "llama4": dict(num_local_experts=4, num_experts_per_tok=1,
                   intermediate_size_mlp=96, interleave_moe_layer_step=2),
}

# A vision-language model's vision tower in the tests: one small layer.
VISION_SIZES = dict(depth=1, num_hidden_layers=1, hidden_size=16,
                    embed_dim=16, intermediate_size=32, num_heads=2,
                    num_attention_heads=2, out_hidden_size=32,
                    projection_dim=32)

# fp32: the patched run against the unpatched one, within these: the
# largest |loss difference| at any step relative to that step's loss, the
# largest |top-k log-prob difference| and the largest |parameter
# difference| (absolute: the weights are O(0.1), and 30 AdamW steps move
# each by at most lr * 30 = 0.03). The bf16 modes: both runs against the
# fp32 unpatched run (the reference), the patched run's distance at most
# BF16_FACTOR times the unpatched run's plus BF16_FLOOR. Their distances
# are rounding noise that AdamW amplifies where a gradient is below it
# (the bias of the keys, which softmax nearly cancels, takes whole
# learning-rate steps of either sign): no fixed bound separates a correct
# bf16 run from a wrong one, bf16 PyTorch's own distance does.
FP32_TOLERANCE = dict(loss=1e-5, logprob=1e-4, param=5e-4)
# Where two fp32 runs differ by more than FP32_TOLERANCE, a float64 run of
# the unpatched model decides (float64_throughout). Some models' own fp32
# rounding is past FP32_TOLERANCE (GLM-4V-MoE's mini model: the unpatched
# fp32 run is 1.3e-4 from float64 in log-probs, the patched one 4.0e-5,
# the two 1.7e-4 apart: routing top-k amplifies the rounding).
#
# Runs of equal accuracy land at distances that differ by tens of percent,
# and in some models several times, after 30 AdamW steps (AdamW turns
# rounding in a gradient near zero into whole learning-rate steps). Gemma
# 4's VLM, tied head, log-probs from float64: unpatched runs from the
# model's weights and five starts 1e-7 away 4.5e-3, 1.3e-2, 1.1e-2, 1.7e-2,
# 3.7e-2, 1.1e-2; patched runs from the same starts 2.8e-2, 1.4e-2, 9.7e-3,
# 1.0e-2, 4.7e-2, 1.4e-2 (their step-1 gradients within 1.4x of the
# unpatched ones' fp32 error, every weight). So where one run of each side
# misses the bound, NEIGHBOURS more of each decide, from weights a rounding
# of the mode away (NUDGE): the patched runs' median within FP32_FACTOR
# (BF16_FACTOR, plus BF16_FLOOR) times the farthest unpatched run. A wrong
# patch lands orders of magnitude out in every run
# (test_a_wrong_patch_is_caught).
FP32_FACTOR = 1.5
NEIGHBOURS = 4
BF16_FACTOR = 2.0
BF16_FLOOR = dict(loss=1e-3, logprob=1e-2, param=1e-3)
MODES = ("fp32", "bf16-autocast", "bf16")

# A vision encoder of its own model type (Pixtral's): 2 layers of 4 heads,
# 32x32 images of 8x8 patches, its MLP SwiGLU (its default exact gelu is
# an activation Tile's gated MLP lacks: the model's own).
ENCODER_CONFIG = {
    "pixtral": dict(hidden_size=64, intermediate_size=128,
                    num_hidden_layers=2, num_attention_heads=4,
                    image_size=32, patch_size=8, hidden_act="silu"),
}

# Every model type apply_tile takes: the language models (causal LMs and
# vision-language models) and the vision encoders.
LANGUAGE_MODELS = sorted((*tile.transformers.SUPPORTED,
                          *tile.transformers.VISION_LANGUAGE))
FAMILIES = sorted((*LANGUAGE_MODELS, *ENCODER_CONFIG))

STEPS = 30
LR = 1e-3


def family_config(model_type, **sizes):
    """A config of `model_type` of these sizes, 2 layers of 4 heads (2 of
    keys and values), with FAMILY_CONFIG's features on
    (python/tests/test_transformers.py builds its models here too)."""
    import transformers
    settings = dict(num_hidden_layers=2, num_attention_heads=4,
                    num_key_value_heads=2, pad_token_id=0, **sizes)
    settings.update(FAMILY_CONFIG.get(model_type, {}))
    if "hidden_size_per_layer_input" in settings and "vocab_size" in settings:
        # Gemma 4's per-layer embeddings: of the same token ids.
        settings["vocab_size_per_layer_input"] = settings["vocab_size"]
    if model_type not in tile.transformers.VISION_LANGUAGE:
        return transformers.AutoConfig.for_model(model_type, **settings)
    # A vision-language model: the sizes are its text stack's, its vision
    # tower one small layer; its image tokens outside the vocabulary (the
    # tests feed text alone).
    config = transformers.AutoConfig.for_model(model_type)
    text = config.get_text_config()
    for key, value in settings.items():
        setattr(text, key, value)
    if model_type in ("qwen2_vl", "qwen2_5_vl", "glm4v", "glm4v_moe"):
        # The multimodal RoPE's three sections cover half the head.
        head = getattr(text, "head_dim", None) or \
            text.hidden_size // text.num_attention_heads
        # Of the rotated part of the head (where a partial factor is set).
        partial = (text.rope_parameters or {}).get("partial_rotary_factor",
                                                   1.0)
        half = int(head * partial) // 2
        text.rope_parameters = dict(
            text.rope_parameters or {},
            mrope_section=[half - 2 * (half // 4), half // 4, half // 4])
    vision = getattr(config, "vision_config", None)
    for key, value in VISION_SIZES.items():
        if vision is not None and hasattr(vision, key):
            setattr(vision, key, value)
    for key in ("image_token_id", "image_token_index", "video_token_id"):
        if hasattr(config, key):
            setattr(config, key, 10**6 + len(key))
    return config


# A config's count of experts, under each family's name for it.
EXPERT_COUNTS = ("num_experts", "num_local_experts", "n_routed_experts")


def has_experts(config):
    """Whether the model of `config` (a vision-language model: its text
    stack) has mixture-of-experts layers, Tile's or its own."""
    text = config.get_text_config()
    return any(getattr(text, name, None) for name in EXPERT_COUNTS)


def from_config(config):
    """The model of `config`; mixture-of-experts experts as Hugging Face's
    own per-expert loop (its "eager" experts: the reference, and the only
    one in float64)."""
    import transformers
    extra = {}
    if has_experts(config):
        # Experts, Tile's or left to the model (gpt-oss's).
        extra["experts_implementation"] = "eager"
    if config.model_type in tile.transformers.VISION_LANGUAGE:
        return transformers.AutoModelForImageTextToText.from_config(
            config, **extra)
    return transformers.AutoModelForCausalLM.from_config(config, **extra)


def mini_model(model_type, seed, device, dtype):
    """A 2-layer model of `model_type` (hidden 64, vocabulary 128), its
    weights from `seed`."""
    if model_type in ENCODER_CONFIG:
        import transformers
        config = transformers.AutoConfig.for_model(
            model_type, **ENCODER_CONFIG[model_type])
        torch.manual_seed(seed)
        return transformers.AutoModel.from_config(config).to(
            device=device, dtype=dtype)
    config = family_config(
        model_type, vocab_size=128, hidden_size=64, intermediate_size=128,
        head_dim=16, max_position_embeddings=128, tie_word_embeddings=False)
    torch.manual_seed(seed)
    model = from_config(config)
    return model.to(device=device, dtype=dtype)


def run(model, ids, labels=None):
    """model(ids, labels=labels): the model's own forward, the reference.
    An unpatched Llama 4 vision-language model's on text alone is its
    language model's forward under its output class — what its forward
    computes (transformers 5.17's: the text's embeddings through the
    language model, the loss from its logits); 5.24's fails at its return
    (`image_outputs`)."""
    if type(model).__name__ == "Llama4ForConditionalGeneration" and \
            "forward" not in vars(model):
        from transformers.models.llama4 import modeling_llama4
        out = model.language_model(ids, labels=labels)
        return modeling_llama4.Llama4CausalLMOutputWithPast(
            loss=out.loss, logits=out.logits)
    return model(ids, labels=labels)


def batches(vocab, device, steps, seed, batch=2, length=32):
    """Fixed token batches with something to learn: each row counts up
    from a random start (mod the vocabulary), a tenth of its tokens noise."""
    generator = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(steps + 1):  # the last one is the eval batch
        start = torch.randint(0, vocab, (batch, 1), generator=generator)
        ids = (start + torch.arange(length)) % vocab
        noise = torch.rand(batch, length, generator=generator) < 0.1
        ids[noise] = torch.randint(0, vocab, (int(noise.sum()),),
                                   generator=generator)
        out.append(ids.to(device))
    return out


def training_data(model, device, steps, seed):
    """batches() for a language model; for a vision encoder, steps + 1
    (images, target): four 1-image batches in turn (the last a fifth
    image, to evaluate), every one regressed to the same features."""
    config = model.config
    if config.model_type not in ENCODER_CONFIG:
        return batches(config.get_text_config().vocab_size, device, steps,
                       seed)
    generator = torch.Generator().manual_seed(seed)
    images = torch.randn(5, 1, 3, config.image_size, config.image_size,
                         generator=generator).to(device)
    patches = (config.image_size // config.patch_size) ** 2
    target = torch.randn(1, patches, config.hidden_size,
                         generator=generator).to(device)
    return [(images[step % 4], target) for step in range(steps)] + \
        [(images[4], target)]


def _loss_and_output(model, batch, labels=True):
    """A language model's loss (labels=True) and logits, or a vision
    encoder's mean squared distance from the target and its features."""
    if isinstance(batch, tuple):
        images, target = batch
        weight = next(model.parameters())
        features = model(pixel_values=images.to(weight.dtype)) \
            .last_hidden_state
        return (features.float() - target).pow(2).mean(), features
    out = run(model, batch, labels=batch if labels else None)
    return out.loss, out.logits


def train(model, data, mode, device):
    """Every step's loss, the eval batch's top-20 log-probabilities (a
    vision encoder's: its features) and the final parameters."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR)
    autocast = torch.autocast(device_type=torch.device(device).type,
                              dtype=torch.bfloat16,
                              enabled=mode == "bf16-autocast")
    losses = []
    model.train()
    for step, batch in enumerate(data[:-1]):
        optimizer.zero_grad(set_to_none=True)
        # Phi-MoE's router samples in training: both runs draw alike.
        torch.manual_seed(step)
        with autocast:
            loss, _ = _loss_and_output(model, batch)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad(), autocast:
        _, output = _loss_and_output(model, data[-1], labels=False)
    output = output.float()
    logprobs = output if isinstance(data[-1], tuple) else \
        torch.log_softmax(output, -1).topk(20, dim=-1).values
    params = {n: p.detach().float().clone()
              for n, p in model.named_parameters()}
    return losses, logprobs, params


@contextlib.contextmanager
def float64_throughout():
    """Hugging Face's float32 upcasts left in float64 for float64 tensors
    while inside: x.float() and x.to(torch.float32) (its RMSNorms' and its
    loss's) and softmax(..., dtype=torch.float32) (its routers' and its
    eager attention's). A float64 reference run would otherwise round them
    to float32 as the unpatched fp32 run does, and sit closer to it than to
    the exact computation (Gemma 4's mini model: the unpatched fp32 run 5x
    closer to such a reference than the patched one, 1.3x farther from a
    float64 one). What other float32 a model spells out stays."""
    upcast, convert = torch.Tensor.float, torch.Tensor.to
    softmax = torch.nn.functional.softmax

    def wider(tensor, args, kwargs):
        """args and kwargs with float32 read as float64 where the tensor is
        float64."""
        if tensor.dtype != torch.float64:
            return args, kwargs
        def wide(v):
            return torch.float64 if v is torch.float32 else v
        return ([wide(v) for v in args],
                {k: wide(v) for k, v in kwargs.items()})

    def float_(self, *args, **kwargs):
        if self.dtype == torch.float64:
            return self
        return upcast(self, *args, **kwargs)

    def to(self, *args, **kwargs):
        args, kwargs = wider(self, args, kwargs)
        return convert(self, *args, **kwargs)

    def softmax_(input, *args, **kwargs):
        args, kwargs = wider(input, args, kwargs)
        return softmax(input, *args, **kwargs)
    torch.Tensor.float, torch.Tensor.to = float_, to
    torch.nn.functional.softmax = softmax_
    try:
        yield
    finally:
        torch.Tensor.float, torch.Tensor.to = upcast, convert
        torch.nn.functional.softmax = softmax


# How far a nudged run's weights start from the model's: a rounding or two
# of the mode's precision (fp32 resolves 6e-8; bf16, with 8 bits, 4e-3).
NUDGE = {"fp32": 1e-7, "bf16-autocast": 2.0**-8, "bf16": 2.0**-8}


def _nudge(model, seed, scale=NUDGE["fp32"]):
    """Every weight times 1 + scale * N(0, 1), in fp32 and rounded back to
    the weight's dtype: the same model a rounding or two away."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            noise = torch.randn(p.shape, generator=generator)
            p.copy_(p.float() * (1 + scale * noise.to(p.device)))


def distances(got, want):
    """(loss, logprob, param) distances between two train() results."""
    loss = max(abs(a - b) / abs(b) for a, b in zip(got[0], want[0]))
    logprob = (got[1] - want[1]).abs().max().item()
    param = max((got[2][n] - p).abs().max().item()
                for n, p in want[2].items())
    return dict(loss=loss, logprob=logprob, param=param)


def _train_patched(model, data, mode, device):
    """(train() of the model patched by apply_tile, its counts). apply_tile
    replaces a modeling module's apply_rotary_pos_emb for the whole
    process; it is put back after (revert_rope), so that every unpatched
    and reference run goes with the model's own."""
    _, counts = tile.transformers.apply_tile(model)
    try:
        return train(model, data, mode, device), counts
    finally:
        tile.transformers.revert_rope()


def _neighbours(model_type, seed, device, dtype, mode, data, patch):
    """NEIGHBOURS runs of the model (patched where `patch`) whose weights
    start a rounding of the mode away from the model's."""
    runs = []
    for neighbour in range(1, NEIGHBOURS + 1):
        model = mini_model(model_type, seed, device, dtype)
        _nudge(model, neighbour, NUDGE[mode])
        runs.append(_train_patched(model, data, mode, device)[0] if patch
                    else train(model, data, mode, device))
    return runs


def compare(model_type, mode, device, steps=STEPS, seed=0):
    """One family and mode, patched against unpatched from the same
    weights on the same batches: the distances, their bounds and whether
    they hold."""
    dtype = torch.bfloat16 if mode == "bf16" else torch.float32
    # The model's own RoPE, whatever apply_tile replaced before this call
    # (_train_patched puts it back after each patched run).
    tile.transformers.revert_rope()
    plain = mini_model(model_type, seed, device, dtype)
    patched = copy.deepcopy(plain)
    data = training_data(plain, device, steps, seed + 1)
    start = time.perf_counter()
    want = train(plain, data, mode, device)
    if mode != "fp32":
        exact = train(mini_model(model_type, seed, device, torch.float32),
                      data, "fp32", device)
    got, counts = _train_patched(patched, data, mode, device)
    row = dict(case=f"{model_type} {mode}", family=model_type, mode=mode,
               steps=steps,
               first_loss=want[0][0], last_loss=want[0][-1],
               patched_last_loss=got[0][-1])
    if mode == "fp32":
        figures = distances(got, want)
        bound = FP32_TOLERANCE
        within = all(figures[k] <= bound[k] for k in bound)
        if not within:
            with float64_throughout():
                exact = train(mini_model(model_type, seed, device,
                                         torch.float64), data, "fp32",
                              device)
            factor, floor = FP32_FACTOR, dict.fromkeys(figures, 0.0)
            row["against"] = "float64"
    else:
        factor, floor = BF16_FACTOR, BF16_FLOOR
        within = False  # the first comparison below decides
    if mode != "fp32" or not within:
        figures = distances(got, exact)
        reference = distances(want, exact)
        bound = {k: factor * reference[k] + floor[k] for k in reference}
        if not all(figures[k] <= bound[k] for k in bound):
            # One run of either side is one draw from a spread (see
            # NEIGHBOURS): the patched side's median of as many runs as
            # the unpatched side has, against the farthest of those.
            plains = [reference] + [
                distances(run, exact) for run in _neighbours(
                    model_type, seed, device, dtype, mode, data, False)]
            patcheds = [figures] + [
                distances(run, exact) for run in _neighbours(
                    model_type, seed, device, dtype, mode, data, True)]
            reference = {k: max(run[k] for run in plains) for k in reference}
            figures = {k: sorted(run[k] for run in patcheds)[len(patcheds) // 2]
                       for k in figures}
            bound = {k: factor * reference[k] + floor[k] for k in reference}
            row["runs"] = 1 + NEIGHBOURS
        row["unpatched"] = reference
    row["seconds"] = time.perf_counter() - start
    row.update(figures)
    row.update(bound=bound,
               within=all(figures[k] <= bound[k] for k in bound),
               patched={k: v for k, v in counts.items() if k != "skipped"},
               skipped=counts["skipped"])
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda" if
                        torch.cuda.is_available() else "cpu")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--families", default=",".join(FAMILIES))
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--json")
    args = parser.parse_args()
    rows = []
    print("distances: fp32 patched vs unpatched; bf16 modes patched vs the "
          "fp32 run (unpatched vs it in brackets)")
    print(f"{'family':12} {'mode':14} {'loss 1->30':>15} {'loss':>19} "
          f"{'logprob':>19} {'param':>19}  within")
    for family in args.families.split(","):
        for mode in args.modes.split(","):
            row = compare(family, mode, args.device, args.steps)
            rows.append(row)
            ref = row.get("unpatched", {})
            cells = " ".join(
                f"{row[k]:9.2e}" + (f" ({ref[k]:7.1e})" if ref else " " * 10)
                for k in ("loss", "logprob", "param"))
            print(f"{family:12} {mode:14} {row['first_loss']:6.3f} -> "
                  f"{row['last_loss']:5.3f} {cells}  "
                  f"{'yes' if row['within'] else 'NO'}", flush=True)
    if args.json:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import results
        results.write(args.json, "convergence", rows, settings=dict(
            device=args.device, steps=args.steps, lr=LR,
            fp32_tolerance=FP32_TOLERANCE, fp32_factor=FP32_FACTOR,
            bf16_factor=BF16_FACTOR, bf16_floor=BF16_FLOOR,
            neighbours=NEIGHBOURS, nudge=NUDGE),
            device="CPU" if args.device == "cpu" else None)
    return 0 if all(row["within"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
