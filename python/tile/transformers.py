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

import sys

from . import nn as _nn
from . import ops as _ops

# model_type -> (RMSNorm class names, MLP class names, RMSNorm offset)
SUPPORTED = {
    "llama": (("LlamaRMSNorm",), ("LlamaMLP",), 0.0),
    "mistral": (("MistralRMSNorm",), ("MistralMLP",), 0.0),
    "qwen2": (("Qwen2RMSNorm",), ("Qwen2MLP",), 0.0),
    "qwen3": (("Qwen3RMSNorm",), ("Qwen3MLP",), 0.0),
    "gemma": (("GemmaRMSNorm",), ("GemmaMLP",), 1.0),
}


def _model_type(model):
    config = getattr(model, "config", None)
    model_type = getattr(config, "model_type", None)
    if model_type not in SUPPORTED:
        raise ValueError(
            f"tile.transformers.apply_tile: model type {model_type!r} "
            f"({type(model).__name__}) is not supported; supported: "
            f"{', '.join(sorted(SUPPORTED))}")
    return model_type


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


def _activation(module, config):
    name = getattr(config, "hidden_activation", None) or \
        getattr(config, "hidden_act", None)
    if name not in _nn.ACTIVATIONS:
        raise ValueError(
            f"{type(module).__name__} uses activation {name!r}; Tile's gated "
            f"MLP has {sorted(_nn.ACTIVATIONS)}")
    return name


def _mlp(module, config, tiled_mlp, main_grad, memory_budget):
    gate, up, down = module.gate_proj, module.up_proj, module.down_proj
    if any(p.bias is not None for p in (gate, up, down)) and (
            tiled_mlp or main_grad):
        raise ValueError(f"{type(module).__name__} has biases: the tiled MLP "
                         "and main_grad take an MLP without them")
    hidden, inter = gate.in_features, gate.out_features
    activation = _activation(module, config)
    if tiled_mlp:
        if _nn.ACTIVATIONS[activation] != "swiglu":
            raise ValueError(f"the tiled MLP is SwiGLU; "
                             f"{type(module).__name__} uses {activation!r}")
        patched = _nn.TiledSwiGLUMLP(
            hidden, inter, "auto" if tiled_mlp is True else tiled_mlp,
            memory_budget=memory_budget, accumulate_into_main_grad=main_grad,
            device="meta")
    else:
        patched = _nn.GatedMLP(hidden, inter, activation,
                               bias=gate.bias is not None,
                               accumulate_into_main_grad=main_grad,
                               device="meta")
    # The model's own projections (and Parameters) move over unchanged.
    patched.gate_proj, patched.up_proj, patched.down_proj = gate, up, down
    return patched


# modeling module name -> its own apply_rotary_pos_emb, while patched.
_ROPE_ORIGINALS = {}


def _tile_apply_rotary_pos_emb(q, k, cos, sin, position_ids=None,
                               unsqueeze_dim=1):
    """Hugging Face's signature (position_ids: transformers 4's unused
    argument), Tile's kernel."""
    return _ops.rope(q, k, cos, sin, unsqueeze_dim)


def _patch_rope(modeling):
    if modeling.__name__ in _ROPE_ORIGINALS:
        return 0
    original = getattr(modeling, "apply_rotary_pos_emb", None)
    if original is None:
        raise ValueError(f"{modeling.__name__} has no apply_rotary_pos_emb "
                         "to replace; pass rope=False")
    _ROPE_ORIGINALS[modeling.__name__] = original
    modeling.apply_rotary_pos_emb = _tile_apply_rotary_pos_emb
    return 1


def revert_rope():
    """Puts back every apply_rotary_pos_emb that apply_tile replaced."""
    for name, original in _ROPE_ORIGINALS.items():
        sys.modules[name].apply_rotary_pos_emb = original
    _ROPE_ORIGINALS.clear()


def apply_tile(model, rms_norm=True, mlp=True, tiled_mlp=False, rope=True,
               *, accumulate_into_main_grad=False, memory_budget=None):
    """Replaces the RMSNorm and MLP modules of a Hugging Face Llama,
    Mistral, Qwen2, Qwen3 or Gemma model in place, and (rope=True) its
    modeling module's RoPE function; returns the model and what was
    replaced ({"rms_norm": n, "mlp": m, "rope": 0 or 1}: 0 where an earlier
    call already replaced the function).

    tiled_mlp: False, True (automatic shards) or a shard count for
    tile.nn.TiledSwiGLUMLP in place of the untiled MLP."""
    model_type = _model_type(model)
    norms, mlps, offset = SUPPORTED[model_type]
    config = model.config
    counts = {"rms_norm": 0, "mlp": 0, "rope": 0}
    modeling = set()
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            kind = type(child).__name__
            if kind in norms or kind in mlps:
                modeling.add(sys.modules[type(child).__module__])
            if rms_norm and kind in norms:
                setattr(parent, name, _rms_norm(child, offset,
                                                accumulate_into_main_grad))
                counts["rms_norm"] += 1
            elif mlp and kind in mlps:
                setattr(parent, name, _mlp(child, config, tiled_mlp,
                                           accumulate_into_main_grad,
                                           memory_budget))
                counts["mlp"] += 1
    if not (counts["rms_norm"] or counts["mlp"]) and (rms_norm or mlp):
        raise ValueError(
            f"apply_tile found no {' or '.join(norms + mlps)} in "
            f"{type(model).__name__}: was it patched already?")
    if rope:
        if not modeling:  # norms and MLPs were patched by an earlier call
            modeling.add(sys.modules[type(model).__module__])
        for module in modeling:
            counts["rope"] += _patch_rope(module)
    return model, counts
