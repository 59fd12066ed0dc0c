#!/usr/bin/env python3
"""A whole causal-LM training step as users run it: Hugging Face
LlamaForCausalLM at Llama 3 8B's shapes (hidden 4096, intermediate 14336,
32 heads, 8 KV heads, vocabulary 128256), --layers decoder layers (2),
bf16, batch 1, SDPA attention:

    loss = model(input_ids, labels=input_ids).loss; loss.backward()

LM head and loss included. Columns, each in a process of its own (its peak
memory its own; Liger patches Llama's classes for the process):
- unpatched: the model as Hugging Face gives it;
- tile: tile.transformers.apply_tile(model), its defaults (RMSNorm, MLP,
  RoPE, and the LM head with the loss in chunks: linear_cross_entropy);
- liger: apply_liger_kernel_to_llama(model=model), Liger's defaults (its
  fused linear cross-entropy);
- liger-ce: the same with its cross-entropy kernel instead
  (cross_entropy=True, fused_linear_cross_entropy=False).

Each cell: tokens per second over --steps steps after --warmup (wall clock,
the host included: nothing hides it in a training loop either), the peak
memory torch allocated during the timed steps, the loss of the first step
(the columns must agree), and where the GPU's time goes in one more step
(torch.profiler's kernel time by kind: GEMMs, attention, the loss...).
--runs repeats every cell (in fresh processes) and the table gives each
run. A cell that runs out of memory
says OOM. Carry Liger's wheel (benchmarks/README.md); --without-liger
leaves its columns out.

    python3 benchmarks/causal_lm.py [--tokens 4096,16384,65536]
        [--columns unpatched,tile,liger,liger-ce] [--runs 2] [--json F]
"""

import argparse
import json
import subprocess
import sys
import time

COLUMNS = ["unpatched", "tile", "liger", "liger-ce"]
VOCAB = 128256


def model(layers, tokens):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    config = LlamaConfig(
        hidden_size=4096, intermediate_size=14336, num_attention_heads=32,
        num_key_value_heads=8, num_hidden_layers=layers, vocab_size=VOCAB,
        max_position_embeddings=max(tokens, 8192), rope_theta=500000.0,
        rms_norm_eps=1e-5, attn_implementation="sdpa")
    torch.manual_seed(0)
    with torch.device("cuda"):
        m = LlamaForCausalLM(config).to(torch.bfloat16)
    m.train()
    return m


def patch(m, column):
    if column == "tile":
        import tile.transformers
        tile.transformers.apply_tile(m)
    elif column.startswith("liger"):
        from liger_kernel.transformers import apply_liger_kernel_to_llama
        fused = column == "liger"
        apply_liger_kernel_to_llama(
            rope=True, rms_norm=True, swiglu=True, cross_entropy=not fused,
            fused_linear_cross_entropy=fused, model=m)
    return m


# First match wins (e2e.py's kinds, and the loss's).
KINDS = [("loss", ("cross_entropy", "softcap", "nll", "softmax",
                   "logsumexp", "element_mul")),
         ("attention", ("flash", "fmha", "attention", "sdpa")),
         ("gemm", ("gemm", "nvjet", "cutlass", "xmma", "sm90_", "cublas")),
         ("norm", ("rms_norm", "rmsnorm", "rsqrt")),
         ("activation", ("swiglu", "silu", "geglu")),
         ("rope", ("rope", "rotary"))]


