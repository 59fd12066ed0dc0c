"""Checks the .npy files tile-run writes (test/tile-run/npy.mlir).

  check_npy.py reference DIR   the results and gradients of @gated_tanh in
                               DIR equal NumPy's float64 recomputation from
                               the inputs and cotangents in DIR
  check_npy.py same DIR DIR2   every file of DIR is in DIR2, bit for bit
"""

import os
import sys

import numpy as np


def reference(folder):
    def load(name):
        return np.load(os.path.join(folder, name + ".npy"))

    x, w, dy = load("x").astype(np.float64), load("w").astype(np.float64), \
        load("cotangent0").astype(np.float64)
    assert x.dtype == np.float64 and load("x").dtype == np.float32
    t = np.tanh(x * w)
    dp = dy * (1.0 - t * t)
    expected = {"result0": t, "grad_x": dp * w, "grad_w": (dp * x).sum(0)}
    for name, want in expected.items():
        got = load(name)
        assert got.dtype == np.float64, (name, got.dtype)
        assert got.shape == want.shape, (name, got.shape, want.shape)
        # f32 kernels: the evaluator rounds what it stores to f32.
        error = np.abs(got - want).max() / max(1.0, np.abs(want).max())
        assert error < 1e-6, (name, error)
        print(f"{name}: {got.shape} max error {error:.1e}")


def same(first, second):
    for name in sorted(os.listdir(first)):
        a = np.load(os.path.join(first, name))
        b = np.load(os.path.join(second, name))
        assert a.dtype == b.dtype and a.shape == b.shape, name
        assert a.tobytes() == b.tobytes(), name
        print(f"{name}: identical")


if __name__ == "__main__":
    if sys.argv[1] == "reference":
        reference(sys.argv[2])
    else:
        same(sys.argv[2], sys.argv[3])
