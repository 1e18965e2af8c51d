# SPDX-License-Identifier: Apache-2.0
# fd.ops.sdpfa_fwd / sdpfa_bwd (issue 30) in nvFuser's test_sdpa style: against
# torch.nn.functional.scaled_dot_product_attention and torch autograd (dropout_p = 0), and with
# dropout the statistics of the mask, its scaling, and that the backward uses the forward's mask.
import itertools
import math
import re

import pytest
import torch
import torch.nn.functional as F

import loom
from loom.direct import DataType, FusionDefinition

N, H, L, S, E = 2, 4, 16, 12, 8
TORCH_DTYPE = {DataType.BFloat16: torch.bfloat16, DataType.Float: torch.float32}


def define(fd, rank=4, dtype=DataType.BFloat16):
    return fd.define_tensor(shape=[-1] * rank, contiguity=True, dtype=dtype)


def tol(dtype):
    return {"rtol": 2e-2, "atol": 2e-2} if dtype is DataType.BFloat16 else {"rtol": 1e-4,
                                                                             "atol": 1e-5}


def reference_lse(q, k, is_causal, scale):
    scores = (q.float() @ k.float().transpose(-2, -1)) * scale
    if is_causal:
        keep = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(~keep, float("-inf"))
    return torch.logsumexp(scores, dim=-1)


def test_softmax_logsumexp(device):
    # nvFuser's: q @ k^T / sqrt(e) of ones is sqrt(e) everywhere, so lse = log(s) + sqrt(e).
    n, h, l, s, e = 1, 1, 4, 4, 2
    with FusionDefinition() as fd:
        q, k, v = define(fd), define(fd), define(fd)
        _, lse, *_ = fd.ops.sdpfa_fwd(q, k, v, dropout_p=None, is_causal=None, scale=None)
        fd.add_output(lse)
    inputs = [torch.ones((n, h, x, e), dtype=torch.bfloat16, device=device) for x in (l, s, s)]
    (out,) = fd.execute(inputs)
    assert out.dtype == torch.float32
    torch.testing.assert_close(out, torch.full((n, h, l), math.log(s) + e**0.5, device=device))


@pytest.mark.parametrize("dtype", [DataType.BFloat16, DataType.Float])
def test_sdpa_fwd(device, dtype):
    qkv = [torch.randn((N, H, x, E), dtype=TORCH_DTYPE[dtype], device=device) for x in (L, S, S)]
    for dropout_p, is_causal, scale in itertools.product(
        [None, 0.0], [None, True, False], [None, 1 / E**0.5, 1e-3]
    ):
        with FusionDefinition() as fd:
            q, k, v = (define(fd, dtype=dtype) for _ in range(3))
            attn, lse, seed, offset = fd.ops.sdpfa_fwd(
                q, k, v, dropout_p=dropout_p, is_causal=is_causal, scale=scale
            )
            for t in (attn, lse, seed, offset):
                fd.add_output(t)
        out, out_lse, out_seed, out_offset = fd.execute(qkv)
        causal = bool(is_causal)
        ref = F.scaled_dot_product_attention(*qkv, dropout_p=0.0, is_causal=causal, scale=scale)
        torch.testing.assert_close(out, ref, **tol(dtype))
        s = 1 / E**0.5 if scale is None else scale
        torch.testing.assert_close(out_lse, reference_lse(qkv[0], qkv[1], causal, s),
                                   rtol=1e-4, atol=1e-4)
        # nvFuser's RNG state (torch >= 2.7): [2] UInt64 seed and offset, 0-D UInt64 offset.
        assert out_seed.shape == (2,) and out_seed.dtype == torch.uint64
        assert out_seed.tolist() == [0, 0]
        assert out_offset.shape == () and out_offset.dtype == torch.uint64 and int(out_offset) == 0


