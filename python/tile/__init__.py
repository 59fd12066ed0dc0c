"""Tile: fused GPU kernels with derived backward, from PyTorch.

    import tile, torch
    k = tile.Kernel(open("my_kernel.mlir").read())
    y = k(x, w)             # forward; y.sum().backward() runs the derived
                            # backward

``tile.ops`` has SwiGLU, GeGLU, silu_and_mul, RMSNorm and the
sequence-tiled SwiGLU MLP, dense and grouped; ``tile.nn`` the modules over them;
``tile.transformers.apply_tile`` patches Hugging Face models. CUDA tensors
run the compiled kernels on their device's current stream; CPU tensors run
the float64 reference evaluator.
"""

from ._capi import TileError, device_count
from .kernel import Kernel
from . import mlp, nn, ops

__all__ = ["Kernel", "TileError", "device_count", "mlp", "nn", "ops"]
__version__ = "0.1.0"
