"""tile.ops.grouped_swiglu_mlp and tile.nn.GroupedSwiGLUMLP, the dense
MLP's code path over E experts (tile/mlp.py). On the CPU (runs in CI): the
float64 steps per expert (GEMMs in torch, SwiGLU and its derived backward on
the reference evaluator) with gradcheck, bf16/f32 against float64, the
main_grad contract with Megatron-style hooks, Hugging Face state dicts,
torch.compile and opcheck of the custom ops, errors. On the GPU (the tests
marked gpu; tile::ops::GroupedSwiGLUMLP through the C API): forward and
gradients against a float64 per-expert reference for E in {1, 3, 8} with
uneven and zero splits, H in {64, 100}, I in {128, 300}, bf16/f16/f32 and
several shard counts, tiled and untiled; the main_grad contract over
micro-batches; CUDA-graph replay; splits as a CUDA tensor; one expert equal
to the dense MLP; errors. The dense MLP: test_mlp.py."""

import pytest
import torch

import tile
from conftest import (assert_close, assert_replay_matches, capture,
                      grouped_swiglu_mlp, leaf, randn)


# The CPU tests' splits; the GPU tests' are larger.
SPLITS = [(7,), (5, 0, 12), (0, 3, 17, 0, 1, 9, 0, 6)]
GPU_SPLITS = [(37,), (5, 0, 12), (0, 30, 170, 0, 1, 90, 0, 60)]


def make(splits, hidden, inter, dtype, generator=None, scale=0.3):
    """x [T, H], gate_up [E, 2I, H] and down [E, H, I] for `splits`. With a
    generator (the CPU tests): float64 normal values times `scale`, stored in
    `dtype`. Without one (the GPU tests): on the GPU, the weights scaled by
    their fan-in to the power -1/2."""
    experts, tokens = len(splits), sum(splits)
    if generator is None:
        return (randn((tokens, hidden), dtype),
                randn((experts, 2 * inter, hidden), dtype, hidden ** -0.5),
                randn((experts, hidden, inter), dtype, inter ** -0.5))

    def draw(*shape):
        return (torch.randn(*shape, dtype=torch.float64, generator=generator)
                * scale).to(dtype)
    return (draw(tokens, hidden), draw(experts, 2 * inter, hidden),
            draw(experts, hidden, inter))


# -- against float64 -----------------------------------------------------------

@pytest.mark.parametrize("splits", SPLITS)
def test_float64_matches_the_reference_and_gradcheck(splits, generator):
    x, gate_up, down = make(splits, 8, 12, torch.float64, generator)
    args = [leaf(t) for t in (x, gate_up, down)]
    y = tile.ops.grouped_swiglu_mlp(*args, list(splits))
    assert_close(y, grouped_swiglu_mlp(x, gate_up, down, splits),
                 torch.float64, "forward")
    assert torch.autograd.gradcheck(
        lambda *a: tile.ops.grouped_swiglu_mlp(*a, splits, shards=2), args)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("hidden,inter", [(64, 128), (100, 300)])
def test_low_precision_matches_float64(dtype, hidden, inter, generator):
    splits = SPLITS[2]
    tensors = make(splits, hidden, inter, dtype, generator)
    dy = (torch.randn(sum(splits), hidden, dtype=torch.float64,
                      generator=generator)).to(dtype)
    args = [leaf(t) for t in tensors]
    y = tile.ops.grouped_swiglu_mlp(*args, torch.tensor(splits), shards=3)
    y.backward(dy)
    refs = [leaf(t.double()) for t in tensors]
    grouped_swiglu_mlp(*refs, splits).backward(dy.double())
    assert_close(y, grouped_swiglu_mlp(*tensors, splits), dtype, "forward")
    for got, want, name in zip(args, refs, ("x", "gate_up", "down")):
        assert got.grad.dtype == dtype
        assert_close(got.grad, want.grad, dtype, f"d{name}")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16,
                                   torch.float32])
@pytest.mark.parametrize("splits", GPU_SPLITS)
@pytest.mark.parametrize("hidden,inter", [(64, 128), (100, 300)])
@pytest.mark.parametrize("shards,recompute", [(0, True), (3, True),
                                              (0, False)])
@pytest.mark.parametrize("where", ["host", "device"])
def test_matches_float64(dtype, splits, hidden, inter, shards, recompute,
                         where):
    # Device splits: bf16 at H 64, I 128 runs the grouped GEMM reading them
    # on the GPU; the others copy them to the host first.
    torch.manual_seed(0)
    tensors = make(splits, hidden, inter, dtype)
    dy = randn((sum(splits), hidden), dtype)
    args = [leaf(t) for t in tensors]
    given = splits if where == "host" else torch.tensor(splits, device="cuda")
    y = tile.ops.grouped_swiglu_mlp(*args, given, shards=shards,
                                    recompute=recompute)
    y.backward(dy)
    refs = [leaf(t.double()) for t in tensors]
    ref = grouped_swiglu_mlp(*refs, splits)
    ref.backward(dy.double())
    assert_close(y, ref, dtype, "forward")
    for got, want, name in zip(args, refs, ("x", "gate_up", "down")):
        assert got.grad.dtype == dtype
        assert_close(got.grad, want.grad, dtype, f"d{name}")


