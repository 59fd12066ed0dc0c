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
  unreduced copy on every rank.
"""

import torch
import torch.distributed as dist

__all__ = ["main_grad_comm_hook"]


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