@pytest.mark.parametrize("dtype", [DataType.BFloat16, DataType.Float])
@pytest.mark.parametrize("is_causal", [False, True])
def test_sdpa_fwd_bwd_against_autograd(device, dtype, is_causal):
    td = TORCH_DTYPE[dtype]
    q, k, v = (torch.randn((N, H, x, E), dtype=td, device=device) for x in (L, S, S))
    grad_output = torch.randn((N, H, L, E), dtype=td, device=device)
    with FusionDefinition() as fd:
        tq, tk, tv, tg = (define(fd, dtype=dtype) for _ in range(4))
        attn, lse, seed, offset = fd.ops.sdpfa_fwd(tq, tk, tv, dropout_p=0.0, is_causal=is_causal)
        grads = fd.ops.sdpfa_bwd(tg, tq, tk, tv, attn, lse, 0.0, is_causal, seed, offset, None)
        for t in (attn, *grads):
            fd.add_output(t)
    out, *got = fd.execute([q, k, v, grad_output])
    leaves = [t.detach().float().requires_grad_() for t in (q, k, v)]
    ref = F.scaled_dot_product_attention(*leaves, is_causal=is_causal)
    ref.backward(grad_output.float())
    torch.testing.assert_close(out, ref.to(td), **tol(dtype))
    for g, leaf in zip(got, leaves):
        assert g.dtype == td
        torch.testing.assert_close(g, leaf.grad.to(td), **tol(dtype))


@pytest.mark.parametrize("head_dim", [8, 64])
def test_sdpa_outputs_take_the_operands_stride_order(device, head_dim):
    """nvFuser's test_sdpa[QkvFormat.BSHE]: operands declared with stride_order [3, 1, 2, 0]
    ([N, H, S, E] laid out [N, S, H, E]); the output and the gradients come back in that layout
    (out.transpose(1, 2) contiguous), as torch's kernels allocate them; log_sumexp row-major.
    Head dim 64 takes the fused kernels, 8 the composite."""
    def bshe(x):
        return torch.randn((N, x, H, head_dim), dtype=torch.bfloat16, device=device).transpose(1, 2)
    q, k, v, grad_output = bshe(L), bshe(S), bshe(S), bshe(L)
    with FusionDefinition() as fd:
        tq, tk, tv, tg = (fd.define_tensor(shape=[-1] * 4, contiguity=True, dtype=DataType.BFloat16,
                                           stride_order=[3, 1, 2, 0]) for _ in range(4))
        attn, lse, seed, offset = fd.ops.sdpfa_fwd(tq, tk, tv, dropout_p=0.0, is_causal=True)
        grads = fd.ops.sdpfa_bwd(tg, tq, tk, tv, attn, lse, 0.0, True, seed, offset, None)
        for t in (attn, lse, *grads):
            fd.add_output(t)
    out, lse_out, *got = fd.execute([q, k, v, grad_output])
    leaves = [t.detach().float().requires_grad_() for t in (q, k, v)]
    ref = F.scaled_dot_product_attention(*leaves, is_causal=True)
    ref.backward(grad_output.float())
    assert lse_out.is_contiguous()
    for actual, want in zip((out, *got), (ref, *(leaf.grad for leaf in leaves))):
        assert actual.transpose(1, 2).is_contiguous(), actual.stride()
        torch.testing.assert_close(actual, want.to(torch.bfloat16), rtol=2e-2, atol=2e-2)


def test_sdpa_bwd_in_its_own_fusion(device):
    # As nvFuser's test_sdpa_bwd: the saved output and log_sumexp are inputs of a backward
    # fusion; its philox_seed / philox_offset inputs are not read without dropout.
    q, k, v = (torch.randn((N, H, x, E), dtype=torch.bfloat16, device=device) for x in (L, S, S))
    grad_output = torch.randn((N, H, L, E), dtype=torch.bfloat16, device=device)
    with FusionDefinition() as fwd:
        attn, lse, *_ = fwd.ops.sdpfa_fwd(define(fwd), define(fwd), define(fwd), is_causal=True)
        fwd.add_output(attn)
        fwd.add_output(lse)
    out, lse_out = fwd.execute([q, k, v])
    with FusionDefinition() as fd:
        go, tq, tk, tv, to = (define(fd) for _ in range(5))
        tl = define(fd, rank=3, dtype=DataType.Float)
        seed = fd.define_tensor(shape=[], dtype=DataType.Int)
        offset = fd.define_tensor(shape=[], dtype=DataType.Int)
        for g in fd.ops.sdpfa_bwd(go, tq, tk, tv, to, tl, None, True, seed, offset, None):
            fd.add_output(g)
    zero = torch.zeros((), dtype=torch.int64, device=device)
    got = fd.execute([grad_output, q, k, v, out, lse_out, zero, zero])
    leaves = [t.detach().float().requires_grad_() for t in (q, k, v)]
    F.scaled_dot_product_attention(*leaves, is_causal=True).backward(grad_output.float())
    for g, leaf in zip(got, leaves):
        torch.testing.assert_close(g, leaf.grad.to(torch.bfloat16), rtol=2e-2, atol=2e-2)


