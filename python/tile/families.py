"""Which Hugging Face model types apply_tile takes, and what it patches in
each (a Family: its RMSNorm, MLP and expert classes, its norms' weight
offset, and what of its own stays the model's): one table per kind of
model, family_of to look one up. tile.transformers does the patching."""

import typing


class Family(typing.NamedTuple):
    """What apply_tile patches in one model type."""
    norms: tuple            # RMSNorm class names
    mlps: tuple             # gated-MLP class names (gate_proj and up_proj,
                            # or one gate_up_proj, the gate first)
    # RMSNorm's weight offset (Gemma: 1 + w): one for every norm class, or
    # {class name: offset} where they differ (MuseGlimmer's).
    offset: typing.Union[float, dict] = 0.0
    # Why its apply_rotary_pos_emb is not Tile's rotate-half RoPE, or None.
    other_rope: str = None
    # Mixture-of-experts SwiGLU experts (gate_up_proj [E, 2I, H], down_proj
    # [E, H, I], forward(hidden, top_k_index, top_k_weights)): patched with
    # tile.nn.MoEExperts; the router stays the model's, its auxiliary
    # loss is added to the chunked loss as the model's forward adds it.
    experts: tuple = ()
    # What else of the family's own stays the model's (a gated norm inside
    # a linear attention, ...): listed in "skipped" and warned about.
    own: tuple = ()
    # How its apply_rotary_pos_emb(q, k, cos, sin, ...) rotates (the
    # wrapper Tile puts in its place, tile.transformers.ROPE_LAYOUTS):
    # "rotate_half" (Llama's: a head's halves; cos narrower than the head
    # is a partial rotary factor's), "half_tables" (gpt-oss's: cos and sin
    # cover half the head and rotate each half by them) or "interleaved"
    # (GLM-4's: pairs 2i, 2i+1 of the rotated part, by the first half of
    # cos and sin).
    rope_layout: str = "rotate_half"

    def offset_of(self, norm):
        """The weight offset of the norm class named `norm`."""
        if isinstance(self.offset, dict):
            return self.offset[norm]
        return self.offset


_GATED_DELTA_NET = ("the gated DeltaNet layers' gated RMSNorm",)

