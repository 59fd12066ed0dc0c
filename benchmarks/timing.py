"""GPU time of one call from Python, with the host's cost of the call
hidden: the method every operator benchmark in benchmarks/ shares
(docs/Performance.md, "a fair side-by-side").

Before each timed call, work is queued on the stream (a spacer), so that
the start event fires when the GPU reaches the call, not when the host
reaches it: what the host spends inside the call (argument checks,
autograd, a compiled graph's guards, launches) is then hidden behind the
spacer, as it is in a training step that runs ahead of the GPU. Whether it
*was* hidden is measured, not assumed: settled_ms times the call behind
ever deeper queues until the time stops falling.

This module is the one place where the benchmarks record CUDA events. Its
other methods: whole steps from an idle queue (step_times, step_ms: events
around each step, the GPU drained after each, so the host's cost counts
where the GPU waits for it, as in a training loop that synchronizes every
step), and the host's side: host_ms (each call from an idle GPU until it
returns), host_us (calls queued behind a long sleep) and queued_block (a
block of steps behind a sleep: the host's time to queue them and the GPU's
time to run them).
"""

import statistics
import time

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


def sleep_cycles_per_ms():
    """The sleep kernel's clocks per ms on this GPU, timed by events around
    one sleep of 1e7 cycles (after a short one that loads the kernel)."""
    start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
    torch.cuda._sleep(1000)
    start.record()
    torch.cuda._sleep(10_000_000)
    end.record()
    end.synchronize()
    return 10_000_000 / start.elapsed_time(end)


def gpu_times(call, ahead, sets=1, iterations=30, warmup=5):
    """ms of each of `iterations` calls of call(i % sets) (after `warmup`
    untimed ones): each call queued behind ahead()'s work and timed alone by
    CUDA events, the GPU drained in between."""
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
    return times


def gpu_ms(call, ahead, sets=1, iterations=30, warmup=5):
    """Median of gpu_times(...): call(i % sets) behind ahead()'s work."""
    return statistics.median(gpu_times(call, ahead, sets, iterations, warmup))


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


def step_times(step, steps, warmup=0, device=None):
    """ms of each of `steps` calls of step() (after `warmup` untimed ones and
    a synchronize), each timed by CUDA events from an idle queue and waited
    for (torch.cuda.synchronize(device))."""
    for _ in range(warmup):
        step()
    if warmup:
        torch.cuda.synchronize(device)
    times = []
    for _ in range(steps):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        stop.record()
        torch.cuda.synchronize(device)
        times.append(start.elapsed_time(stop))
    return times


def step_ms(step, steps, warmup=0, device=None):
    """(median, min, max) of step_times(...)."""
    times = step_times(step, steps, warmup, device)
    return statistics.median(times), min(times), max(times)


def host_ms(call, calls):
    """ms of the host's time in each of `calls` calls of call(), each from
    an idle GPU (synchronized after it) until the call returns."""
    times = []
    for _ in range(calls):
        begin = time.perf_counter()
        call()
        times.append((time.perf_counter() - begin) * 1e3)
        torch.cuda.synchronize()
    return times


def host_us(call, calls=200, warmup=5, sleep_cycles=100_000_000):
    """us of the host per call over `calls` calls queued behind a sleep of
    `sleep_cycles` clocks (the GPU kept busy: no call waits for it), after
    `warmup` calls and a synchronize."""
    for _ in range(warmup):
        call()
    torch.cuda.synchronize()
    torch.cuda._sleep(sleep_cycles)
    begin = time.perf_counter()
    for _ in range(calls):
        call()
    end = time.perf_counter()
    torch.cuda.synchronize()
    return (end - begin) / calls * 1e6


def queued_block(step, steps, sleep_cycles=50_000_000):
    """(host us, GPU us, idle) per step over one block of `steps` calls of
    step() queued behind a sleep of `sleep_cycles` clocks, the events around
    the block: with the queue full they time the GPU's work alone. `idle`:
    the sleep ended before the host was done queueing (the host's figure is
    then host-bound and the GPU's is not the GPU's alone)."""
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(sleep_cycles)
    start.record()
    begin = time.perf_counter()
    for _ in range(steps):
        step()
    end = time.perf_counter()
    stop.record()
    idle = start.query()
    torch.cuda.synchronize()
    return ((end - begin) / steps * 1e6,
            start.elapsed_time(stop) / steps * 1e3, idle)
