"""Tile's modules inside PyTorch's distributed engines.

FSDP2 (``fully_shard``) and DDP need nothing from Tile: a tile.nn module's
parameters are ordinary ``nn.Parameter``s, its forward sees the gathered
(unsharded) parameters FSDP2 puts in place, and its backward hands autograd
ordinary gradients for FSDP2 to reduce-scatter or for DDP's buckets to
all-reduce. Kernels run on the tensors' device (``cuda:<local_rank>``) and
leave the caller's current device as it was; each rank compiles a kernel
once per device kind, through the on-disk cache the ranks share (entries
are written to a temporary file and renamed, so a rank never reads half of
another's).

The one thing these engines cannot do alone is the main_grad contract
(``accumulate_into_main_grad=True``): the weight gradient is already in the
fp32 ``param.main_grad`` and autograd gets None, so there is nothing in
``.grad`` for them to reduce.

- Megatron-LM's DDP (main_grad views of its fp32 grad buffer, a hook on
  each parameter's gradient accumulator) works unchanged: the hooks fire,
  see ``grad_added_to_main_grad`` and add nothing; its buckets reduce the
  buffer main_grad lives in.
- torch's DDP: register ``main_grad_comm_hook`` (below), which all-reduces
  (averages) main_grad in fp32 when DDP reduces the bucket, i.e. on the
  synchronizing micro-batch (not under ``no_sync()``), as Megatron does.
- FSDP2: leave main_grad off. FSDP2 keeps sharded gradients of its own,
  in the sharded (master) parameter's dtype, reduced in
  ``MixedPrecisionPolicy(reduce_dtype=torch.float32)``: that is the fp32
  accumulation main_grad gives DDP. A main_grad under FSDP2 would be a full,
  unreduced copy on every rank, and the sharded parameter would get no
  gradient, so a module with main_grad under fully_shard raises at its
  first forward (refuse_unreduced_main_grad), as one under torch's DDP
  without main_grad_comm_hook does.

This module sits low in the package (only the C layer and autograd below
it): tile.nn's forwards call its check.
"""

import functools
import weakref

import torch
import torch.distributed as dist

from .custom_ops import runs_each_call

__all__ = ["main_grad_comm_hook", "refuse_unreduced_main_grad",
           "refuse_ddp_without_hook"]


def _uses_main_grad(param):
    return getattr(param, "grad_added_to_main_grad", False) and \
        getattr(param, "main_grad", None) is not None


def main_grad_comm_hook(process_group, bucket):
    """DDP's communication hook for models with main_grad parameters::

        ddp = DistributedDataParallel(model, gradient_as_bucket_view=True)
        ddp.register_comm_hook(None, tile.distributed.main_grad_comm_hook)

    For each parameter of the bucket whose gradient went into main_grad
    (``grad_added_to_main_grad``), main_grad is averaged over the group in
    place, in its own dtype (fp32). The bucket's buffer (the ordinary
    gradients) is averaged as DDP's default hook does, unless every
    parameter in it is a main_grad one: then its slots hold nothing (DDP
    fills them with zeros, and gives those parameters a zero ``.grad``;
    ``gradient_as_bucket_view=True`` makes that a view, not a copy).
    `process_group` None is the default group."""
    group = process_group if process_group is not None \
        else dist.group.WORLD
    world = dist.get_world_size(group)
    params = bucket.parameters()
    main = [p.main_grad for p in params if _uses_main_grad(p)]
    # The future returned must be the last collective's own: with NCCL it is
    # CUDA-aware, so DDP's wait orders its stream after the reduction (a
    # torch.futures.collect_all of NCCL futures is not, and DDP then read
    # the buffer before the all-reduce had run: measured on two H200s).
    # NCCL runs one group's collectives in the order they are issued, on one
    # stream, so the last one's completion covers the others; other
    # backends (gloo) give no such order, so their main_grad reductions
    # run synchronously.
    in_order = dist.get_backend(group) == "nccl"
    last = None
    for grad in main:
        grad.div_(world)
        work = dist.all_reduce(grad, group=group, async_op=in_order)
        if in_order:
            last = work.get_future()
    buffer = bucket.buffer()
    if len(main) < len(params):
        buffer.div_(world)
        last = dist.all_reduce(buffer, group=group,
                               async_op=True).get_future()
    if last is None:
        done = torch.futures.Future()
        done.set_result(buffer)
        return done
    return last.then(lambda _: buffer)


# -- engines that would leave a main_grad wrong ------------------------------

def _composable_states():
    """FSDP2's record of where fully_shard was applied: the map from module
    to state in torch.distributed._composable_state (present since torch
    2.2). FSDP2 keeps no public registry, and this is the one place that
    knows; where it is missing the check cannot be made, and says so
    rather than pass."""
    try:
        from torch.distributed import _composable_state
        return _composable_state._module_state_mapping
    except (ImportError, AttributeError) as error:
        raise RuntimeError(
            "tile: cannot tell whether FSDP2 shards this module (this "
            f"PyTorch has no FSDP2 state map: {error}); the main_grad "
            "contract needs that check") from error


# module -> the count of composable states when it was last found outside
# every fully_shard: a new fully_shard anywhere invalidates it, and the
# forward's check costs a dictionary lookup until then.
_OUTSIDE_FSDP2 = weakref.WeakKeyDictionary()


@functools.cache
def _fsdp_module_class():
    """FSDP2's module class, looked up once (the check runs in every
    main_grad forward), or None without FSDP2."""
    if not dist.is_available():
        return None
    try:
        from torch.distributed.fsdp import FSDPModule
    except ImportError:  # before torch 2.6: no public FSDP2 module class
        try:
            from torch.distributed._composable.fsdp import FSDPModule
        except ImportError:  # no FSDP2 at all
            return None
    return FSDPModule


