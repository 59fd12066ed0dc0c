"""Patching Hugging Face models in place with tile.nn modules.

    import tile.transformers
    model = AutoModelForCausalLM.from_config(config)
    tile.transformers.apply_tile(model)          # RMSNorm and MLP

Each RMSNorm and MLP module of a supported model is replaced by its tile.nn
counterpart holding the same Parameter objects (an optimizer built before
the patch still updates them; the state dict keys do not change). RoPE is a
function, not a module: `rope=True` replaces the model's modeling module's
apply_rotary_pos_emb with tile.ops.rope, for every model of that type in
the process (as Liger's patch does); revert_rope() puts the original back.
"""

import inspect
import sys
import warnings

import torch

from . import nn as _nn
from . import ops as _ops
from .families import (SUPPORTED, TEXT_STACKS,  # noqa: F401 (the API's)
                       VISION_ENCODERS, VISION_LANGUAGE, Family, family_of)
from .lm_loss import has_lm_loss, patch_loss, router_of


def _patched_root(model):
    """Where apply_tile looks for modules: a vision-language model's
    language model (its vision tower may use the same classes), else the
    whole model."""
    if model.config.model_type in VISION_LANGUAGE:
        base = getattr(model, "model", None)
        if base is None:  # Llama 4's: a whole causal LM, no .model
            base = model
        for name in ("language_model", "text_model"):  # SmolVLM's: text_
            if hasattr(base, name):
                return getattr(base, name)
        raise ValueError(f"{type(model).__name__} has no language model "
                         "where apply_tile looks (.model.language_model, "
                         ".model.text_model, .language_model)")
    return model


def _eps(module):
    for name in ("variance_epsilon", "eps"):
        if hasattr(module, name):
            return float(getattr(module, name))
    raise ValueError(f"{type(module).__name__} has no epsilon attribute")


def _rms_norm(module, offset, main_grad):
    weight = module.weight
    patched = _nn.RMSNorm(weight.shape[0], _eps(module), offset,
                          accumulate_into_main_grad=main_grad,
                          device="meta")
    patched.weight = weight  # the same Parameter
    return patched


def _activation(config):
    """The config's MLP activation, as Hugging Face names it."""
    return getattr(config, "hidden_activation", None) or \
        getattr(config, "hidden_act", None)


def _mlp(module, config, tiled_mlp, main_grad, memory_budget):
    """The module's tile.nn counterpart, or a string: why it stays."""
    if hasattr(module, "gate_up_proj"):
        return _fused_mlp(module, config, tiled_mlp, main_grad,
                          memory_budget)
    if not hasattr(module, "gate_proj"):
        return _plain_mlp(module, config, tiled_mlp, main_grad)
    gate, up, down = module.gate_proj, module.up_proj, module.down_proj
    if any(p.bias is not None for p in (gate, up, down)) and (
            tiled_mlp or main_grad):
        raise ValueError(f"{type(module).__name__} has biases: the tiled MLP "
                         "and main_grad take an MLP without them")
    hidden, inter = gate.in_features, gate.out_features
    activation = _activation(config)
    if tiled_mlp and _nn.ACTIVATIONS.get(activation) != "swiglu":
        raise ValueError(f"the tiled MLP is SwiGLU; "
                         f"{type(module).__name__} uses {activation!r}")
    if activation not in _nn.ACTIVATIONS:
        # Left to the model, listed (Pixtral's exact gelu by default).
        return (f"{type(module).__name__}: activation {activation!r} (Tile's "
                f"gated MLP has {', '.join(sorted(_nn.ACTIVATIONS))})")
    multipliers = (float(getattr(module, "gate_multiplier", 1.0)),
                   float(getattr(module, "down_multiplier", 1.0)))
    if multipliers != (1.0, 1.0) and (tiled_mlp or main_grad):
        return (f"{type(module).__name__}: its gate and down multipliers; "
                "the tiled MLP and main_grad take an MLP without them")
    if tiled_mlp:
        patched = _nn.TiledSwiGLUMLP(
            hidden, inter, "auto" if tiled_mlp is True else tiled_mlp,
            memory_budget=memory_budget, accumulate_into_main_grad=main_grad,
            device="meta")
    else:
        patched = _nn.GatedMLP(hidden, inter, activation,
                               bias=gate.bias is not None,
                               accumulate_into_main_grad=main_grad,
                               gate_multiplier=multipliers[0],
                               down_multiplier=multipliers[1],
                               device="meta")
    # The model's own projections (and Parameters) move over unchanged.
    patched.gate_proj, patched.up_proj, patched.down_proj = gate, up, down
    return patched


