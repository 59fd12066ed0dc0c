#!/usr/bin/env python3
"""A whole causal-LM training step as users run it, bf16, batch 1, SDPA
attention, LM head and loss included, every step on a new batch of tokens
(a mixture of experts routes them anew: fresh splits each step):

    loss = model(input_ids, labels=input_ids).loss; loss.backward()

--model picks the model (MODELS; --layers decoder layers, 2):
- llama: Hugging Face LlamaForCausalLM at Llama 3 8B's shapes (hidden
  4096, intermediate 14336, 32 heads, 8 KV heads, vocabulary 128256);
- qwen3-moe: Qwen3MoeForCausalLM at Qwen3-30B-A3B's shapes (hidden 2048,
  32 heads, 4 KV heads of 128, 64 experts of 768, top-8, vocabulary
  151936), the router's auxiliary loss on (output_router_logits);
- deepseek-v3: DeepseekV3ForCausalLM, DeepSeek-V3's structure at a
  width one GPU trains (hidden 2048, multi-head latent attention with
  DeepSeek-V3's ranks and head sizes, 16 heads, 64 routed experts of 768
  in 8 groups, top-8 of the best 4 groups, one shared expert, vocabulary
  129280), every layer a mixture of experts.

Columns, each in a process of its own (its peak memory its own; Liger
patches the model's classes for the process), which runs every token
count, smallest first (the model built and the kernels compiled once):
- unpatched: the model as Hugging Face gives it;
- tile: tile.transformers.apply_tile(model), its defaults (RMSNorm, MLP
  and experts, RoPE, and the LM head with the loss in chunks:
  linear_cross_entropy, the router's auxiliary loss added);
- liger: Liger's apply_liger_kernel_to_<family>(model=model), its
  defaults (its fused linear cross-entropy);
- liger-ce: the same with its cross-entropy kernel instead
  (cross_entropy=True, fused_linear_cross_entropy=False).

Each cell: tokens per second over --steps steps after --warmup (wall clock,
the host included: nothing hides it in a training loop either), the peak
memory torch allocated during the timed steps, the loss of the first step
(the columns must agree), and where the GPU's time goes in one more step
(torch.profiler's kernel time by kind: GEMMs, attention, the loss...)
and what autograd keeps from its forward to its backward (the largest
tensors by shape and dtype).
--runs repeats every column's process and the table gives each run. A
cell that runs out of memory says OOM. Carry Liger's wheel (benchmarks/README.md); --without-liger
leaves its columns out.

    python3 benchmarks/causal_lm.py [--model llama|qwen3-moe|deepseek-v3]
        [--tokens 4096,16384,65536]
        [--columns unpatched,tile,liger,liger-ce] [--runs 2] [--json F]
"""

import argparse
import json
import subprocess
import sys
import time
import typing

COLUMNS = ["unpatched", "tile", "liger", "liger-ce"]


class Model(typing.NamedTuple):
    config: str         # transformers' config class
    settings: dict      # its arguments (layers and positions added)
    liger: str          # Liger's apply_liger_kernel_to_... function


MODELS = {
    "llama": Model("LlamaConfig", dict(
        hidden_size=4096, intermediate_size=14336, num_attention_heads=32,
        num_key_value_heads=8, vocab_size=128256, rope_theta=500000.0,
        rms_norm_eps=1e-5), "apply_liger_kernel_to_llama"),
    "qwen3-moe": Model("Qwen3MoeConfig", dict(
        hidden_size=2048, intermediate_size=6144, moe_intermediate_size=768,
        num_attention_heads=32, num_key_value_heads=4, head_dim=128,
        num_experts=64, num_experts_per_tok=8, norm_topk_prob=True,
        output_router_logits=True, router_aux_loss_coef=0.001,
        vocab_size=151936, rope_theta=1000000.0, rms_norm_eps=1e-6),
        "apply_liger_kernel_to_qwen3_moe"),
    "deepseek-v3": Model("DeepseekV3Config", dict(
        hidden_size=2048, intermediate_size=10944, moe_intermediate_size=768,
        num_attention_heads=16, num_key_value_heads=16, kv_lora_rank=512,
        q_lora_rank=1536, qk_rope_head_dim=64, qk_nope_head_dim=128,
        v_head_dim=128, n_routed_experts=64, num_experts_per_tok=8,
        n_group=8, topk_group=4, n_shared_experts=1, first_k_dense_replace=0,
        routed_scaling_factor=2.5, norm_topk_prob=True, vocab_size=129280,
        rms_norm_eps=1e-6), "apply_liger_kernel_to_deepseek_v3"),
}


