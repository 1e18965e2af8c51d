# SPDX-License-Identifier: Apache-2.0
# More of issue 36's compatibility classes, met running nvFuser's tutorial, matmul, SDPA and
# high-complexity tests: Fusion.print_kernel / print / print_math as nvFuser's tutorial calls
# them, rFactor chains written by hand, and the other classes below. Each fusion is defined, run
# and compared with torch or with Loom's reference evaluator (fd.validate), as nvFuser's Python
# tests do.
import re

import pytest
import loom
import torch

from loom.direct import DataType, FusionDefinition, ParallelType


# The kernel text of a fusion as scheduled by hand, asked for between scheduling steps (nvFuser's
# tutorial prints it before and after parallelizing): the text follows the schedule, the fusion
# stays open to further scheduling, and the kernel then run gives the right values.
def test_print_kernel_follows_the_hand_schedule():
    with FusionDefinition() as fd:
        tv0 = fd.define_tensor(shape=[-1, -1])
        tv1 = fd.ops.set(tv0)
        fd.add_output(tv1)
        serial = fd.fusion.print_kernel()
        tv1.merge(0, 1)
        tv1.split(0, 128)
        tv1.axis(1).parallelize(ParallelType.block_x)
        tv1.axis(0).parallelize(ParallelType.grid_x)
        parallel = fd.fusion.print_kernel()
    assert "__global__" in serial and "__global__" in parallel
    assert "threadIdx.x" not in serial and "blockIdx.x" not in serial
    assert "threadIdx.x" in parallel and "blockIdx.x" in parallel
    # Asking did not lower the fusion itself: it runs as scheduled afterwards.
    x = torch.randn(33, 17)
    (out,) = fd.manual_execute([x])
    assert out.equal(x)
    assert fd.last_cuda_code() == parallel


# print_math returns the fusion's printout (nvFuser's tutorial prints and compares it), and
# Fusion.print() prints the same text.
def test_print_math_returns_and_print_prints(capsys):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        fd.add_output(fd.ops.relu(x))
    text = fd.fusion.print_math()
    assert isinstance(text, str) and "relu" in text and text == fd.fusion.to_text()
    assert fd.fusion.print() is None
    assert capsys.readouterr().out.strip() == text.strip()


# Fusion.vals(): every value, as nvFuser's tutorial filters it for the tensors to schedule (here:
# the reductions, found by their reduction IterDomains, then rFactored; the reference evaluator
# gives torch's sums).
@pytest.mark.text_form_definition
def test_fusion_vals_lists_tensors_to_schedule():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1])
        m = fd.ops.sum(x, dims=[1], keepdim=True)
        s = fd.ops.sum(fd.ops.mul(x, x), dims=[1])
        fd.add_output(m)
        fd.add_output(s)
        tvs = [v for v in fd.fusion.vals() if v.is_tensor()]
        assert {t.name for t in (x, m, s)} <= {t.name for t in tvs}
        reductions = [tv for tv in tvs
                      if any(i.is_reduction() for i in tv.get_logical_domain())]
        assert len(reductions) == 2
        for tv in reductions:
            tv.split(-1, 8)
            tv.rfactor([-1])
    t = torch.randn(5, 37, dtype=torch.float64).float()
    got = loom.to_torch_list(loom._C.evaluate_fusion(fd.fusion, [t]))
    torch.testing.assert_close(got[0], t.sum(1, keepdim=True))
    torch.testing.assert_close(got[1], (t * t).sum(1))


# A lowering error found by print_kernel is the same UserError manual_execute would give.
@pytest.mark.text_form_definition
def test_print_kernel_reports_what_cannot_lower():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1])
        s = fd.ops.sum(x, dims=[0, 1])
        fd.add_output(s)
        s.rfactor([1])
    with pytest.raises(loom.UserError, match="local tensor .* has the symbolic extent"):
        fd.fusion.print_kernel()


