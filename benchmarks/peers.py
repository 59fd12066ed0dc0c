"""The peers the operator benchmarks compare Tile with, each called the way
its project calls it by default: one definition for every script, so that
two tables never time two different "Liger RMSNorms"."""

import torch
import torch.nn.functional as F

EPS = 1e-6


def swiglu_eager(a, b):
    return F.silu(a) * b


def rms_norm_eager(x, w, eps=EPS):
    """Hugging Face's Llama RMSNorm in PyTorch ops."""
    xf = x.float()
    y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w.float()
    return y.to(x.dtype)


def _from_liger(load, required):
    """load()'s peer functions, imported from Liger. Where Liger is not
    importable: an exit with how to provide it, unless not `required` (the
    script's --without-liger), then None. A table without its strongest
    peer must be asked for, never a silent fallback: a run whose Liger
    wheel had not installed once showed ratios against the next-best peer
    as if they were the comparison (2026-11-25)."""
    try:
        return load()
    except ImportError as error:
        if required:
            raise SystemExit(
                f"Liger is not importable ({error}). Unpack its wheel onto "
                "PYTHONPATH (pip install --no-deps --target DIR "
                "liger_kernel-*.whl; PYTHONPATH=python:DIR), or pass "
                "--without-liger to leave its column out") from error
        print(f"Liger not importable ({error}): its column left out, as "
              "--without-liger asked")
        return None


def liger(required=True):
    """{"swiglu": fn, "rms_norm": fn} through Liger's autograd functions
    (_from_liger). RMSNorm with LigerRMSNorm's defaults: llama casting, dY
    overwritten by dX in the backward (its fastest path)."""
    return _from_liger(_liger_operators, required)


def liger_cross_entropy(required=True):
    """fn(logits, labels, ignore_index) -> the mean loss through Liger's
    LigerCrossEntropyFunction (_from_liger). It computes the gradient in
    its forward and writes it over the logits."""
    def load():
        from liger_kernel.ops.cross_entropy import LigerCrossEntropyFunction
        return lambda x, y, ignore: LigerCrossEntropyFunction.apply(
            x, y, None, ignore)[0]
    return _from_liger(load, required)


def liger_fused_linear_cross_entropy(required=True):
    """fn(hidden, weight, labels, ignore_index) -> the mean loss through
    Liger's LigerFusedLinearCrossEntropyFunction with its defaults
    (_from_liger): the gradients made in its forward, chunk by chunk."""
    def load():
        from liger_kernel.ops.fused_linear_cross_entropy import \
            LigerFusedLinearCrossEntropyFunction
        return lambda h, w, y, ignore: LigerFusedLinearCrossEntropyFunction \
            .apply(h, w, y, None, None, ignore)[0]
    return _from_liger(load, required)


def _liger_operators():
    from liger_kernel.ops.rms_norm import LigerRMSNormFunction
    from liger_kernel.ops.swiglu import LigerSiLUMulFunction
    return {"swiglu": LigerSiLUMulFunction.apply,
            "rms_norm": lambda x, w, eps=EPS: LigerRMSNormFunction.apply(
                x, w, eps, 0.0, "llama", True)}
