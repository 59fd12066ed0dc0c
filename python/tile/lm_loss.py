"""A Hugging Face causal LM's (or vision-language model's) loss through
Tile: its forward replaced (patch_loss) so that in training with labels the
LM head and the loss run in chunks (tile.ops.linear_cross_entropy), the
logits never made, a mixture of experts' router auxiliary loss added as the
model's own forward adds it; apply_tile (tile.transformers) calls it."""

import functools
import inspect
import sys
import typing

import torch

from . import nn as _nn
from . import ops as _ops
from .families import LOGIT_SCALES, TEXT_SOFTCAP


def _shifted(labels, ignore_index):
    """Hugging Face's ForCausalLMLoss shift: row t is scored against label
    t + 1, the last row against ignore_index."""
    return torch.nn.functional.pad(labels, (0, 1),
                                   value=ignore_index)[..., 1:]


def _causal_lm_loss(model, rows, labels, kwargs, *, linear, main_grad):
    """The loss Hugging Face's loss_function gives for `labels` (or
    kwargs' shift_labels), from the last hidden states (`linear`: the LM
    head and the loss in chunks, tile.ops.linear_cross_entropy) or from
    the logits (tile.ops.cross_entropy)."""
    ignore_index = kwargs.get("ignore_index", -100)
    shift_labels = kwargs.get("shift_labels")
    if shift_labels is None:
        shift_labels = _shifted(labels, ignore_index)
    shift_labels = shift_labels.to(rows.device)
    items = kwargs.get("num_items_in_batch")
    reduction = "sum" if items is not None else "mean"
    # Where the model's forward reads the soft-cap: its config, or (of the
    # vision-language models, those of TEXT_SOFTCAP) its text config's;
    # Gemma 3's vision-language forward applies none.
    capped = model.config.get_text_config() \
        if model.config.model_type in TEXT_SOFTCAP else model.config
    softcap = getattr(capped, "final_logit_softcapping", None)
    if linear:
        head = model.get_output_embeddings()
        rows, bias = _scaled(model, rows, head.bias)
        if main_grad:
            _nn.prepare_main_grads(head)
        loss = _ops.linear_cross_entropy(
            rows, head.weight, shift_labels, bias=bias,
            ignore_index=ignore_index, reduction=reduction, softcap=softcap,
            main_grad=main_grad)
    else:
        # The model applied its soft-cap to the logits already.
        loss = _ops.cross_entropy(rows, shift_labels,
                                  ignore_index=ignore_index,
                                  reduction=reduction)
    if items is not None:
        if torch.is_tensor(items):
            items = items.to(loss.device)
        loss = loss / items
    return loss


def _scaled(model, rows, bias):
    """The rows and the head's bias scaled as the model's forward scales its
    logits (LOGIT_SCALES): lm_head(h) * m = W (h m) + b m."""
    scale = LOGIT_SCALES.get(model.config.model_type)
    if scale is None:
        return rows, bias
    name, how = scale
    value = getattr(model.config.get_text_config(), name, None)
    if value is None or value == 1:
        return rows, bias
    if how == "divide":  # as the model does: not times its reciprocal
        return rows / value, None if bias is None else bias / value
    return rows * value, None if bias is None else bias * value


def _decoder(model):
    """The decoder stack under a causal LM's head: `model.model` in every
    family here (Llama 4's base_model_prefix names a VLM's attribute)."""
    decoder = getattr(model, "model", None)
    if decoder is None:
        decoder = getattr(model, model.base_model_prefix)
    return decoder


def _plain_head(head):
    """Whether the chunked head may read the LM head's weight and bias
    instead of calling it: an nn.Linear itself (not a LoRA or tensor-
    parallel subclass, not an FSDP2-wrapped module), without hooks, its
    weight a plain tensor (not a DTensor). Otherwise the head's own forward
    runs (what it adds would be skipped silently)."""
    hooks = torch.nn.modules.module
    return (type(head) is torch.nn.Linear and not head._forward_hooks and
            not head._forward_pre_hooks and
            not hooks._global_forward_hooks and
            not hooks._global_forward_pre_hooks and
            type(head.weight) in (torch.Tensor, torch.nn.Parameter))


def _returns_dict(model, return_dict):
    if return_dict is not None:
        return return_dict
    return getattr(model.config, "return_dict", True)


class _Router(typing.NamedTuple):
    """The auxiliary loss a mixture-of-experts model's forward adds."""
    balance: typing.Callable  # its modeling module's load_balancing_loss_func
    coef: float               # router_aux_loss_coef
    experts: int
    top_k: int


