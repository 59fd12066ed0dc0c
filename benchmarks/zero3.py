#!/usr/bin/env python3
"""The ms-swift seed's DeepSpeed ZeRO-3 experiment (issue 64): fsdp.py's
step of Llama decoder layers (hidden 4096, intermediate 12288, bf16, batch
1) under DeepSpeed ZeRO-3 instead of FSDP2 (bf16 with DeepSpeed's fp32
master weights; an SGD of learning rate 0, so that every step computes the
same), with the MLP as it is ("regular"), Tile's tiled MLP, Liger's, or
DeepSpeed's own TiledMLP (deepspeed.runtime.sequence_parallel.ulysses_sp;
ceil(S / hidden) shards agreed over the ranks, as its docstring's Llama
example has it). Carry Liger's and DeepSpeed's pure-Python wheels.

    torchrun --nproc-per-node=2 benchmarks/zero3.py
        [--sequences 2048,8192,16384,32768,65536,131072]
        [--columns regular,tile-tiled,deepspeed-tiled[,liger-tiled]]
        [--layers 2] [--steps 3] [--json out.json]

A step: the forward from random input embeddings, engine.backward of
Σ out·dy (whose gradient is dy, a random output gradient; no LM head; the
product is an [S, hidden] temporary fsdp.py's out.backward(dy) does not
make) and engine.step. Time and peak memory per GPU as fsdp.py measures
them.
"""

import math
import types

import torch
import torch.distributed as dist

import fsdp
from llama import llama_layers

COLUMNS = [*fsdp.COLUMNS, "deepspeed-tiled"]
# Liger's tiled MLP (0.8.5) stops a ZeRO-3 step (docs/Distributed.md): a
# column asked for by name only.
DEFAULT_COLUMNS = ["regular", "tile-tiled", "deepspeed-tiled"]


def _mlp(module, x):
    return module.down_proj(module.act_fn(module.gate_proj(x)) *
                            module.up_proj(x))


def _deepspeed_tiled_forward(module, x):
    from deepspeed.runtime.sequence_parallel.ulysses_sp import TiledMLP
    shards = torch.tensor(math.ceil(x.shape[-2] / x.shape[-1]),
                          device=x.device)
    # Every rank the same count, or ZeRO-3's gathers would deadlock.
    dist.all_reduce(shards, op=dist.ReduceOp.MAX)
    params = [module.down_proj.weight, module.gate_proj.weight,
              module.up_proj.weight]
    return TiledMLP.apply(_mlp, module, x, int(shards.item()), params)


def make_engine(layers, sequence, column, device):
    import deepspeed
    model = llama_layers(fsdp.INTER, layers, sequence, device)
    if column == "deepspeed-tiled":
        for layer in model.layers:
            layer.mlp.forward = types.MethodType(_deepspeed_tiled_forward,
                                                 layer.mlp)
    else:
        model = fsdp.with_mlp(model, column, device)
    config = {"train_micro_batch_size_per_gpu": 1,
              "bf16": {"enabled": True},
              "zero_optimization": {"stage": 3},
              "zero_allow_untested_optimizer": True}
    engine, *_ = deepspeed.initialize(
        model=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.0),
        config=config)
    return engine


def engine_step(engine, x, dy):
    out = engine(inputs_embeds=x, use_cache=False).last_hidden_state
    engine.backward((out * dy).sum())
    engine.step()


if __name__ == "__main__":
    fsdp.main(COLUMNS, "DeepSpeed ZeRO-3", "zero3", make_engine, engine_step,
              DEFAULT_COLUMNS)
