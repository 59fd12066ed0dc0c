# Runs the kernels convert-tile-to-gpu produced for the examples (forward
# and derived backward) on the GPU and compares them with float64
# references computed from the same bf16 inputs. Outputs start as NaN.
#
# An interim check until the C++ runtime and its GPU suite exist: it needs
# CuPy and PyTorch on the GPU machine, and the PTX that
# scripts/gpu/make-lowering-check.sh writes to build/gpucheck.
#
#   python3 scripts/gpu/lowering_check.py build/gpucheck
import sys
import numpy as np
import cupy as cp
import torch

D = sys.argv[1]
THREADS = 256
dev = torch.device("cuda")
results = []

def mod(name):
    return cp.RawModule(path=f"{D}/{name}.ptx")

def ptr(t):
    return np.uint64(t.data_ptr())

def idx(v):
    return np.uint64(v)

def launch(fn, grid, args):
    if grid > 0:
        fn((grid,), (THREADS,), tuple(args))

def check(name, got, want, rtol=1e-2, atol=2e-2):
    got = got.double().cpu()
    want = want.double().cpu()
    bad = ~torch.isclose(got, want, rtol=rtol, atol=atol)
    nan = torch.isnan(got).sum().item()
    err = ((got - want).abs() / (want.abs() + 1e-3)).max().item() if got.numel() else 0.0
    ok = bad.sum().item() == 0 and nan == 0
    results.append(ok)
    print(f"{'ok  ' if ok else 'FAIL'} {name}: max rel err {err:.2e}, mismatches {bad.sum().item()}, NaN {nan}")

def poison(shape, dtype=torch.bfloat16):
    return torch.full(shape, float("nan"), dtype=dtype, device=dev)

def rand(shape, gen):
    return (torch.rand(shape, generator=gen, dtype=torch.float64) * 4 - 2).to(torch.bfloat16).to(dev)

