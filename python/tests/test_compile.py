"""The torch.compile contract (docs/Python.md, "torch.compile"): every
Tile custom op passes opcheck with its dynamic-shape test; every public
operator compiled with fullgraph=True and dynamic=True runs over 12 row
counts as one graph, without a recompile; a patched Hugging Face model
compiled over 12 sequence lengths makes no more graphs than the unpatched
one and breaks none, with dynamic=True too. CPU here (aot_eager, and
Inductor for the model); the GPU tests (marked gpu) add Inductor on CUDA,
CUDA graphs (mode="reduce-overhead", with and without main_grad); and
torch.export of a patched model's forward with a dynamic sequence."""

import pytest
import torch
from torch._dynamo.utils import counters

import tile
import tile.operators
from conftest import zoo_kernel

ROW_COUNTS = list(range(3, 15))  # 12 row counts


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    counters.clear()
    yield
    torch._dynamo.reset()


def _recompiles_hint():
    return ("rerun with TORCH_LOGS=recompiles,graph_breaks to see why; "
            f"counters: {dict(counters['stats'])}, "
            f"graph breaks: {dict(counters['graph_break'])}")


# -- opcheck ------------------------------------------------------------------

def _generator():
    return torch.Generator().manual_seed(0)


def test_launch_op_passes_opcheck_with_dynamic_shapes():
    g = _generator()
    x = torch.randn(5, 16, generator=g)
    w = torch.randn(16, generator=g)
    rms = tile.operators.kernel("rms_norm")
    torch.library.opcheck(torch.ops.tile.launch.default,
                          (rms.key, "rms_norm", "ttff", [x, w], [1e-6, 0.0],
                           []))
    labels = torch.tensor([1, 0, 3, -100, 2])
    ce = tile.operators.kernel("cross_entropy")
    torch.library.opcheck(torch.ops.tile.launch.default,
                          (ce.key, "cross_entropy", "ttfff", [x, labels],
                           [-100.0, 0.0, 0.0], []))


def test_chunked_head_op_passes_opcheck_with_dynamic_shapes():
    from tile.head import _configuration_key
    from tile.head_chunks import Head
    g = _generator()
    hidden = torch.randn(6, 8, generator=g)
    weight = torch.randn(11, 8, generator=g)
    bias = torch.randn(11, generator=g)
    labels = torch.tensor([1, 0, 3, -100, 2, 10])
    rows_grad = torch.full((6,), 0.2)
    loss = tile.operators.kernel("cross_entropy")
    # The ignore index an int, the smoothing and z-loss floats; no softcap,
    # the default chunk budget.
    numbers = ([-100.0, 0.0, 0.0], [True, False, False], None, None)

    def key(need):
        head = Head(type("Loss", (), {"kernel": loss, "in_place": True}),
                    "mean", None, None, need, torch.float32, torch.float32)
        return _configuration_key(head)
    for grad, need in ((rows_grad, (True, True, True)),
                       (None, (False, False, False))):
        torch.library.opcheck(torch.ops.tile.chunked_head.default,
                              (key(need), *numbers, hidden, weight, bias,
                               [labels], grad))
    # Under main_grad: the weight's gradient added to main_grad in place.
    torch.library.opcheck(torch.ops.tile.chunked_head_into.default,
                          (key((True, True, True)), *numbers, hidden, weight,
                           bias, [labels], rows_grad, torch.zeros(11, 8)))


def test_linear_cross_entropy_with_main_grad_compiles_once():
    """Under the main_grad contract the head's backward is one op too
    (tile::chunked_head_into, which writes main_grad): 12 row counts, one
    graph, main_grad added to as eagerly, .grad untouched."""
    torch.manual_seed(0)
    weight = torch.nn.Parameter(torch.randn(24, 16))
    weight.main_grad = torch.zeros(24, 16)

    def fn(h, y):
        return tile.ops.linear_cross_entropy(h, weight, y, main_grad=True)
    compiled = torch.compile(fn, backend="aot_eager", fullgraph=True,
                             dynamic=True)
    g = _generator()
    for rows in ROW_COUNTS:
        h = torch.randn(rows, 16, generator=g, requires_grad=True)
        y = torch.randint(0, 24, (rows,), generator=g)
        y[0] = -100
        before = weight.main_grad.clone()
        compiled(h, y).backward()
        got, got_h = weight.main_grad - before, h.grad
        h.grad = None
        before = weight.main_grad.clone()
        fn(h, y).backward()
        torch.testing.assert_close(got, weight.main_grad - before)
        torch.testing.assert_close(got_h, h.grad)
        assert weight.grad is None
    assert counters["stats"]["unique_graphs"] == 1, _recompiles_hint()