# rFactor chains as nvFuser's tutorial writes them: a 1-D sum split twice and rFactored twice
# (per-thread, then per-block partials), parallelized, run by hand against torch's sum; and a sum
# over two axes rFactored over one of them without a split (the other axis stays an iteration
# axis of the partial).
@pytest.mark.text_form_definition
def test_rfactor_chain_by_hand():
    with FusionDefinition() as fd:
        tv0 = fd.define_tensor(shape=[-1])
        tv1 = fd.ops.sum(tv0, dims=[0])
        fd.add_output(tv1)
        tv1.split(0, 128)
        tv1.split(0, 4)
        tv2 = tv1.rfactor([1])
        tv3 = tv1.rfactor([1])
        for tv in (tv1, tv2, tv3):
            tv.axis(0).parallelize(ParallelType.grid_x)
        tv2.axis(2).parallelize(ParallelType.block_x)
        tv3.axis(1).parallelize(ParallelType.block_x)
    x = torch.randn(5000)
    fd.manual_validate([x], [x.sum()])


@pytest.mark.text_form_definition
def test_rfactor_of_an_unsplit_axis():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[6, 9])
        s = fd.ops.sum(x, dims=[0, 1])
        fd.add_output(s)
        partial = s.rfactor([1])  # [i6, r9]; s: [r6]
        partial.axis(0).parallelize(ParallelType.block_x)
        s.axis(0).parallelize(ParallelType.block_x)
    t = torch.randn(6, 9)
    fd.manual_validate([t], [t.sum()])


def _sdpa_reference(q, k, v, bias, mask):
    """torch's attention in float64 with the bias and the mask folded into one additive mask."""
    additive = bias.double() + torch.where(mask, 0.0, float("-inf")).double()
    return torch.nn.functional.scaled_dot_product_attention(
        q.double(), k.double(), v.double(), attn_mask=additive)


# sdpfa_fwd's bias= and mask= (nvFuser's newer arguments): the bias is added to the scores and a
# false mask entry hides its key, as torch's additive attn_mask does. f32 against torch in float64;
# bf16 rounded once from the f32 result (torch's CPU bf16 kernel rounds its intermediates, so it
# is no oracle there).
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_sdpfa_fwd_bias_and_mask(dtype):
    g = torch.Generator().manual_seed(36)
    N, H, L, S, E = 3, 2, 5, 4, 8
    q, k, v = (torch.randn(shape, generator=g).to(dtype)
               for shape in ((N, H, L, E), (N, H, S, E), (N, H, S, E)))
    bias = torch.randn(N, H, L, S, generator=g).to(dtype)
    mask = torch.rand(N, H, L, S, generator=g) > 0.3
    mask[..., 0] = True  # every query sees a key
    with FusionDefinition() as fd:
        tq, tk, tv = fd.from_pytorch(q), fd.from_pytorch(k), fd.from_pytorch(v)
        tb, tm = fd.from_pytorch(bias), fd.from_pytorch(mask)
        out, lse, *_ = fd.ops.sdpfa_fwd(tq, tk, tv, bias=tb, mask=tm)
        fd.add_output(out)
    (got,) = fd.execute([q, k, v, bias, mask])
    want = _sdpa_reference(q, k, v, bias, mask)
    if dtype == torch.float32:
        torch.testing.assert_close(got.double(), want, rtol=1e-5, atol=1e-6)
    else:
        assert got.dtype == torch.bfloat16
        torch.testing.assert_close(got.double(), want.to(torch.bfloat16).double(), rtol=1e-2,
                                   atol=1e-2)
    fd.validate([q, k, v, bias, mask])


# The AlphaFold3 triangle-attention shapes: 5-D operands, a bias broadcast over the query rows'
# batch dim and a mask broadcast over heads and queries (broadcast_in_dim with size-1 dims).
def test_sdpfa_fwd_broadcast_bias_and_mask():
    g = torch.Generator().manual_seed(7)
    B, I, H, J, C = 2, 3, 2, 4, 8
    q, k, v = (torch.randn(B, I, H, J, C, generator=g) for _ in range(3))
    bias = torch.randn(B, H, J, J, generator=g)
    mask = torch.rand(B, I, J, generator=g) > 0.4
    mask[..., 0] = True
    with FusionDefinition() as fd:
        tq, tk, tv = fd.from_pytorch(q), fd.from_pytorch(k), fd.from_pytorch(v)
        tb, tm = fd.from_pytorch(bias), fd.from_pytorch(mask)
        b5 = fd.ops.broadcast_in_dim(tb, shape=[B, 1, H, J, J], broadcast_dims=[0, 2, 3, 4])
        m5 = fd.ops.broadcast_in_dim(tm, shape=[B, I, 1, 1, J], broadcast_dims=[0, 1, 4])
        out, *_ = fd.ops.sdpfa_fwd(tq, tk, tv, bias=b5, mask=m5)
        fd.add_output(out)
    (got,) = fd.execute([q, k, v, bias, mask])
    want = _sdpa_reference(q, k, v, bias[:, None], mask[:, :, None, None, :])
    torch.testing.assert_close(got.double(), want, rtol=1e-5, atol=1e-6)


