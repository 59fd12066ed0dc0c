"""Drop-in PyTorch modules over Tile's kernels.

Parameters are ordinary nn.Parameters under the names Hugging Face uses
(`weight`; `gate_proj.weight`, `up_proj.weight`, `down_proj.weight`), so
state dicts move between these modules and the models' own unchanged.

The main_grad contract (Megatron-LM, TransformerEngine), opt-in per module
with ``accumulate_into_main_grad=True``: every parameter carries an fp32
``main_grad`` (made, zeroed, on the first forward where the training loop
has not attached one); the backward adds the weight gradient to it in fp32
(RMSNorm's finalize, GEMMs with beta = 1), sets
``param.grad_added_to_main_grad = True`` and hands autograd None for the
parameter — no ``.grad``, nothing for a framework to add a second time, and
never a view of main_grad.
"""

import torch
from torch import nn

from . import ops
from .autograd import grad_dtype, main_grads_of
from .custom_ops import runs_each_call
from .distributed import refuse_ddp_without_hook, refuse_unreduced_main_grad
from .mlp import gated_mlp_into_main_grads
from .operators import ACTIVATIONS, gated, kernel

__all__ = ["RMSNorm", "SwiGLU", "SiluAndMul", "GatedMLP", "SwiGLUMLP",
           "FusedSwiGLUMLP", "SquaredReLUMLP",
           "TiledSwiGLUMLP", "TiledFusedSwiGLUMLP", "GroupedSwiGLUMLP",
           "MoEExperts",
           "attach_main_grads",
           "adopt_main_grad_module", "prepare_main_grads"]


def _ensure_main_grad(param):
    """An fp32 main_grad for `param` (float64 for a float64 one), made zero
    where the training loop attached none (eagerly: under torch.compile the
    backward adds to it as a graph input, so it must exist before)."""
    if getattr(param, "main_grad", None) is None:
        if not runs_each_call():
            raise RuntimeError(
                "tile: under torch.compile every main_grad must exist before "
                "the compiled step (the backward adds to it as an input of "
                "the graph): call tile.nn.attach_main_grads(model) first, "
                "attach your own (Megatron's DDP does), or run one step "
                "eagerly")
        param.main_grad = torch.zeros(param.shape,
                                      dtype=grad_dtype(param.dtype),
                                      device=param.device)
    return param.main_grad


def _prepare_main_grads(module, params):
    """The main_grad contract's checks before `module`'s forward: an
    engine that would leave main_grad wrong refuses (FSDP2, torch DDP
    without main_grad_comm_hook), then each of `params` gets its main_grad
    (_ensure_main_grad)."""
    # Without autograd no gradient is made, and none can be wrong
    # (inference of a main_grad model under FSDP2 or DDP).
    if torch.is_grad_enabled():
        refuse_unreduced_main_grad(module)
    for param in params:
        _ensure_main_grad(param)


def adopt_main_grad_module(module):
    """Puts a module Tile did not make under the main_grad contract: a Tile
    op adds its parameters' gradients to their main_grad (the LM head under
    apply_tile's linear cross-entropy). attach_main_grads covers it, and
    prepare_main_grads(module) is the check its forward makes."""
    module.tile_main_grad = True


def prepare_main_grads(module):
    """_prepare_main_grads for an adopted module (adopt_main_grad_module),
    before the Tile op that accumulates its gradients runs."""
    _prepare_main_grads(module, module.parameters())


def attach_main_grads(model):
    """Gives every parameter of the Tile modules in `model` that use the
    main_grad contract (``accumulate_into_main_grad=True``) a zero fp32
    main_grad where it has none; returns `model`. Their forward does the
    same on first use, but a compiled model (torch.compile) needs them
    before its first step; pass the DistributedDataParallel wrapper, if
    any, to have it checked for main_grad_comm_hook as the eager forward
    checks."""
    modules = [m for m in model.modules()
               if (isinstance(m, _MAIN_GRAD_MODULES) and
                   m.accumulate_into_main_grad) or
               getattr(m, "tile_main_grad", False)]
    if modules:
        refuse_ddp_without_hook(model)
    for module in modules:
        _prepare_main_grads(module, module.parameters())
    return model


def _check_shards(shards):
    if shards != "auto" and (isinstance(shards, bool) or
                             not isinstance(shards, int) or shards < 1):
        raise ValueError(f"shards must be 'auto' or an int ≥ 1, got "
                         f"{shards!r}")