@pytest.mark.gpu
def test_splits_on_the_device_give_the_same_bits():
    torch.manual_seed(2)
    splits = (100, 0, 412)
    tensors = make(splits, 256, 512, torch.bfloat16)
    on_host = tile.ops.grouped_swiglu_mlp(*tensors, splits)
    on_device = tile.ops.grouped_swiglu_mlp(
        *tensors, torch.tensor(splits, device="cuda"))
    assert torch.equal(on_host, on_device)


@pytest.mark.gpu
@pytest.mark.parametrize("experts", [64, 128])
@pytest.mark.parametrize("recompute", [True, False])
def test_many_experts_with_device_splits_match_float64(experts, recompute):
    """The grouped GEMM over E up to 128, a third of them without tokens,
    the splits an int32 CUDA tensor (as a router's counts). Autograd's
    gradients are written over NaN-filled memory (the allocator's, reused):
    the experts without tokens must get exact zeros. Then the main_grad
    contract: fp32 main_grad added to over two micro-batches."""
    torch.manual_seed(experts)
    counts = torch.randint(0, 48, (experts,))
    counts[torch.arange(experts) % 3 == 1] = 0
    splits = tuple(counts.tolist())
    hidden, inter = 256, 384
    x, gate_up, down = make(splits, hidden, inter, torch.bfloat16)
    dy = randn((sum(splits), hidden), torch.bfloat16)
    device_splits = counts.to(device="cuda", dtype=torch.int32)
    refs = [leaf(t.double()) for t in (x, gate_up, down)]
    grouped_swiglu_mlp(*refs, splits).backward(dy.double())

    args = [leaf(t) for t in (x, gate_up, down)]
    poison = torch.full((4 * gate_up.numel(),), float("nan"), device="cuda")
    del poison  # its blocks go back to the allocator, NaN-filled
    y = tile.ops.grouped_swiglu_mlp(*args, device_splits, recompute=recompute)
    y.backward(dy)
    for got, want, name in zip(args, refs, ("x", "gate_up", "down")):
        assert_close(got.grad, want.grad, torch.bfloat16, f"d{name}")
    empty = counts == 0
    assert torch.all(args[1].grad[empty] == 0)
    assert torch.all(args[2].grad[empty] == 0)

    module = tile.nn.GroupedSwiGLUMLP(experts, hidden, inter,
                                      accumulate_into_main_grad=True,
                                      recompute=recompute, device="cuda",
                                      dtype=torch.bfloat16)
    with torch.no_grad():
        module.gate_up_proj.copy_(gate_up)
        module.down_proj.copy_(down)
    for p in module.parameters():
        p.main_grad = torch.zeros(p.shape, device="cuda")
    for _ in range(2):
        module(leaf(x), device_splits).backward(dy)
    assert_close(module.gate_up_proj.main_grad, 2 * refs[1].grad,
                 torch.bfloat16, "main_grad gate_up, two micro-batches")
    assert_close(module.down_proj.main_grad, 2 * refs[2].grad,
                 torch.bfloat16, "main_grad down, two micro-batches")