def test_moe_ops_pass_opcheck_with_dynamic_shapes():
    """The MoE step's two ops with host splits (the CPU's), the routed rows
    in expert order: the forward, and the backward adding to the weights'
    gradients in place (declared)."""
    g = _generator()
    experts, hidden, inter, rows = 3, 8, 6, 7
    f64 = dict(dtype=torch.float64)
    x = torch.randn(rows, hidden, generator=g, **f64)
    gate_up = torch.randn(experts, 2 * inter, hidden, generator=g, **f64)
    down = torch.randn(experts, hidden, inter, generator=g, **f64)
    routing = torch.rand(rows, generator=g, **f64)
    splits = [3, 0, 4]
    for recompute in (True, False):
        torch.library.opcheck(torch.ops.tile.moe_experts_forward,
                              (x, gate_up, down, splits, None, routing, 0, 0,
                               recompute))
    token = torch.randperm(rows, generator=g)
    dy = torch.randn(rows, hidden, generator=g, **f64)
    grads = [torch.zeros(gate_up.shape, **f64), torch.zeros(down.shape, **f64)]
    kept = torch.empty(0, dtype=torch.uint8)
    torch.library.opcheck(torch.ops.tile.moe_experts_backward,
                          (x, token, gate_up, down, splits, None, routing, dy,
                           0, 0, True, kept, grads, False))


def test_moe_layer_compiled_on_the_cpu_matches_eager():
    """A MoE layer (router top-k, tile.nn.MoEExperts) compiled on the CPU:
    the experts' step goes through its ops with host splits; outputs and
    gradients equal eager's over three token counts."""
    torch.manual_seed(0)
    module = tile.nn.MoEExperts(4, 16, 24, dtype=torch.float64)
    router = torch.nn.Linear(16, 4, dtype=torch.float64)

    def layer(x):
        weights, index = torch.topk(torch.softmax(router(x), -1), 2)
        return module(x, index, weights)
    compiled = torch.compile(layer, backend="aot_eager", dynamic=True)
    params = [module.gate_up_proj, module.down_proj]
    for rows in (5, 9, 13):
        x = torch.randn(rows, 16, dtype=torch.float64, requires_grad=True)
        results = []
        for fn in (compiled, layer):
            y = fn(x)
            grads = torch.autograd.grad(y.square().sum(), [x, *params])
            results.append((y.detach(), *grads))
        for got, want in zip(*results):
            torch.testing.assert_close(got, want)


def test_mlp_ops_pass_opcheck_with_dynamic_shapes():
    g = _generator()
    # The ops take the weights stacked: [experts, I, H] and [experts, H, I].
    x = torch.randn(7, 8, dtype=torch.float64, generator=g)
    gate = torch.randn(1, 12, 8, dtype=torch.float64, generator=g)
    up = torch.randn(1, 12, 8, dtype=torch.float64, generator=g)
    down = torch.randn(1, 8, 12, dtype=torch.float64, generator=g)
    torch.library.opcheck(torch.ops.tile.swiglu_mlp,
                          (x, gate, up, down, None, None, 2, 1 << 20))
    torch.library.opcheck(torch.ops.tile.swiglu_mlp_untiled,
                          (x, gate, up, down, None, None))


def test_untiled_workspace_is_sized_symbolically():
    """The untiled op's fake sizes the workspace it keeps (g, u and h of
    every row) from a symbolic row count: traced once, the size follows
    the rows, equal to the C plan's at each (a constant would mean one
    graph per row count on the GPU)."""
    from torch.fx.experimental.proxy_tensor import make_fx

    def kept(x):
        size = tile.mlp.untiled_workspace_bytes(x.shape[0], 12,
                                                torch.bfloat16, experts=3)
        return x.new_empty(size, dtype=torch.uint8)
    traced = make_fx(kept, tracing_mode="symbolic")(torch.empty(5, 8))
    for rows in (0, 1, *ROW_COUNTS, 1000):
        want = tile.mlp.plan(rows, 12, torch.bfloat16, experts=3,
                             recompute=False)[2]
        assert traced(torch.empty(rows, 8)).numel() == want, rows


