#!/usr/bin/env python3
"""RoPE on q and k of Llama-3-8B's attention (32 query heads, 8 KV heads,
head size 128, bf16, batch 1), on the GPU machine (docs/Performance.md);
family glm4: GLM-4-9B's (32 query heads, 2 KV heads, head size 128, the
first 64 columns of each head rotated in interleaved pairs, the rest passed
through), Tile's being what apply_tile puts in GLM-4's place
(tile.transformers.ROPE_LAYOUTS["interleaved"]) and Hugging Face's GLM-4's
own; Liger has no interleaved RoPE.

Columns: tile.ops.rope (the examples/rope.mlir kernel and its derived
backward), Liger's liger_rotary_pos_emb (pure-Python wheel carried),
Hugging Face's apply_rotary_pos_emb eagerly and under torch.compile. q and
k are what the attention hands over: transposed views of [1, S, heads, D].
Each is timed forward alone and forward + backward (torch.autograd.grad of
q and k), as GPU time: a sleep kernel queued before each timed call hides
the host's cost of the call. Every figure is taken behind two sleeps, of
1.6e6 and 6.4e6 cycles (about 1 and 4 ms): the longer one's is reported,
with the ratio short / long, which is 1.00 where the shorter queue already
hid the host (a ratio above 1 shows host cost the shorter one let in; at
4e5 cycles Tile's forward + backward at S = 4096 read 3.3x its GPU time).
GB/s counts q and k read and written once and cos, sin read once per
direction.

    python3 benchmarks/rope.py [--families llama,glm4]
        [--sequences 4096,16384,65536] [--json f]
"""

import argparse

import torch

import results
import tile.transformers
import timing

# family -> (query heads, KV heads, head size, rotated columns of a head).
SHAPES = {"llama": (32, 8, 128, 128), "glm4": (32, 2, 128, 64)}


def inputs(seq, shape):
    """q, k as the attention hands them over and cos, sin [1, S, rotated]
    as the family's rotary embedding makes them (the angles twice)."""
    heads, kv_heads, head_dim, rotated = shape
    g = torch.Generator("cuda").manual_seed(seq)
    q = torch.randn(1, seq, heads, head_dim, device="cuda", generator=g)
    k = torch.randn(1, seq, kv_heads, head_dim, device="cuda", generator=g)
    angle = torch.rand(1, seq, rotated // 2, device="cuda", generator=g)
    cos = torch.cat([angle.cos()] * 2, -1).bfloat16()
    sin = torch.cat([angle.sin()] * 2, -1).bfloat16()
    q, k = (t.bfloat16().transpose(1, 2).requires_grad_(True) for t in (q, k))
    return q, k, cos, sin


def implementations(family):
    if family == "glm4":
        from transformers.models.glm4.modeling_glm4 import \
            apply_rotary_pos_emb
        ours = tile.transformers.ROPE_LAYOUTS["interleaved"]
    else:
        from transformers.models.llama.modeling_llama import \
            apply_rotary_pos_emb
        ours = tile.ops.rope
    impls = {"tile": ours, "hf-eager": apply_rotary_pos_emb,
             "hf-compile": torch.compile(apply_rotary_pos_emb,
                                         dynamic=False)}
    try:
        from liger_kernel.transformers.rope import liger_rotary_pos_emb
        if family == "llama":
            impls["liger"] = liger_rotary_pos_emb
    except ImportError:
        pass
    return impls


def sequence_rows(seq, impls, family):
    """Every implementation at one sequence, printed as it goes: result
    rows. The inputs are freed when it returns."""
    q, k, cos, sin = inputs(seq, SHAPES[family])
    moved = 2 * (q.numel() + k.numel()) * 2 + 2 * cos.numel() * 2
    dq, dk = torch.randn_like(q), torch.randn_like(k)
    rows = []
    for name, rope in impls.items():
        def forward():
            with torch.no_grad():
                rope(q, k, cos, sin)

        def both():
            out = rope(q, k, cos, sin)
            torch.autograd.grad(out, (q, k), (dq, dk))
        row = {}
        for key, call, scale in (("fwd", forward, 1), ("fwd_bwd", both, 2)):
            short, long = (timing.gpu_ms(
                lambda _: call(), timing.sleep_spacer(cycles))
                for cycles in (1.6e6, 6.4e6))
            ms = long
            row[key] = {"case": f"{family} {name} {key}", "impl": name,
                        "family": family,
                        "direction": key, "sequence": seq, "ms": ms,
                        "gbps": scale * moved / ms / 1e6,
                        "short_over_long": short / long}
        rows += row.values()
        f, b = row["fwd"], row["fwd_bwd"]
        print(f"{family:6} {name:11} {seq:6d} {f['ms']:8.3f} {f['gbps']:6.0f} "
              f"{f['short_over_long']:6.2f} {b['ms']:10.3f} "
              f"{b['gbps']:6.0f} {b['short_over_long']:6.2f}", flush=True)
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--families", default=",".join(SHAPES))
    parser.add_argument("--sequences", default="4096,16384,65536")
    parser.add_argument("--json")
    options = parser.parse_args()
    families = options.families.split(",")
    unknown = sorted(set(families) - set(SHAPES))
    if unknown:
        parser.error(f"unknown families {unknown}; known: {sorted(SHAPES)}")
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__};"
          f" bf16; GPU ms behind a sleep of 6.4e6 cycles, ratio = the same "
          f"behind 1.6e6 / that, GB/s")
    rows = []
    for family in families:
        heads, kv_heads, head_dim, rotated = SHAPES[family]
        print(f"\n{family}: q [1, {heads}, S, {head_dim}], k [1, {kv_heads}, "
              f"S, {head_dim}], {rotated} columns of a head rotated")
        print(f"{'family':6} {'impl':11} {'seq':>6} {'fwd ms':>8} {'GB/s':>6} "
              f"{'ratio':>6} {'fwd+bwd ms':>10} {'GB/s':>6} {'ratio':>6}")
        impls = implementations(family)
        for seq in map(int, options.sequences.split(",")):
            rows += sequence_rows(seq, impls, family)
    if options.json:
        results.write(options.json, "rope", rows,
                      dict(vars(options), shapes=SHAPES, dtype="bf16",
                           torch=torch.__version__))


if __name__ == "__main__":
    main()
