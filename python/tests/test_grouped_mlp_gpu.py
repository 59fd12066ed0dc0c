"""tile.ops.grouped_swiglu_mlp and tile.nn.GroupedSwiGLUMLP on the GPU
(tile::ops::GroupedSwiGLUMLP through the C API): forward and gradients
against a float64 per-expert reference for E ∈ {1, 3, 8} with uneven and
zero splits, H ∈ {64, 100}, I ∈ {128, 300}, bf16/f16/f32 and several shard
counts; the main_grad contract over micro-batches; CUDA-graph replay;
splits as a CUDA tensor; errors. Skipped without CUDA."""

import pytest
import torch

import tile
from conftest import assert_close, assert_replay_matches, grouped_swiglu_mlp, \
    leaf, randn

pytestmark = [pytest.mark.skipif(not torch.cuda.is_available(),
                                 reason="no CUDA device"),
              pytest.mark.usefixtures("poison_the_allocator")]

SPLITS = [(37,), (5, 0, 12), (0, 30, 170, 0, 1, 90, 0, 60)]


def make(splits, hidden, inter, dtype):
    experts = len(splits)
    return (randn((sum(splits), hidden), dtype),
            randn((experts, 2 * inter, hidden), dtype, hidden ** -0.5),
            randn((experts, hidden, inter), dtype, inter ** -0.5))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16,
                                   torch.float32])
@pytest.mark.parametrize("splits", SPLITS)
@pytest.mark.parametrize("hidden,inter", [(64, 128), (100, 300)])
@pytest.mark.parametrize("shards,recompute", [(0, True), (3, True),
                                              (0, False)])
def test_matches_float64(dtype, splits, hidden, inter, shards, recompute):
    torch.manual_seed(0)
    tensors = make(splits, hidden, inter, dtype)
    dy = randn((sum(splits), hidden), dtype)
    args = [leaf(t) for t in tensors]
    y = tile.ops.grouped_swiglu_mlp(*args, splits, shards=shards,
                                    recompute=recompute)
    y.backward(dy)
    refs = [leaf(t.double()) for t in tensors]
    ref = grouped_swiglu_mlp(*refs, splits)
    ref.backward(dy.double())
    assert_close(y, ref, dtype, "forward")
    for got, want, name in zip(args, refs, ("x", "gate_up", "down")):
        assert got.grad.dtype == dtype
        assert_close(got.grad, want.grad, dtype, f"d{name}")


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


@pytest.mark.parametrize("shards,recompute,compiled", [
    (3, True, False), (3, True, True), ("auto", False, True)],
    ids=["eager", "compiled", "compiled-untiled"])
def test_main_grad_contract_over_micro_batches(shards, recompute, compiled):
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


def test_splits_on_the_device_give_the_same_bits():
    torch.manual_seed(2)
    splits = (100, 0, 412)
    tensors = make(splits, 256, 512, torch.bfloat16)
    on_host = tile.ops.grouped_swiglu_mlp(*tensors, splits)
    on_device = tile.ops.grouped_swiglu_mlp(
        *tensors, torch.tensor(splits, device="cuda"))
    assert torch.equal(on_host, on_device)


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


def test_one_expert_is_the_dense_mlp():
    torch.manual_seed(4)
    x, gate_up, down = make((500,), 256, 512, torch.bfloat16)
    grouped = tile.ops.grouped_swiglu_mlp(x, gate_up, down, [500], shards=2)
    dense = tile.ops.swiglu_mlp(x, gate_up[0, :512], gate_up[0, 512:],
                                down[0], shards=2)
    assert torch.equal(grouped, dense)


def test_errors():
    x, gate_up, down = make((8, 4), 64, 128, torch.bfloat16)
    with pytest.raises(ValueError, match="gate_up is on cpu but x is on cuda"):
        tile.ops.grouped_swiglu_mlp(x, gate_up.cpu(), down, [8, 4])
    with pytest.raises(ValueError, match="m_splits add up to 13"):
        tile.ops.grouped_swiglu_mlp(x, gate_up, down,
                                    torch.tensor([9, 4], device="cuda"))
    with pytest.raises(tile.TileError, match="memory budget of 4096 bytes"):
        tile.ops.grouped_swiglu_mlp(x, gate_up, down, [8, 4],
                                    memory_budget=4096)