# model_type -> Family. The loss is patched for every causal LM among them;
# the config's final_logit_softcapping (Gemma 2) and the logit scales of
# LOGIT_SCALES are honoured.
SUPPORTED = {
    "llama": Family(("LlamaRMSNorm",), ("LlamaMLP",)),
    "mistral": Family(("MistralRMSNorm",), ("MistralMLP",)),
    "ministral": Family(("MinistralRMSNorm",), ("MinistralMLP",)),
    "qwen2": Family(("Qwen2RMSNorm",), ("Qwen2MLP",)),
    "qwen3": Family(("Qwen3RMSNorm",), ("Qwen3MLP",)),
    "gemma": Family(("GemmaRMSNorm",), ("GemmaMLP",), 1.0),
    # Gemma 2: four norms per layer (sandwich); its final logit soft-cap
    # goes to the loss. Gemma 3 (text): q and k norms too.
    "gemma2": Family(("Gemma2RMSNorm",), ("Gemma2MLP",), 1.0),
    "gemma3_text": Family(("Gemma3RMSNorm",), ("Gemma3MLP",), 1.0),
    # Phi-3: one gate_up projection; a partial rotary factor rotates the
    # head's first dimensions only.
    "phi3": Family(("Phi3RMSNorm",), ("Phi3MLP",)),
    # OLMo 2: norms after attention and MLP, q and k norms over all heads.
    "olmo2": Family(("Olmo2RMSNorm",), ("Olmo2MLP",)),
    # Granite: its embedding, residual and attention multipliers stay in
    # the model's own code; its logits are divided by logits_scaling.
    "granite": Family(("GraniteRMSNorm",), ("GraniteMLP",)),
    # GLM-4: sandwich norms and one gate_up projection; its RoPE rotates
    # interleaved pairs of a partial head.
    "glm4": Family(("Glm4RMSNorm",), ("Glm4MLP",),
                   rope_layout="interleaved"),
    # SmolLM3: some layers without RoPE (they never call it).
    "smollm3": Family(("SmolLM3RMSNorm",), ("SmolLM3MLP",)),
    # Mixture of experts: the experts on the grouped MLP, the router (and
    # whatever it adds: DeepSeek's group-limited top-k and routed scaling,
    # Qwen2-MoE's gated shared expert) the model's own; shared experts and
    # the dense layers are gated MLPs. Qwen3-MoE (dense MLPs on its
    # mlp_only_layers) and Mixtral.
    "qwen3_moe": Family(("Qwen3MoeRMSNorm",), ("Qwen3MoeMLP",),
                        experts=("Qwen3MoeExperts",)),
    "mixtral": Family(("MixtralRMSNorm",), (), experts=("MixtralExperts",)),
    "qwen2_moe": Family(("Qwen2MoeRMSNorm",), ("Qwen2MoeMLP",),
                        experts=("Qwen2MoeExperts",)),
    # DeepSeek V2 and V3: the first first_k_dense_replace layers dense, a
    # shared expert in every MoE layer; their attention (MLA, with its own
    # norms and RoPE) stays the model's.
    "deepseek_v2": Family(("DeepseekV2RMSNorm",), ("DeepseekV2MLP",),
                          experts=("DeepseekV2Experts",),
                          other_rope="DeepSeek-V2's RoPE rotates "
                                     "interleaved pairs in complex form"),
    "deepseek_v3": Family(("DeepseekV3RMSNorm",), ("DeepseekV3MLP",),
                          experts=("DeepseekV3Experts",),
                          other_rope="DeepSeek-V3's RoPE rotates "
                                     "interleaved pairs"),
    "glm4_moe": Family(("Glm4MoeRMSNorm",), ("Glm4MoeMLP",),
                       experts=("Glm4MoeExperts",)),
    "hunyuan_v1_moe": Family(("HunYuanMoEV1RMSNorm",), ("HunYuanMoEV1MLP",),
                             experts=("HunYuanMoEV1Experts",)),
    "olmoe": Family(("OlmoeRMSNorm",), (), experts=("OlmoeExperts",)),
    "flex_olmo": Family(("FlexOlmoRMSNorm",), (),
                        experts=("FlexOlmoExperts",)),
    "granitemoe": Family(("GraniteMoeRMSNorm",), (),
                         experts=("GraniteMoeExperts",)),
    # Phi-MoE: LayerNorms with biases (the model's own).
    "phimoe": Family((), (), experts=("PhimoeExperts",),
                     own=("Phi-MoE's LayerNorms (with biases)",)),
    # Dense families of 2025-26: OLMo 3 (OLMo 2's norm placement), EXAONE 4,
    # Hunyuan dense.
    "olmo3": Family(("Olmo3RMSNorm",), ("Olmo3MLP",)),
    "exaone4": Family(("Exaone4RMSNorm",), ("Exaone4MLP",)),
    "hunyuan_v1_dense": Family(("HunYuanDenseV1RMSNorm",),
                               ("HunYuanDenseV1MLP",)),
    # Qwen3.5 and Qwen3-Next: zero-centred norms (1 + w); their linear
    # attention layers (gated DeltaNet) keep their gated norm.
    "qwen3_5_text": Family(("Qwen3_5RMSNorm",), ("Qwen3_5MLP",), 1.0,
                           own=_GATED_DELTA_NET),
    "qwen3_next": Family(("Qwen3NextRMSNorm",), ("Qwen3NextMLP",), 1.0,
                         experts=("Qwen3NextExperts",),
                         own=_GATED_DELTA_NET),
    "qwen3_5_moe_text": Family(("Qwen3_5MoeRMSNorm",), ("Qwen3_5MoeMLP",),
                               1.0, experts=("Qwen3_5MoeExperts",),
                               own=_GATED_DELTA_NET),
    # Nemotron: LayerNorms with 1 + w and a bias (the model's own); its MLP
    # is not gated: up, relu², down (tile.nn.SquaredReLUMLP).
    "nemotron": Family((), ("NemotronMLP",),
                       own=("Nemotron's LayerNorm1P norms (with biases)",)),
    # gpt-oss and DeepSeek-V4: their norms and loss (the router's auxiliary
    # loss added); their experts' gate is their own (clamped SwiGLU; gpt-
    # oss's with biases and gate and up interleaved), as is DeepSeek-V4's
    # shared expert, its attention (compressed, hashed routing) and its
    # hyper-connections.
    "gpt_oss": Family(("GptOssRMSNorm",), (),
                      own=("gpt-oss's experts (biases, gate and up "
                           "interleaved, a clamped SwiGLU)",),
                      rope_layout="half_tables"),
    "deepseek_v4": Family(("DeepseekV4RMSNorm",), (),
                          other_rope="DeepSeek-V4's RoPE rotates "
                                     "interleaved pairs of one tensor",
                          own=("DeepSeek-V4's experts and shared expert "
                               "(SwiGLU clamped at swiglu_limit)",)),
    # Gemma 4: norms w (not 1 + w), scale-free ones skipped; per-layer
    # embeddings and KV sharing stay in the model's own code.
    "gemma4_text": Family(("Gemma4RMSNorm",), ("Gemma4TextMLP",),
                          other_rope="Gemma 4's apply_rotary_pos_emb rotates "
                                     "one tensor a call",
                          own=("Gemma 4's experts where enable_moe_block "
                               "(GeGLU; Tile's grouped MLP is SwiGLU)",)),
    # Falcon-H1: attention and Mamba2 side by side in each layer; its MLP's
    # gate and down multipliers (tile.nn.GatedMLP's), its lm_head_multiplier
    # (the loss's); its other multipliers stay in the model's own code.
    "falcon_h1": Family(("FalconH1RMSNorm",), ("FalconH1MLP",),
                        own=("Falcon-H1's Mamba2 mixer (with its gated "
                             "RMSNorm)",)),
    "llama4_text": Family(("Llama4TextRMSNorm",), ("Llama4TextMLP",),
                          other_rope="Llama 4's RoPE multiplies complex "
                                     "pairs",
                          own=("Llama 4's experts (gate_up [E, H, 2I], "
                               "transposed from the grouped MLP's)",)),
}


