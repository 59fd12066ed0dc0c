"""GPU time of one call from Python, with the host's cost of the call
hidden: the method every operator benchmark in scripts/ shares
(docs/Performance.md, "a fair side-by-side").

Before each timed call, work is queued on the stream (a spacer), so that
the start event fires when the GPU reaches the call, not when the host
reaches it: what the host spends inside the call (argument checks,
autograd, a compiled graph's guards, launches) is then hidden behind the
spacer, as it is in a training step that runs ahead of the GPU. Whether it
*was* hidden is measured, not assumed: settled_ms times the call behind
ever deeper queues until the time stops falling.
"""

import statistics

import torch

# tile-bench's rule: input sets rotate until they hold 512 MiB, so that no
# timed call finds its inputs in L2 (a 4096x4096 bf16 set would fit).
ROTATE_BELOW = 512 << 20


def sets_for(bytes_per_set):
    """How many input sets to rotate through for sets of this size."""
    return 1 if bytes_per_set >= ROTATE_BELOW else \
        ROTATE_BELOW // bytes_per_set + 1


_stream_buffers = []


def stream_spacer(repeats):
    """tile-bench's spacer, z = x + y over 2^24 f32 (about 40 us on an H100,
    192 MB moved, so L2 holds none of the timed call's inputs), queued
    `repeats` times."""
    def queue():
        if not _stream_buffers:
            _stream_buffers.extend(torch.ones(4096, 4096, device="cuda")
                                   for _ in range(3))
        x, y, z = _stream_buffers
        for _ in range(repeats):
            torch.add(x, y, out=z)
    return queue


def sleep_spacer(cycles):
    """A sleep kernel of `cycles` clocks: touches no memory."""
    return lambda: torch.cuda._sleep(int(cycles))


def gpu_ms(call, ahead, sets=1, iterations=30, warmup=5):
    """Median ms of call(i % sets): each call queued behind ahead()'s work
    and timed alone by CUDA events, the GPU drained in between."""
    for i in range(warmup):
        call(i % sets)
    torch.cuda.synchronize()
    times = []
    for i in range(iterations):
        ahead()
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        call(i % sets)
        stop.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def settled_ms(call, sets=1, depth=8, tolerance=0.03, deepest=512,
               iterations=30):
    """(ms, depth, ms at depth / ms at 4 x depth) of call(i % sets) behind
    `depth` stream spacers, checked: the same call is timed behind four
    times as many, and while that is more than `tolerance` faster (the
    host's cost still leaked into the shallower figure) the queue deepens
    again, up to `deepest`. The figure returned is the deepest one taken;
    the ratio shows how much the last deepening changed (about 1.00: the
    host was hidden)."""
    shallow = gpu_ms(call, stream_spacer(depth), sets, iterations)
    while True:
        deeper = gpu_ms(call, stream_spacer(4 * depth), sets, iterations,
                        warmup=1)
        ratio = shallow / deeper
        depth *= 4
        if ratio <= 1 + tolerance or 4 * depth > deepest:
            return deeper, depth, ratio
        shallow = deeper
