#!/usr/bin/env python3
"""The MLP of a fused gate_up_proj (Phi-3's, GLM-4's) as apply_tile runs it,
on the GPU machine (docs/Performance.md): one forward + backward of the
module, bf16, batch 1, GPU ms behind a sleep of 6.4e6 cycles (about 4 ms),
and the peak memory above the inputs and weights.

Columns:
  hf          the model's own Phi3MLP (eager: gate_up_proj, chunk, SiLU, mul,
              down_proj)
  liger       Liger's LigerPhi3SwiGLUMLP (what apply_liger_kernel_to_phi3
              puts there; not tiled)
  tile        tile.nn.FusedSwiGLUMLP (what apply_tile puts there by default)
  tile-fused  tile.nn.TiledFusedSwiGLUMLP (apply_tile(tiled_mlp=True)): the
              tiled step reading the gate and up halves of gate_up_proj in
              place
  tile-split  tile.nn.TiledSwiGLUMLP of the same weights copied into gate_proj
              and up_proj: what the fused layout costs next to the split one

Shapes: Phi-3-mini (H 3072, I 8192) and GLM-4-9B (H 4096, I 13696).

    python3 benchmarks/fused_mlp.py [--sequences 8192,32768] [--json f]
"""

import argparse

import torch

import results
import tile.nn
import timing

# model -> (hidden, intermediate).
SHAPES = {"phi3-mini": (3072, 8192), "glm4-9b": (4096, 13696)}


def modules(hidden, inter):
    """name -> module, all holding the same bf16 weights."""
    from transformers import Phi3Config
    from transformers.models.phi3.modeling_phi3 import Phi3MLP
    config = Phi3Config(hidden_size=hidden, intermediate_size=inter,
                        hidden_act="silu")
    torch.manual_seed(0)
    hf = Phi3MLP(config).to("cuda", torch.bfloat16)
    default = tile.nn.FusedSwiGLUMLP(hidden, inter, device="cuda",
                                     dtype=torch.bfloat16)
    fused = tile.nn.TiledFusedSwiGLUMLP(hidden, inter, device="cuda",
                                        dtype=torch.bfloat16)
    split = tile.nn.TiledSwiGLUMLP(hidden, inter, device="cuda",
                                   dtype=torch.bfloat16)
    found = {"hf": hf, "tile": default, "tile-fused": fused,
             "tile-split": split}
    try:
        from liger_kernel.transformers.swiglu import LigerPhi3SwiGLUMLP
        found["liger"] = LigerPhi3SwiGLUMLP(config).to("cuda", torch.bfloat16)
    except ImportError:
        pass
    gate_up, down = hf.gate_up_proj.weight, hf.down_proj.weight
    with torch.no_grad():
        for name, module in found.items():
            if name == "tile-split":
                module.gate_proj.weight.copy_(gate_up[:inter])
                module.up_proj.weight.copy_(gate_up[inter:])
            elif name != "hf":
                module.gate_up_proj.weight.copy_(gate_up)
            module.down_proj.weight.copy_(down)
    return found


def step_row(name, module, x, dy):
    """One module's forward + backward at x: GPU ms, peak GiB above what
    was allocated before, and the output's largest difference from the
    first call's (the same weights give one answer)."""
    def step(_):
        x.grad = None
        for p in module.parameters():
            p.grad = None
        module(x).backward(dy)
    step(0)
    torch.cuda.synchronize()
    for p in module.parameters():
        p.grad = None
    x.grad = None
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    step(0)
    torch.cuda.synchronize()
    peak = (torch.cuda.max_memory_allocated() - before) / 2**30
    ms = timing.gpu_ms(step, timing.sleep_spacer(6.4e6), iterations=10,
                       warmup=2)
    with torch.no_grad():
        out = module(x).float()
    return {"case": name, "impl": name, "ms": ms, "peak_gib": peak,
            "out": out}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default=",".join(SHAPES))
    parser.add_argument("--sequences", default="8192,32768")
    parser.add_argument("--json")
    options = parser.parse_args()
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__};"
          f" bf16 forward + backward, GPU ms behind a sleep, peak GiB above "
          f"the inputs, largest |out - hf's| over max |hf's|")
    print(f"{'model':10} {'tokens':>6} {'impl':11} {'ms':>8} {'peak GiB':>9} "
          f"{'vs hf':>8}")
    rows = []
    for model in options.models.split(","):
        hidden, inter = SHAPES[model]
        found = modules(hidden, inter)
        for seq in map(int, options.sequences.split(",")):
            g = torch.Generator("cuda").manual_seed(seq)
            x = torch.randn(1, seq, hidden, device="cuda", generator=g,
                            dtype=torch.bfloat16).requires_grad_(True)
            dy = torch.randn(1, seq, hidden, device="cuda", generator=g,
                             dtype=torch.bfloat16) * 0.01
            reference = None
            for name, module in found.items():
                row = step_row(name, module, x, dy)
                out = row.pop("out")
                if reference is None:
                    reference = out
                row["vs_hf"] = ((out - reference).abs().max()
                                / reference.abs().max()).item()
                row.update(model=model, tokens=seq, hidden=hidden,
                           intermediate=inter)
                rows.append(row)
                print(f"{model:10} {seq:6d} {name:11} {row['ms']:8.2f} "
                      f"{row['peak_gib']:9.2f} {row['vs_hf']:8.1e}",
                      flush=True)
            del x, dy
        del found
        torch.cuda.empty_cache()
    if options.json:
        results.write(options.json, "fused_mlp", rows,
                      dict(vars(options), shapes=SHAPES, dtype="bf16",
                           torch=torch.__version__))


if __name__ == "__main__":
    main()
