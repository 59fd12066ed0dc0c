"""tile.nn modules under PyTorch's FSDP2 and DDP and DeepSpeed's ZeRO, two
ranks started by torchrun (distributed_worker.py runs the cases; each is
one test here): loss and every gradient against the same model in one
process.

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
import re
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
         "ddp_main_grad", "megatron_main_grad", "fsdp2_main_grad_refused",
         "fsdp2_attach_main_grads_refused",
         "ddp_main_grad_without_hook_refused",
         "ddp_attach_main_grads_refused", "deepspeed_zero2",
         "deepspeed_zero3", "deepspeed_zero3_untiled",
         "deepspeed_zero3_grouped_mlp", "deepspeed_zero2_main_grad_refused",
         "deepspeed_zero3_main_grad_refused",
         "deepspeed_zero3_mlp_main_grad_refused"]


# torchrun's own failures to meet (its standalone store's port taken, the
# rendezvous timed out): the run is retried once, never a failing case.
RENDEZVOUS_FAILURE = re.compile(
    r"RendezvousError|RendezvousTimeoutError|RendezvousConnectionError|"
    r"DistNetworkError|EADDRINUSE|[Aa]ddress already in use")


def _ranks_stderr(logs):
    """Each rank's stderr, from torchrun's --log-dir (the traceback that
    torchrun's own summary does not show)."""
    parts = []
    for path in sorted(logs.rglob("stderr.log")):
        text = path.read_text(errors="replace")
        parts.append(f"--- {path.relative_to(logs)} ---\n{text[-6000:]}")
    return "\n".join(parts) or "(no rank wrote a stderr log)"


def _torchrun(launcher, worker, env, logs):
    """One torchrun of `worker` (its command line): (returncode, torchrun's
    output, the ranks' stderr)."""
    try:
        done = subprocess.run(launcher + ["--log-dir", str(logs), "--tee",
                                          "3"] + worker,
                              capture_output=True, text=True, env=env,
                              timeout=600)
    except subprocess.TimeoutExpired as expired:
        pytest.fail(f"torchrun ran past {expired.timeout} s; the ranks' "
                    f"stderr:\n{_ranks_stderr(logs)}")
    return done.returncode, done.stdout + done.stderr, _ranks_stderr(logs)


def _run(device, ranks, tmp_path_factory, backend=None):
    out = tmp_path_factory.mktemp(f"distributed-{device}") / "results.json"
    launcher = [sys.executable, "-m", "torch.distributed.run",
                "--standalone", f"--nproc-per-node={ranks}"]
    worker = [str(WORKER), "--device", device, "--out", str(out)] + \
        (["--backend", backend] if backend else [])
    # The ranks import the tile this process imported (the source tree or
    # an installed package), and share a cache of their own: they compile
    # every kernel at once, into it.
    package = str(Path(tile.__file__).resolve().parents[1])
    path = os.pathsep.join(p for p in (package, os.environ.get("PYTHONPATH"))
                           if p)
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=path,
               TILE_CACHE_DIR=str(out.parent / "cache"))
    for attempt in (1, 2):
        logs = out.parent / f"logs-{attempt}"
        code, output, ranks_stderr = _torchrun(launcher, worker, env, logs)
        if code == 0 and out.exists():
            return json.loads(out.read_text())
        if attempt == 1 and RENDEZVOUS_FAILURE.search(output) and \
                not out.exists():
            continue
        break
    pytest.fail(f"torchrun exited {code} (attempt {attempt}):\n"
                f"{output[-4000:]}\nthe ranks' stderr:\n{ranks_stderr}")


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
@pytest.mark.parametrize("case", [c for c in CASES
                                  if not c.startswith("deepspeed")])
def test_gpu_shared(shared_gpu_results, case):
    """Not DeepSpeed's cases: its collectives on CUDA tensors need NCCL,
    which two ranks on one GPU cannot have."""
    _check(shared_gpu_results, case)


def test_worker_runs_every_case(cpu_results):
    assert sorted(cpu_results) == sorted(CASES)


def test_failing_rank_shows_its_traceback(tmp_path):
    """A rank that fails shows its own traceback in the report, which
    torchrun's summary leaves out."""
    if not torch.distributed.is_gloo_available():
        pytest.skip("PyTorch was built without gloo")
    failing = tmp_path / "failing_rank.py"
    failing.write_text("import os\n"
                       "if os.environ['RANK'] == '1':\n"
                       "    raise ValueError('rank one fails here')\n")
    launcher = [sys.executable, "-m", "torch.distributed.run",
                "--standalone", "--nproc-per-node=2"]
    code, _, ranks_stderr = _torchrun(launcher, [str(failing)],
                                      dict(os.environ), tmp_path / "logs")
    assert code != 0
    assert "ValueError: rank one fails here" in ranks_stderr