_MROPE = "the multimodal RoPE's sections (temporal, height, width)"

# The text stacks of vision-language models that are no family of SUPPORTED:
# patched inside their vision-language model, or on their own (the
# language model alone, a base model: no head, no loss).
TEXT_STACKS = {
    "qwen3_vl_text": Family(("Qwen3VLTextRMSNorm",), ("Qwen3VLTextMLP",)),
    # Mllama: its cross-attention layers' norms are the same class.
    "mllama_text_model": Family(("MllamaTextRMSNorm",), ("MllamaTextMLP",)),
    # Qwen2-VL and Qwen2.5-VL: Qwen2's MLP; their RoPE splits the head into
    # temporal, height and width sections (apply_multimodal_rotary_pos_emb).
    "qwen2_vl_text": Family(("Qwen2VLRMSNorm",), ("Qwen2MLP",),
                            other_rope=_MROPE),
    "qwen2_5_vl_text": Family(("Qwen2_5_VLRMSNorm",), ("Qwen2MLP",),
                              other_rope=_MROPE),
    "qwen3_vl_moe_text": Family(("Qwen3VLMoeTextRMSNorm",),
                                ("Qwen3VLMoeTextMLP",),
                                experts=("Qwen3VLMoeTextExperts",)),
    # GLM-4V: GLM-4's sandwich norms and one gate_up projection; its RoPE,
    # multimodal sections of interleaved pairs, the model's own.
    "glm4v_text": Family(("Glm4vRMSNorm",), ("Glm4vTextMLP",),
                         other_rope="GLM-4V's RoPE: multimodal sections of "
                                    "interleaved pairs (Tile's is "
                                    "rotate-half)"),
    # GLM-4V-MoE: GLM-4.5's experts (a shared expert, the first
    # first_k_dense_replace layers dense) under GLM-4V's RoPE; its decoder
    # norms are one class, its final norm another (Glm4vMoeRMSNorm, which
    # the vision tower also uses: only the language model is patched).
    "glm4v_moe_text": Family(("Glm4vMoeTextRMSNorm", "Glm4vMoeRMSNorm"),
                             ("Glm4vMoeTextMLP",),
                             experts=("Glm4vMoeTextExperts",),
                             other_rope="GLM-4V-MoE's RoPE: multimodal "
                                        "sections of interleaved pairs "
                                        "(Tile's is rotate-half)"),
    # MuseGlimmer: Gemma 2's sandwich norms, zero-centred (1 + w), its final
    # norm w; its logits times output_multiplier, then soft-capped.
    "muse_glimmer_text": Family(
        ("MuseGlimmerTextCenteredRMSNorm", "MuseGlimmerRMSNorm"),
        ("MuseGlimmerTextMLP",),
        {"MuseGlimmerTextCenteredRMSNorm": 1.0, "MuseGlimmerRMSNorm": 0.0}),
}