def test_sdpa_dropout_statistics_and_matching_backward(device):
    # With value = the identity [S, S], the output is the dropped-out attention matrix itself:
    # about p of its entries are 0 and the others are softmax / (1 - p). The gradients, for
    # another value, equal torch autograd's through that same mask.
    n, h, l, s, e, p = 2, 4, 64, 48, 16, 0.3
    q, k = torch.randn((n, h, l, e), device=device), torch.randn((n, h, s, e), device=device)
    eye = torch.eye(s, device=device).expand(n, h, s, s).contiguous()
    v = torch.randn((n, h, s, e), device=device)
    grad_output = torch.randn((n, h, l, e), device=device)
    with FusionDefinition() as fd:
        tq, tk, tv, tg = (define(fd, dtype=DataType.Float) for _ in range(4))
        rng_seed = fd.define_scalar(dtype=DataType.Int)
        attn, lse, seed, offset = fd.ops.sdpfa_fwd(tq, tk, tv, dropout_p=p, is_causal=False,
                                                   rng_seed=rng_seed, rng_offset=5)
        grads = fd.ops.sdpfa_bwd(tg, tq, tk, tv, attn, lse, p, False, seed, offset, None)
        for t in (attn, seed, offset, *grads):
            fd.add_output(t)
    dropped, out_seed, out_offset, *_ = fd.execute([q, k, eye, torch.zeros((n, h, l, s), device=device), 77])
    assert out_seed.tolist() == [77, 5] and int(out_offset) == 5
    probs = torch.softmax((q @ k.transpose(-2, -1)) / e**0.5, dim=-1)
    keep = dropped != 0
    assert abs(1.0 - keep.float().mean().item() - p) < 0.02
    torch.testing.assert_close(dropped[keep], (probs / (1 - p))[keep], rtol=1e-4, atol=1e-6)
    # The same seed and offset: the same mask, whatever value is.
    out, _, _, *got = fd.execute([q, k, v, grad_output, 77])
    leaves = [t.detach().clone().requires_grad_() for t in (q, k, v)]
    attn_ref = torch.softmax((leaves[0] @ leaves[1].transpose(-2, -1)) / e**0.5, dim=-1)
    ref = (attn_ref * keep / (1 - p)) @ leaves[2]
    ref.backward(grad_output)
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-5)
    for g, leaf in zip(got, leaves):
        torch.testing.assert_close(g, leaf.grad, rtol=1e-4, atol=1e-5)
    # Another seed: another mask.
    other, *_ = fd.execute([q, k, eye, torch.zeros((n, h, l, s), device=device), 78])
    assert not torch.equal(other != 0, keep)


def test_constant_scalar_dropout_draws_its_seed_from_torch(device):
    # nvFuser's transformer tests pass dropout_p as fd.define_scalar(0.1): with no rng_seed, the
    # seed and offset come from torch's generator as for a float 0.1 (it asked for a seed).
    n, h, s, p = 1, 2, 32, 0.25
    q, k = torch.randn((n, h, s, 8), device=device), torch.randn((n, h, s, 8), device=device)
    eye = torch.eye(s, device=device).expand(n, h, s, s).contiguous()
    with FusionDefinition() as fd:
        tq, tk, tv = (define(fd, dtype=DataType.Float) for _ in range(3))
        attn, *_ = fd.ops.sdpfa_fwd(tq, tk, tv, fd.define_scalar(p, dtype=DataType.Double),
                                    fd.define_scalar(False, dtype=DataType.Bool), None)
        fd.add_output(attn)
    torch.manual_seed(3)
    (first,) = fd.execute([q, k, eye])
    (second,) = fd.execute([q, k, eye])
    torch.manual_seed(3)
    (again,) = fd.execute([q, k, eye])
    assert torch.equal(first, again) and not torch.equal(first, second)
    assert abs((first == 0).float().mean().item() - p) < 0.05


