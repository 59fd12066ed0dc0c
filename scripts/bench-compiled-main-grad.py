#!/usr/bin/env python3
"""Eager vs compiled (Inductor) main_grad steps at Llama-3-8B's MLP sizes:
time and peak memory. A compiled backward that cloned main_grad (a failed
reinplace of the mutating op) would show as +0.66 GiB and a copy's time."""
import torch, tile
torch.manual_seed(0)
S, H, I = 16384, 4096, 14336
for name, make in [("TiledSwiGLUMLP", lambda: tile.nn.TiledSwiGLUMLP(H, I, accumulate_into_main_grad=True, device="cuda", dtype=torch.bfloat16)),
                   ("SwiGLUMLP", lambda: tile.nn.SwiGLUMLP(H, I, accumulate_into_main_grad=True, device="cuda", dtype=torch.bfloat16)),
                   ("RMSNorm", lambda: tile.nn.RMSNorm(H, accumulate_into_main_grad=True, device="cuda", dtype=torch.bfloat16))]:
    for compiled in (False, True):
        torch._dynamo.reset()
        m = tile.nn.attach_main_grads(make())
        run = torch.compile(m, fullgraph=True) if compiled else m
        x = torch.randn(S, H, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        dy = torch.randn(S, H, device="cuda", dtype=torch.bfloat16)
        for _ in range(3):
            run(x).backward(dy)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats(); base = torch.cuda.memory_allocated()
        run(x).backward(dy); torch.cuda.synchronize()
        peak = (torch.cuda.max_memory_allocated() - base) / 2**30
        times = []
        for _ in range(10):
            a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
            a.record(); run(x).backward(dy); b.record(); torch.cuda.synchronize()
            times.append(a.elapsed_time(b))
        times.sort()
        print(f"{name:15s} {'compiled' if compiled else 'eager':8s} median {times[5]:8.3f} ms  min {times[0]:8.3f}  peak above inputs {peak:6.3f} GiB", flush=True)
        del m, run, x, dy
        torch.cuda.empty_cache()
