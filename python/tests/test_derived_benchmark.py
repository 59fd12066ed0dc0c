"""benchmarks/derived.py (issue 48's side-by-side) times each kernel
against a PyTorch function written to compute the same thing: here, on the
CPU in float64, every case's function matches its kernel (outputs and the
gradients of what the kernel differentiates), so that the GPU table
compares like with like."""

import pytest
import torch

import tile
from benchmark_scripts import load
from conftest import assert_close

derived = load("derived")


@pytest.mark.parametrize("case", derived.CASES, ids=lambda c: c.name)
def test_each_function_computes_its_kernel(case, monkeypatch):
    monkeypatch.setattr(derived, "DEVICE", "cpu")
    torch.manual_seed(0)
    kernel = tile.Kernel(case.source)
    differentiable = derived.differentiable_inputs(case, kernel, 256)
    args = [a.double() if isinstance(a, torch.Tensor) and
            a.is_floating_point() else a for a in case.make(5, 256)]
    for i in differentiable:
        args[i].requires_grad_(True)
    seeds = [torch.randn(o.shape, dtype=torch.float64)
             for o in derived._as_tuple(case.reference(*args))]
    sets = [(args, seeds)]
    got = derived.Step(kernel, sets, differentiable)(0)
    want = derived.Step(case.reference, sets, differentiable)(0)
    assert len(got[0]) == len(want[0]) and len(got[1]) == len(want[1])
    # The kernels' constants are f32: float64 evaluation of a kernel
    # differs from the formula by their rounding.
    for g, w in zip(got[0] + got[1], want[0] + want[1]):
        assert_close(g, w, torch.float32, case.name)


def test_step_bytes_count_a_recomputing_step():
    x, w = torch.zeros(4, 8, dtype=torch.bfloat16), torch.zeros(8)
    out = torch.zeros(4, 8, dtype=torch.bfloat16)
    # x and w read twice, y written and dy read, dx and dw written.
    assert derived.step_bytes([x, w, 1e-6], [out], [0, 1]) == \
        2 * (64 + 32) + 2 * 64 + (64 + 32)