class RMSNorm(nn.Module):
    """y = x * rsqrt(mean(x², -1) + eps) * (weight + offset).

    offset 0: Llama, Qwen, Mistral (weight starts at one); offset 1: Gemma,
    whose weight is stored zero-centred (starts at zero)."""

    def __init__(self, hidden_size, eps=1e-6, offset=0.0, *,
                 accumulate_into_main_grad=False, device=None, dtype=None):
        super().__init__()
        self.hidden_size = hidden_size
        self.eps = eps
        self.offset = float(offset)
        self.accumulate_into_main_grad = accumulate_into_main_grad
        self.weight = nn.Parameter(torch.full(
            (hidden_size,), 1.0 - self.offset, device=device, dtype=dtype))

    def forward(self, x):
        weight = self.weight
        if self.accumulate_into_main_grad:
            _prepare_main_grads(self, [weight])
        elif weight.dtype != x.dtype:
            # Mixed precision (an fp32 weight, bf16 activations): the kernel
            # takes one dtype; autograd casts the gradient back.
            weight = weight.to(x.dtype)
        return ops.rms_norm(x.contiguous(), weight, self.eps, self.offset,
                            main_grad=self.accumulate_into_main_grad)

    def extra_repr(self):
        return (f"{self.hidden_size}, eps={self.eps}, offset={self.offset}, "
                f"accumulate_into_main_grad={self.accumulate_into_main_grad}")


class SwiGLU(nn.Module):
    """silu(a) * b."""

    def forward(self, a, b):
        return ops.swiglu(a.contiguous(), b.contiguous())


class SiluAndMul(nn.Module):
    """silu(x[..., :H]) * x[..., H:] (vLLM's fused activation)."""

    def forward(self, x):
        return ops.silu_and_mul(x.contiguous())


def _add_projections(module, inputs=("gate_proj", "up_proj"), width=1,
                     **factory):
    """The projections as Hugging Face names them: each of `inputs` from
    hidden to `width` times intermediate, and down_proj back."""
    hidden, inter = module.hidden_size, module.intermediate_size
    for name in inputs:
        setattr(module, name, nn.Linear(hidden, width * inter, **factory))
    module.down_proj = nn.Linear(inter, hidden, **factory)


class GatedMLP(nn.Module):
    """down_proj(act(gate_proj(x)) * up_proj(x)): the MLP of Llama, Qwen and
    Mistral (act = silu: SwiGLU) and Gemma (gelu_tanh: GeGLU). The
    projections are torch's GEMMs (cuBLAS); the activation and its backward
    are Tile kernels."""

    def __init__(self, hidden_size, intermediate_size, activation="silu", *,
                 bias=False, accumulate_into_main_grad=False,
                 gate_multiplier=1.0, down_multiplier=1.0, device=None,
                 dtype=None):
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation {activation!r}: Tile's gated MLP "
                             f"has {sorted(ACTIVATIONS)}")
        if bias and accumulate_into_main_grad:
            raise ValueError("accumulate_into_main_grad takes an MLP without "
                             "biases")
        if (gate_multiplier, down_multiplier) != (1.0, 1.0) and \
                accumulate_into_main_grad:
            raise ValueError("accumulate_into_main_grad takes an MLP without "
                             "gate or down multipliers")
        self.hidden_size = hidden_size
        self.intermediate_size = intermediate_size
        self.activation = activation
        # Falcon-H1's: act(gate_proj(x) * gate_multiplier) * up_proj(x),
        # down_proj of that times down_multiplier.
        self.gate_multiplier = float(gate_multiplier)
        self.down_multiplier = float(down_multiplier)
        self.accumulate_into_main_grad = accumulate_into_main_grad
        _add_projections(self, bias=bias, device=device, dtype=dtype)

    def forward(self, x):
        if self.accumulate_into_main_grad and torch.is_grad_enabled():
            weights = (self.gate_proj.weight, self.up_proj.weight,
                       self.down_proj.weight)
            _prepare_main_grads(self, weights)
            main_grads = main_grads_of(weights, ("gate", "up", "down"))
            return gated_mlp_into_main_grads(x, *weights, self.activation,
                                             main_grads)
        g, u = self.gate_proj(x), self.up_proj(x)
        if self.gate_multiplier != 1.0:
            g = g * self.gate_multiplier
        # The backward writes dg and du over g and u, which are private to
        # this module: the projections' backward needs their inputs and
        # weights, not their outputs.
        y = self.down_proj(gated(ACTIVATIONS[self.activation], g, u,
                                 inplace_backward=True))
        return y if self.down_multiplier == 1.0 else y * self.down_multiplier


