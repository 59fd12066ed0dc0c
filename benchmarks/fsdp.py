#!/usr/bin/env python3
"""The ms-swift experiment under PyTorch's FSDP2: a training step of Llama
decoder layers (hidden 4096, intermediate 12288, 32 heads, 8 KV heads, SDPA
attention), bf16, batch 1, each layer and the stack fully_shard-ed, with
the MLP as it is ("regular"), Tile's tiled MLP
(tile.transformers.apply_tile(model, rms_norm=False, tiled_mlp=True)) or
Liger's (LigerTiledSwiGLUMLP; carry its pure-Python wheel). Only the MLP
differs between the columns.

    torchrun --nproc-per-node=2 benchmarks/fsdp.py
        [--sequences 2048,8192,16384,32768,65536,131072]
        [--columns regular,tile-tiled,liger-tiled] [--layers 2]
        [--steps 3] [--json out.json]

Per column and sequence: the step's time (median over --steps after two
warm-up steps; every rank's step ends in FSDP2's reduce-scatter, so rank 0's
time is the step's) and the peak memory per GPU (the largest rank's
torch.cuda.max_memory_allocated over one step, less what was allocated
before the column's model was made). One step: forward of the stack from
random input embeddings, backward from a random output gradient (no LM
head: its [S, vocab] logits are not what the tiled MLPs change).
"""

import functools
import os

import torch
import torch.distributed as dist

import results
import timing
from llama import HIDDEN, llama_layers, parse_options

INTER = 12288
COLUMNS = ["regular", "tile-tiled", "liger-tiled"]


def with_mlp(model, column, device):
    """`model`'s MLPs as `column` has them: as they are ("regular"), Tile's
    tiled MLP or Liger's (its weights loaded from the regular one's)."""
    config = model.config
    if column == "tile-tiled":
        import tile.transformers
        tile.transformers.apply_tile(model, rms_norm=False, tiled_mlp=True,
                                     rope=False)
    elif column == "liger-tiled":
        from liger_kernel.transformers.tiled_mlp import LigerTiledSwiGLUMLP
        for layer in model.layers:
            tiled = LigerTiledSwiGLUMLP(config).to(device=device,
                                                   dtype=torch.bfloat16)
            tiled.load_state_dict(layer.mlp.state_dict())
            layer.mlp = tiled
    return model


def make_model(layers, sequence, column, device):
    model = with_mlp(llama_layers(INTER, layers, sequence, device), column,
                     device)
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16,
                                  reduce_dtype=torch.float32)
    for layer in model.layers:
        fully_shard(layer, mp_policy=policy)
    fully_shard(model, mp_policy=policy)
    return model


def step(model, x, dy):
    out = model(inputs_embeds=x, use_cache=False).last_hidden_state
    out.backward(dy)
    model.zero_grad(set_to_none=True)


def measure(column, sequence, layers, steps, device, make=make_model,
            step=step):
    """The column's step at `sequence` tokens: its median time and spread,
    and its peak memory per GPU (the largest rank's, less what was
    allocated before `make` made the model)."""
    before = torch.cuda.memory_allocated(device)
    model = make(layers, sequence, column, device)
    gen = torch.Generator(device=device).manual_seed(1 + dist.get_rank())
    x = torch.randn(1, sequence, HIDDEN, device=device, generator=gen,
                    dtype=torch.bfloat16)
    dy = (torch.randn(1, sequence, HIDDEN, device=device, generator=gen)
          * 1e-3).to(torch.bfloat16)
    for _ in range(2):  # load, compile, autotune
        step(model, x, dy)
    torch.cuda.synchronize(device)
    dist.barrier()
    ms, fastest, slowest = timing.step_ms(
        functools.partial(step, model, x, dy), steps, device=device)
    torch.cuda.reset_peak_memory_stats(device)
    step(model, x, dy)
    torch.cuda.synchronize(device)
    peak = torch.tensor([torch.cuda.max_memory_allocated(device) - before],
                        dtype=torch.float64, device=device)
    dist.all_reduce(peak, op=dist.ReduceOp.MAX)
    # An engine that holds buffers and hooks of its own (DeepSpeed's) lets
    # them go first.
    if hasattr(model, "destroy"):
        model.destroy()
    del model, x, dy
    torch.cuda.empty_cache()
    return {"case": column, "column": column, "sequence": sequence, "ms": ms,
            "spread_ms": [fastest, slowest],
            "peak_gib": peak.item() / 2**30}


def main(all_columns=COLUMNS, engine="FSDP2", benchmark="fsdp",
         make=make_model, step=step, default_columns=None):
    """Every column asked for (default `default_columns`, or all) at every
    sequence under `engine` (its name), made by `make` and stepped by
    `step`; the results as `benchmark`'s."""
    options, columns, sequences = parse_options(
        all_columns, "2048,8192,16384,32768,65536,131072", 3,
        default_columns)
    local = int(os.environ.get("LOCAL_RANK", 0))
    torch.cuda.set_device(local)
    device = torch.device("cuda", local)
    dist.init_process_group("nccl", device_id=device)
    rank0 = dist.get_rank() == 0
    if rank0:
        print(f"device: {torch.cuda.get_device_name()} × "
              f"{dist.get_world_size()}, torch {torch.__version__}; {engine}, "
              f"{options.layers} layers (hidden {HIDDEN}, intermediate "
              f"{INTER}), bf16, batch 1, median of {options.steps}")
        print(f"{'column':12} {'seq':>7} {'ms':>9} {'vs regular':>10} "
              f"{'peak GiB':>9} {'vs regular':>10}")
    rows, regular = [], {}
    for sequence in sequences:
        for column in columns:
            try:
                r = measure(column, sequence, options.layers, options.steps,
                            device, make, step)
            except torch.cuda.OutOfMemoryError:
                # Every rank runs out together (the same shapes).
                torch.cuda.empty_cache()
                rows.append({"case": column, "column": column,
                             "sequence": sequence, "oom": True, "ms": None})
                if rank0:
                    print(f"{column:12} {sequence:7d}  out of memory")
                continue
            rows.append(r)
            if column == "regular":
                regular[sequence] = r
            base = regular.get(sequence)
            if rank0:
                ratio = (f"{r['ms'] / base['ms']:9.2f}x "
                         f"{r['peak_gib']:9.2f} "
                         f"{r['peak_gib'] / base['peak_gib']:9.2f}x"
                         if base else f"{'':10} {r['peak_gib']:9.2f}")
                print(f"{column:12} {sequence:7d} {r['ms']:9.1f} {ratio}",
                      flush=True)
    if rank0 and options.json:
        results.write(options.json, benchmark, rows,
                      dict(vars(options), ranks=dist.get_world_size(),
                           torch=torch.__version__))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