def _fully_shard_root(module):
    """The fully_shard-ed module `module` is (or is under), or None."""
    fsdp_module = _fsdp_module_class()
    if fsdp_module is None:
        return None
    states = _composable_states()
    count = len(states)
    if _OUTSIDE_FSDP2.get(module) == count:
        return None
    for root in list(states.keys()):
        if isinstance(root, fsdp_module) and \
                any(m is module for m in root.modules()):
            return root
    _OUTSIDE_FSDP2[module] = count
    return None


def _has_main_grad_hook(ddp):
    return any(hook is main_grad_comm_hook
               for hook, _ in getattr(ddp, "_comm_hooks", ()))


def refuse_ddp_without_hook(model):
    """Raises where `model` is torch's DistributedDataParallel without
    main_grad_comm_hook: the check the forward makes eagerly, for a
    compiled step (whose traced forward makes none), made by
    attach_main_grads(ddp)."""
    if not dist.is_available():
        return
    from torch.nn.parallel import DistributedDataParallel
    if isinstance(model, DistributedDataParallel) and \
            not _has_main_grad_hook(model):
        raise RuntimeError(
            "tile: a model with accumulate_into_main_grad=True modules is "
            "wrapped in torch's DistributedDataParallel without "
            "tile.distributed.main_grad_comm_hook: each rank's main_grad "
            "would stay unreduced. Register it first: "
            "ddp.register_comm_hook(None, "
            "tile.distributed.main_grad_comm_hook)")


def _active_ddp():
    """The torch DistributedDataParallel whose forward is running, or
    None (DDP records it for TorchDynamo; not with its Python reducer,
    which compiled autograd uses)."""
    if not dist.is_available():
        return None
    from torch.nn.parallel import DistributedDataParallel
    return DistributedDataParallel._get_active_ddp_module()


def _first_parameter_name(module):
    return next((name for name, _ in module.named_parameters()), "?")


def _named(module):
    return (f"{type(module).__name__} (parameter "
            f"'{_first_parameter_name(module)}')")


def _under_deepspeed_zero(module):
    """Whether DeepSpeed's ZeRO manages `module`'s parameters (its own or
    its children's: an MLP's weights live in its projections): stage 3
    partitions them (each gets a ds_id); stages 1 and 2 and the bf16
    optimizer map them to their fp32 partitions (each gets _hp_mapping),
    and stages 1 and 2 hook them (grad_accum, param_idx_in_group). Read
    from the parameters: no import of deepspeed. DeepSpeed without ZeRO
    (stage 0: the engine reduces .grad itself) is not detected."""
    for p in module.parameters():
        if hasattr(p, "ds_id") or hasattr(p, "_hp_mapping") or (
                hasattr(p, "grad_accum") and
                hasattr(p, "param_idx_in_group")):
            return True
    return False


def refuse_unreduced_main_grad(module):
    """Raises where `module`, a tile.nn module with
    accumulate_into_main_grad=True, runs under an engine that would leave
    its main_grad wrong without a word:

    - FSDP2 (fully_shard on it or on a module above it): each rank's
      main_grad would hold the full, unreduced gradient of its own
      micro-batch, and the sharded parameter FSDP2 reduces and steps would
      get none;
    - torch's DDP without main_grad_comm_hook: DDP reduces the zero .grad,
      and each rank's main_grad keeps its own gradient;
    - DeepSpeed's ZeRO (any stage): it reduces and partitions .grad, which
      the contract leaves None.

    Megatron-LM's DDP (not torch's) reduces the buffer main_grad lives in,
    and passes. Called from the forward, eagerly; while torch.compile
    traces, attach_main_grads (which a compiled main_grad step needs
    first) has made the FSDP2 check."""
    if not runs_each_call():
        return
    if _under_deepspeed_zero(module):
        raise RuntimeError(
            f"tile: {_named(module)} has accumulate_into_main_grad=True "
            "under DeepSpeed's ZeRO, which reduces and partitions each "
            "parameter's .grad (its hooks read .grad, which the main_grad "
            "contract leaves None): main_grad would be each rank's own, "
            "unreduced gradient, and DeepSpeed would get none. Build it "
            "with accumulate_into_main_grad=False (apply_tile(model, "
            "accumulate_into_main_grad=False)); DeepSpeed keeps fp32 "
            "gradients itself (\"data_types\": {\"grad_accum_dtype\": "
            "\"fp32\"} in its config)")
    root = _fully_shard_root(module)
    ddp = _active_ddp() if root is None else None
    if root is None and (ddp is None or _has_main_grad_hook(ddp)):
        return
    what = _named(module)
    if root is not None:
        raise RuntimeError(
            f"tile: {what} has accumulate_into_main_grad=True under FSDP2 "
            f"(fully_shard on {type(root).__name__}). FSDP2 reduce-scatters "
            ".grad into each rank's shard; main_grad would be a full, "
            "unreduced gradient on every rank and the sharded parameter "
            "would get none. Build it with accumulate_into_main_grad=False "
            "(apply_tile(model, accumulate_into_main_grad=False)) and keep "
            "fp32 gradients with fp32 parameters and "
            "MixedPrecisionPolicy(reduce_dtype=torch.float32)")
    raise RuntimeError(
        f"tile: {what} has accumulate_into_main_grad=True under torch's "
        "DistributedDataParallel without tile.distributed."
        "main_grad_comm_hook: DDP would reduce a zero .grad and leave "
        "each rank's main_grad unreduced. Register it before the first "
        "step: ddp.register_comm_hook(None, "
        "tile.distributed.main_grad_comm_hook)")