def test_sdpfa_fwd_bias_and_mask_errors():
    with FusionDefinition() as fd:
        q = fd.define_tensor(shape=[-1] * 4, dtype=DataType.Float)
        with pytest.raises(loom.UserError, match=r"bias T\d+ is i64; it must be a floating tensor"):
            fd.ops.sdpfa_fwd(q, q, q, bias=fd.define_tensor(shape=[-1] * 4, dtype=DataType.Int))
        with pytest.raises(loom.UserError, match=r"mask T\d+ .* has rank 2 but the scores"):
            fd.ops.sdpfa_fwd(q, q, q, mask=fd.define_tensor(shape=[-1] * 2, dtype=DataType.Bool))


# fd.sched as nvFuser's tutorial uses it: a reference tensor split, its transforms spread to the
# whole fusion, its parallel types spread, everything inlined; the kernel run by hand gives
# torch's values, and every tensor took the reference's loop structure.
def test_fd_sched_spreads_a_hand_schedule():
    x, y = torch.randn(37, 50), torch.randn(37, 50)
    with FusionDefinition() as fd:
        t0, t1 = fd.from_pytorch(x), fd.from_pytorch(y)
        t2 = fd.ops.add(t0, t1)
        t3 = fd.ops.exp(t2)
        fd.add_output(t3)
        t3.merge(0, 1)
        t3.split(0, 128)
        fd.sched.transform_like(t3)
        t3.axis(0).parallelize(ParallelType.grid_x)
        t3.axis(1).parallelize(ParallelType.block_x)
        fd.sched.parallelize_like(t3)
        fd.sched.inline_most()
        assert t2.num_dims() == 2
        assert str(t2.axis(1).parallel_type) == str(t3.axis(1).parallel_type)
    kernel = fd.fusion.print_kernel()
    assert "threadIdx.x" in kernel and "blockIdx.x" in kernel
    fd.manual_validate([x, y], [torch.exp(x + y)])


def test_fd_sched_arguments_loom_lacks():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1])
        t1 = fd.ops.neg(t0)
        fd.add_output(t1)
        with pytest.raises(loom.NotSupportedError, match=r"fd.sched.parallelize_like: pos=.*"):
            fd.sched.parallelize_like(t1, 1)
        with pytest.raises(loom.NotSupportedError,
                           match=r"fd.sched.parallelize_like: selected_parallel_types="):
            fd.sched.parallelize_like(t1, selected_parallel_types={ParallelType.block_x})
        with pytest.raises(loom.NotSupportedError, match=r"fd.sched.inline_most: selected_tens"):
            fd.sched.inline_most([t1])
        with pytest.raises(loom.NotSupportedError, match=r"fd.sched.inline_at is not supported"):
            fd.sched.inline_at(t1, 1)
        with pytest.raises(AttributeError, match="has no attribute 'no_such_thing'"):
            fd.sched.no_such_thing


# define_scalar(DataType.Int) alone, as nvFuser's tests write it, is an input of that dtype (not a
# constant, and no error): its value comes from execute's inputs.
def test_define_scalar_of_a_dtype_is_an_input():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1], dtype=DataType.Int)
        s = fd.define_scalar(DataType.Int)
        f = fd.define_scalar(DataType.Double)
        fd.add_output(fd.ops.add(t0, s))
        fd.add_output(fd.ops.mul(fd.ops.cast(t0, DataType.Double), f))
    x = torch.arange(5)
    a, b = fd.execute([x, 7, 0.5])
    assert a.dtype == torch.int64 and a.equal(x + 7)
    assert b.dtype == torch.float64 and b.equal(x.double() * 0.5)