# -- each operator: one graph over 12 row counts -------------------------------

def _under_autocast(fn, *args):
    """fn under bf16 autocast on the arguments' device (a compiled graph
    runs Tile's ops under it too)."""
    with torch.autocast(args[0].device.type, dtype=torch.bfloat16):
        return fn(*args)


def _operator_cases():
    """(name, make(rows) -> inputs requiring grad, fn(*inputs) -> loss)."""
    g = _generator()

    def rows_of(width):
        return lambda rows: [torch.randn(rows, width, generator=g,
                                         requires_grad=True)]

    def pair(width):
        return lambda rows: [torch.randn(rows, width, generator=g,
                                         requires_grad=True)
                             for _ in range(2)]

    def logits_and_labels(rows):
        labels = torch.randint(0, 24, (rows,), generator=g)
        labels[0] = -100
        return [torch.randn(rows, 24, generator=g, requires_grad=True),
                labels]

    def head_inputs(rows):
        labels = torch.randint(0, 24, (rows,), generator=g)
        labels[0] = -100
        return [torch.randn(rows, 16, generator=g, requires_grad=True),
                torch.randn(24, 16, generator=g, requires_grad=True),
                labels]

    def qk(rows):
        # [batch 1, heads 2, rows, head 8]; cos and sin [1, rows, 8].
        q, k = (torch.randn(1, 2, rows, 8, generator=g, requires_grad=True)
                for _ in range(2))
        angle = torch.randn(1, rows, 8, generator=g)
        return [q, k, angle.cos(), angle.sin()]

    def mlp_inputs(rows):
        return [torch.randn(rows, 8, dtype=torch.float64, generator=g,
                            requires_grad=True),
                *(torch.randn(shape, dtype=torch.float64, generator=g,
                              requires_grad=True)
                  for shape in ((12, 8), (12, 8), (8, 12)))]

    # Its backward reads the h it returns (Kernel.results_read): the
    # traced backward must get the traced forward's h.
    residual = tile.Kernel(zoo_kernel("residual_rms_norm"))

    return [
        ("a kernel whose backward reads its result",
         lambda rows: pair(16)(rows) + [
             torch.randn(16, generator=g, requires_grad=True)],
         lambda x, r, w: sum(t.sum() for t in residual(x, r, w, 0.5, 1e-6))),
        ("rms_norm", lambda rows: rows_of(16)(rows) + [
            torch.randn(16, generator=g, requires_grad=True)],
         lambda x, w: tile.ops.rms_norm(x, w, 1e-6).sum()),
        ("swiglu", pair(16), lambda a, b: tile.ops.swiglu(a, b).sum()),
        ("geglu", pair(16), lambda a, b: tile.ops.geglu(a, b).sum()),
        ("silu_and_mul", rows_of(16),
         lambda x: tile.ops.silu_and_mul(x).sum()),
        ("rope", qk, lambda q, k, c, s: sum(
            t.sum() for t in tile.ops.rope(q, k, c, s))),
        ("cross_entropy", logits_and_labels,
         lambda x, y: tile.ops.cross_entropy(x, y)),
        ("linear_cross_entropy", head_inputs,
         lambda h, w, y: tile.ops.linear_cross_entropy(h, w, y)),
        ("linear_cross_entropy autocast", head_inputs,
         lambda h, w, y: _under_autocast(tile.ops.linear_cross_entropy,
                                         h, w, y)),
        ("linear_cross_entropy none", head_inputs,
         lambda h, w, y: tile.ops.linear_cross_entropy(
             h, w, y, reduction="none").sum()),
        ("swiglu_mlp", mlp_inputs,
         lambda x, a, b, c: tile.ops.swiglu_mlp(x, a, b, c, shards=2).sum()),
        ("swiglu_mlp untiled", mlp_inputs,
         lambda x, a, b, c: tile.ops.swiglu_mlp(x, a, b, c,
                                                recompute=False).sum()),
    ]


