"""tile.ops.rope (and tile.ops.rotary) against Hugging Face's
apply_rotary_pos_emb: on the CPU in float64 for q and k as the attention
makes them, both layouts (unsqueeze_dim 1 and 2), gradients, gradcheck and
the errors; on the GPU (the tests marked gpu) in bf16/f16/f32 over three
shapes against float64. Skipped without transformers. The test/Zoo rope
kernel through tile.Kernel: test_kernel.py."""

import pytest
import torch

import tile
from conftest import assert_close, leaf

transformers = pytest.importorskip("transformers")


def _rope_inputs(layout, dtype=torch.float64, generator=None):
    """q, k as the attention makes them (transposed views of the
    projections' [B, S, heads, D]) and Llama's cos, sin."""
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding
    config = transformers.LlamaConfig(hidden_size=64, num_attention_heads=4,
                                      num_key_value_heads=2)
    cos, sin = LlamaRotaryEmbedding(config)(
        torch.zeros(1, dtype=dtype), torch.arange(9).expand(2, 9))
    q = torch.randn(2, 9, 4, 16, dtype=dtype, generator=generator)
    k = torch.randn(2, 9, 2, 16, dtype=dtype, generator=generator)
    if layout == 1:
        q, k = q.transpose(1, 2), k.transpose(1, 2)
    return leaf(q), leaf(k), cos.to(dtype), sin.to(dtype)


def _hugging_face(interleaved):
    """Hugging Face's apply_rotary_pos_emb: Llama's (rotate_half) or GLM-4's
    (interleaved pairs: it takes Llama-layout tables and interleaves their
    first half; its result contiguous, Tile's in q's layout), and the
    tables Tile's kernel takes for Llama-layout ones."""
    if not interleaved:
        from transformers.models.llama import modeling_llama
        return modeling_llama.apply_rotary_pos_emb, lambda t: t
    from transformers.models.glm4 import modeling_glm4

    def half(table):
        return table[..., :table.shape[-1] // 2].repeat_interleave(2, -1)
    return modeling_glm4.apply_rotary_pos_emb, half


@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("unsqueeze_dim", [1, 2])
def test_rope_matches_hugging_face(unsqueeze_dim, interleaved, generator):
    apply_rotary_pos_emb, tables = _hugging_face(interleaved)
    q, k, cos, sin = _rope_inputs(unsqueeze_dim, generator=generator)
    got = tile.ops.rope(q, k, tables(cos), tables(sin), unsqueeze_dim,
                        interleaved=interleaved)
    rq, rk = leaf(q.detach()), leaf(k.detach())
    want = apply_rotary_pos_emb(rq, rk, cos, sin, unsqueeze_dim=unsqueeze_dim)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        assert g.stride() == (q if g is got[0] else k).stride()
        assert_close(g, w, torch.float64, "rope")
    dq, dk = (torch.randn_like(w) for w in want)
    torch.autograd.backward(got, (dq, dk))
    torch.autograd.backward(want, (dq, dk))
    assert_close(q.grad, rq.grad, torch.float64, "rope dq")
    assert_close(k.grad, rk.grad, torch.float64, "rope dk")


@pytest.mark.parametrize("rotated", [16, 8])
@pytest.mark.parametrize("unsqueeze_dim", [1, 2])
def test_glm4_apply_as_apply_tile_installs_it(unsqueeze_dim, rotated,
                                              generator):
    """tile.transformers' stand-in for GLM-4's apply_rotary_pos_emb, whole
    heads and a partial rotary factor (its tables half the head: the rest
    of each head passes through the kernel at angle 0), against GLM-4's
    own in float64: values, q's layout and both gradients."""
    import tile.transformers
    from transformers.models.glm4 import modeling_glm4
    ours = tile.transformers.ROPE_LAYOUTS["interleaved"]
    q, k, cos, sin = _rope_inputs(unsqueeze_dim, generator=generator)
    cos, sin = cos[..., :rotated], sin[..., :rotated]
    got = ours(q, k, cos, sin, unsqueeze_dim=unsqueeze_dim)
    rq, rk = leaf(q.detach()), leaf(k.detach())
    want = modeling_glm4.apply_rotary_pos_emb(rq, rk, cos, sin,
                                              unsqueeze_dim=unsqueeze_dim)
    for g, w, x in zip(got, want, (q, k)):
        assert g.shape == w.shape and g.stride() == x.stride()
        assert_close(g, w, torch.float64, "glm4 rope")
    # The passed-through columns are the input's, bit for bit.
    assert torch.equal(got[0][..., rotated:], q[..., rotated:])
    dq, dk = (torch.randn_like(w) for w in want)
    torch.autograd.backward(got, (dq, dk))
    torch.autograd.backward(want, (dq, dk))
    assert_close(q.grad, rq.grad, torch.float64, "glm4 rope dq")
    assert_close(k.grad, rk.grad, torch.float64, "glm4 rope dk")


def test_rope_gradcheck_and_errors(generator):
    q, _, cos, sin = _rope_inputs(1, generator=generator)
    q = leaf(q.detach()[:, :2].contiguous())  # not a transposed view
    for interleaved in (False, True):
        assert torch.autograd.gradcheck(
            lambda x: tile.ops.rotary(x, cos, sin, interleaved=interleaved),
            (q,))
    with pytest.raises(ValueError, match="unsqueeze_dim must be 1 or 2"):
        tile.ops.rotary(q, cos, sin, 3)
    with pytest.raises(ValueError, match=r"cos and sin must be \[2 or 1, 9, 16\]"):
        tile.ops.rotary(q, cos[..., :8], sin[..., :8])
    with pytest.raises(ValueError, match="x must be 4-D"):
        tile.ops.rotary(q[0], cos, sin)


@pytest.mark.gpu
@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16,
                                   torch.float32])
