# SPDX-License-Identifier: Apache-2.0
# nvFuser semantics Loom matches (issue 36's compatibility classes), written the way nvFuser's
# Python tests are: a fusion defined, run on CPU (and CUDA where there is one) and compared with
# torch, and with the reference evaluator through fd.validate where the values matter.
import pytest
import torch

from loom.direct import DataType, FusionDefinition


# where selects and does no arithmetic: the result has the operands' result type, half and
# bfloat16 included (torch.where's dtype), and two Scalars keep their own dtype (nvFuser's rule).
@pytest.mark.parametrize("da, db", [(torch.float16, torch.float16), (torch.bfloat16,) * 2,
                                    (torch.float16, torch.float32), (torch.bfloat16, torch.float16),
                                    (torch.int32, torch.int64), (torch.bool, torch.float16)])
def test_where_keeps_the_operands_dtype(device, da, db):
    g = torch.Generator().manual_seed(36)
    pred = torch.rand(7, generator=g) > 0.5
    a = (torch.randn(7, generator=g) * 4).to(da).to(device)
    b = (torch.randn(7, generator=g) * 4).to(db).to(device)
    pred = pred.to(device)
    with FusionDefinition() as fd:
        tp, ta, tb = fd.from_pytorch(pred), fd.from_pytorch(a), fd.from_pytorch(b)
        fd.add_output(fd.ops.where(tp, ta, tb))
        fd.add_output(fd.ops.where(tp, ta, fd.define_scalar(2.5)))
    out = fd.validate([pred, a, b])
    for got, want in zip(out, [torch.where(pred, a, b), torch.where(pred, a, 2.5)]):
        assert got.dtype == want.dtype
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize("value, dtype, want", [
    (3.0, None, torch.float64), (3.0, DataType.Float, torch.float32),
    (3.0, DataType.Double, torch.float64), (3, DataType.Int32, torch.int32),
    (3, None, torch.int64), (complex(3.0), None, torch.complex128),
    (3.0 + 0j, DataType.ComplexFloat, torch.complex64), (True, DataType.Bool, torch.bool)])
def test_where_of_two_scalars_has_their_dtype(device, value, dtype, want):
    pred = torch.tensor([True, False, True], device=device)
    other = value * 0 if not isinstance(value, bool) else False
    with FusionDefinition() as fd:
        tp = fd.from_pytorch(pred)
        if dtype is None:
            a, b = fd.define_scalar(value), fd.define_scalar(other)
        else:
            a, b = fd.define_scalar(value, dtype), fd.define_scalar(other, dtype)
        fd.add_output(fd.ops.where(tp, a, b))
    (out,) = fd.validate([pred])
    assert out.dtype == want
    torch.testing.assert_close(out, torch.where(pred, torch.tensor(value, dtype=want),
                                                torch.tensor(other, dtype=want)).to(device))