def define_exp_of_sum(fd, x, y):
    """exp(x + y) of two inputs shaped like x and y: the pointwise fusion the schedule tests use."""
    t0, t1 = fd.from_pytorch(x), fd.from_pytorch(y)
    fd.add_output(fd.ops.exp(fd.ops.add(t0, t1)))


# nvFuser's schedule module: which of Loom's schedulers take the whole fusion, why one does not,
# and one applied by hand; manual_execute then runs that schedule as one kernel (torch's values).
@pytest.mark.text_form_definition  # scheduled fusions with rFactors print as text
def test_schedule_module_pointwise_reduction_and_normalization():
    from loom.direct import SchedulerType, schedule

    x, y = torch.randn(6, 40), torch.randn(6, 40)
    with FusionDefinition() as fd:
        define_exp_of_sum(fd, x, y)
        assert schedule.find_compatible_schedulers(fd.fusion, [x, y]) == [SchedulerType.pointwise]
        params = schedule.schedule(fd.fusion, SchedulerType.pointwise, [x, y])
    assert params.scheduler_type is SchedulerType.pointwise and str(params)
    (out,) = fd.manual_execute([x, y], params)
    torch.testing.assert_close(out, torch.exp(x + y))
    assert "blockIdx.x" in fd.last_cuda_code() or "threadIdx.x" in fd.last_cuda_code()

    x = x / 8  # sums near 1: exp keeps their rounding small
    with FusionDefinition() as fd:
        t0 = fd.from_pytorch(x)
        fd.add_output(fd.ops.exp(fd.ops.sum(t0, dims=[1])))
        ok, why = schedule.can_schedule(fd.fusion, SchedulerType.pointwise, [x])
        assert not ok and "pointwise" in why and "reduction" in why
        assert schedule.can_schedule(fd.fusion, SchedulerType.reduction, [x]) == (True, "")
        assert schedule.find_compatible_schedulers(fd.fusion, [x]) == [SchedulerType.reduction]
        params = schedule.schedule(fd.fusion, SchedulerType.reduction, [x])
    (out,) = fd.manual_execute([x], params)
    # float32 sums in another order, then exp: a few ulps apart, more than assert_close's default
    torch.testing.assert_close(out, torch.exp(x.sum(1)), rtol=1e-5, atol=1e-5)

    with FusionDefinition() as fd:
        t0 = fd.from_pytorch(x)
        mean = fd.ops.div(fd.ops.sum(t0, dims=[-1], keepdim=True), 40)
        diff = fd.ops.sub(t0, mean)
        var = fd.ops.div(fd.ops.sum(fd.ops.mul(diff, diff), dims=[-1], keepdim=True), 40)
        fd.add_output(fd.ops.div(diff, fd.ops.sqrt(fd.ops.add(var, 1e-6))))
        assert SchedulerType.inner_persistent in schedule.find_compatible_schedulers(fd.fusion, [x])
        params = schedule.schedule(fd.fusion, SchedulerType.inner_persistent, [x])
    (out,) = fd.manual_execute([x], params)
    var, mean = torch.var_mean(x, dim=-1, correction=0, keepdim=True)
    torch.testing.assert_close(out, (x - mean) / torch.sqrt(var + 1e-6))