def router_of(model):
    """The model's _Router, or None where its forward adds no auxiliary
    loss (takes no output_router_logits). Read where the model's forward
    reads them: its own attributes (a causal LM's), else its text config's
    (a vision-language model's); one missing is an error now, not a loss
    without its auxiliary term in training."""
    forward = inspect.signature(type(model).forward).parameters
    if "output_router_logits" not in forward:
        return None
    text = model.config.get_text_config()

    def refuse(missing):
        return ValueError(
            f"{type(model).__name__} takes output_router_logits but Tile "
            f"finds no {missing} for its auxiliary loss; pass "
            "linear_cross_entropy=False and cross_entropy=False to leave "
            "the loss to the model")

    def read(*names):
        for owner in (model, text):
            for name in names:
                if getattr(owner, name, None) is not None:
                    return getattr(owner, name)
        raise refuse(" or ".join(names))
    # The modeling module of the class that defines the forward (a user's
    # subclass lives elsewhere).
    owner = next(k for k in type(model).__mro__ if "forward" in vars(k))
    modeling = sys.modules[owner.__module__]
    balance = getattr(modeling, "load_balancing_loss_func", None)
    if balance is None:
        raise refuse(f"load_balancing_loss_func in {modeling.__name__}")
    return _Router(balance, read("router_aux_loss_coef"),
                   read("num_experts", "num_local_experts"),
                   read("num_experts_per_tok"))


def _router_loss(router, call, loss, outputs, aux=None):
    """`loss` with the router's auxiliary (load-balancing) loss added as a
    mixture-of-experts model's own forward adds it: load_balancing_loss_func
    over the router logits of every layer, the attention mask, times the
    coefficient. `aux` where the model computed it already. Returns (loss,
    aux); aux is None without a router or without router logits."""
    if router is None:
        return loss, None
    if aux is None:
        router_logits = outputs.get("router_logits")
        if router_logits is None:
            return loss, None
        aux = router.balance(router_logits, router.experts, router.top_k,
                             call.get("attention_mask"))
    if torch.is_tensor(aux):
        loss = loss + router.coef * aux.to(loss.device)
    return loss, aux


def _router_logits_wanted(model, call):
    """Hugging Face's rule: output_router_logits as passed, else the
    config's (a vision-language model's: its text config's, which its
    forward reads). Set in `call` for the base model."""
    wanted = call.get("output_router_logits")
    for config in (model.config.get_text_config(), model.config):
        if wanted is None:
            wanted = getattr(config, "output_router_logits", None)
    call["output_router_logits"] = bool(wanted)


def _output_class(original):
    """The output class the model's forward returns (its annotation:
    MoeCausalLMOutputWithPast for a mixture of experts, with aux_loss and
    router_logits), else CausalLMOutputWithPast."""
    from transformers.modeling_outputs import CausalLMOutputWithPast
    try:
        annotation = typing.get_type_hints(original).get("return")
    except Exception:  # an annotation this Python cannot resolve
        annotation = None
    # `X | tuple` (Granite-MoE's) names X among its arguments.
    for kind in (annotation, *typing.get_args(annotation)):
        if isinstance(kind, type) and \
                "loss" in getattr(kind, "__dataclass_fields__", ()):
            return kind
    return CausalLMOutputWithPast


def _arguments(signature, model, args, kwargs):
    """A forward's call as {name: value}: its arguments bound to the
    model's forward's signature, **kwargs spread, no self."""
    call = dict(signature.bind(model, *args, **kwargs).arguments)
    call.pop("self")
    call.update(call.pop("kwargs", {}))
    return call


def _tile_causal_lm_forward(original, *, linear, logits_loss, main_grad,
                            router):
    """The model's forward with Tile's loss: in training with labels, the
    LM head and loss in chunks (`linear`), the logits never made (None in
    the output, as under Liger's patch), a mixture of experts' router loss
    added as its forward adds it; otherwise the model's own forward, its
    loss from tile.ops.cross_entropy where `logits_loss`."""
    signature = inspect.signature(original)
    output_class = _output_class(original)

    @functools.wraps(original)
    def forward(self, *args, **kwargs):
        call = _arguments(signature, self, args, kwargs)
        labels = call.pop("labels", None)
        keep = call.pop("logits_to_keep", 0)
        return_dict = _returns_dict(self, call.pop("return_dict", None))
        # As Hugging Face's: a loss only with labels (shift_labels, when
        # given too, replaces their shift).
        wants_loss = labels is not None
        every_row = isinstance(keep, int) and keep == 0
        if linear and wants_loss and self.training and every_row and \
                _plain_head(self.get_output_embeddings()):
            base = _decoder(self)
            if router is not None:
                _router_logits_wanted(self, call)
            outputs = base(**call, return_dict=True)
            loss = _causal_lm_loss(self, outputs[0], labels, call,
                                   linear=True, main_grad=main_grad)
            loss, aux = _router_loss(router, call, loss, outputs)
            result = _output(output_class, outputs, loss=loss,
                             aux_loss=aux)
            return result if return_dict else result.to_tuple()
        if not (logits_loss and wants_loss):
            return original(self, *args, **kwargs)
        outputs = original(self, **call, logits_to_keep=keep,
                           return_dict=True)
        loss = _causal_lm_loss(self, outputs["logits"], labels, call,
                               linear=False, main_grad=False)
        loss, _ = _router_loss(router, call, loss, outputs,
                               aux=outputs.get("aux_loss"))
        # The loss first, as the model's own output has it.
        result = type(outputs)(loss=loss, **{k: v for k, v in outputs.items()
                                             if k != "loss"})
        return result if return_dict else result.to_tuple()

    return forward


