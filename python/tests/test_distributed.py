"""tile.nn modules under PyTorch's FSDP2 and DDP, two ranks started by
torchrun (distributed_worker.py runs the cases; each is one test here):
loss and every gradient against the same model in one process.

- CPU (CI): gloo, float64 through the reference evaluator. This covers the
  engines' side (sharding, gathering, reduce-scatter and bucket all-reduce,
  no_sync / gradient-sync accumulation, mixed-precision casts, activation
  checkpointing, the main_grad contract's hooks) with Tile's CPU path; the
  kernels, streams and devices are the GPU run's.
- GPU (test_gpu and test_gpu_shared, marked gpu): NCCL, one rank per
  device (cuda:<local_rank>), with two GPUs; one rank on one GPU otherwise
  (the same cases, world size 1), and then two ranks sharing it through
  gloo as well."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import tile

pytest.importorskip("transformers")
if not torch.distributed.is_available():
    pytest.skip("torch.distributed is not available", allow_module_level=True)

WORKER = Path(__file__).with_name("distributed_worker.py")
CASES = ["fsdp2", "fsdp2_untiled", "fsdp2_mixed_precision",
         "fsdp2_activation_checkpointing", "fsdp2_grouped_mlp", "ddp",
         "ddp_main_grad", "megatron_main_grad"]


def _run(device, ranks, tmp_path_factory, backend=None):
    out = tmp_path_factory.mktemp(f"distributed-{device}") / "results.json"
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               f"--nproc-per-node={ranks}", str(WORKER), "--device", device,
               "--out", str(out)] + (["--backend", backend] if backend else [])
    # The ranks import the tile this process imported (the source tree or
    # an installed package), and share a cache of their own: they compile
    # every kernel at once, into it.
    package = str(Path(tile.__file__).resolve().parents[1])
    path = os.pathsep.join(p for p in (package, os.environ.get("PYTHONPATH"))
                           if p)
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=path,
               TILE_CACHE_DIR=str(out.parent / "cache"))
    try:
        done = subprocess.run(command, capture_output=True, text=True,
                              env=env, timeout=600)
    except subprocess.TimeoutExpired as expired:
        tail = expired.stderr or ""
        if isinstance(tail, bytes):
            tail = tail.decode(errors="replace")
        pytest.fail(f"torchrun ran past {expired.timeout} s:\n"
                    f"{tail[-8000:]}")
    if done.returncode != 0 or not out.exists():
        pytest.fail(f"torchrun exited {done.returncode}:\n"
                    f"{done.stdout[-4000:]}\n{done.stderr[-8000:]}")
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def cpu_results(tmp_path_factory):
    if not torch.distributed.is_gloo_available():
        pytest.skip("PyTorch was built without gloo")
    return _run("cpu", 2, tmp_path_factory)


@pytest.fixture(scope="module")
def gpu_results(tmp_path_factory):
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    if not torch.distributed.is_nccl_available():
        pytest.skip("PyTorch was built without NCCL")
    return _run("cuda", min(2, torch.cuda.device_count()), tmp_path_factory)


@pytest.fixture(scope="module")
def shared_gpu_results(tmp_path_factory):
    """Two ranks on one GPU through gloo (NCCL refuses that): two processes
    compiling the same kernels into one cache and running them on one
    device. Where there are two GPUs, gpu_results covers more."""
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    if torch.cuda.device_count() > 1:
        pytest.skip("two GPUs: NCCL's two ranks run instead")
    return _run("cuda", 2, tmp_path_factory, backend="gloo")


def _check(results, case):
    assert case in results, f"the worker ran no case {case!r}"
    assert results[case]["ok"], results[case]["detail"]


@pytest.mark.parametrize("case", CASES)
def test_cpu(cpu_results, case):
    _check(cpu_results, case)


@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES)
def test_gpu(gpu_results, case):
    _check(gpu_results, case)


@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES)
def test_gpu_shared(shared_gpu_results, case):
    _check(shared_gpu_results, case)


def test_worker_runs_every_case(cpu_results):
    assert sorted(cpu_results) == sorted(CASES)
