# SPDX-License-Identifier: Apache-2.0
# Tensors across the boundary: DLPack round trips of every dtype (torch and numpy), views that
# share memory, non-contiguous and 0-size tensors, and the dtypes and layouts Loom refuses.
import numpy as np
import pytest
import torch

import loom
from loom import _C
from loom.direct import DataType, FusionDefinition

DTYPES = [torch.bool, torch.int32, torch.int64, torch.float16, torch.bfloat16, torch.float32,
          torch.float64]
LOOM_DTYPES = {
    torch.bool: _C.DataType.Bool,
    torch.int32: _C.DataType.Int32,
    torch.int64: _C.DataType.Int64,
    torch.float16: _C.DataType.Float16,
    torch.bfloat16: _C.DataType.BFloat16,
    torch.float32: _C.DataType.Float32,
    torch.float64: _C.DataType.Float64,
}


def random_tensor(shape, dtype, device="cpu"):
    if dtype == torch.bool:
        return torch.rand(shape, device=device) < 0.5
    if not dtype.is_floating_point:
        return torch.randint(-100, 100, shape, dtype=dtype, device=device)
    return torch.randn(shape, device=device).to(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_torch_round_trip_every_dtype(dtype, device):
    t = random_tensor((3, 5), dtype, device)
    lt = loom.from_dlpack(t)
    assert lt.dtype == LOOM_DTYPES[dtype]
    assert lt.shape == [3, 5]
    assert lt.strides == [5, 1]
    assert lt.data_ptr == t.data_ptr()  # a view, no copy
    back = torch.from_dlpack(lt)
    assert back.dtype == dtype
    assert back.data_ptr() == t.data_ptr()
    assert torch.equal(back, t)


@pytest.mark.parametrize(
    "dtype", [np.bool_, np.int32, np.int64, np.float16, np.float32, np.float64], ids=str
)
def test_numpy_round_trip_every_dtype(dtype):
    a = (np.random.default_rng(0).standard_normal((4, 3)) * 10).astype(dtype)
    lt = loom.from_dlpack(a)
    assert lt.shape == [4, 3]
    assert lt.data_ptr == a.ctypes.data
    back = np.from_dlpack(lt)
    assert back.dtype == a.dtype
    assert back.ctypes.data == a.ctypes.data
    np.testing.assert_array_equal(back, a)
    # numpy's memory reaches torch through Loom without a copy too.
    as_torch = torch.from_dlpack(lt)
    assert as_torch.data_ptr() == a.ctypes.data


def test_writes_are_shared():
    t = torch.zeros(4)
    back = torch.from_dlpack(loom.from_dlpack(t))
    back[2] = 7.0
    assert t[2].item() == 7.0


def test_non_contiguous_views_keep_their_strides():
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    for view in (base.t(), base[:, 1::2], base[1:3, 2:5], base.unsqueeze(1).expand(4, 3, 6)):
        lt = loom.from_dlpack(view)
        assert lt.shape == list(view.shape)
        assert lt.strides == list(view.stride())
        assert lt.data_ptr == view.data_ptr()
        back = torch.from_dlpack(lt)
        assert back.stride() == view.stride()
        assert torch.equal(back, view)


def test_zero_size_tensors():
    for shape in [(0,), (3, 0), (0, 4, 2)]:
        t = torch.empty(shape)
        lt = loom.from_dlpack(t)
        assert lt.shape == list(shape)
        assert torch.from_dlpack(lt).shape == t.shape


def test_storage_outlives_the_producer_object():
    lt = loom.from_dlpack(torch.arange(6, dtype=torch.int64) * 3)  # the torch tensor is gone
    np.testing.assert_array_equal(np.from_dlpack(lt), np.arange(6) * 3)


@pytest.mark.parametrize(
    "t, pattern",
    [
        (torch.zeros(3, dtype=torch.float8_e4m3fnuz), "unsupported dtype \\(code 11, 8 bits"),
        (torch.zeros(3, dtype=torch.float8_e5m2fnuz), "unsupported dtype \\(code 13, 8 bits"),
    ],
    ids=["float8_e4m3fnuz", "float8_e5m2fnuz"],
)
def test_unsupported_dtypes_are_user_errors(t, pattern):
    with pytest.raises(loom.UserError, match=pattern):
        loom.from_dlpack(t)


def test_negative_strides_are_refused():
    a = np.arange(6.0)[::-1]
    with pytest.raises(loom.UserError, match="negative"):
        loom.from_dlpack(a)


def test_not_a_tensor():
    with pytest.raises(loom.UserError, match="expected a tensor .* got list"):
        loom.from_dlpack([1, 2, 3])


def test_user_error_is_a_value_error_and_a_loom_error():
    assert issubclass(loom.UserError, ValueError)
    assert issubclass(loom.UserError, loom.Error)
    assert issubclass(loom.Error, RuntimeError)
    assert issubclass(loom.NotSupportedError, NotImplementedError)
    assert issubclass(loom.NotSupportedError, loom.Error)


def test_dlpack_export_options():
    lt = loom.from_dlpack(torch.arange(4.0))
    assert lt.__dlpack_device__() == (1, 0)
    with pytest.raises(BufferError, match="between devices"):
        lt.__dlpack__(dl_device=(2, 0))
    copied = torch.from_dlpack(lt.__dlpack__(max_version=(1, 0), copy=True))
    assert copied.data_ptr() != lt.data_ptr
    assert torch.equal(copied, torch.arange(4.0))


# nvFuser's CPU scalars: a 0-dim tensor defined with is_cpu=True may be given on the host while the
# other inputs are CUDA tensors (it is copied to their GPU, as torch takes such a tensor in a CUDA
# op); the printed definition says is_cpu=True. A 0-dim tensor is a tier of its own in type
# promotion, as in torch: a Float64 one does not widen a Float32 tensor with dims.
def test_cpu_scalar_tensor_input(device):
    x = torch.randn(4, 5, device=device)
    s = torch.tensor(2.5, dtype=torch.float64)  # on the host whatever the device
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True])
        t1 = fd.define_tensor(shape=[], dtype=DataType.Double, is_cpu=True)
        fd.add_output(fd.ops.mul(t0, t1))
        fd.add_output(fd.ops.add(t1, t1))
    assert "dtype=DataType.Double, is_cpu=True)" in str(fd)
    prod, twice = fd.execute([x, s])
    want = x * s.to(device)
    assert prod.dtype == want.dtype == torch.float32 and prod.device == x.device
    torch.testing.assert_close(prod, want, rtol=0, atol=0)
    torch.testing.assert_close(twice.cpu(), s + s, rtol=0, atol=0)
    with FusionDefinition() as fd:
        with pytest.raises(loom.UserError, match="is_cpu=True is for a 0-dim tensor .* the shape "
                                                 "has 1 dims"):
            fd.define_tensor(shape=[-1], is_cpu=True)


def test_host_tensors_with_dims_do_not_mix_with_cuda(device):
    if device != "cuda":
        pytest.skip("mixing needs a CUDA tensor")
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1])
        t1 = fd.define_tensor(shape=[-1])
        fd.add_output(fd.ops.add(t0, t1))
    with pytest.raises(loom.UserError, match="mix host \\(CPU\\) and CUDA tensors"):
        fd.execute([torch.randn(3, device="cuda"), torch.randn(3)])
