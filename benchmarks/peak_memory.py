"""Where a causal LM step's peak memory goes: one training step of
causal_lm.py's model and column (after two warm-up steps) with the CUDA
allocator's history recorded, replayed to the moment of the peak, and the
blocks live then grouped by the first Python frame outside torch's own
files (the line that allocated them; --depth 3: the three innermost such
frames), with their bytes and count.

    python3 benchmarks/peak_memory.py --model qwen3-moe --column tile \
        --tokens 16384

The GPU machine only; one process per column (peaks are per process)."""

import collections

import causal_lm


def frame_of(frames, depth=1):
    """'file:line function' of the first `depth` frames outside torch's
    files, innermost first (' < ' between them)."""
    outside = [f"{f['filename'].split('site-packages/')[-1]}:{f['line']} "
               f"{f['name']}" for f in frames
               if "site-packages/torch/" not in f["filename"]]
    return " < ".join(outside[:depth]) or "<no Python frame: autograd's own>"


def peak_blocks(events, before, depth=1):
    """(peak bytes, index of the event that reached it, {frames: [bytes,
    blocks]} of the blocks allocated in the trace and live at the peak,
    grouped by their first `depth` frames outside torch)."""
    current, top, at = before, before, -1
    for index, event in enumerate(events):
        if event["action"] == "alloc":
            current += event["size"]
        elif event["action"] == "free_completed":
            current -= event["size"]
        if current > top:
            top, at = current, index
    live = {}
    for event in events[:at + 1]:
        if event["action"] == "alloc":
            live[event["addr"]] = (event["size"],
                                   frame_of(event.get("frames", []), depth))
        elif event["action"] == "free_completed":
            live.pop(event["addr"], None)
    groups = collections.defaultdict(lambda: [0, 0])
    for size, frame in live.values():
        groups[frame][0] += size
        groups[frame][1] += 1
    return top, at, groups


def main():
    import torch
    options, step = causal_lm.warmed_step(__doc__, top=14, more=[
        ("--depth", dict(type=int, default=1,
                         help="frames outside torch that name a group"))])
    name = options.model
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    torch.cuda.memory._record_memory_history(max_entries=2_000_000,
                                             stacks="python")
    step()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated()
    snapshot = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    events = snapshot["device_traces"][torch.cuda.current_device()]
    top, at, groups = peak_blocks(events, before, options.depth)
    print(f"{name} {options.column} {options.tokens}: before the step "
          f"{before / 2**30:.2f} GiB, peak {peak / 2**30:.2f} GiB (replayed "
          f"{top / 2**30:.2f}), reached at "
          f"{frame_of(events[at].get('frames', [])) if at >= 0 else '-'}; "
          f"allocated in the step and live at the peak:")
    largest = sorted(groups.items(), key=lambda item: -item[1][0])
    for frame, (size, blocks) in largest[:options.top]:
        print(f"  {size / 2**20:9.1f} MiB {size:>11} B {blocks:>4}x  {frame}")


if __name__ == "__main__":
    main()