# nvFuser's tutorial: compute the heuristics, change them, apply them. Each changed field shows
# in the parameters and in the kernel, and the kernel still computes torch's values.
@pytest.mark.text_form_definition  # scheduled fusions with rFactors print as text
def test_schedule_module_changed_heuristics():
    from loom.direct import SchedulerType, schedule

    x, y = torch.randn(40, 96), torch.randn(40, 96)
    with FusionDefinition() as fd:
        define_exp_of_sum(fd, x, y)
        params = schedule.compute_heuristics(fd.fusion, SchedulerType.pointwise, [x, y])
        fields = params.fields()
        assert {"vectorize", "unroll", "bdimx"} <= set(fields)
        assert params.vectorization_factor == fields["vectorize"]  # nvFuser's name for it
        params.vectorization_factor = 1
        params.unroll = 2
        params.bdimx = 64
        assert params.vectorize == 1 and params.unroll == 2 and params.bdimx == 64
        assert "vectorize=1" in str(params) and "unroll=2" in str(params)
        assert "bdimx=64" in str(params)
        assert schedule.schedule(fd.fusion, SchedulerType.pointwise, params) is params
    (out,) = fd.manual_execute([x, y], params)
    torch.testing.assert_close(out, torch.exp(x + y))
    code = fd.last_cuda_code()
    assert "#define LOOM_BLOCK_DIM_X 64u" in code  # bdimx
    assert re.search(r"for \(int (i\d+) = 0; \1 < 2; \+\+\1\)", code)  # the unroll by 2

    # A combination the scheduler cannot make is a UserError when it is applied.
    with FusionDefinition() as fd:
        t0 = fd.from_pytorch(x)
        fd.add_output(fd.ops.neg(t0))
        params = schedule.compute_heuristics(fd.fusion, SchedulerType.pointwise, [x])
        params.bdimx = 0
        with pytest.raises(loom.UserError, match="bdimx"):
            schedule.schedule(fd.fusion, SchedulerType.pointwise, params)

    # A reduction with its own parameters changed.
    x = torch.randn(8, 256) / 16
    with FusionDefinition() as fd:
        t0 = fd.from_pytorch(x)
        fd.add_output(fd.ops.sum(t0, dims=[1]))
        params = schedule.compute_heuristics(fd.fusion, SchedulerType.reduction, [x])
        before = params.fields()
        name = next(n for n in ("bdimx", "bdimy") if n in before)
        setattr(params, name, 32)
        schedule.schedule(fd.fusion, SchedulerType.reduction, params)
    (out,) = fd.manual_execute([x], params)
    torch.testing.assert_close(out, x.sum(1), rtol=1e-5, atol=1e-5)


def test_schedule_module_errors():
    from loom.direct import SchedulerType, schedule

    x = torch.randn(4, 8)
    with FusionDefinition() as fd:
        t0 = fd.from_pytorch(x)
        fd.add_output(fd.ops.sum(t0, dims=[1]))
        with pytest.raises(loom.UserError, match="the pointwise scheduler does not take this "
                                                 "fusion .*reduction"):
            schedule.schedule(fd.fusion, SchedulerType.pointwise, [x])
        with pytest.raises(loom.UserError, match="compute_heuristics: the pointwise scheduler "
                                                 "does not take this fusion .*reduction"):
            schedule.compute_heuristics(fd.fusion, SchedulerType.pointwise, [x])
        params = schedule.compute_heuristics(fd.fusion, SchedulerType.reduction, [x])
        with pytest.raises(loom.NotSupportedError, match=r"HeuristicParams.unroll_factor_outer "
                                                         r"is not supported by Loom: the "
                                                         r"reduction scheduler's parameters are "):
            params.unroll_factor_outer = 2
        with pytest.raises(loom.UserError, match="none negative"):
            params.bdimx = -4
        with pytest.raises(loom.UserError, match="the parameters are the reduction scheduler's, "
                                                 "not the pointwise scheduler's"):
            schedule.schedule(fd.fusion, SchedulerType.pointwise, params)
    with FusionDefinition() as other:
        fd_x = other.from_pytorch(x)
        other.add_output(other.ops.neg(fd_x))
        params = schedule.schedule(other.fusion, SchedulerType.pointwise, [x])
    with pytest.raises(loom.UserError, match="heuristic_params must be what schedule.schedule"):
        fd.manual_execute([x], params)
    # nvFuser's code lists the members through pybind11's table; none is among them.
    entries = getattr(SchedulerType, "__entries")
    assert entries["pointwise"][0] is SchedulerType.pointwise and "none" in entries


