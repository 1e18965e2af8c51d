# SPDX-License-Identifier: Apache-2.0
"""nvFuser's profiler under its names: ``with PythonProfiler() as prof: fd.execute(...)`` times
every segment the runs inside the block launch, and ``prof.profile`` is a FusionProfile of the
last fusion run there, one KernelProfile per segment (kernels, and communications, matmuls and
attention segments, whose ``scheduler`` says which).

Times are the device's: CUDA events around each segment on its stream, the host clock on the
host backend (whose kernels are done when their launch returns), less the compile a first run
pays between the marks. A profiled run waits for its last segment, and profiled runs compile
their own kernels once (a separate cache, so unprofiled runs never wait): profile to look, not
in a timing loop. docs/python.md, "Profiling", says what each field holds.
"""

import threading

from .. import _C

_open = threading.local()  # this thread's open profilers, innermost last


def current():
    """The innermost PythonProfiler open on this thread, or None."""
    stack = getattr(_open, "stack", None)
    return stack[-1] if stack else None


class KernelProfile:
    """One segment of a profiled run (nvFuser's field names)."""

    def __init__(self, entry, device, stream, peak_bytes_per_second):
        self.segment_id = entry["segment"]
        kind = entry["kind"]
        # nvFuser's profile says "communication" for a communication; the collective is the name.
        self.scheduler = "communication" if kind == "communication" else entry["scheduler"]
        self.kind = kind
        self.name = entry["name"]
        self.device = device
        self.stream = stream
        self.backend = entry["backend"]
        self.compile_time_ms = entry["compile_seconds"] * 1e3
        self.host_time_ms = entry["host_seconds"] * 1e3
        self.time_ms = max(entry["device_seconds"], 0.0) * 1e3
        self.grid = tuple(entry["grid"])
        self.block = tuple(entry["block"])
        self.cluster = (1, 1, 1)  # Loom launches no thread-block clusters
        self.grid_str = _dims(self.grid)
        self.block_str = _dims(self.block)
        self.cluster_str = _dims(self.cluster)
        self.shared_mem = entry["shared_bytes"]
        self.shared_mem_str = f"{self.shared_mem} B"
        self.registers = entry["registers"]
        self.input_bytes = entry["input_bytes"]
        self.output_bytes = entry["output_bytes"]
        self.effective_bandwidth_gbs, self.percentage_peak_bandwidth = _bandwidth(
            self.input_bytes + self.output_bytes, self.time_ms * 1e-3, peak_bytes_per_second)

    def __repr__(self):
        return (f"KernelProfile(segment_id={self.segment_id}, name={self.name!r}, "
                f"scheduler={self.scheduler!r}, time_ms={self.time_ms:.4f}, "
                f"grid={self.grid_str}, block={self.block_str}, registers={self.registers})")


def _dims(d):
    return f"[{d[0]}, {d[1]}, {d[2]}]"


def _bandwidth(moved, seconds, peak_bytes_per_second):
    """(GB/s, percent of the peak) of `moved` bytes in `seconds`; 0 where either is unknown."""
    if seconds <= 0:
        return 0.0, 0.0
    rate = moved / seconds
    return rate / 1e9, 100.0 * rate / peak_bytes_per_second if peak_bytes_per_second > 0 else 0.0


class FusionProfile:
    """One profiled run of a fusion: its segments' KernelProfiles and their totals."""

    def __init__(self, fusion_id, kernel_profiles, host_seconds, peak_bytes_per_second=0.0):
        self.fusion_id = fusion_id
        self.kernel_profiles = kernel_profiles
        self.segments = len(kernel_profiles)
        self.host_time_ms = host_seconds * 1e3
        self.compile_time_ms = sum(k.compile_time_ms for k in kernel_profiles)
        self.kernel_time_ms = sum(k.time_ms for k in kernel_profiles)
        self.cuda_evt_time_ms = self.kernel_time_ms
        self.input_bytes = sum(k.input_bytes for k in kernel_profiles)
        self.output_bytes = sum(k.output_bytes for k in kernel_profiles)
        self.effective_bandwidth_gbs, self.percentage_peak_bandwidth = _bandwidth(
            self.input_bytes + self.output_bytes, self.kernel_time_ms * 1e-3,
            peak_bytes_per_second)

    def __repr__(self):
        return (f"FusionProfile(fusion_id={self.fusion_id}, segments={self.segments}, "
                f"kernel_time_ms={self.kernel_time_ms:.4f}, "
                f"compile_time_ms={self.compile_time_ms:.2f})")


class PythonProfiler:
    """Profiles the runs inside its ``with`` block on this thread: ``profile`` is the
    FusionProfile of the last one, ``profiles`` all of them in order. `auto_scheduled`:
    nvFuser's flag for which path it profiles; Loom profiles both (fd.execute and
    fd.manual_execute), so it is only recorded."""

    def __init__(self, auto_scheduled=True):
        self.auto_scheduled = bool(auto_scheduled)
        self.profiles = []

    @property
    def profile(self):
        if not self.profiles:
            from .. import UserError

            raise UserError("PythonProfiler.profile: no fusion ran inside the profiler's block")
        return self.profiles[-1]

    def __enter__(self):
        stack = getattr(_open, "stack", None)
        if stack is None:
            stack = _open.stack = []
        stack.append(self)
        return self

    def __exit__(self, *exc):
        _open.stack.remove(self)
        return False

    def _record(self, fusion_id, entries, inputs, host_seconds):
        self.profiles.append(make_profile(fusion_id, entries, inputs, host_seconds))


def make_profile(fusion_id, entries, inputs, host_seconds):
    """A FusionProfile from a run's segment entries (_C's last_profile()) and its inputs (which
    say the device and stream)."""
    device, stream, peak = 0, 0, 0.0
    for x in inputs:
        dev = getattr(x, "device", None)
        if getattr(dev, "type", None) == "cuda":
            import torch

            device = dev.index or 0
            stream = torch.cuda.current_stream(device).cuda_stream
            peak = _C.peak_memory_bandwidth(device)
            break
    kernels = [KernelProfile(e, device, stream, peak) for e in entries]
    return FusionProfile(fusion_id, kernels, host_seconds, peak)