# Vision encoders that are model types of their own (no text stack, no
# loss): their norms and MLPs.
VISION_ENCODERS = {
    # Pixtral (LLaVA's Pixtral and Mistral 3's vision tower): its gated MLP
    # runs exact gelu by default, which stays the model's (listed); its 2-D
    # RoPE's tables ([patches, D], one sequence) go through Tile's kernel.
    "pixtral": Family(("PixtralRMSNorm",), ("PixtralMLP",)),
}

# Vision-language models whose language model (model.model.language_model;
# SmolVLM's model.model.text_model) apply_tile patches as the family of
# their text config's model type; the vision tower and the projector stay
# the model's, the loss goes through the chunked head as a causal LM's.
VISION_LANGUAGE = ("gemma3", "internvl", "llava", "mllama",
                   "paligemma", "qwen2_vl", "qwen2_5_vl", "qwen3_5",
                   "qwen3_5_moe", "qwen3_vl", "qwen3_vl_moe", "glm4v",
                   "glm4v_moe", "muse_glimmer", "smolvlm", "gemma4",
                   "llama4")


# model type -> (the config attribute its forward scales the logits by
# before the loss and any soft-cap, "divide" or "multiply"): read from the
# model's text config (the config itself but for MuseGlimmer's). Only these
# model types' forwards apply one: a vision-language model around a Granite
# text stack (LLaVA's) applies none, nor does a stray key in a config.
LOGIT_SCALES = {
    "granite": ("logits_scaling", "divide"),
    "granitemoe": ("logits_scaling", "divide"),
    "falcon_h1": ("lm_head_multiplier", "multiply"),
    "muse_glimmer": ("output_multiplier", "multiply"),
}

# The vision-language models whose forward soft-caps the logits with their
# text config's final_logit_softcapping.
TEXT_SOFTCAP = ("gemma4", "muse_glimmer", "paligemma")


def family_of(config):
    """The Family apply_tile patches in a model of `config` (a vision-
    language model: its text stack's); a ValueError naming what is
    supported otherwise."""
    model_type = getattr(config, "model_type", None)
    if model_type in VISION_LANGUAGE:
        text = config.get_text_config().model_type
        family = SUPPORTED.get(text) or TEXT_STACKS.get(text)
        if family is None:
            raise ValueError(
                f"tile.transformers.apply_tile: a {model_type} model's "
                f"text stack of type {text!r} is not supported")
        return family
    if model_type in VISION_ENCODERS:
        return VISION_ENCODERS[model_type]
    if model_type in TEXT_STACKS:
        # A vision-language model's language model patched on its own (as
        # Liger's instance patch reaches it: model.model.language_model).
        return TEXT_STACKS[model_type]
    if model_type not in SUPPORTED:
        every = (*SUPPORTED, *TEXT_STACKS, *VISION_LANGUAGE, *VISION_ENCODERS)
        raise ValueError(
            f"tile.transformers.apply_tile: model type {model_type!r} "
            f"is not supported; supported: {', '.join(sorted(every))}")
    return SUPPORTED[model_type]