def model(name, layers, tokens):
    import torch
    import transformers
    spec = MODELS[name]
    config = getattr(transformers, spec.config)(
        num_hidden_layers=layers, max_position_embeddings=max(tokens, 8192),
        attn_implementation="sdpa", **spec.settings)
    torch.manual_seed(0)
    with torch.device("cuda"):
        m = transformers.AutoModelForCausalLM.from_config(config).to(
            torch.bfloat16)
    m.train()
    return m


def patch(m, name, column):
    if column == "tile":
        import tile.transformers
        tile.transformers.apply_tile(m)
    elif column.startswith("liger"):
        import liger_kernel.transformers as liger
        fused = column == "liger"
        getattr(liger, MODELS[name].liger)(
            rms_norm=True, swiglu=True, cross_entropy=not fused,
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


def saved_tensors(step, most=8):
    """The largest tensors autograd keeps from the forward to the backward
    in one step, by shape and dtype: [[MiB, count, shape, dtype], ...]
    (each storage counted once): where a column's memory goes."""
    import collections

    import torch
    sizes, counts, seen = collections.Counter(), collections.Counter(), set()

    def pack(t):
        storage = t.untyped_storage()
        if storage.data_ptr() not in seen:
            seen.add(storage.data_ptr())
            key = (tuple(t.shape), str(t.dtype).replace("torch.", ""))
            sizes[key] += storage.nbytes()
            counts[key] += 1
        return t
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        step()
    return [[round(b / 2**20, 1), counts[k], list(k[0]), k[1]]
            for k, b in sizes.most_common(most)]


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


def worker(name, column, counts, layers, steps, warmup):
    """One column at each token count, in this process (its model built
    and patched once, its kernels compiled once): prints each count's
    result as a JSON line, smallest count first."""
    import torch
    m = patch(model(name, layers, max(counts)), name, column)
    vocab = MODELS[name].settings["vocab_size"]
    for tokens in sorted(counts):
        print(json.dumps(dict(measure(m, vocab, tokens, steps, warmup),
                              tokens=tokens)), flush=True)
        torch.cuda.empty_cache()


def measure(m, vocab, tokens, steps, warmup):
    import torch
    g = torch.Generator("cuda").manual_seed(tokens)
    # A new batch each step (the same batches in every column).
    batches = [torch.randint(0, vocab, (1, tokens), device="cuda",
                             generator=g)
               for _ in range(warmup + steps + 1)]
    losses = []

    def step():
        ids = batches[len(losses) % len(batches)]
        loss = m(input_ids=ids, labels=ids, use_cache=False).loss
        loss.backward()
        for p in m.parameters():
            p.grad = None
        losses.append(loss.detach())
        return loss.detach()

    try:
        for _ in range(warmup):
            step()
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        start = time.perf_counter()
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
        seconds = (time.perf_counter() - start) / steps
    except torch.OutOfMemoryError:
        for p in m.parameters():
            p.grad = None
        return {"oom": True}
    peak = torch.cuda.max_memory_allocated() / 2**30
    return {"tokens_per_s": tokens / seconds, "ms": seconds * 1e3,
            "peak_gib": peak, "loss": losses[0].item(),
            "kernel_ms": breakdown(step), "saved": saved_tensors(step)}


def warmed_step(description, top, more=()):
    """For the one-step tools (peak_memory.py, kernel_time.py): their
    command line (--model, --column, --tokens, --layers, --top with `top`
    as its default, and the tool's own: `more`, (flag, add_argument's
    keywords) pairs) and one training step of that model and column, run
    twice already (compiled and warm). Returns (options, step)."""
    import argparse

    import torch
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--model", default="qwen3-moe",
                        choices=sorted(MODELS))
    parser.add_argument("--column", default="tile")
    parser.add_argument("--tokens", type=int, default=16384)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--top", type=int, default=top)
    for flag, settings in more:
        parser.add_argument(flag, **settings)
    options = parser.parse_args()
    name = options.model
    m = patch(model(name, options.layers, options.tokens), name,
              options.column)
    ids = torch.randint(0, MODELS[name].settings["vocab_size"],
                        (1, options.tokens), device="cuda",
                        generator=torch.Generator("cuda").manual_seed(0))

    def step():
        m(input_ids=ids, labels=ids, use_cache=False).loss.backward()
        for p in m.parameters():
            p.grad = None
    for _ in range(2):
        step()
    torch.cuda.synchronize()
    return options, step