@pytest.mark.parametrize("case", _operator_cases(), ids=lambda c: c[0])
def test_operator_compiles_once_over_row_counts(case):
    _, make, fn = case
    compiled = torch.compile(fn, backend="aot_eager", fullgraph=True,
                             dynamic=True)
    for rows in ROW_COUNTS:
        inputs = make(rows)
        got = compiled(*inputs)
        got.backward()
        grads = [t.grad for t in inputs if t.requires_grad]
        for t in inputs:
            t.grad = None
        want = fn(*inputs)
        want.backward()
        torch.testing.assert_close(got, want)
        for a, t in zip(grads, [t for t in inputs if t.requires_grad]):
            torch.testing.assert_close(a, t.grad)
    assert counters["stats"]["unique_graphs"] == 1, _recompiles_hint()


_THREE_SHAPES = """
func.func @three(%x: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?xf32>,
                                         tensor<?xf32>)
    attributes {tile.kernel} {
  %y = arith.mulf %x, %x : tensor<?x?xf32>
  %r = tile.reduce sum %x [1] : tensor<?x?xf32> -> tensor<?xf32>
  %c = tile.reduce sum %x [0] across_rows : tensor<?x?xf32> -> tensor<?xf32>
  return %y, %r, %c : tensor<?x?xf32>, tensor<?xf32>, tensor<?xf32>
}"""


@pytest.mark.parametrize("compiled", [False, True])
def test_results_take_the_shapes_the_library_says(compiled):
    """A kernel's results shaped by the library's shape expressions, not by
    guesses: x [2, S, 8] gives x² [2, S, 8], the row sums [2, S] and the
    column sums [8] — also at S = 4, where the 8 rows equal the width (a
    [width] result was viewed as the [2, 4] rows when its size matched).
    Compiled with dynamic shapes: one graph over every S, the rows a symbol
    (the library never asked for their value)."""
    kernel = tile.Kernel(_THREE_SHAPES)
    info = kernel.forward_info
    assert info.argument_shapes == [("rows", "w0")]
    assert info.result_shapes[:2] == [("rows", "w0"), ("rows",)]
    assert info.result_shapes[2] == ("w0",)
    fn = torch.compile(kernel, backend="aot_eager", fullgraph=True,
                       dynamic=True) if compiled else kernel
    for seq in (3, 4, 5, 9):
        x = torch.randn(2, seq, 8, dtype=torch.float64, requires_grad=True)
        y, r, c = fn(x)
        assert y.shape == (2, seq, 8) and r.shape == (2, seq)
        assert c.shape == (8,)
        torch.testing.assert_close(y, x * x)
        torch.testing.assert_close(r, x.sum(-1))
        torch.testing.assert_close(c, x.sum((0, 1)))
        (y.sum() + r.sum() + (c * torch.arange(8.0)).sum()).backward()
        torch.testing.assert_close(
            x.grad, 2 * x.detach() + 1 + torch.arange(8.0, dtype=x.dtype))
    if compiled:
        assert counters["stats"]["unique_graphs"] == 1, _recompiles_hint()


# -- a patched model over 12 sequence lengths ----------------------------------

def _llama(vocab=64, hidden=32, head_dim=8, **kwargs):
    """A 2-layer Llama of these sizes, seeded."""
    transformers = pytest.importorskip("transformers")
    config = transformers.AutoConfig.for_model(
        "llama", vocab_size=vocab, hidden_size=hidden,
        intermediate_size=2 * hidden, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=head_dim,
        max_position_embeddings=512, pad_token_id=0, **kwargs)
    torch.manual_seed(0)
    return transformers.AutoModelForCausalLM.from_config(config)


def _graphs_over_lengths(patch, dynamic, backend, lengths=range(5, 17),
                         sizes=None, device="cpu", dtype=torch.float32):
    """(graphs, graph breaks) of the model compiled over `lengths`."""
    import tile.transformers
    torch._dynamo.reset()
    counters.clear()
    model = _llama(**(sizes or {})).to(device, dtype)
    if patch:
        tile.transformers.apply_tile(model)
    compiled = torch.compile(model, backend=backend, dynamic=dynamic)
    generator = torch.Generator(device).manual_seed(0)
    vocab = model.config.vocab_size
    for length in lengths:
        ids = torch.randint(0, vocab, (2, length), generator=generator,
                            device=device)
        compiled(ids, labels=ids).loss.backward()
    return (counters["stats"]["unique_graphs"],
            sum(counters["graph_break"].values()))


