# SPDX-License-Identifier: Apache-2.0
"""loom.direct.PythonProfiler (nvFuser's profiler names): one KernelProfile per segment of the
runs inside the block, with the segment's scheduler, kernel name, launch, bytes and device time,
on CPU tensors (host backend) and CUDA tensors."""

import pytest
import torch

from loom.direct import FusionDefinition, FusionProfile, KernelProfile, PythonProfiler, UserError


def two_segment_fusion(x):
    """relu(x) and sum(x, 1): a pointwise and a reduction kernel."""
    fd = FusionDefinition()
    with fd:
        t0 = fd.from_pytorch(x)
        fd.add_output(fd.ops.relu(t0))
        fd.add_output(fd.ops.sum(t0, [1]))
    return fd


def test_profile_has_a_kernel_profile_per_segment(device):
    x = torch.randn(64, 96, device=device)
    fd = two_segment_fusion(x)
    with PythonProfiler() as prof:
        relu, total = fd.execute([x])
    torch.testing.assert_close(relu, torch.relu(x))
    torch.testing.assert_close(total, x.sum(1), rtol=1e-5, atol=1e-4)
    p = prof.profile
    assert isinstance(p, FusionProfile)
    assert p.fusion_id == fd.id() and p.fusion_id >= 0
    schedulers = fd.last_schedulers()
    assert p.segments == len(p.kernel_profiles) == len(schedulers) == 2
    for k, (kp, scheduler) in enumerate(zip(p.kernel_profiles, schedulers)):
        assert isinstance(kp, KernelProfile)
        assert kp.segment_id == k
        assert kp.scheduler == str(scheduler)
        assert kp.name.startswith("loom_kernel_")
        assert kp.grid_str.startswith("[") and kp.block_str.startswith("[")
        threads = kp.block[0] * kp.block[1] * kp.block[2]
        assert 1 <= threads <= 1024
        assert kp.time_ms > 0 and kp.effective_bandwidth_gbs > 0
        # The first profiled run compiles.
        assert kp.compile_time_ms > 0
        assert kp.device == (x.device.index or 0 if device == "cuda" else 0)
        if device == "cuda":
            assert kp.registers > 0
            assert 0 < kp.percentage_peak_bandwidth < 100
        else:
            assert kp.registers == 0
    # Bytes: each kernel reads x and writes its output.
    nbytes = x.numel() * x.element_size()
    by_scheduler = {kp.scheduler: kp for kp in p.kernel_profiles}
    assert by_scheduler["pointwise"].input_bytes == nbytes
    assert by_scheduler["pointwise"].output_bytes == nbytes
    assert by_scheduler["reduction"].input_bytes == nbytes
    assert by_scheduler["reduction"].output_bytes == x.shape[0] * x.element_size()
    assert p.input_bytes == 2 * nbytes
    assert p.kernel_time_ms == pytest.approx(sum(k.time_ms for k in p.kernel_profiles))


def test_later_profiled_runs_reuse_the_kernels_and_each_is_recorded(device):
    x = torch.randn(32, 40, device=device)
    fd = two_segment_fusion(x)
    fd.execute([x])  # unprofiled runs keep their own kernels
    with PythonProfiler() as prof:
        fd.execute([x])
        fd.execute([x])
    assert len(prof.profiles) == 2
    assert all(kp.compile_time_ms > 0 for kp in prof.profiles[0].kernel_profiles)
    assert all(kp.compile_time_ms == 0 for kp in prof.profiles[1].kernel_profiles)
    assert prof.profile is prof.profiles[1]
    # Outside the block nothing is recorded.
    fd.execute([x])
    assert len(prof.profiles) == 2


def test_execute_profile_true_and_fd_profile(device):
    x = torch.randn(16, 24, device=device)
    fd = two_segment_fusion(x)
    with pytest.raises(UserError, match="no run was profiled"):
        fd.profile()
    fd.execute([x], profile=True)
    p = fd.profile()
    assert p.segments == 2 and all(kp.time_ms > 0 for kp in p.kernel_profiles)


def test_manual_execute_is_profiled_as_one_user_kernel(device):
    x = torch.randn(8, 128, device=device)
    fd = FusionDefinition()
    with fd:
        t0 = fd.from_pytorch(x)
        t1 = fd.ops.mul(t0, 2.0)
        fd.add_output(t1)
    with PythonProfiler(auto_scheduled=False) as prof:
        (out,) = fd.manual_execute([x])
    torch.testing.assert_close(out, x * 2)
    assert prof.auto_scheduled is False
    (kp,) = prof.profile.kernel_profiles
    assert kp.scheduler == "user" and kp.name.startswith("loom_kernel_")
    assert kp.input_bytes == kp.output_bytes == x.numel() * x.element_size()
    assert kp.time_ms > 0


def test_profiler_without_a_run_says_so():
    with PythonProfiler() as prof:
        pass
    with pytest.raises(UserError, match="no fusion ran inside the profiler's block"):
        prof.profile


def test_profilers_nest_and_the_innermost_records():
    x = torch.randn(4, 8)
    fd = two_segment_fusion(x)
    with PythonProfiler() as outer:
        fd.execute([x])
        with PythonProfiler() as inner:
            fd.execute([x])
    assert len(outer.profiles) == 1 and len(inner.profiles) == 1