def run_column(column, counts, options):
    """{tokens: cell} of one column's process."""
    command = [sys.executable, __file__, "--worker", column,
               "--model", options.model,
               "--tokens", ",".join(map(str, counts)),
               "--layers", str(options.layers),
               "--steps", str(options.steps), "--warmup",
               str(options.warmup)]
    out = subprocess.run(command, capture_output=True, text=True)
    cells = [json.loads(line) for line in out.stdout.splitlines()
             if line.startswith("{")]
    if out.returncode != 0 or len(cells) != len(counts):
        tail = (out.stderr or out.stdout).strip().splitlines()[-5:]
        raise SystemExit(f"{column} failed:\n" + "\n".join(tail))
    return {cell.pop("tokens"): cell for cell in cells}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="llama", choices=sorted(MODELS))
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
    counts = [int(t) for t in options.tokens.split(",")]
    if options.worker:
        worker(options.model, options.worker, counts, options.layers,
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
          f"{torch.__version__}; {options.model} "
          f"({MODELS[options.model].config}), "
          f"{options.layers} layers, bf16, batch 1; tokens/s over "
          f"{options.steps} steps (wall clock), peak GiB")
    print(f"{'column':10} {'tokens':>6} {'run':>3} {'k tok/s':>8} "
          f"{'ms':>8} {'peak GiB':>8} {'loss':>8}", flush=True)
    rows = []
    # A column's process runs every count: its model is built and its
    # kernels compiled (Tile's JIT, Liger's Triton) once, not per cell.
    cells = {}
    for run in range(options.runs):
        for column in columns:
            started = time.perf_counter()
            cells[column, run] = run_column(column, counts, options)
            print(f"({column} run {run}: {time.perf_counter() - started:.0f}"
                  f" s in its process)", flush=True)
    for tokens in counts:
        for run in range(options.runs):
            for column in columns:
                cell = cells[column, run][tokens]
                rows.append(dict(cell, case=f"{column} {tokens} run{run}",
                                 model=options.model, column=column,
                                 tokens=tokens, run=run))
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
                largest = ", ".join(f"{mib:.0f} MiB {shape} {dtype} x{n}"
                                    for mib, n, shape, dtype in
                                    cell["saved"][:4])
                print(f"{'':21} kept for the backward: {largest}",
                      flush=True)
    if options.json:
        import results
        # Llama's table and the mixtures of experts' (a row per model).
        kind = "causal_lm" if options.model == "llama" else "causal_lm_moe"
        results.write(options.json, kind, rows,
                      dict(vars(options), dtype="bf16",
                           settings=MODELS[options.model].settings,
                           torch=torch.__version__))


if __name__ == "__main__":
    main()