class FusedSwiGLUMLP(nn.Module):
    """down_proj(silu_and_mul(gate_up_proj(x))): the MLP of Phi-3 and GLM-4,
    whose gate and up projections are one GEMM into [..., 2I], the gate
    first. The activation reads that one tensor and its derived backward
    writes the one gradient gate_up_proj's backward takes: no split, no
    copies."""

    def __init__(self, hidden_size, intermediate_size, *, bias=False,
                 device=None, dtype=None):
        super().__init__()
        self.hidden_size = hidden_size
        self.intermediate_size = intermediate_size
        _add_projections(self, ("gate_up_proj",), 2, bias=bias, device=device,
                         dtype=dtype)

    def forward(self, x):
        return self.down_proj(ops.silu_and_mul(self.gate_up_proj(x)))


class SquaredReLUMLP(nn.Module):
    """down_proj(relu(up_proj(x))²): Nemotron's MLP, not gated. The
    projections are torch's GEMMs; the activation and its derived backward
    are the squared_relu kernel (examples/squared_relu.mlir)."""

    def __init__(self, hidden_size, intermediate_size, *, bias=False,
                 device=None, dtype=None):
        super().__init__()
        self.hidden_size = hidden_size
        self.intermediate_size = intermediate_size
        _add_projections(self, ("up_proj",), bias=bias, device=device,
                         dtype=dtype)

    def forward(self, x):
        u = self.up_proj(x)
        # The kernel takes rows: any leading shape flattened.
        h = kernel("squared_relu")(u.reshape(-1, u.shape[-1]).contiguous())
        return self.down_proj(h.view(u.shape))

class SwiGLUMLP(GatedMLP):
    """down_proj(silu(gate_proj(x)) * up_proj(x)) (Llama, Qwen, Mistral)."""

    def __init__(self, hidden_size, intermediate_size, **kwargs):
        super().__init__(hidden_size, intermediate_size, "silu", **kwargs)


class _TiledMLP(nn.Module):
    """What the tiled MLPs share: the shard count ("auto" or n) and the
    memory budget the automatic count is planned against."""

    def __init__(self, hidden_size, intermediate_size, shards, memory_budget):
        super().__init__()
        _check_shards(shards)
        self.hidden_size = hidden_size
        self.intermediate_size = intermediate_size
        self.shards = shards
        self.memory_budget = memory_budget

    def _mlp(self, x, gate, up, down, main_grad=False):
        return ops.swiglu_mlp(
            x.contiguous(), gate, up, down,
            shards=0 if self.shards == "auto" else self.shards,
            memory_budget=self.memory_budget, main_grad=main_grad)

    def extra_repr(self):
        return (f"{self.hidden_size}, {self.intermediate_size}, "
                f"shards={self.shards!r}")


class TiledSwiGLUMLP(_TiledMLP):
    """SwiGLUMLP over tile::ops::TiledSwiGLUMLP: the sequence is split into
    `shards` ("auto": the fewest whose [rows, I] intermediates fit
    `memory_budget` bytes, 1 GiB by default) and nothing of size [S, I] is
    kept for the backward, which recomputes gate/up per shard. Weight
    gradients are fp32 (into main_grad with accumulate_into_main_grad)."""

    def __init__(self, hidden_size, intermediate_size, shards="auto", *,
                 memory_budget=None, accumulate_into_main_grad=False,
                 device=None, dtype=None):
        super().__init__(hidden_size, intermediate_size, shards,
                         memory_budget)
        self.accumulate_into_main_grad = accumulate_into_main_grad
        _add_projections(self, bias=False, device=device, dtype=dtype)

    def forward(self, x):
        weights = (self.gate_proj.weight, self.up_proj.weight,
                   self.down_proj.weight)
        if self.accumulate_into_main_grad:
            _prepare_main_grads(self, weights)
        return self._mlp(x, *weights,
                         main_grad=self.accumulate_into_main_grad)


class TiledFusedSwiGLUMLP(_TiledMLP):
    """TiledSwiGLUMLP of a fused gate_up_proj [2I, H] (Phi-3's, GLM-4's:
    its gate rows, then its up rows): the two row blocks are contiguous
    views of the one weight, so the tiled step reads them in place and
    autograd adds their gradients into the weight's. (The backward's two
    [2I, H] slice gradients are summed in the weight's dtype; under
    accumulate_into_main_grad the views have no main_grad: refused.)"""

    def __init__(self, hidden_size, intermediate_size, shards="auto", *,
                 memory_budget=None, device=None, dtype=None):
        super().__init__(hidden_size, intermediate_size, shards,
                         memory_budget)
        _add_projections(self, ("gate_up_proj",), 2, bias=False,
                         device=device, dtype=dtype)

    def forward(self, x):
        gate_up = self.gate_up_proj.weight
        inter = self.intermediate_size
        return self._mlp(x, gate_up[:inter], gate_up[inter:],
                         self.down_proj.weight)


