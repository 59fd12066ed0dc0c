"""tile.nn's modules -- RMSNorm, GatedMLP (SwiGLU and GeGLU), SwiGLUMLP and
TiledSwiGLUMLP -- against PyTorch and Hugging Face's modules (their state
dicts load either way), under torch.compile, and the main_grad contract over
micro-batches: on the CPU in float64 (the reference evaluator; with and
without Megatron-style hooks, aot_eager and Inductor, attach_main_grads); on
the GPU (the tests marked gpu) in bf16 through cuBLASLt (GEMMs with beta = 1
into fp32) against float64, eager and compiled. Skipped without
transformers. GroupedSwiGLUMLP: test_grouped_mlp.py; apply_tile:
test_transformers.py."""

import pytest
import torch

import tile
from conftest import (assert_close, gated_mlp, gelu_tanh, leaf, rms_norm,
                      swiglu_mlp)

transformers = pytest.importorskip("transformers")


# -- the modules against PyTorch and Hugging Face ------------------------------

def test_rms_norm_module_matches_and_loads_hf_state(generator):
    from transformers.models.llama.modeling_llama import LlamaRMSNorm
    from transformers.models.gemma.modeling_gemma import GemmaRMSNorm
    x = torch.randn(3, 5, 32, dtype=torch.float64, generator=generator)
    for hf_class, offset in ((LlamaRMSNorm, 0.0), (GemmaRMSNorm, 1.0)):
        hf = hf_class(32, eps=1e-5).double()
        ours = tile.nn.RMSNorm(32, 1e-5, offset, dtype=torch.float64)
        assert torch.equal(ours.weight, hf.weight)  # the same initial state
        with torch.no_grad():
            hf.weight.uniform_(-0.5, 0.5, generator=generator)
        ours.load_state_dict(hf.state_dict())
        assert_close(ours(x), rms_norm(x, hf.weight, 1e-5, offset),
                     torch.float64, hf_class.__name__)
        assert set(ours.state_dict()) == set(hf.state_dict())


@pytest.mark.parametrize("activation", ["silu", "gelu_pytorch_tanh"])
def test_gated_mlp_matches_hf(activation, generator):
    from transformers.models.llama.modeling_llama import LlamaMLP
    config = transformers.LlamaConfig(hidden_size=32, intermediate_size=48,
                                      hidden_act=activation)
    hf = LlamaMLP(config).double()
    ours = tile.nn.GatedMLP(32, 48, activation, dtype=torch.float64)
    ours.load_state_dict(hf.state_dict())
    x = torch.randn(2, 7, 32, dtype=torch.float64, generator=generator)
    a, b = leaf(x), leaf(x)
    hf(a).sum().backward()
    ours(b).sum().backward()
    # GeGLU's constants (sqrt(2/pi), 0.044715) are f32 in the kernel.
    dtype = torch.float64 if activation == "silu" else torch.float32
    assert_close(ours(x), hf(x), dtype, activation)
    assert_close(b.grad, a.grad, dtype, "dx")
    for p, q in zip(ours.parameters(), hf.parameters()):
        assert_close(p.grad, q.grad, dtype, "weight gradient")


def test_gated_mlp_multipliers_match_falcon_h1(generator):
    """Falcon-H1's MLP: act(gate(x) * m_gate) * up(x), its down projection
    times m_down; main_grad refused (its GEMMs take no multipliers)."""
    from transformers.models.falcon_h1.modeling_falcon_h1 import FalconH1MLP
    config = transformers.FalconH1Config(hidden_size=32, intermediate_size=48,
                                         mlp_multipliers=[0.7, 1.3])
    hf = FalconH1MLP(config).double()
    ours = tile.nn.GatedMLP(32, 48, gate_multiplier=0.7, down_multiplier=1.3,
                            dtype=torch.float64)
    ours.load_state_dict(hf.state_dict())
    x = torch.randn(2, 7, 32, dtype=torch.float64, generator=generator)
    a, b = leaf(x), leaf(x)
    hf(a).sum().backward()
    ours(b).sum().backward()
    assert_close(ours(x), hf(x), torch.float64, "y")
    assert_close(b.grad, a.grad, torch.float64, "dx")
    for p, q in zip(ours.parameters(), hf.parameters()):
        assert_close(p.grad, q.grad, torch.float64, "weight gradient")
    with pytest.raises(ValueError, match="multipliers"):
        tile.nn.GatedMLP(32, 48, gate_multiplier=0.7,
                         accumulate_into_main_grad=True)