@pytest.mark.parametrize("dynamic", [None, True])
@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_patched_model_compiles_no_more_than_unpatched(dynamic, backend):
    plain_graphs, plain_breaks = _graphs_over_lengths(False, dynamic, backend)
    graphs, breaks = _graphs_over_lengths(True, dynamic, backend)
    assert breaks == plain_breaks == 0, _recompiles_hint()
    assert graphs <= plain_graphs, (graphs, plain_graphs, _recompiles_hint())


def _tiny_llama(**patch):
    import tile.transformers
    model = _llama(use_cache=False)
    tile.transformers.apply_tile(model, **patch)
    return model


class _Logits(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, ids):
        return self.model(ids, use_cache=False).logits


def test_patched_model_exports_with_a_dynamic_sequence():
    model = _Logits(_tiny_llama().eval())
    generator = _generator()
    ids = torch.randint(0, 64, (2, 9), generator=generator)
    seq = torch.export.Dim("seq", min=2, max=64)
    exported = torch.export.export(model, (ids,), dynamic_shapes=({1: seq},))
    assert any("tile.launch" in str(node.target)
               for node in exported.graph.nodes)
    for length in (5, 9, 17):
        ids = torch.randint(0, 64, (2, length), generator=generator)
        torch.testing.assert_close(exported.module()(ids), model(ids),
                                   rtol=0, atol=0)


# -- on the GPU ----------------------------------------------------------------

def _on_cuda(make):
    """The inputs on the GPU, float64 as float32 (the GPU's widest)."""
    def cast(t):
        dtype = torch.float32 if t.dtype == torch.float64 else t.dtype
        return t.detach().to("cuda", dtype).requires_grad_(t.requires_grad)
    return lambda rows: [cast(t) for t in make(rows)]


@pytest.mark.gpu
@pytest.mark.parametrize("case", _operator_cases(), ids=lambda c: c[0])
def test_operator_compiles_once_with_inductor_on_cuda(case):
    _, make, fn = case
    compiled = torch.compile(fn, fullgraph=True, dynamic=True)
    for rows in ROW_COUNTS:
        inputs = _on_cuda(make)(rows)
        compiled(*inputs).backward()
    assert counters["stats"]["unique_graphs"] == 1, _recompiles_hint()


@pytest.mark.gpu
@pytest.mark.parametrize("dynamic", [None, True])
def test_patched_model_compiles_no_more_than_unpatched_on_cuda(dynamic):
    """Inductor on CUDA, the patched model's own kernels in bf16."""
    def graphs(patch):
        return _graphs_over_lengths(
            patch, dynamic, "inductor", lengths=range(100, 112),
            sizes=dict(vocab=256, hidden=256, head_dim=64), device="cuda",
            dtype=torch.bfloat16)
    plain, patched = graphs(False), graphs(True)
    assert patched[1] == plain[1] == 0, _recompiles_hint()
    assert patched[0] <= plain[0], (patched, plain, _recompiles_hint())


class _Block(torch.nn.Module):
    def __init__(self, main_grad):
        super().__init__()
        self.norm = tile.nn.RMSNorm(64, accumulate_into_main_grad=main_grad)
        self.mlp = tile.nn.GatedMLP(64, 128,
                                    accumulate_into_main_grad=main_grad)

    def forward(self, x):
        return self.mlp(self.norm(x))