class GroupedSwiGLUMLP(nn.Module):
    """The experts of a mixture-of-experts layer as one grouped SwiGLU MLP
    (tile::ops::GroupedSwiGLUMLP): forward(x, m_splits) takes the tokens
    x [T, H] already grouped by expert, m_splits[e] rows for expert e
    (TransformerEngine's GroupedLinear convention; splits may be 0; a list
    or a CPU tensor costs nothing, a CUDA tensor one wait for the GPU).

    The parameters are Hugging Face's MoE experts' (Qwen3-MoE and others):
    ``gate_up_proj`` [E, 2I, H] (each expert's gate rows, then its up rows)
    and ``down_proj`` [E, H, I], so their state dicts load unchanged. With
    accumulate_into_main_grad each carries one fp32 ``main_grad`` [E, …]
    that the backward adds to (an expert without tokens adds nothing).
    `shards` and `memory_budget` sequence-tile the tokens as in
    TiledSwiGLUMLP; recompute=False keeps [T, 3I] from the forward to the
    backward instead (the untiled step: no GEMM recomputed, one shard)."""

    def __init__(self, num_experts, hidden_size, intermediate_size, *,
                 shards="auto", memory_budget=None,
                 accumulate_into_main_grad=False, recompute=True, device=None,
                 dtype=None):
        super().__init__()
        _check_shards(shards)
        if not isinstance(recompute, bool):
            raise TypeError(f"recompute must be a bool, got {recompute!r}")
        if not recompute and shards not in ("auto", 1):
            raise ValueError(f"recompute=False keeps every row in one shard; "
                             f"shards must be 'auto' or 1, got {shards!r}")
        self.recompute = recompute
        if num_experts < 1:
            raise ValueError(f"num_experts must be ≥ 1, got {num_experts}")
        self.num_experts = num_experts
        self.hidden_size = hidden_size
        self.intermediate_size = intermediate_size
        self.shards = shards
        self.memory_budget = memory_budget
        self.accumulate_into_main_grad = accumulate_into_main_grad
        factory = {"device": device, "dtype": dtype}
        self.gate_up_proj = nn.Parameter(torch.empty(
            num_experts, 2 * intermediate_size, hidden_size, **factory))
        self.down_proj = nn.Parameter(torch.empty(
            num_experts, hidden_size, intermediate_size, **factory))
        self.reset_parameters()

    def reset_parameters(self):
        # nn.Linear's default, per expert: U(±1/sqrt(fan_in)).
        with torch.no_grad():
            bound = self.hidden_size ** -0.5
            self.gate_up_proj.uniform_(-bound, bound)
            bound = self.intermediate_size ** -0.5
            self.down_proj.uniform_(-bound, bound)

    def forward(self, x, m_splits):
        return ops.grouped_swiglu_mlp(
            x.contiguous(), self.gate_up_proj, self.down_proj, m_splits,
            **self._step_options())

    def _step_options(self):
        """The step's keyword arguments (main_grad prepared where used)."""
        if self.accumulate_into_main_grad:
            _prepare_main_grads(self, (self.gate_up_proj, self.down_proj))
        return dict(shards=0 if self.shards == "auto" else self.shards,
                    memory_budget=self.memory_budget,
                    main_grad=self.accumulate_into_main_grad,
                    recompute=self.recompute)

    def extra_repr(self):
        return (f"{self.num_experts}, {self.hidden_size}, "
                f"{self.intermediate_size}, shards={self.shards!r}"
                + ("" if self.recompute else ", recompute=False"))


class MoEExperts(GroupedSwiGLUMLP):
    """A mixture-of-experts layer's SwiGLU experts as Hugging Face's MoE
    blocks call them: forward(hidden_states [T, H], top_k_index [T, K],
    top_k_weights [T, K]) -> [T, H], the routing weights applied
    (tile.ops.moe_experts: tokens gathered by expert on the device, one
    grouped MLP step, results scattered back; no host synchronization).
    Parameters gate_up_proj [E, 2I, H] and down_proj [E, H, I] as Hugging
    Face's experts hold them. recompute=False by default: the untiled
    step, which keeps [T*K, 3I] as PyTorch's implementations do."""

    def __init__(self, num_experts, hidden_size, intermediate_size, *,
                 recompute=False, **kwargs):
        super().__init__(num_experts, hidden_size, intermediate_size,
                         recompute=recompute, **kwargs)

    def forward(self, hidden_states, top_k_index, top_k_weights):
        return ops.moe_experts(
            hidden_states.contiguous(), top_k_index, top_k_weights,
            self.gate_up_proj, self.down_proj, **self._step_options())


# The modules with accumulate_into_main_grad (attach_main_grads).
_MAIN_GRAD_MODULES = (RMSNorm, GatedMLP, TiledSwiGLUMLP, GroupedSwiGLUMLP)
