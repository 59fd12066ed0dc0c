"""What the MLP's operands and options must be (dense, grouped, the
splits, shards and budget), checked before anything runs: a wrong call
gets a message that says what is wrong."""

import torch

from .autograd import GPU_DTYPE_NAMES


def check_operands(named):
    """The rules every MLP operand follows: a tensor of the GPU's dtypes
    (float64 too on the CPU), x's dtype and device, contiguous. `named` is
    ((name, tensor), ...) with x first."""
    for name, t in named:
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a tensor, got "
                            f"{type(t).__name__}")
    x = named[0][1]
    allowed = set(GPU_DTYPE_NAMES)
    if x.device.type == "cpu":
        allowed.add(torch.float64)
    for name, t in named:
        if t.dtype not in allowed:
            raise TypeError(
                f"{name} has dtype {t.dtype}; the MLP runs in bfloat16, "
                "float16 or float32 (float64 on the CPU)")
        if t.dtype != x.dtype:
            raise TypeError(f"{name} is {t.dtype} but x is {x.dtype}")
        if t.device != x.device:
            raise ValueError(f"{name} is on {t.device} but x is on "
                             f"{x.device}")
        if t.device.type not in ("cpu", "cuda", "meta"):
            raise ValueError(f"{name} is on {t.device}; Tile runs on CUDA "
                             "devices and on the CPU")
        if not t.is_contiguous():
            raise ValueError(f"{name} is not contiguous (strides "
                             f"{tuple(t.stride())}); call .contiguous()")


def check_dense(x, gate, up, down):
    check_operands((("x", x), ("gate", gate), ("up", up), ("down", down)))
    if x.dim() == 0:
        raise ValueError("x must be [..., H], not a 0-d tensor")
    hidden = x.shape[-1]
    if gate.dim() != 2 or gate.shape[1] != hidden:
        raise ValueError(f"gate must be [I, H] = [I, {hidden}], got "
                         f"{list(gate.shape)}")
    inter = gate.shape[0]
    if hidden == 0 or inter == 0:
        raise ValueError(f"the MLP needs H > 0 and I > 0, got H = {hidden}, "
                         f"I = {inter}")
    if list(up.shape) != [inter, hidden]:
        raise ValueError(f"up must be [I, H] = {[inter, hidden]} like gate, "
                         f"got {list(up.shape)}")
    if list(down.shape) != [hidden, inter]:
        raise ValueError(f"down must be [H, I] = {[hidden, inter]}, got "
                         f"{list(down.shape)}")


def check_grouped(x, gate_up, down):
    check_operands((("x", x), ("gate_up", gate_up), ("down", down)))
    if x.dim() != 2:
        raise ValueError(f"x must be [T, H] (tokens grouped by expert), got "
                         f"{list(x.shape)}")
    hidden = x.shape[1]
    if gate_up.dim() != 3 or gate_up.shape[2] != hidden or \
            gate_up.shape[1] % 2 or gate_up.shape[0] == 0:
        raise ValueError(f"gate_up must be [E, 2I, H] with E ≥ 1 and H = "
                         f"{hidden}, got {list(gate_up.shape)}")
    experts, inter = gate_up.shape[0], gate_up.shape[1] // 2
    if hidden == 0 or inter == 0:
        raise ValueError(f"the MLP needs H > 0 and I > 0, got H = {hidden}, "
                         f"I = {inter}")
    if list(down.shape) != [experts, hidden, inter]:
        raise ValueError(f"down must be [E, H, I] = "
                         f"{[experts, hidden, inter]}, got "
                         f"{list(down.shape)}")


def check_splits(m_splits, experts, x):
    """The splits: a list of ints checked against E and T, or a CUDA tensor
    on x's device (int32 or int64, [E]; its values are checked by the GPU)."""
    tokens = x.shape[0]
    if isinstance(m_splits, torch.Tensor):
        if m_splits.dim() != 1 or m_splits.dtype.is_floating_point or \
                m_splits.dtype.is_complex or m_splits.dtype == torch.bool:
            raise TypeError(f"m_splits must be a 1-D integer tensor, got "
                            f"{m_splits.dtype} {list(m_splits.shape)}")
        if m_splits.device.type != "cpu":
            if m_splits.device != x.device:
                raise ValueError(f"m_splits is on {m_splits.device} but x "
                                 f"on {x.device}")
            if m_splits.shape[0] != experts:
                raise ValueError(f"m_splits has {m_splits.shape[0]} entries "
                                 f"for {experts} experts")
            if m_splits.dtype not in (torch.int32, torch.int64):
                m_splits = m_splits.to(torch.int64)
            return m_splits.contiguous()
        m_splits = m_splits.tolist()
    splits = tuple(m_splits)
    if any(isinstance(s, bool) or not isinstance(s, int) for s in splits):
        raise TypeError(f"m_splits must hold ints, got {list(splits)}")
    if len(splits) != experts:
        raise ValueError(f"m_splits has {len(splits)} entries for {experts} "
                         "experts")
    if any(s < 0 for s in splits):
        raise ValueError(f"m_splits must be ≥ 0, got {list(splits)}")
    if sum(splits) != tokens:
        raise ValueError(f"m_splits add up to {sum(splits)} but x has "
                         f"{tokens} rows")
    return splits


def check_options(shards, memory_budget, recompute):
    """The step's options, as every MLP takes them."""
    if isinstance(shards, bool) or not isinstance(shards, int) or shards < 0:
        raise ValueError(f"shards must be an int ≥ 0 (0: automatic), got "
                         f"{shards!r}")
    if memory_budget is not None and (not isinstance(memory_budget, int) or
                                      memory_budget <= 0):
        raise ValueError(f"memory_budget must be a positive number of "
                         f"bytes, got {memory_budget!r}")
    if not isinstance(recompute, bool):
        raise TypeError(f"recompute must be a bool, got {recompute!r}")
    if not recompute and shards > 1:
        raise ValueError(f"recompute=False keeps every row in one shard; "
                         f"shards must be 0 or 1, got {shards}")