def breakdown(step):
    """ms of GPU kernel time by kind in one step (torch.profiler)."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    kinds = {kind: 0.0 for kind, _ in KINDS}
    kinds["other"] = 0.0
    for event in prof.events():
        if event.device_type != torch.autograd.DeviceType.CUDA:
            continue
        lowered = event.name.lower()
        kind = next((k for k, keys in KINDS
                     if any(key in lowered for key in keys)), "other")
        kinds[kind] += event.device_time / 1e3
    return kinds


def worker(column, tokens, layers, steps, warmup):
    """One cell, in this process: prints its result as a JSON line."""
    import torch
    m = patch(model(layers, tokens), column)
    g = torch.Generator("cuda").manual_seed(tokens)
    ids = torch.randint(0, VOCAB, (1, tokens), device="cuda", generator=g)
    losses = []

    def step():
        loss = m(input_ids=ids, labels=ids, use_cache=False).loss
        loss.backward()
        for p in m.parameters():
            p.grad = None
        return loss.detach()

    try:
        for _ in range(warmup):
            losses.append(step())
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        start = time.perf_counter()
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
        seconds = (time.perf_counter() - start) / steps
    except torch.OutOfMemoryError:
        print(json.dumps({"oom": True}))
        return
    peak = torch.cuda.max_memory_allocated() / 2**30
    print(json.dumps({
        "tokens_per_s": tokens / seconds, "ms": seconds * 1e3,
        "peak_gib": peak, "loss": losses[0].item() if losses else None,
        "kernel_ms": breakdown(step)}))


def run_cell(column, tokens, options):
    command = [sys.executable, __file__, "--worker", column,
               "--tokens", str(tokens), "--layers", str(options.layers),
               "--steps", str(options.steps), "--warmup",
               str(options.warmup)]
    out = subprocess.run(command, capture_output=True, text=True)
    lines = [line for line in out.stdout.splitlines()
             if line.startswith("{")]
    if out.returncode != 0 or not lines:
        tail = (out.stderr or out.stdout).strip().splitlines()[-5:]
        raise SystemExit(f"{column} at {tokens} tokens failed:\n"
                         + "\n".join(tail))
    return json.loads(lines[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", default="4096,16384,65536")
    parser.add_argument("--columns", default=",".join(COLUMNS))
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--without-liger", action="store_true")
    parser.add_argument("--worker")
    parser.add_argument("--json")
    options = parser.parse_args()
    if options.worker:
        worker(options.worker, int(options.tokens), options.layers,
               options.steps, options.warmup)
        return
    columns = options.columns.split(",")
    for column in columns:
        if column not in COLUMNS:
            parser.error(f"unknown column {column}: {', '.join(COLUMNS)}")
    if any(c.startswith("liger") for c in columns):
        import peers
        if peers.liger(required=not options.without_liger) is None:
            columns = [c for c in columns if not c.startswith("liger")]
    import torch
    print(f"device: {torch.cuda.get_device_name()}, torch "
          f"{torch.__version__}; LlamaForCausalLM, Llama 3 8B shapes, "
          f"{options.layers} layers, bf16, batch 1; tokens/s over "
          f"{options.steps} steps (wall clock), peak GiB")
    print(f"{'column':10} {'tokens':>6} {'run':>3} {'k tok/s':>8} "
          f"{'ms':>8} {'peak GiB':>8} {'loss':>8}", flush=True)
    rows = []
    for tokens in map(int, options.tokens.split(",")):
        for run in range(options.runs):
            for column in columns:
                cell = run_cell(column, tokens, options)
                rows.append(dict(cell, case=f"{column} {tokens} run{run}",
                                 column=column, tokens=tokens, run=run))
                if cell.get("oom"):
                    print(f"{column:10} {tokens:6d} {run:3d}      OOM",
                          flush=True)
                    continue
                kinds = " ".join(f"{k} {v:.1f}" for k, v in
                                 cell["kernel_ms"].items())
                print(f"{column:10} {tokens:6d} {run:3d} "
                      f"{cell['tokens_per_s'] / 1e3:8.1f} {cell['ms']:8.1f} "
                      f"{cell['peak_gib']:8.2f} {cell['loss']:8.4f}  "
                      f"kernel ms: {kinds}", flush=True)
    if options.json:
        import results
        results.write(options.json, "causal_lm", rows,
                      dict(vars(options), vocab=VOCAB, dtype="bf16",
                           torch=torch.__version__))


if __name__ == "__main__":
    main()