@pytest.mark.parametrize("shape", [(1, 4096, 32, 8, 128), (2, 333, 4, 2, 64),
                                   (3, 17, 6, 3, 8)])
def test_rope_against_float64(dtype, shape, interleaved,
                              poison_the_allocator):
    """tile.ops.rope on q, k as Llama's attention makes them (transposed
    views of [B, S, heads, D]) against Hugging Face's formula in float64
    (interleaved: GLM-4's)."""
    apply_rotary_pos_emb, tables = _hugging_face(interleaved)
    batch, seq, heads, kv_heads, head_dim = shape
    g = torch.Generator("cuda").manual_seed(seq)
    q = torch.randn(batch, seq, heads, head_dim, device="cuda", generator=g)
    k = torch.randn(batch, seq, kv_heads, head_dim, device="cuda",
                    generator=g)
    angle = torch.rand(batch, seq, head_dim // 2, device="cuda",
                       generator=g) * 100
    cos = torch.cat([angle.cos()] * 2, -1).to(dtype)
    sin = torch.cat([angle.sin()] * 2, -1).to(dtype)
    q, k = (leaf(t.to(dtype).transpose(1, 2)) for t in (q, k))
    got = tile.ops.rope(q, k, tables(cos), tables(sin),
                        interleaved=interleaved)
    exact_q, exact_k = (leaf(t.detach().double()) for t in (q, k))
    want = apply_rotary_pos_emb(exact_q, exact_k, cos.double(),
                                sin.double())
    dy = [torch.randn_like(w).to(dtype) for w in want]
    torch.autograd.backward(got, dy)
    torch.autograd.backward(want, [d.double() for d in dy])
    for o, w, name in zip(got, want, "qk"):
        assert o.dtype == dtype and o.shape == w.shape
        assert o.stride() == (q if o is got[0] else k).stride()
        assert_close(o, w, dtype, f"rope {name}")
    assert_close(q.grad, exact_q.grad, dtype, "rope dq")
    assert_close(k.grad, exact_k.grad, dtype, "rope dk")
