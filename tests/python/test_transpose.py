# SPDX-License-Identifier: Apache-2.0
# The transpose scheduler through the Python package (issue 37): a transpose with pointwise ops
# around it is one kernel of SchedulerType.transpose and matches torch; _enable_options=
# ["scheduler_choice"] prints why every other scheduler rejected it; a narrow transpose stays
# pointwise.
import contextlib
import io

import torch

from loom.direct import DataType, FusionDefinition, SchedulerType


def _transpose_gelu_bias(dtype):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=dtype)
        b = fd.define_tensor(shape=[-1], contiguity=True, dtype=dtype)
        y = fd.ops.gelu(fd.ops.add(fd.ops.cast(x, DataType.Float), fd.ops.cast(b, DataType.Float)))
        fd.add_output(fd.ops.cast(fd.ops.permute(y, [1, 0]), dtype))
    return fd


def test_transpose_with_pointwise_is_one_tiled_kernel(device):
    for dtype, tdtype, tol in ((DataType.Float, torch.float32, 1e-5),
                               (DataType.BFloat16, torch.bfloat16, 2e-2)):
        fd = _transpose_gelu_bias(dtype)
        x = torch.randn(96, 200, device=device, dtype=tdtype)
        b = torch.randn(200, device=device, dtype=tdtype)
        (out,) = fd.execute([x, b])
        want = torch.nn.functional.gelu(x.float() + b.float()).t().to(tdtype)
        torch.testing.assert_close(out, want, rtol=tol, atol=tol)
        assert fd.last_schedulers() == [SchedulerType.transpose]


def test_scheduler_choice_names_every_rejection():
    fd = _transpose_gelu_bias(DataType.Float)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        fd.execute([torch.randn(64, 64), torch.randn(64)], _enable_options=["scheduler_choice"])
    text = buf.getvalue()
    assert "  transpose: chosen" in text
    assert "  pointwise: run-time: a transpose: the transpose scheduler tiles it" in text
    assert "  reduction: compile-time: " in text


def test_narrow_transpose_stays_pointwise():
    fd = _transpose_gelu_bias(DataType.Float)
    x, b = torch.randn(8, 300), torch.randn(300)
    (out,) = fd.execute([x, b])
    torch.testing.assert_close(out, torch.nn.functional.gelu(x + b).t())
    assert fd.last_schedulers() == [SchedulerType.pointwise]