def test_gated_mlp_compiles_fullgraph(generator):
    """The in-place activation backward (eager) and its functional form
    (traced) give the same gradients; torch.compile sees no graph break."""
    mlp = tile.nn.SwiGLUMLP(16, 32, dtype=torch.float64)
    x = torch.randn(4, 16, dtype=torch.float64, generator=generator)
    a, b = leaf(x), leaf(x)
    eager = mlp(a)
    eager.sum().backward()
    expected = [p.grad.clone() for p in mlp.parameters()]
    mlp.zero_grad(set_to_none=True)
    compiled = torch.compile(mlp, backend="aot_eager", fullgraph=True)(b)
    compiled.sum().backward()
    assert torch.equal(compiled, eager)
    assert torch.equal(b.grad, a.grad)
    for p, grad in zip(mlp.parameters(), expected):
        assert torch.equal(p.grad, grad)


def test_tiled_mlp_module_matches_reference(generator):
    mlp = tile.nn.TiledSwiGLUMLP(16, 24, "auto", dtype=torch.float64)
    x = torch.randn(4, 16, dtype=torch.float64, generator=generator)
    ref = swiglu_mlp(x, mlp.gate_proj.weight, mlp.up_proj.weight,
                     mlp.down_proj.weight)
    assert_close(mlp(x), ref, torch.float64, "tiled MLP")
    with pytest.raises(ValueError, match="shards must be 'auto'"):
        tile.nn.TiledSwiGLUMLP(16, 24, 0)
    with pytest.raises(ValueError, match="activation 'relu'"):
        tile.nn.GatedMLP(16, 24, "relu")


# -- the main_grad contract ----------------------------------------------------

def _modules(main_grad, generator):
    torch.manual_seed(int(torch.randint(0, 1 << 30, (1,),
                                        generator=generator)))
    kwargs = dict(accumulate_into_main_grad=main_grad, dtype=torch.float64)
    return [tile.nn.RMSNorm(16, 1e-6, **kwargs),
            tile.nn.SwiGLUMLP(16, 24, **kwargs),
            tile.nn.TiledSwiGLUMLP(16, 24, 2, **kwargs)]


@pytest.mark.parametrize("index", [0, 1, 2], ids=["RMSNorm", "SwiGLUMLP",
                                                  "TiledSwiGLUMLP"])
@pytest.mark.parametrize("hooks", [False, True])
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_main_grad_contract(index, hooks, compiled, generator):
    """Compiled (fullgraph), the traced backward adds to main_grad as a
    graph input, and the forward sets the flag."""
    state = torch.Generator().manual_seed(7)
    module = _modules(True, state)[index]
    reference = _modules(False, torch.Generator().manual_seed(7))[index]
    reference.load_state_dict(module.state_dict())
    run = module
    if compiled:
        torch._dynamo.reset()
        run = torch.compile(tile.nn.attach_main_grads(module),
                            backend="aot_eager", fullgraph=True)
    fired = []
    if hooks:
        # Megatron's DDP: a hook on each parameter's gradient accumulator
        # adds .grad to main_grad unless grad_added_to_main_grad says it is
        # there already; here it must find nothing to add.
        for p in module.parameters():
            def hook(param):
                fired.append(param.grad is not None)
                if param.grad is not None and \
                        not getattr(param, "grad_added_to_main_grad", False):
                    param.main_grad.add_(param.grad)
                param.grad = None
            p.register_post_accumulate_grad_hook(hook)
    for _ in range(3):  # micro-batches
        x = torch.randn(3, 5, 16, dtype=torch.float64, generator=generator)
        dy = torch.randn(3, 5, 16, dtype=torch.float64, generator=generator)
        a, b = leaf(x), leaf(x)
        run(a).backward(dy)
        reference(b).backward(dy)
        assert_close(a.grad, b.grad, torch.float64, "dx")
    for p, r in zip(module.parameters(), reference.parameters()):
        assert p.grad is None
        assert p.grad_added_to_main_grad is True
        assert p.main_grad.dtype == torch.float64
        assert p.main_grad.data_ptr() != r.grad.data_ptr()
        assert_close(p.main_grad, r.grad, torch.float64,
                     "main_grad = the sum of the micro-batches' gradients")
    # The hooks run (autograd visits the accumulators, which Megatron's
    # buckets count on to know a parameter is ready) but find no .grad.
    if hooks:
        assert len(fired) == 3 * len(list(module.parameters()))
    assert not any(fired)