@pytest.mark.gpu
@pytest.mark.parametrize("main_grad", [False, True])
def test_cuda_graphs_match_eager(main_grad):
    """mode="reduce-overhead" (CUDA graph trees) over four training steps:
    each step's loss and gradients equal eager's; with main_grad the fp32
    sums accumulate over the steps. Each step sets .grad to None, as an
    optimizer's zero_grad does: a gradient kept from the last step is an
    output of the last replay, which the next one overwrites (PyTorch's own
    modules fail the same way without it)."""
    torch.manual_seed(0)
    eager = _Block(main_grad).cuda()
    graphed = _Block(main_grad).cuda()
    graphed.load_state_dict(eager.state_dict())
    for module in (eager, graphed):
        tile.nn.attach_main_grads(module)
    compiled = torch.compile(graphed, mode="reduce-overhead")
    generator = torch.Generator("cuda").manual_seed(1)

    def grads(module):
        return {name: (p.main_grad if main_grad else p.grad).clone()
                for name, p in module.named_parameters()}
    for _ in range(4):
        for module in (eager, graphed):
            module.zero_grad(set_to_none=True)
        x = torch.randn(48, 64, device="cuda", generator=generator)
        want = eager(x).square().sum()
        want.backward()
        got = compiled(x).square().sum()
        got.backward()
        torch.testing.assert_close(got, want)
        expected = grads(eager)
        for name, grad in grads(graphed).items():
            torch.testing.assert_close(grad, expected[name], rtol=1e-5,
                                       atol=1e-5)


@pytest.mark.gpu
@pytest.mark.parametrize("recompute", [True, False],
                         ids=["tiled", "untiled"])
def test_grouped_mlp_with_device_splits_compiles_once_over_row_counts(
        recompute):
    """The grouped MLP with a router's counts on the device: 12 token
    counts, each split anew over 4 experts, one graph; each step equal to
    the eager module's."""
    torch.manual_seed(0)
    module = tile.nn.GroupedSwiGLUMLP(4, 64, 128, recompute=recompute,
                                      device="cuda", dtype=torch.bfloat16)
    compiled = torch.compile(module, fullgraph=True, dynamic=True)
    g = _generator()
    for rows in ROW_COUNTS:
        tokens = 16 * rows
        cut = sorted(torch.randint(0, tokens + 1, (3,), generator=g).tolist())
        counts = torch.tensor([cut[0], cut[1] - cut[0], cut[2] - cut[1],
                               tokens - cut[2]], device="cuda")
        x = torch.randn(tokens, 64, device="cuda", dtype=torch.bfloat16,
                        requires_grad=True)
        y = compiled(x, counts)
        y.float().square().sum().backward()
        got = (y.detach(), x.grad)
        x.grad = None
        want = module(x, counts)
        want.float().square().sum().backward()
        torch.testing.assert_close(got[0], want.detach())
        torch.testing.assert_close(got[1], x.grad)
    assert counters["stats"]["unique_graphs"] == 1, _recompiles_hint()


@pytest.mark.gpu
def test_moe_layer_compiles_once_over_token_counts():
    """A whole MoE layer as a model runs it (router softmax and top-k,
    tile.nn.MoEExperts: the permutation, counts on the device, the untiled
    grouped step, the weighted scatter back) compiled with fullgraph and
    dynamic shapes over 12 token counts: one graph, each step's output and
    gradients as eager's (Inductor's softmax may round the routing weights
    differently by an ulp, and the routing weights' gradient reaches x
    through its softmax: within 2^-6 of the largest value, 2-4 bf16 ulps; a
    token routed elsewhere would be off by a whole expert's output)."""
    torch.manual_seed(0)
    experts, hidden = 8, 64
    router = torch.nn.Linear(hidden, experts, device="cuda",
                             dtype=torch.bfloat16)
    module = tile.nn.MoEExperts(experts, hidden, 128, device="cuda",
                                dtype=torch.bfloat16)

    def layer(x):
        weights, index = torch.topk(torch.softmax(router(x).float(), -1), 2)
        return module(x, index, weights.to(x.dtype))
    compiled = torch.compile(layer, fullgraph=True, dynamic=True)
    params = [module.gate_up_proj, module.down_proj]
    for rows in ROW_COUNTS:
        x = torch.randn(8 * rows, hidden, device="cuda",
                        dtype=torch.bfloat16, requires_grad=True)
        results = []
        for fn in (compiled, layer):
            y = fn(x)
            grads = torch.autograd.grad(y.float().square().sum(),
                                        [x, *params])
            results.append((y.detach(), *grads))
        for got, want in zip(*results):
            scale = want.abs().max().item()
            torch.testing.assert_close(got, want, rtol=0,
                                       atol=2 ** -6 * scale)
    assert counters["stats"]["unique_graphs"] == 1, _recompiles_hint()