def _experts(module, config, main_grad):
    """The MoE experts' tile.nn.MoEExperts (the same Parameters), or why
    they stay."""
    name = type(module).__name__
    if _nn.ACTIVATIONS.get(_activation(config)) != "swiglu":
        return (f"{name}: its experts are not SwiGLU (activation "
                f"{_activation(config)!r})")
    # Hugging Face's experts declare their layout (use_experts_
    # implementation): MoEExperts takes [E, 2I, H] and [E, H, I], gate
    # first, no biases.
    gate = getattr(type(module), "_apply_gate", None)
    if gate is not None and gate.__name__ != "_default_apply_gate":
        # Its own activation between the GEMMs, not Hugging Face's default
        # act(gate) * up (DeepSeek-V4's and gpt-oss's clamp): the grouped
        # MLP's SwiGLU would compute another.
        return f"{name}: its experts' gate is their own (_apply_gate)"
    if getattr(module, "is_transposed", False) or \
            getattr(module, "has_bias", False) or \
            not getattr(module, "has_gate", True):
        return (f"{name}: its experts' layout (transposed, biased or "
                "without a gate) is not the grouped MLP's")
    gate_up, down = module.gate_up_proj, module.down_proj
    experts, inter2, hidden = gate_up.shape
    if tuple(down.shape) != (experts, hidden, inter2 // 2):
        return (f"{name}: down_proj {tuple(down.shape)} does not match "
                f"gate_up_proj {tuple(gate_up.shape)}")
    patched = _nn.MoEExperts(experts, hidden, inter2 // 2,
                             accumulate_into_main_grad=main_grad,
                             device="meta")
    patched.gate_up_proj, patched.down_proj = gate_up, down
    return patched


def _plain_mlp(module, config, tiled_mlp, main_grad):
    """Nemotron's MLP (up, relu², down; not gated) as
    tile.nn.SquaredReLUMLP (the same Linear modules), or why it stays."""
    name = type(module).__name__
    activation = getattr(config, "hidden_act", None)
    if activation != "relu2":
        return f"{name}: an MLP that is not gated, with {activation!r}"
    if tiled_mlp or main_grad:
        return (f"{name}: the tiled MLP and main_grad take gated SwiGLU "
                "MLPs; this one is not gated")
    up, down = module.up_proj, module.down_proj
    patched = _nn.SquaredReLUMLP(up.in_features, up.out_features,
                                 device="meta")
    patched.up_proj, patched.down_proj = up, down  # the same modules
    return patched


def _fused_mlp(module, config, tiled_mlp, main_grad, memory_budget):
    """Phi-3's and GLM-4's MLP (one gate_up projection) as
    tile.nn.FusedSwiGLUMLP (tiled: TiledFusedSwiGLUMLP), or why it
    stays."""
    name = type(module).__name__
    if _nn.ACTIVATIONS.get(_activation(config)) != "swiglu":
        return (f"{name}: its fused gate_up MLP is not SwiGLU (activation "
                f"{_activation(config)!r})")
    gate_up, down = module.gate_up_proj, module.down_proj
    if tiled_mlp and (gate_up.bias is not None or down.bias is not None):
        raise ValueError(f"{name} has biases: the tiled MLP takes an MLP "
                         "without them")
    if main_grad:
        # Left to the model: its projections' gradients arrive in .grad,
        # which a main_grad engine adds itself.
        return (f"{name}: accumulate_into_main_grad is not implemented for "
                "a fused gate_up projection")
    if tiled_mlp:
        patched = _nn.TiledFusedSwiGLUMLP(
            gate_up.in_features, gate_up.out_features // 2,
            "auto" if tiled_mlp is True else tiled_mlp,
            memory_budget=memory_budget, device="meta")
    else:
        patched = _nn.FusedSwiGLUMLP(gate_up.in_features,
                                     gate_up.out_features // 2,
                                     device="meta")
    patched.gate_up_proj, patched.down_proj = gate_up, down
    return patched


# modeling module name -> its own apply_rotary_pos_emb, while patched.
_ROPE_ORIGINALS = {}


def _tile_apply_rotary_pos_emb(q, k, cos, sin, position_ids=None,
                               unsqueeze_dim=1, *, interleaved=False):
    """Hugging Face's signature (position_ids: transformers 4's unused
    argument), Tile's kernel. cos narrower than the head (Phi-3's partial
    rotary factor) rotates the head's first dimensions; the rest pass
    through, as Phi-3's own function does. Tables of one sequence, [S, D]
    with unsqueeze_dim 0 (Pixtral's patches, q [1, heads, S, D]), are one
    batch's: [1, S, D] with unsqueeze_dim 1."""
    if cos.dim() == 2 and unsqueeze_dim == 0:
        cos, sin, unsqueeze_dim = cos[None], sin[None], 1
    rotary = cos.shape[-1]
    if rotary == q.shape[-1]:
        return _ops.rope(q, k, cos, sin, unsqueeze_dim,
                         interleaved=interleaved)
    q_rot, k_rot = _ops.rope(q[..., :rotary], k[..., :rotary], cos, sin,
                             unsqueeze_dim, interleaved=interleaved)
    return (torch.cat([q_rot, q[..., rotary:]], dim=-1),
            torch.cat([k_rot, k[..., rotary:]], dim=-1))


def _tile_apply_interleaved(q, k, cos, sin, position_ids=None,
                            unsqueeze_dim=1):
    """GLM-4's apply_rotary_pos_emb, Tile's interleaved kernel: the first
    half of cos and sin, each value twice in a row, rotates the pairs
    (2i, 2i+1) of the head's first cos.shape[-1] columns (its partial
    rotary factor); the rest pass through. They pass through the kernel
    too, as pairs rotated by angle 0 (cos 1, sin 0: x * 1 + partner * 0 is
    x exactly; a non-finite partner would make it NaN, which no finite
    step has), so that q and k are read in place once, not sliced into
    copies and concatenated back (GLM-4-9B at 65536 tokens: 2.9x faster
    forward, 3.2x forward + backward; docs/Performance.md, session 31)."""
    half = cos.shape[-1] // 2
    passed = q.shape[-1] - 2 * half
    tables = []
    for table, still in ((cos, 1.0), (sin, 0.0)):
        table = table[..., :half].repeat_interleave(2, dim=-1)
        if passed > 0:
            table = torch.cat([table, table.new_full(
                (*table.shape[:-1], passed), still)], dim=-1)
        tables.append(table)
    return _tile_apply_rotary_pos_emb(q, k, *tables,
                                      unsqueeze_dim=unsqueeze_dim,
                                      interleaved=True)


def _tile_apply_half_tables(q, k, cos, sin, unsqueeze_dim=1):
    """gpt-oss's apply_rotary_pos_emb, Tile's kernel: its cos and sin cover
    half the head and rotate each half by them (x1 cos - x2 sin, x2 cos +
    x1 sin), which is rotate-half with the tables repeated. (Its tables
    narrower than the head are not a partial rotary factor's, as Phi-3's
    are: _tile_apply_rotary_pos_emb would rotate half the head only.)"""
    cos, sin = (torch.cat([t, t], dim=-1) for t in (cos, sin))
    return _ops.rope(q, k, cos, sin, unsqueeze_dim)


# Family.rope_layout -> the function that stands in for the family's
# apply_rotary_pos_emb.
ROPE_LAYOUTS = {"rotate_half": _tile_apply_rotary_pos_emb,
                "half_tables": _tile_apply_half_tables,
                "interleaved": _tile_apply_interleaved}


def _check_rope(modeling):
    """The modeling module's apply_rotary_pos_emb, refused unless Tile's
    can stand in for it."""
    original = getattr(modeling, "apply_rotary_pos_emb", None)
    if original is None:
        raise ValueError(f"{modeling.__name__} has no apply_rotary_pos_emb "
                         "to replace; pass rope=False")
    names = list(inspect.signature(original).parameters)[:4]
    if names != ["q", "k", "cos", "sin"]:
        # Another RoPE under the same name (one tensor a call, complex
        # pairs): replacing it would compute something else.
        raise ValueError(f"{modeling.__name__}.apply_rotary_pos_emb takes "
                         f"({', '.join(names)}, ...), not (q, k, cos, sin); "
                         "pass rope=False")
    return original


def _patch_rope(modeling, family):
    if modeling.__name__ in _ROPE_ORIGINALS:
        return 0
    _ROPE_ORIGINALS[modeling.__name__] = _check_rope(modeling)
    modeling.apply_rotary_pos_emb = ROPE_LAYOUTS[family.rope_layout]
    return 1


def revert_rope():
    """Puts back every apply_rotary_pos_emb that apply_tile replaced."""
    for name, original in _ROPE_ORIGINALS.items():
        sys.modules[name].apply_rotary_pos_emb = original
    _ROPE_ORIGINALS.clear()


def apply_tile(model, rms_norm=True, mlp=True, tiled_mlp=False, rope=True,
               *, linear_cross_entropy=True, cross_entropy=False,
               accumulate_into_main_grad=False, memory_budget=None):
    """Replaces the RMSNorm and MLP modules of a Hugging Face model of a
    type in SUPPORTED in place, (rope=True) its modeling module's RoPE
    function and, for a causal LM, its loss; returns the model and what
    was replaced ({"rms_norm": n, "mlp": m, "experts": k, "rope": 0 or 1,
    "loss": 0 or 1,
    "skipped": [why, ...]}: rope 0 where an earlier call already replaced
    the function). What a family has that Tile does not patch (DeepSeek's
    RoPE, a fused MLP under main_grad) stays the model's own,
    is listed in "skipped" and warned about.

    tiled_mlp: False, True (automatic shards) or a shard count for
    tile.nn.TiledSwiGLUMLP in place of the untiled MLP.

    linear_cross_entropy (default): in training with labels, the LM head
    and the loss run together in chunks (tile.ops.linear_cross_entropy,
    Hugging Face's shift, ignore_index, num_items_in_batch and the model's
    final_logit_softcapping and logit scale (tile.families.LOGIT_SCALES:
    Granite's logits_scaling, Falcon-H1's lm_head_multiplier, MuseGlimmer's
    output_multiplier) honoured; a mixture of
    experts' router auxiliary loss added as its forward adds it, the
    output's aux_loss and router_logits as the model's) and the output's
    logits are None; in eval mode, without labels or with logits_to_keep,
    the model's own forward runs. cross_entropy=True: where the logits are
    made and labels given, the loss is tile.ops.cross_entropy."""
    config = getattr(model, "config", None)
    family = family_of(config)
    config = config.get_text_config()
    counts = {"rms_norm": 0, "mlp": 0, "experts": 0, "rope": 0, "loss": 0}
    skipped = {}  # why -> how many modules
    root = _patched_root(model)
    kinds = family.norms + family.mlps + family.experts
    modeling = {sys.modules[type(m).__module__] for m in root.modules()
                if type(m).__name__ in kinds}
    if not modeling:  # norms and MLPs were patched by an earlier call
        modeling.add(sys.modules[type(model).__module__])
    # What may refuse is asked before anything changes: the model stays as
    # it was, to be patched again as the message says.
    patch_rope = rope and not family.other_rope
    if patch_rope:
        for module in modeling:
            if module.__name__ not in _ROPE_ORIGINALS:
                _check_rope(module)
    if (linear_cross_entropy or cross_entropy) and has_lm_loss(model):
        router_of(model)
    for parent in list(root.modules()):
        for name, child in list(parent.named_children()):
            kind = type(child).__name__
            if rms_norm and kind in family.norms:
                if getattr(child, "weight", None) is None:
                    # A scale-free norm (Gemma 4's on its values).
                    why = f"{kind} without a weight"
                    skipped[why] = skipped.get(why, 0) + 1
                    continue
                setattr(parent, name, _rms_norm(child,
                                                family.offset_of(kind),
                                                accumulate_into_main_grad))
                counts["rms_norm"] += 1
            elif mlp and kind in family.mlps:
                patched = _mlp(child, config, tiled_mlp,
                               accumulate_into_main_grad, memory_budget)
                if isinstance(patched, str):
                    skipped[patched] = skipped.get(patched, 0) + 1
                    continue
                setattr(parent, name, patched)
                counts["mlp"] += 1
            elif mlp and kind in family.experts:
                patched = _experts(child, config, accumulate_into_main_grad)
                if isinstance(patched, str):
                    skipped[patched] = skipped.get(patched, 0) + 1
                    continue
                setattr(parent, name, patched)
                counts["experts"] += 1
    if not (counts["rms_norm"] or counts["mlp"] or counts["experts"] or
            skipped) and (rms_norm or mlp):
        looked_for = family.norms + family.mlps + family.experts
        raise ValueError(
            f"apply_tile found no {' or '.join(looked_for)} "
            f"in {type(model).__name__}: was it patched already?")
    counts["loss"] = patch_loss(model, linear_cross_entropy, cross_entropy,
                                 accumulate_into_main_grad)
    for why in family.own:
        skipped[why] = 1
    if rope and family.other_rope:
        skipped[f"{family.other_rope}: the model's own RoPE runs"] = 1
    elif patch_rope:
        for module in modeling:
            counts["rope"] += _patch_rope(module, family)
    counts["skipped"] = [why if n == 1 else f"{why} ({n} modules)"
                         for why, n in skipped.items()]
    for why in counts["skipped"]:
        warnings.warn(f"apply_tile left to {type(model).__name__}: {why}",
                      stacklevel=2)
    return model, counts
