"""Where a causal LM step's GPU time goes, kernel by kernel: one training
step of causal_lm.py's model and column (after two warm-up steps) under
torch.profiler, its kernels grouped by name (the longest first) with
their count, total milliseconds and causal_lm.py's kind.

    python3 benchmarks/kernel_time.py --model qwen3-moe --column tile \
        --tokens 65536

The GPU machine only; one process per column."""

import collections

import causal_lm


def main():
    import torch
    from torch.profiler import ProfilerActivity, profile
    options, step = causal_lm.warmed_step(__doc__, top=20)
    name = options.model
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    total, count = collections.Counter(), collections.Counter()
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            total[event.name] += event.device_time / 1e3
            count[event.name] += 1
    print(f"{name} {options.column} {options.tokens}: "
          f"{sum(total.values()):.1f} ms of kernels in one step")
    for kernel, ms in total.most_common(options.top):
        lowered = kernel.lower()
        kind = next((k for k, keys in causal_lm.KINDS
                     if any(key in lowered for key in keys)), "other")
        print(f"{ms:9.2f} ms {count[kernel]:5d}x  {kind:10} {kernel[:110]}")


if __name__ == "__main__":
    main()