def test_backward_in_a_fusion_of_its_own_reads_the_forwards_seed_tensors(device):
    """Training runs the forward and the backward as two fusions: the backward's philox_seed /
    philox_offset are tensor inputs holding what the forward returned (nvFuser's [2] (seed,
    offset) UInt64 tensor and 0-D offset; or 0-D seed and offset, the form before torch 2.7),
    read when it runs; the gradients equal those of one fusion doing both with the same mask. Its
    printed definition takes the same inputs."""
    n, h, l, s, e, p = 1, 2, 16, 12, 8, 0.3
    q, k, v, g = (torch.randn((n, h, x, e), device=device) for x in (l, s, s, l))
    with FusionDefinition() as both:
        tq, tk, tv, tg = (define(both, dtype=DataType.Float) for _ in range(4))
        attn, lse, seed, offset = both.ops.sdpfa_fwd(tq, tk, tv, dropout_p=p, is_causal=False,
                                                     rng_seed=11, rng_offset=4)
        for t in (attn, lse, seed, offset, *both.ops.sdpfa_bwd(tg, tq, tk, tv, attn, lse, p,
                                                               False, seed, offset, None)):
            both.add_output(t)
    attn_out, lse_out, seed_out, offset_out, *want = both.execute([q, k, v, g])
    def backward(seed_shape, seed_dtype):
        with FusionDefinition() as fd:
            tg, tq, tk, tv, ta = (define(fd, dtype=DataType.Float) for _ in range(5))
            tl = define(fd, rank=3, dtype=DataType.Float)
            ts = fd.define_tensor(shape=seed_shape, dtype=seed_dtype)
            to = fd.define_tensor(shape=[], dtype=seed_dtype)
            for t in fd.ops.sdpfa_bwd(tg, tq, tk, tv, ta, tl, fd.define_scalar(p), False, ts,
                                      to, None):
                fd.add_output(t)
        return fd

    assert seed_out.dtype == torch.uint64 and seed_out.tolist() == [11, 4]
    nv = backward([2], DataType.UInt64)
    got = nv.execute([g, q, k, v, attn_out, lse_out, seed_out, offset_out])
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    # The form before torch 2.7: 0-D Int64 seed and offset.
    bwd = backward([], DataType.Int)
    seed0, offset0 = (torch.tensor(x, device=device) for x in (11, 4))
    got = bwd.execute([g, q, k, v, attn_out, lse_out, seed0, offset0])
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    # Another seed: other gradients.
    other = bwd.execute([g, q, k, v, attn_out, lse_out, seed0 + 1, offset0])
    assert not torch.equal(other[0], want[0])
    text = repr(nv)
    assert "philox_seed=tv6, philox_offset=tv7" in text and "DataType.Int)" not in text, text
    namespace = {"FusionDefinition": FusionDefinition, "DataType": DataType}
    exec(text, namespace)
    with FusionDefinition() as again:
        namespace["nvfuser_fusion"](again)
    for a, b in zip(again.execute([g, q, k, v, attn_out, lse_out, seed_out, offset_out]), want):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_row_that_sees_no_key_matches_torch(device):
    # Every score of query row 1 is -inf: torch's safe softmax gives that row 0 output and 0
    # gradient, not NaN; so does Loom (grad_key is NaN in both, through 0 * -inf, so skipped).
    q = torch.randn(1, 2, 3, 4, device=device)
    q[:, :, 1, 0], q[:, :, 1, 1:] = float("-inf"), 0.0
    k, v = torch.rand(1, 2, 5, 4, device=device) + 0.5, torch.randn(1, 2, 5, 2, device=device)
    go = torch.randn(1, 2, 3, 2, device=device)
    with FusionDefinition() as fd:
        tq, tk, tv, tg = (define(fd, dtype=DataType.Float) for _ in range(4))
        attn, lse, seed, offset = fd.ops.sdpfa_fwd(tq, tk, tv)
        gq, _, gv = fd.ops.sdpfa_bwd(tg, tq, tk, tv, attn, lse, None, None, seed, offset, None)
        for t in (attn, lse, gq, gv):
            fd.add_output(t)
    out, out_lse, got_q, got_v = fd.execute([q, k, v, go])
    leaves = [t.detach().clone().requires_grad_() for t in (q, k, v)]
    ref = F.scaled_dot_product_attention(*leaves)
    ref.backward(go)
    torch.testing.assert_close(out, ref.detach(), rtol=1e-4, atol=1e-5)
    assert torch.all(out_lse[:, :, 1] == float("-inf"))
    torch.testing.assert_close(got_q, leaves[0].grad, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(got_v, leaves[2].grad, rtol=1e-4, atol=1e-5)


def test_sdpa_errors():
    with FusionDefinition() as fd:
        q, k, v = define(fd), define(fd), define(fd)
        # nvFuser's multidevice tests pass dropout_p as a constant Scalar: 0 needs no seed.
        fd.ops.sdpfa_fwd(q, k, v, dropout_p=fd.define_scalar(0.0, dtype=DataType.Double))
        with pytest.raises(loom.UserError, match=r"dropout_p must be in \[0, 1\), got 1"):
            fd.ops.sdpfa_fwd(q, k, v, dropout_p=1.0, rng_seed=1, rng_offset=2)
        with pytest.raises(loom.UserError, match=r"query T\d+ \[.*\] must have rank 4"):
            fd.ops.sdpfa_fwd(define(fd, rank=3), k, v)
        with pytest.raises(loom.UserError, match=r"value T\d+ is i64; attention takes f32, bf16 or f16"):
            fd.ops.sdpfa_fwd(q, k, define(fd, dtype=DataType.Int))
        with pytest.raises(loom.UserError, match=r"mask T\d+ is bf16; it must be a Bool tensor"):
            fd.ops.sdpfa_fwd(q, k, v, mask=q)
        with pytest.raises(loom.UserError, match=r"bias T\d+ .* has rank 3 but the scores"):
            fd.ops.sdpfa_fwd(q, k, v, bias=define(fd, rank=3))
        attn, lse, *_ = fd.ops.sdpfa_fwd(q, k, v)
        with pytest.raises(loom.UserError, match="philox_seed T.* is not the one sdpfa_fwd returned"):
            seed = fd.ops.add(fd.define_tensor(shape=[], dtype=DataType.Int), 1)
            fd.ops.sdpfa_bwd(q, q, k, v, attn, lse, 0.2, False, seed, seed, None)
        with pytest.raises(loom.UserError, match="philox_offset must be one too"):
            fd.ops.sdpfa_bwd(q, q, k, v, attn, lse, 0.2, False,
                             fd.define_tensor(shape=[], dtype=DataType.Int), 5, None)
        with pytest.raises(loom.UserError, match="log_sumexp T.* is bf16; it is Float32"):
            fd.ops.sdpfa_bwd(q, q, k, v, attn, define(fd, rank=3), None, None, 0, 0, None)


def test_drawn_rng_state_is_returned_and_printed_as_nvfusers(device):
    """A forward with dropout and no rng_seed draws its seed at execute; returning its RNG state
    and passing it to the backward prints in nvFuser's form (the four results named at
    sdpfa_fwd, the backward given them), so the printed definition draws the same way."""
    n, h, s, e, p = 1, 2, 16, 8, 0.25
    q, k, v, g = (torch.randn((n, h, s, e), device=device) for _ in range(4))
    with FusionDefinition() as fd:
        tq, tk, tv, tg = (define(fd, dtype=DataType.Float) for _ in range(4))
        attn, lse, seed, offset = fd.ops.sdpfa_fwd(tq, tk, tv, dropout_p=p, is_causal=True)
        grads = fd.ops.sdpfa_bwd(tg, tq, tk, tv, attn, lse, p, True, seed, offset, None)
        for t in (attn, seed, offset, grads[0]):
            fd.add_output(t)
    torch.manual_seed(5)
    out, out_seed, out_offset, dq = fd.execute([q, k, v, g])
    assert out_seed.shape == (2,) and out_seed.dtype == torch.uint64
    assert out_offset.shape == () and int(out_offset) == out_seed.tolist()[1]
    text = repr(fd)
    assert "define_from_text" not in text, text
    names = re.search(r"tv4, tv5, (tv\d+), (tv\d+) = fd\.ops\.sdpfa_fwd\(", text)
    assert names is not None, text
    assert f"philox_seed={names[1]}, philox_offset={names[2]}" in text, text
    # The printed definition draws the same seed and offset for the same generator state.
    namespace = {"FusionDefinition": FusionDefinition, "DataType": DataType}
    exec(text, namespace)
    with FusionDefinition() as again:
        namespace["nvfuser_fusion"](again)
    torch.manual_seed(5)
    out2, seed2, offset2, dq2 = again.execute([q, k, v, g])
    assert torch.equal(seed2, out_seed) and torch.equal(out2, out) and torch.equal(dq2, dq)