def _output(output_class, outputs, **fields):
    """An `output_class` of `fields` and the base model's outputs (whatever
    fields this transformers version's class has), no logits unless
    `fields` gives them."""
    names = output_class.__dataclass_fields__
    kept = {k: v for k, v in outputs.items()
            if k in names and k not in fields and k != "logits"}
    kept.update({k: v for k, v in fields.items() if k in names})
    kept.setdefault("logits", None)
    return output_class(**kept)


def _tile_composite_forward(original):
    """The forward of a vision-language model whose language model is a
    whole causal LM with its own head (Llama 4's: .language_model, no
    .model): the model's own steps — the text's embeddings, the image
    features (its get_image_features and projector) scattered into the
    image tokens' rows — then the language model's forward with the
    labels, which Tile patched. Its own forward gives the language model
    no labels and makes the logits for its loss (transformers 5.24's also
    fails at its return: `image_outputs`)."""
    signature = inspect.signature(original)
    output_class = _output_class(original)

    @functools.wraps(original)
    def forward(self, *args, **kwargs):
        call = _arguments(signature, self, args, kwargs)
        ids = call.pop("input_ids", None)
        pixels = call.pop("pixel_values", None)
        embeds = call.pop("inputs_embeds", None)
        encoded = call.pop("mm_encoder_outputs", None) or {}
        strategy = call.pop("vision_feature_select_strategy", None)
        return_dict = _returns_dict(self, call.pop("return_dict", None))
        # The model's own forward's refusals.
        if (ids is None) == (embeds is None):
            raise ValueError("You must specify exactly one of input_ids or "
                             "inputs_embeds")
        if pixels is not None and (embeds is not None or encoded):
            raise ValueError("You cannot specify pixel_values with "
                             "inputs_embeds or mm_encoder_outputs")
        if embeds is None:
            embeds = self.get_input_embeddings()(ids)
        image = encoded.get("image")
        if image is None and pixels is not None:
            extra = {} if strategy is None else dict(
                vision_feature_select_strategy=strategy)
            image = self.get_image_features(pixel_values=pixels,
                                            return_dict=True, **extra)
        features = None
        if image is not None:
            features = image.last_hidden_state
            flat = self.multi_modal_projector(
                features.view(-1, features.size(-1))).to(embeds.device,
                                                         embeds.dtype)
            mask = self.get_placeholder_mask(ids, inputs_embeds=embeds,
                                             image_features=flat)
            embeds = embeds.masked_scatter(mask, flat)
        outputs = self.language_model(inputs_embeds=embeds, return_dict=True,
                                      **call)
        result = _output(output_class, outputs, loss=outputs.get("loss"),
                         logits=outputs.get("logits"),
                         image_hidden_states=features, image_outputs=image)
        return result if return_dict else result.to_tuple()

    return forward


def _composite(model):
    """Whether the model is a vision-language model whose language model
    is a whole causal LM under its own head (Llama 4's)."""
    inner = getattr(model, "language_model", None)
    return getattr(model, "model", None) is None and inner is not None \
        and has_lm_loss(inner)


def has_lm_loss(model):
    """Whether the model is a causal LM (or a vision-language model's
    generation head) whose loss apply_tile patches."""
    return model.get_output_embeddings() is not None and \
        type(model).__name__.endswith(("ForCausalLM",
                                       "ForConditionalGeneration"))


def patch_loss(model, linear, logits_loss, main_grad):
    """Replaces the causal-LM model's forward (this instance's only);
    returns 1, or 0 where the model has no LM head."""
    if not (linear or logits_loss) or not has_lm_loss(model):
        return 0
    if "forward" in vars(model):
        raise ValueError(f"{type(model).__name__}.forward was replaced "
                         "already (patched twice?)")
    if _composite(model):
        # The language model's loss is Tile's; the model's own steps before
        # it hand it the labels.
        patch_loss(model.language_model, linear, logits_loss, main_grad)
        model.forward = _tile_composite_forward(
            type(model).forward).__get__(model)
        return 1
    router = router_of(model)  # one Tile cannot add: refused now
    head = model.get_output_embeddings()
    inputs = model.get_input_embeddings()
    # A head tied to the input embedding gets its gradient by autograd:
    # the embedding's own part arrives in .grad, which an engine that sees
    # grad_added_to_main_grad would no longer add (Megatron's).
    main_grad = main_grad and not (inputs is not None and
                                   inputs.weight is head.weight)
    if linear and main_grad:
        _nn.adopt_main_grad_module(head)
    model.forward = _tile_causal_lm_forward(
        type(model).forward, linear=linear, logits_loss=logits_loss,
        main_grad=main_grad, router=router).__get__(model)
    return 1