# print(fd) in the form nvFuser's direct bindings print: the function nvfuser_fusion with the
# space before the colon, tensors tv<n> and scalars c<n> counted apart, linear's bias as a
# keyword; the text rebuilds the fusion and runs to torch's values.
def test_printed_definition_is_nvfusers_direct_form():
    x = torch.randn(6, 4, dtype=torch.bfloat16)
    w = torch.randn(3, 4, dtype=torch.bfloat16)
    b = torch.randn(3, dtype=torch.bfloat16)
    with FusionDefinition() as fd:
        t0, t1, t2 = fd.from_pytorch(x), fd.from_pytorch(w), fd.from_pytorch(b)
        s = fd.define_scalar(None, dtype=DataType.Double)
        t3 = fd.ops.linear(t0, t1, t2)
        fd.add_output(fd.ops.mul(t3, s))
    expected = """def nvfuser_fusion(fd : FusionDefinition) -> None :
    tv0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    tv1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    tv2 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False)
    c6 = fd.define_scalar(None, dtype=DataType.Double)
    tv3 = fd.ops.linear(tv0, tv1, bias=tv2)
"""
    text = repr(fd)
    assert expected in text, text
    namespace = {"FusionDefinition": FusionDefinition, "DataType": DataType}
    exec(text, namespace)
    with FusionDefinition() as again:
        namespace["nvfuser_fusion"](again)
    assert fd.fusion.structural_difference(again.fusion) is None
    (out,) = again.execute([x, w, b, 0.5])
    want = torch.nn.functional.linear(x.float(), w.float(), b.float()) * 0.5
    torch.testing.assert_close(out.float(), want, rtol=2e-2, atol=2e-2)


# DataType.Index, nvFuser's index type, is Loom's Int64: a Scalar defined with it is an Int input
# (nvFuser's inline-definition test gives a reshape its size this way), and it prints as Index,
# as nvFuser prints it.
def test_index_dtype_is_int64():
    assert DataType.Index.loom == DataType.Int.loom
    x = torch.randn(10)
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1], contiguity=[False], dtype=DataType.Float, is_cpu=False)
        c0 = fd.define_scalar(None, dtype=DataType.Index)
        fd.add_output(fd.ops.reshape(t0, new_shape=[2, c0]))
    # c2: nvFuser's counter has made t0's size (c0) and the fusion's zero (c1) before it.
    assert "c2 = fd.define_scalar(None, dtype=DataType.Index)" in str(fd)
    assert "fd.ops.reshape(tv0, new_shape=[2, c2])" in str(fd)
    (out,) = fd.execute([x, 5])
    torch.testing.assert_close(out, x.reshape(2, 5), rtol=0, atol=0)


# Loop transforms written on a fusion that execute() schedules (nvFuser's code splits and
# reorders loops before executing, parallelizing nothing): the schedulers make their own loops,
# so those are dropped and the values are torch's. A parallelized loop is a hand schedule, which
# execute() refuses saying so; an allocation made of the split is refused by name (Loom lays out
# permutations of the logical dims only).
def test_user_loop_transforms_on_an_auto_scheduled_fusion(device):
    x = torch.randn(8, 12, device=device)
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], contiguity=True)
        doubled = fd.ops.mul(t, 2.0)
        sums = fd.ops.sum(doubled, dims=[1])
        flat = fd.ops.reshape(doubled, [96])
        fd.add_output(doubled)
        fd.add_output(sums)
        fd.add_output(flat)
        doubled.split(1, 3)
        doubled.reorder({0: 1})
        sums.outer_split(0, 2)
        flat.split(0, 32)
        flat.merge(0, 1)
    a, b, c = fd.execute([x])
    torch.testing.assert_close(a, x * 2, rtol=0, atol=0)
    torch.testing.assert_close(b, (x * 2).sum(1))
    torch.testing.assert_close(c, (x * 2).reshape(96), rtol=0, atol=0)

    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], contiguity=True)
        out = fd.ops.neg(t)
        fd.add_output(out)
        out.split(1, 4)
        out.axis(2).parallelize(ParallelType.block_x)
    with pytest.raises(loom.UserError, match=r"already scheduled .*a hand schedule, which "
                                             r"manual_execute / KernelExecutor runs"):
        fd.execute([x])

    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], contiguity=True)
        out = fd.ops.neg(t)
        fd.add_output(out)
        out.outer_split(1, 2)
        out.reorder({1: 0})
        out.set_allocation_domain(out.get_loop_domain(), True)
    with pytest.raises(loom.UserError, match=r"allocation domains other than a permutation of "
                                             r"logical are not supported"):
        fd.execute([x])