@pytest.mark.gpu
def test_device_splits_that_do_not_sum_to_the_tokens_stop_the_step():
    """A wrong count on the device is never a silently wrong result: the
    grouped GEMM's setup kernel stops with a message (in a subprocess: a
    device-side trap ends the CUDA context)."""
    import subprocess
    import sys
    script = (
        "import torch, tile\n"
        "x = torch.randn(64, 64, device='cuda', dtype=torch.bfloat16)\n"
        "w = torch.randn(3, 256, 64, device='cuda', dtype=torch.bfloat16)\n"
        "d = torch.randn(3, 64, 128, device='cuda', dtype=torch.bfloat16)\n"
        "s = torch.tensor([30, 30, 30], device='cuda')\n"
        "try:\n"
        "    tile.ops.grouped_swiglu_mlp(x, w, d, s)\n"
        "    torch.cuda.synchronize()\n"
        "except Exception as e:\n"
        "    print(e)\n"
        "    raise SystemExit(1)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    # The driver's assert message, and the error the next call sees.
    assert "must be >= 0 and sum to the token rows" in done.stderr + \
        done.stdout, done.stdout + done.stderr
    assert "CUDA_ERROR_ASSERT" in done.stdout, done.stdout


@pytest.mark.gpu
def test_one_expert_is_the_dense_mlp():
    torch.manual_seed(4)
    x, gate_up, down = make((500,), 256, 512, torch.bfloat16)
    grouped = tile.ops.grouped_swiglu_mlp(x, gate_up, down, [500], shards=2)
    dense = tile.ops.swiglu_mlp(x, gate_up[0, :512], gate_up[0, 512:],
                                down[0], shards=2)
    assert torch.equal(grouped, dense)


# -- main_grad -----------------------------------------------------------------

@pytest.mark.parametrize("recompute", [True, False],
                         ids=["tiled", "untiled"])
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_main_grad_contract_over_micro_batches(recompute, compiled,
                                               generator):
    """Gradients go into main_grad, grad_added_to_main_grad is set before
    the parameters' hooks run, autograd gets None, and nothing is counted
    twice over three micro-batches — with a hook on every parameter that
    adds .grad to main_grad unless the flag says it is there (Megatron's
    DDP does this). Compiled (fullgraph), the forward sets the flag again
    after the loop clears it."""
    splits = (4, 0, 6)
    mlp = tile.nn.GroupedSwiGLUMLP(3, 16, 24, accumulate_into_main_grad=True,
                                   recompute=recompute, dtype=torch.float64)
    run = mlp
    if compiled:
        torch._dynamo.reset()
        run = torch.compile(tile.nn.attach_main_grads(mlp),
                            backend="aot_eager", fullgraph=True)

    def megatron_hook(p):
        if p.grad is not None and not p.grad_added_to_main_grad:
            p.main_grad.add_(p.grad)
        p.grad = None

    for p in mlp.parameters():
        p.register_post_accumulate_grad_hook(megatron_hook)
    expected = [torch.zeros_like(p) for p in mlp.parameters()]
    for _ in range(3):
        for p in mlp.parameters():
            p.grad_added_to_main_grad = False
        x = leaf(torch.randn(10, 16, dtype=torch.float64,
                             generator=generator))
        dy = torch.randn(10, 16, dtype=torch.float64, generator=generator)
        run(x, splits).backward(dy)
        refs = [leaf(t) for t in (x, mlp.gate_up_proj, mlp.down_proj)]
        grouped_swiglu_mlp(*refs, splits).backward(dy)
        assert_close(x.grad, refs[0].grad, torch.float64, "dx")
        for e, r in zip(expected, refs[1:]):
            e += r.grad
        for p in mlp.parameters():
            assert p.grad is None  # never handed to autograd as well
            assert p.grad_added_to_main_grad
    for p, e in zip(mlp.parameters(), expected):
        assert_close(p.main_grad, e, torch.float64, "main_grad")
        # Expert 1 had no tokens: its gradient is exactly zero.
        assert torch.count_nonzero(p.main_grad[1]) == 0


@pytest.mark.gpu
@pytest.mark.parametrize("shards,recompute,compiled", [
    (3, True, False), (3, True, True), ("auto", False, True)],
    ids=["eager", "compiled", "compiled-untiled"])
def test_main_grad_contract_over_micro_batches_on_the_gpu(shards, recompute, compiled):
    """Compiled: torch.compile(fullgraph) with Inductor; the traced
    backward adds to the main_grads the loop attached."""
    torch.manual_seed(1)
    splits = (300, 0, 150, 250)
    mlp = tile.nn.GroupedSwiGLUMLP(4, 256, 384, shards=shards,
                                   accumulate_into_main_grad=True,
                                   recompute=recompute, device="cuda",
                                   dtype=torch.bfloat16)
    run = mlp
    if compiled:
        torch._dynamo.reset()
        run = torch.compile(mlp, fullgraph=True)
    params = (mlp.gate_up_proj, mlp.down_proj)
    for p in params:  # a main_grad attached by the training loop
        p.main_grad = torch.full(p.shape, 0.25, device="cuda")
    expected = [torch.full(p.shape, 0.25, dtype=torch.float64, device="cuda")
                for p in params]
    for _ in range(3):
        x = leaf(randn((700, 256), torch.bfloat16))
        dy = randn((700, 256), torch.bfloat16)
        run(x, splits).backward(dy)
        refs = [leaf(t.double()) for t in (x, *params)]
        grouped_swiglu_mlp(*refs, splits).backward(dy.double())
        assert_close(x.grad, refs[0].grad, torch.bfloat16, "dx")
        for e, r in zip(expected, refs[1:]):
            e += r.grad
    for p, e in zip(params, expected):
        assert p.grad is None
        assert p.grad_added_to_main_grad
        assert_close(p.main_grad, e, torch.bfloat16, "main_grad")
        assert torch.all(p.main_grad[1] == 0.25)  # expert 1: no tokens


@pytest.mark.gpu
def test_untiled_layers_keep_their_own_activations():
    # Two layers' forwards, then their backwards in reverse (what autograd
    # does): each backward must run on its own forward's g, u and h, which
    # one operator keeps per workspace; with main_grad, over two micro-
    # batches.
    torch.manual_seed(6)
    splits = (200, 0, 56, 256)
    layers = [tile.nn.GroupedSwiGLUMLP(4, 128, 256, recompute=False,
                                       accumulate_into_main_grad=True,
                                       device="cuda", dtype=torch.bfloat16)
              for _ in range(2)]
    expected = {}
    for _ in range(2):
        x = leaf(randn((512, 128), torch.bfloat16))
        dy = randn((512, 128), torch.bfloat16)
        layers[1](layers[0](x, splits), splits).backward(dy)
        refs = [leaf(x.double())]
        hidden = refs[0]
        for layer in layers:
            weights = [leaf(p.double()) for p in (layer.gate_up_proj,
                                                  layer.down_proj)]
            refs += weights
            hidden = grouped_swiglu_mlp(hidden, *weights, splits)
        hidden.backward(dy.double())
        assert_close(x.grad, refs[0].grad, torch.bfloat16, "dx")
        params = [p for layer in layers
                  for p in (layer.gate_up_proj, layer.down_proj)]
        for p, r in zip(params, refs[1:]):
            expected[p] = expected.get(p, 0) + r.grad
    for p, want in expected.items():
        assert p.grad is None
        assert_close(p.main_grad, want, torch.bfloat16, "main_grad")


# -- Hugging Face --------------------------------------------------------------

def test_state_dict_loads_from_hugging_face_experts():
    transformers = pytest.importorskip("transformers")
    from transformers.models.qwen3_moe import modeling_qwen3_moe
    config = transformers.Qwen3MoeConfig(
        hidden_size=16, moe_intermediate_size=24, num_experts=4,
        num_experts_per_tok=2, hidden_act="silu")
    experts = modeling_qwen3_moe.Qwen3MoeExperts(config)
    torch.nn.init.normal_(experts.gate_up_proj, std=0.3)
    torch.nn.init.normal_(experts.down_proj, std=0.3)
    ours = tile.nn.GroupedSwiGLUMLP(4, 16, 24)
    ours.load_state_dict(experts.state_dict())
    assert ours.state_dict().keys() == experts.state_dict().keys()
    # Route every token to one expert with weight 1: Hugging Face's experts
    # then compute exactly the grouped MLP.
    splits = (3, 0, 5, 2)
    x = torch.randn(10, 16)
    index = torch.repeat_interleave(torch.arange(4), torch.tensor(splits))
    top_k_index = index[:, None]
    top_k_weights = torch.ones(10, 1)
    want = experts(x, top_k_index, top_k_weights)
    assert_close(ours(x, splits), want, torch.float32, "forward")


# -- torch.compile, custom ops and CUDA graphs ---------------------------------

@pytest.mark.parametrize("shards,recompute", [(2, True), (0, False)])
def test_torch_compile_fullgraph(shards, recompute, generator):
    # recompute=False goes through its own custom ops (the kept workspace
    # is an output of the forward's and an input the backward's writes).
    torch._dynamo.reset()
    splits = (3, 0, 2)
    tensors = make(splits, 8, 12, torch.float64, generator)

    def step(x, gate_up, down):
        return tile.ops.grouped_swiglu_mlp(x, gate_up, down, splits,
                                           shards=shards,
                                           recompute=recompute).sum()

    eager = [leaf(t) for t in tensors]
    step(*eager).backward()
    compiled = [leaf(t) for t in tensors]
    torch.compile(step, fullgraph=True, backend="aot_eager")(
        *compiled).backward()
    for e, c in zip(eager, compiled):
        assert_close(c.grad, e.grad, torch.float64, "compiled gradient")


def test_untiled_custom_ops_pass_opcheck(generator):
    splits = [3, 0, 2]
    x, gate_up, down = make(tuple(splits), 8, 12, torch.float32, generator)
    dy = torch.randn(x.shape, generator=generator)
    torch.library.opcheck(torch.ops.tile.swiglu_mlp_untiled,
                          (x, gate_up, None, down, splits, None))
    kept = torch.empty(0, dtype=torch.uint8)
    grads = [torch.empty(gate_up.shape), torch.empty(down.shape)]
    torch.library.opcheck(torch.ops.tile.swiglu_mlp_backward,
                          (x, gate_up, None, down, dy, splits, None, 0, 0, kept,
                           grads, True))


def test_main_grad_custom_ops_pass_opcheck(generator):
    """The ops a traced main_grad backward runs declare that they write
    main_grad (and the kept workspace)."""
    splits = [3, 0, 2]
    x, gate_up, down = make(tuple(splits), 8, 12, torch.float32, generator)
    dy = torch.randn(x.shape, generator=generator)
    into = [torch.zeros(gate_up.shape), torch.zeros(down.shape)]
    kept = torch.empty(0, dtype=torch.uint8)
    torch.library.opcheck(torch.ops.tile.swiglu_mlp_backward,
                          (x, gate_up, None, down, dy, splits, None, 0, 0, kept,
                           into, False))
    # The dense MLP: one expert, its weights [1, ...] views, splits None.
    gate, up = gate_up[:1, :12], gate_up[:1, 12:]
    into = [torch.zeros(gate.shape), torch.zeros(up.shape),
            torch.zeros(down[:1].shape)]
    torch.library.opcheck(torch.ops.tile.swiglu_mlp_backward,
                          (x, gate.contiguous(), up.contiguous(),
                           down[:1].contiguous(), dy, None, None, 2, 0, kept,
                           into, False))
    dg = torch.randn(x.shape[0], 12, generator=generator)
    torch.library.opcheck(torch.ops.tile.matmul_into,
                          (torch.zeros(12, 8), dg, x, True, False, 1.0))


@pytest.mark.gpu
@pytest.mark.parametrize("shards,recompute", [(2, True), (0, False)])
def test_cuda_graph_replay_gives_the_eager_bits(shards, recompute):
    # The experts' GEMM streams fork and join inside the capture.
    torch.manual_seed(3)
    splits = (256, 0, 512, 256)
    x0, *ws0 = make(splits, 512, 1024, torch.bfloat16)
    dy = randn((1024, 512), torch.bfloat16)

    def step(x, gate_up, down):
        y = tile.ops.grouped_swiglu_mlp(x, gate_up, down, splits,
                                        shards=shards, recompute=recompute)
        loss = (y.float() * dy.float()).sum()
        return (y, *torch.autograd.grad(loss, (x, gate_up, down)))

    eager = [t.detach().clone() for t in step(*[leaf(t) for t in (x0, *ws0)])]
    args = [leaf(t) for t in (x0, *ws0)]
    assert_replay_matches(step, args, eager)


@pytest.mark.gpu
@pytest.mark.parametrize("shards,recompute", [(2, True), (0, False)])
def test_cuda_graph_with_device_splits_follows_new_splits(shards, recompute):
    """A MoE step's forward and backward captured once with the splits on
    the device: nothing in it reads them on the host, so writing a router's
    next counts into the same tensor and replaying gives that split's eager
    result, bit for bit."""
    torch.manual_seed(5)
    first, second = (256, 0, 512, 256), (100, 600, 0, 324)
    x0, *ws0 = make(first, 512, 1024, torch.bfloat16)
    dy = randn((1024, 512), torch.bfloat16)
    splits = torch.tensor(first, device="cuda")

    def step(x, gate_up, down):
        y = tile.ops.grouped_swiglu_mlp(x, gate_up, down, splits,
                                        shards=shards, recompute=recompute)
        loss = (y.float() * dy.float()).sum()
        return (y, *torch.autograd.grad(loss, (x, gate_up, down)))

    def eager_with(counts):
        splits.copy_(torch.tensor(counts))
        return [t.detach().clone()
                for t in step(*[leaf(t) for t in (x0, *ws0)])]

    want_second = eager_with(second)
    want_first = eager_with(first)
    args = [leaf(t) for t in (x0, *ws0)]
    assert_replay_matches(step, args, want_first)
    graph, graph_outputs = capture(step, *args)
    splits.copy_(torch.tensor(second))
    graph.replay()
    torch.cuda.synchronize()
    for got, want in zip(graph_outputs, want_second):
        assert torch.equal(got, want)


@pytest.mark.gpu
def test_compiled_with_device_splits_compiles_once():
    """Under torch.compile the device splits are a tensor input: new counts
    every step reuse one graph (host splits are constants, one graph
    each)."""
    torch._dynamo.reset()
    torch.manual_seed(6)
    x, gate_up, down = make((128, 128, 128, 128), 256, 384, torch.bfloat16)
    module = tile.nn.GroupedSwiGLUMLP(4, 256, 384, device="cuda",
                                      dtype=torch.bfloat16)
    with torch.no_grad():
        module.gate_up_proj.copy_(gate_up)
        module.down_proj.copy_(down)
    compiled = torch.compile(module, fullgraph=True)
    counts = [(128, 128, 128, 128), (500, 0, 12, 0), (1, 2, 3, 506),
              (0, 0, 0, 512)]
    from torch._dynamo.utils import counters
    counters.clear()
    for c in counts:
        splits = torch.tensor(c, device="cuda")
        y = compiled(leaf(x), splits)
        want = module(x, splits)
        assert torch.equal(y, want)
        y.float().sum().backward()
    assert counters["stats"]["unique_graphs"] == 1, dict(counters["stats"])


# -- the experts of a mixture-of-experts layer, as a router leaves them ---------

def moe_reference(x, top_k_index, top_k_weights, gate_up, down):
    """Hugging Face's MoE experts' loop (Qwen3-MoE, Mixtral), float64: each
    token's chosen experts, weighted; an index of E adds nothing."""
    inter = gate_up.shape[1] // 2
    out = torch.zeros_like(x)
    for e in range(gate_up.shape[0]):
        token, slot = torch.where(top_k_index == e)
        h = x[token]
        y = swiglu_mlp_rows(h, gate_up[e, :inter], gate_up[e, inter:],
                            down[e])
        out = out.index_add(0, token, y * top_k_weights[token, slot, None])
    return out


def swiglu_mlp_rows(x, gate, up, down):
    g, u = x @ gate.T, x @ up.T
    return (g * torch.sigmoid(g) * u) @ down.T


def routed(tokens, experts, choices, generator, device="cpu"):
    """A router's top-k indices and softmax weights for `tokens` tokens."""
    logits = torch.randn(tokens, experts, generator=generator).to(device)
    weights, index = torch.topk(torch.softmax(logits, -1), choices)
    return index, weights / weights.sum(-1, keepdim=True)


def scaled_experts(tokens, hidden, inter, experts, generator):
    """float64 x [T, H] and experts gate_up [E, 2I, H], down [E, H, I],
    scaled so that every intermediate is O(1)."""
    x = torch.randn(tokens, hidden, generator=generator, dtype=torch.float64)
    gate_up = torch.randn(experts, 2 * inter, hidden, generator=generator,
                          dtype=torch.float64) * hidden ** -0.5
    down = torch.randn(experts, hidden, inter, generator=generator,
                       dtype=torch.float64) * inter ** -0.5
    return x, gate_up, down


def test_moe_experts_match_the_loop_in_float64(generator):
    x, gate_up, down = make((7, 5), 8, 12, torch.float64, generator)
    experts = 5
    gate_up = torch.randn(experts, 24, 8, dtype=torch.float64,
                          generator=generator) * 0.3
    down = torch.randn(experts, 8, 12, dtype=torch.float64,
                       generator=generator) * 0.3
    index, weights = routed(12, experts, 2, generator)
    index[3, 1] = experts  # a dropped choice adds nothing
    weights = weights.double()
    args = [leaf(t) for t in (x, weights, gate_up, down)]
    got = tile.ops.moe_experts(args[0], index, *args[1:])
    refs = [leaf(t) for t in (x, weights, gate_up, down)]
    want = moe_reference(refs[0], index, *refs[1:])
    assert_close(got, want, torch.float64, "forward")
    dy = torch.randn(want.shape, dtype=torch.float64, generator=generator)
    got.backward(dy)
    want.backward(dy)
    for a, b, name in zip(args, refs, ("x", "weights", "gate_up", "down")):
        assert_close(a.grad, b.grad, torch.float64, f"d{name}")


def test_moe_experts_sum_by_token_in_chunks(generator, monkeypatch):
    """The experts' rows go back into their tokens as the same float64 sum
    whether gathered at once or a few tokens at a time (the eager path for
    long sequences), ragged last chunk included."""
    import tile.moe
    x, gate_up, down = scaled_experts(13, 8, 12, 4, generator)
    index, weights = routed(13, 4, 3, generator)
    weights = weights.double()
    results = []
    for rows in (10 ** 6, 7):  # everything at once; 2 tokens at a time
        monkeypatch.setattr(tile.moe, "_SUM_ROWS", rows)
        args = [leaf(t) for t in (x, weights, gate_up, down)]
        got = tile.ops.moe_experts(args[0], index, *args[1:])
        got.backward(torch.ones_like(got))
        results.append((got, args[0].grad))
    want = moe_reference(*(leaf(t) for t in (x,)), index,
                         *(leaf(t) for t in (weights, gate_up, down)))
    for got, _ in results:
        assert_close(got, want, torch.float64, "forward")
    assert torch.equal(results[0][0], results[1][0])
    assert torch.equal(results[0][1], results[1][1])


def test_moe_experts_keep_nothing_of_the_routed_rows(generator):
    """Of size [T*K, H] the step keeps nothing: the tokens gathered by
    expert are gathered again in the backward, and the routing weights
    scale h inside the MLP, so their gradient needs no experts' outputs.
    Three were kept at first (the MLP's input, the product's operands and
    index_add_'s source), then one (the outputs, for the weights'
    gradient)."""
    tokens, hidden, choices = 12, 8, 2
    x = torch.randn(tokens, hidden, dtype=torch.float64, generator=generator,
                    requires_grad=True)
    gate_up = torch.randn(5, 24, hidden, dtype=torch.float64,
                          generator=generator, requires_grad=True)
    down = torch.randn(5, hidden, 12, dtype=torch.float64,
                       generator=generator, requires_grad=True)
    index, weights = routed(tokens, 5, choices, generator)
    weights = weights.double().requires_grad_()
    shapes = []

    def pack(t):
        shapes.append(tuple(t.shape))
        return t
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y = tile.ops.moe_experts(x, index, weights, gate_up, down)
    assert (tokens * choices, hidden) not in shapes, shapes
    y.sum().backward()
    assert x.grad is not None and weights.grad is not None


@pytest.mark.parametrize("device", [
    "cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("recompute", [False, True],
                         ids=["untiled", "tiled"])
@pytest.mark.parametrize("weights_dtype", [torch.bfloat16, torch.float32])
def test_moe_experts_bf16_against_float64(weights_dtype, recompute, device):
    """bf16 experts against the float64 loop: the output and every
    gradient, the routing weights' included (a row sum of the derived
    scaled_silu_and_mul backward), with bf16 routing weights (Qwen3-MoE's)
    and fp32 ones (DeepSeek-V3's router keeps them in fp32), untiled and
    tiled (four shards: each reads and writes its rows of the routing
    weights and their gradient). On the GPU the grouped GEMM's path; on
    the CPU the evaluator's, rounded where the GPU rounds."""
    generator = torch.Generator().manual_seed(7)
    tokens, hidden, inter, experts, choices = 300, 256, 128, 8, 2
    x, gate_up, down = scaled_experts(tokens, hidden, inter, experts,
                                      generator)
    index, weights = routed(tokens, experts, choices, generator)
    index[5, 1] = experts  # a dropped choice
    dy = torch.randn(tokens, hidden, generator=generator).bfloat16()
    dtypes = (torch.bfloat16, weights_dtype, torch.bfloat16, torch.bfloat16)
    # The reference computes exactly from the values the GPU is given.
    refs = [leaf(t.to(d).double())
            for t, d in zip((x, weights, gate_up, down), dtypes)]
    want = moe_reference(refs[0], index, *refs[1:])
    want.backward(dy.double())
    args = [leaf(t.to(device, d)) for t, d in zip(refs, dtypes)]
    got = tile.ops.moe_experts(args[0], index.to(device), *args[1:],
                               recompute=recompute,
                               shards=4 if recompute else 0)
    got.backward(dy.to(device))
    assert_close(got, want, torch.bfloat16, "forward")
    for a, b, name in zip(args, refs, ("x", "weights", "gate_up", "down")):
        assert a.grad.dtype == a.dtype, name
        assert_close(a.grad, b.grad, torch.bfloat16, f"d{name}")


@pytest.mark.gpu
def test_moe_experts_float32_takes_the_per_expert_path():
    """fp32 experts (no grouped GEMM: cuBLASLt per expert, the device
    splits copied to the host) with main_grad: the routing weights and
    their gradient through the same C call, against float64."""
    generator = torch.Generator().manual_seed(3)
    tokens, hidden, inter, experts, choices = 64, 32, 16, 4, 2
    x, gate_up, down = scaled_experts(tokens, hidden, inter, experts,
                                      generator)
    index, weights = routed(tokens, experts, choices, generator)
    refs = [leaf(t.double()) for t in (x, weights, gate_up, down)]
    want = moe_reference(refs[0], index, *refs[1:])
    dy = torch.randn(tokens, hidden, generator=generator, dtype=torch.float64)
    want.backward(dy)
    args = [leaf(t.to("cuda", torch.float32)) for t in refs]
    for w in args[2:]:
        w.main_grad = torch.zeros(w.shape, device="cuda")
    got = tile.ops.moe_experts(args[0], index.cuda(), *args[1:],
                               main_grad=True)
    got.backward(dy.float().cuda())
    assert_close(got, want, torch.float32, "forward")
    for a, b, name in zip(args[:2], refs[:2], ("x", "weights")):
        assert_close(a.grad, b.grad, torch.float32, f"d{name}")
    for a, b, name in zip(args[2:], refs[2:], ("gate_up", "down")):
        assert a.grad is None, name
        assert_close(a.main_grad, b.grad, torch.float32, f"main_grad {name}")


def test_routed_step_holds_one_gemm_workspace():
    """The routed step's GEMMs run on one stream (moe._ROUTED_STREAMS): its
    scratch holds one cuBLASLt workspace beside h, where the default four
    streams would hold three more (96 MiB at every layer's backward); what
    its forward keeps (g and u) does not depend on the streams."""
    import tile.moe
    rows, inter, experts = 32768, 768, 64
    x = torch.empty(rows, 8, dtype=torch.bfloat16, device="meta")
    gate_up = torch.empty(experts, 2 * inter, 8, dtype=torch.bfloat16,
                          device="meta")
    kept, scratch = tile.moe._untiled_bytes(x, gate_up)
    kept4, scratch4 = tile.mlp.untiled_workspace_bytes(
        rows, inter, torch.bfloat16, experts=experts, apart=True)
    workspace = tile._capi.MATMUL_WORKSPACE_BYTES
    assert kept == kept4 == 2 * rows * inter * 2
    assert scratch == workspace + rows * inter * 2
    assert scratch4 - scratch == 3 * workspace


def test_moe_experts_errors(generator):
    x = torch.randn(4, 8)
    gate_up, down = torch.randn(3, 24, 8), torch.randn(3, 8, 12)
    index = torch.zeros(4, 2, dtype=torch.int64)
    with pytest.raises(ValueError, match="top_k_index and top_k_weights"):
        tile.ops.moe_experts(x, index, torch.ones(4, 3), gate_up, down)
    with pytest.raises(TypeError, match="must hold integers"):
        tile.ops.moe_experts(x, index.float(), torch.ones(4, 2), gate_up,
                             down)


@pytest.mark.gpu
def test_moe_layer_captured_in_a_cuda_graph_follows_its_router():
    """A whole MoE layer's forward and backward (router top-k, the token
    permutation, the grouped MLP, the weighted scatter back) in one CUDA
    graph: new router logits written into its input and replayed give that
    routing's eager result, bit for bit, and match float64."""
    torch.manual_seed(8)
    experts, hidden, inter, tokens = 16, 256, 384, 1024
    module = tile.nn.MoEExperts(experts, hidden, inter, device="cuda",
                                dtype=torch.bfloat16)
    x = randn((tokens, hidden), torch.bfloat16).requires_grad_()
    logits = torch.randn(tokens, experts, device="cuda")
    dy = randn((tokens, hidden), torch.bfloat16)

    def step():
        weights, index = torch.topk(torch.softmax(logits, -1), 2)
        y = module(x, index, weights.to(torch.bfloat16))
        return (y, *torch.autograd.grad((y.float() * dy.float()).sum(),
                                        (x, module.gate_up_proj,
                                         module.down_proj)))

    def eager():
        return [t.detach().clone() for t in step()]

    first = logits.clone()
    second = torch.randn(tokens, experts, device="cuda")
    logits.copy_(second)
    want_second = eager()
    logits.copy_(first)
    want_first = eager()
    graph, captured = capture(step)
    for want, counts in ((want_second, second), (want_first, first)):
        logits.copy_(counts)
        graph.replay()
        torch.cuda.synchronize()
        for got, expected in zip(captured, want):
            assert torch.equal(got, expected)
    # And the routed layer against float64.
    weights, index = torch.topk(torch.softmax(logits, -1), 2)
    refs = [leaf(t.double()) for t in (x, module.gate_up_proj,
                                       module.down_proj)]
    ref = moe_reference(refs[0], index, weights.to(torch.bfloat16).double(),
                        *refs[1:])
    assert_close(want_first[0], ref, torch.bfloat16, "forward")
    ref.backward(dy.double())
    for got, r, name in zip(want_first[1:], refs, ("x", "gate_up", "down")):
        assert_close(got, r.grad, torch.bfloat16, f"d{name}")


# -- bad input -----------------------------------------------------------------

def test_errors_name_the_tensor_and_the_rule(generator):
    x, gate_up, down = make((2, 3), 16, 24, torch.float32, generator)
    mlp = tile.ops.grouped_swiglu_mlp
    with pytest.raises(ValueError, match=r"m_splits add up to 4 but x has 5"):
        mlp(x, gate_up, down, [2, 2])
    with pytest.raises(ValueError, match=r"m_splits must be ≥ 0"):
        mlp(x, gate_up, down, [6, -1])
    with pytest.raises(ValueError, match=r"3 entries for 2 experts"):
        mlp(x, gate_up, down, [2, 3, 0])
    with pytest.raises(TypeError, match=r"1-D integer tensor"):
        mlp(x, gate_up, down, torch.tensor([2.0, 3.0]))
    with pytest.raises(ValueError, match=r"gate_up must be \[E, 2I, H\]"):
        mlp(x, gate_up[:, :47].contiguous(), down, [2, 3])
    with pytest.raises(ValueError, match=r"down must be \[E, H, I\]"):
        mlp(x, gate_up, down[:1].contiguous(), [2, 3])
    with pytest.raises(ValueError, match=r"x must be \[T, H\]"):
        mlp(x[None], gate_up, down, [2, 3])
    with pytest.raises(TypeError, match="down is torch.float16 but x is"):
        mlp(x, gate_up, down.half(), [2, 3])
    with pytest.raises(ValueError, match="recompute=False keeps every row in "
                                         "one shard; shards must be 0 or 1"):
        mlp(x, gate_up, down, [2, 3], shards=2, recompute=False)
    with pytest.raises(TypeError, match="recompute must be a bool"):
        mlp(x, gate_up, down, [2, 3], recompute=0)
    with pytest.raises(ValueError, match="shards must be 'auto' or 1"):
        tile.nn.GroupedSwiGLUMLP(2, 16, 24, shards=4, recompute=False)
    module = tile.nn.GroupedSwiGLUMLP(2, 16, 24,
                                      accumulate_into_main_grad=True)
    module.down_proj.main_grad = torch.zeros(2, 16, 24, dtype=torch.bfloat16)
    with pytest.raises(RuntimeError, match="must be a contiguous "
                                           "torch.float32 tensor"):
        module(leaf(x), [2, 3]).sum().backward()


@pytest.mark.gpu
def test_errors():
    x, gate_up, down = make((8, 4), 64, 128, torch.bfloat16)
    with pytest.raises(ValueError, match="gate_up is on cpu but x is on cuda"):
        tile.ops.grouped_swiglu_mlp(x, gate_up.cpu(), down, [8, 4])
    # Host splits are checked here (CUDA ones on the GPU: the test above).
    with pytest.raises(ValueError, match="m_splits add up to 13"):
        tile.ops.grouped_swiglu_mlp(x, gate_up, down, torch.tensor([9, 4]))
    with pytest.raises(ValueError, match="m_splits has 3 entries for 2"):
        tile.ops.grouped_swiglu_mlp(x, gate_up, down,
                                    torch.tensor([9, 3, 0], device="cuda"))
    with pytest.raises(TypeError, match="1-D integer tensor"):
        tile.ops.grouped_swiglu_mlp(x, gate_up, down,
                                    torch.tensor([8.0, 4.0], device="cuda"))
    with pytest.raises(tile.TileError, match="memory budget of 4096 bytes"):
        tile.ops.grouped_swiglu_mlp(x, gate_up, down, [8, 4],
                                    memory_budget=4096)