sw, sam, rms, rmsmg = mod("swiglu"), mod("silu_and_mul"), mod("rms_norm"), mod("rms_norm_mg")
for M in (1, 7, 13, 4096):
    for N in (1, 13, 100, 1000, 3000, 11008):
        if M * N > 4096 * 3000:
            continue
        g = torch.Generator().manual_seed(M * 100003 + N)
        a, b, dc = rand((M, N), g), rand((M, N), g), rand((M, N), g)
        ws = torch.zeros(1, dtype=torch.float32, device=dev)
        # SwiGLU forward and backward.
        c = poison((M, N))
        launch(sw.get_function("swiglu"), M, [ptr(a), ptr(b), ptr(c), idx(M), idx(N), idx(N), idx(M), ptr(ws)])
        a64, b64, dc64 = a.double(), b.double(), dc.double()
        s = torch.sigmoid(a64)
        check(f"swiglu fwd {M}x{N}", c, a64 * s * b64)
        da, db = poison((M, N)), poison((M, N))
        launch(sw.get_function("swiglu_bwd"), M, [ptr(a), ptr(b), ptr(dc), ptr(da), ptr(db), idx(M), idx(N), idx(N), idx(N), idx(M), ptr(ws)])
        check(f"swiglu bwd da {M}x{N}", da, dc64 * b64 * s * (1 + a64 * (1 - s)))
        check(f"swiglu bwd db {M}x{N}", db, dc64 * a64 * s)
        # The same inputs at a pointer one element past 16-byte alignment:
        # the kernel must notice and take the scalar path.
        flat = torch.empty(M * N + 1, dtype=torch.bfloat16, device=dev)
        shifted = flat[1:].view(M, N)
        shifted.copy_(a)
        c2 = poison((M, N))
        launch(sw.get_function("swiglu"), M, [ptr(shifted), ptr(b), ptr(c2), idx(M), idx(N), idx(N), idx(M), ptr(ws)])
        check(f"swiglu fwd, misaligned input {M}x{N}", c2, a64 * s * b64)
        # silu_and_mul on [M, 2H] and [M, 2H+1] (odd: the last column is
        # dropped, and the halves are misaligned for vectors).
        for W in (2 * N, 2 * N + 1):
            x = rand((M, W), g)
            out = poison((M, N))
            launch(sam.get_function("silu_and_mul"), M, [ptr(x), ptr(out), idx(M), idx(W), idx(M), ptr(ws)])
            xa, xb = x[:, :N].double(), x[:, N:2 * N].double()
            sa = torch.sigmoid(xa)
            check(f"silu_and_mul fwd {M}x{W}", out, xa * sa * xb)
            dx = poison((M, W))
            launch(sam.get_function("silu_and_mul_bwd"), M, [ptr(x), ptr(dc), ptr(dx), idx(M), idx(W), idx(N), idx(M), ptr(ws)])
            want = torch.zeros((M, W), dtype=torch.float64)
            want[:, :N] = (dc64 * xb * sa * (1 + xa * (1 - sa))).cpu()
            want[:, N:2 * N] = (dc64 * xa * sa).cpu()
            check(f"silu_and_mul bwd {M}x{W}", dx, want)
        # RMSNorm forward, backward (dx, dW), and dW into main_grad.
        eps, off = 1e-6, 1.0
        w = rand((N,), g)
        y = poison((M, N))
        launch(rms.get_function("rms_norm"), M, [ptr(a), ptr(w), np.float32(eps), np.float32(off), ptr(y), idx(M), idx(N), idx(N), idx(M), ptr(ws)])
        rstd = torch.rsqrt((a64 * a64).mean(dim=1, keepdim=True) + eps)
        wo = w.double() + off
        check(f"rms_norm fwd {M}x{N}", y, a64 * rstd * wo)
        ctas = min(M, 264)
        work = torch.full((ctas * N,), float("nan"), dtype=torch.float32, device=dev)
        dx, dw = poison((M, N)), poison((N,))
        args = [ptr(a), ptr(w), np.float32(eps), np.float32(off), ptr(dc), ptr(dx), ptr(dw), idx(M), idx(N), idx(N), idx(N), idx(ctas), ptr(work)]
        launch(rms.get_function("rms_norm_bwd"), ctas, args)
        launch(rms.get_function("rms_norm_bwd_finalize"), (N + THREADS - 1) // THREADS, args)
        gg = dc64 * wo
        xhat = a64 * rstd
        want_dx = rstd * (gg - xhat * (xhat * gg).mean(dim=1, keepdim=True))
        check(f"rms_norm bwd dx {M}x{N}", dx, want_dx)
        check(f"rms_norm bwd dw {M}x{N}", dw, (dc64 * xhat).sum(dim=0), rtol=2e-2, atol=5e-2)
        dw2 = poison((N,))
        launch(rms.get_function("rms_norm_bwd"), ctas, args[:6] + [ptr(dw2)] + args[7:])
        launch(rms.get_function("rms_norm_bwd_finalize"), (N + THREADS - 1) // THREADS, args[:6] + [ptr(dw2)] + args[7:])
        same = torch.equal(dw.view(torch.int16), dw2.view(torch.int16))
        results.append(same)
        print(f"{'ok  ' if same else 'FAIL'} rms_norm dw bitwise identical on a second run {M}x{N}")
        # save-row-stats forward gives rstd; main-grad backward adds into fp32.
        y2, rs = poison((M, N)), poison((M,), torch.float32)
        launch(rmsmg.get_function("rms_norm_fwd"), M, [ptr(a), ptr(w), np.float32(eps), np.float32(off), ptr(y2), ptr(rs), idx(M), idx(N), idx(N), idx(M), ptr(ws)])
        check(f"rms_norm_fwd rstd {M}x{N}", rs, rstd.squeeze(1), rtol=1e-5, atol=1e-5)
        mg = torch.rand((N,), generator=g, dtype=torch.float64).to(torch.float32).to(dev)
        mg0 = mg.double().clone()
        dx3, out_mg = poison((M, N)), poison((N,), torch.float32)
        args = [ptr(a), ptr(w), np.float32(eps), np.float32(off), ptr(dc), ptr(rs), ptr(mg), ptr(dx3), ptr(out_mg), idx(M), idx(N), idx(N), idx(N), idx(N), idx(ctas), ptr(work)]
        launch(rmsmg.get_function("rms_norm_bwd"), ctas, args)
        launch(rmsmg.get_function("rms_norm_bwd_finalize"), (N + THREADS - 1) // THREADS, args)
        check(f"rms_norm bwd dx (saved rstd) {M}x{N}", dx3, want_dx)
        check(f"rms_norm main_grad + dw {M}x{N}", out_mg, mg0 + (dc64 * xhat).sum(dim=0), rtol=1e-4, atol=1e-3)
torch.cuda.synchronize()
print(f"{sum(results)} passed, {len(results) - sum(results)} failed")