def test_main_grad_under_compile_needs_it_attached_first(generator):
    """A compiled step cannot make main_grad (the backward adds to it as a
    graph input): the error says what to do, and attach_main_grads does
    it for every Tile module that uses the contract, and only those."""
    torch._dynamo.reset()
    model = torch.nn.Sequential(
        tile.nn.RMSNorm(16, accumulate_into_main_grad=True,
                        dtype=torch.float64),
        tile.nn.RMSNorm(16, dtype=torch.float64))
    x = leaf(torch.randn(4, 16, dtype=torch.float64, generator=generator))
    with pytest.raises(Exception, match="attach_main_grads"):
        torch.compile(model, backend="aot_eager", fullgraph=True)(x)
    assert getattr(model[0].weight, "main_grad", None) is None
    assert tile.nn.attach_main_grads(model) is model
    assert model[0].weight.main_grad.dtype == torch.float64
    assert torch.count_nonzero(model[0].weight.main_grad) == 0
    assert getattr(model[1].weight, "main_grad", None) is None


def test_main_grad_compiled_by_inductor(generator):
    """The same contract through Inductor (which may fuse the copy into
    main_grad): a norm and a tiled MLP, two micro-batches."""
    torch._dynamo.reset()
    kwargs = dict(accumulate_into_main_grad=True, dtype=torch.float64)
    model = torch.nn.Sequential(tile.nn.RMSNorm(16, **kwargs),
                                tile.nn.TiledSwiGLUMLP(16, 24, 2, **kwargs))
    reference = torch.nn.Sequential(
        tile.nn.RMSNorm(16, dtype=torch.float64),
        tile.nn.TiledSwiGLUMLP(16, 24, 2, dtype=torch.float64))
    reference.load_state_dict(model.state_dict())
    run = torch.compile(tile.nn.attach_main_grads(model), fullgraph=True)
    for _ in range(2):
        x = torch.randn(6, 16, dtype=torch.float64, generator=generator)
        a, b = leaf(x), leaf(x)
        run(a).sum().backward()
        reference(b).sum().backward()
        assert_close(a.grad, b.grad, torch.float64, "dx")
    for p, r in zip(model.parameters(), reference.parameters()):
        assert p.grad is None and p.grad_added_to_main_grad is True
        assert_close(p.main_grad, r.grad, torch.float64, "main_grad")


@pytest.mark.gpu
@pytest.mark.parametrize("make", [
    lambda: tile.nn.RMSNorm(512, 1e-6, accumulate_into_main_grad=True,
                            device="cuda", dtype=torch.bfloat16),
    lambda: tile.nn.SwiGLUMLP(512, 1024, accumulate_into_main_grad=True,
                              device="cuda", dtype=torch.bfloat16),
    lambda: tile.nn.GatedMLP(512, 1024, "gelu_pytorch_tanh",
                             accumulate_into_main_grad=True, device="cuda",
                             dtype=torch.bfloat16),
    lambda: tile.nn.TiledSwiGLUMLP(512, 1024, 3,
                                   accumulate_into_main_grad=True,
                                   device="cuda", dtype=torch.bfloat16),
], ids=["RMSNorm", "SwiGLUMLP", "GeGLUMLP", "TiledSwiGLUMLP"])
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_main_grad_on_the_gpu(make, compiled):
    """Compiled: torch.compile(fullgraph) with Inductor, the main_grads
    attached first (tile.nn.attach_main_grads)."""
    torch.manual_seed(2)
    module = make()
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn_like(p.float()) * p.shape[-1] ** -0.5)
    run = module
    if compiled:
        torch._dynamo.reset()
        run = torch.compile(tile.nn.attach_main_grads(module),
                            fullgraph=True)
    exact = [p.detach().double() for p in module.parameters()]
    expected = [torch.zeros_like(e) for e in exact]
    for _ in range(3):
        x = leaf(torch.randn(700, 512, device="cuda").bfloat16())
        dy = torch.randn(700, 512, device="cuda").bfloat16()
        run(x).backward(dy)
        # The float64 reference: the same module's math on float64 copies.
        ref_params = [leaf(e) for e in exact]
        ref_x = leaf(x.double())
        _reference(module, ref_x, ref_params).backward(dy.double())
        assert_close(x.grad, ref_x.grad, torch.bfloat16, "dx")
        for e, r in zip(expected, ref_params):
            e += r.grad
    for p, e in zip(module.parameters(), expected):
        assert p.grad is None and p.grad_added_to_main_grad
        assert p.main_grad.dtype == torch.float32
        assert_close(p.main_grad, e, torch.bfloat16, "main_grad")


def _reference(module, x, params):
    if isinstance(module, tile.nn.RMSNorm):
        return rms_norm(x, params[0], module.eps, module.offset)
    if getattr(module, "activation", "silu") != "silu":
        return gated_mlp(x, *params, act=gelu_tanh)
    return gated_mlp(x, *params)
