# SPDX-License-Identifier: Apache-2.0
# The Python boundary (issue 38, "Hardening II"): DLPack imports whose sizes overflow 64 bits keep
# ownership with the producer (every import path), torch's negative bit and bool bytes other than
# 0/1 read as torch reads them, Python ints past int64 and malformed device strings are
# loom.UserErrors naming the argument, expand of a non-broadcast dim checks its size, DeviceMesh
# refuses deep nesting, and KernelExecutor.compile() while another thread runs it waits for it.
# docs/python.md states the rules; docs/testing.md lists these tests.
import ctypes
import os
import subprocess
import sys
import threading

import pytest
import torch

import loom
from loom import _C
from loom.direct import (
    DataType,
    FusionDefinition,
    KernelExecutor,
    ParallelType,
    inline_most,
    parallelize_all_like,
    propagate_transforms,
)
from loom.direct.multidevice import DeviceMesh

BIG = 2**63  # one past int64's largest value
INT64_RANGE = "does not fit in a 64-bit integer"


# ---- DLPack imports whose sizes overflow --------------------------------------------------------
# A producer built with ctypes, so the test counts its deleter's calls exactly: a DLPack tensor of
# the given shape and strides over an 8-byte buffer, in a capsule whose destructor calls the
# deleter while the capsule is unused (the protocol's ownership rule).


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _DELETER)]


class _DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("major", ctypes.c_uint32),
        ("minor", ctypes.c_uint32),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", _DELETER),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", _DLTensor),
    ]


_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, _CAPSULE_DESTRUCTOR]
_capsule_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_capsule_is_valid.restype = ctypes.c_int
_capsule_is_valid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_capsule_get_name = ctypes.pythonapi.PyCapsule_GetName
_capsule_get_name.restype = ctypes.c_char_p
_capsule_get_name.argtypes = [ctypes.py_object]


class CountingProducer:
    """An object with __dlpack__ whose deleter counts its calls (``deleted``). ``versioned``:
    DLPack 1.x capsules, else a pre-1.0 producer (TypeError on max_version, legacy capsules)."""

    def __init__(self, shape, strides, versioned, code=2, bits=32):
        self.deleted = 0
        self.versioned = versioned
        self.capsule = None
        self._buffer = (ctypes.c_double * 1)()
        self._shape = (ctypes.c_int64 * len(shape))(*shape)
        self._strides = (ctypes.c_int64 * len(strides))(*strides)
        managed_type = _DLManagedTensorVersioned if versioned else _DLManagedTensor
        self._managed = managed_type()
        if versioned:
            self._managed.major, self._managed.minor = 1, 0
        t = self._managed.dl_tensor
        t.data = ctypes.addressof(self._buffer)
        t.device = _DLDevice(1, 0)
        t.ndim = len(shape)
        t.dtype = _DLDataType(code, bits, 1)
        t.shape = self._shape
        t.strides = self._strides

        def deleter(_):
            self.deleted += 1

        self._deleter = _DELETER(deleter)
        self._managed.deleter = self._deleter
        self._name = b"dltensor_versioned" if versioned else b"dltensor"

        def destructor(capsule):
            if _capsule_is_valid(capsule, self._name):
                self._deleter(ctypes.addressof(self._managed))

        self._destructor = _CAPSULE_DESTRUCTOR(destructor)

    def __dlpack_device__(self):
        return (1, 0)

    def __dlpack__(self, stream=None, max_version=None):
        if max_version is not None and not self.versioned:
            raise TypeError("__dlpack__() got an unexpected keyword argument 'max_version'")
        self.capsule = _capsule_new(ctypes.addressof(self._managed), self._name, self._destructor)
        return self.capsule


@pytest.mark.parametrize("versioned", [True, False], ids=["versioned", "legacy"])
@pytest.mark.parametrize(
    "shape, strides, bits, message",
    [
        ([2**31, 2**31], [0, 0], 32, "2147483648, 2147483648] f32 tensor: its byte size overflows"),
        ([2**32, 2**32], [0, 0], 32, "its element count overflows 64 bits"),
        ([2**40], [2**40], 32, "the memory its strides span overflows 64 bits"),
    ],
    ids=["bytes", "elements", "span"],
)
def test_overflowing_capsule_keeps_ownership_with_the_producer(shape, strides, bits, message,
                                                               versioned):
    p = CountingProducer(shape, strides, versioned, bits=bits)
    with pytest.raises(loom.UserError, match=message):
        loom.from_dlpack(p)
    assert p.deleted == 0, "a failed import must not call the producer's deleter"
    name = p._name.decode()
    assert _capsule_get_name(p.capsule) == p._name, f"the capsule is still an unused {name}"
    p.capsule = None  # the capsule's destructor releases it: once
    assert p.deleted == 1


@pytest.mark.parametrize("versioned", [True, False], ids=["versioned", "legacy"])
def test_counting_producer_is_released_once_on_success(versioned):
    # The harness itself: a good import renames the capsule and releases once, when Loom lets go.
    p = CountingProducer([2, 3], [0, 0], versioned)
    lt = loom.from_dlpack(p)
    assert lt.shape == [2, 3]
    p.capsule = None
    assert p.deleted == 0
    del lt
    assert p.deleted == 1


_SUBPROCESS_OVERFLOW = r"""
import loom, numpy, torch
from loom.direct import FusionDefinition
z = torch.zeros(1, 1)
t = z.expand(2**31, 2**31)   # 2^62 elements of f32: 2^64 bytes


class ViaProtocol:  # a producer torch's exchange API does not cover: __dlpack__ capsules
    def __init__(self, t, versioned):
        self.t, self.versioned = t, versioned
    def __dlpack_device__(self):
        return self.t.__dlpack_device__()
    def __dlpack__(self, stream=None, max_version=None):
        if max_version is not None and not self.versioned:
            raise TypeError("no max_version")
        return self.t.__dlpack__(max_version=max_version if self.versioned else None)


with FusionDefinition() as fd:
    x = fd.define_tensor(shape=[-1, -1])
    fd.add_output(fd.ops.neg(x))
errors = 0
for _ in range(50):
    for obj in (t, ViaProtocol(t, True), ViaProtocol(t, False)):
        for call in (loom.from_dlpack, lambda o: fd.execute([o])):
            try:
                call(obj)
            except loom.UserError as e:
                assert "overflows 64 bits" in str(e), str(e)
                errors += 1
assert errors == 50 * 3 * 2, errors
z += 1   # the producer's memory is intact and still torch's
assert z.item() == 1.0 and t[5, 7].item() == 1.0 and t.data_ptr() == z.data_ptr()
print("ok", errors)
"""


def test_overflowing_torch_tensor_every_path_in_a_subprocess():
    # torch's exchange API, and torch's own __dlpack__ capsules (versioned and legacy): each
    # import refuses the tensor and torch's deleter runs once (a second call was a double free:
    # the process died). numpy cannot make such an array ("array is too big"); its path is the
    # __dlpack__ capsule path tested here and with the counting producer above.
    env = dict(os.environ)
    r = subprocess.run([sys.executable, "-c", _SUBPROCESS_OVERFLOW], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stdout}\n{r.stderr}"
    assert r.stdout.startswith("ok 300"), r.stdout


# ---- torch's negative bit and bool bytes -------------------------------------------------------


def _add_one_fusion(dtype=DataType.Float):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1], dtype=dtype)
        fd.add_output(fd.ops.add(x, 1.0))
    return fd


def test_negative_bit_is_resolved_for_execute(device):
    base = torch.randn(64, device=device)
    fd = _add_one_fusion()
    neg = base._neg_view()
    assert neg.is_neg()
    (out,) = fd.execute([neg])
    torch.testing.assert_close(out, -base + 1)  # before: base + 1 (the memory, un-negated)
    # The same bit from a conjugated complex tensor's imaginary part.
    c = torch.randn(64, dtype=torch.complex64, device=device)
    imag = c.conj().imag
    assert imag.is_neg()
    (out,) = fd.execute([imag])
    torch.testing.assert_close(out, -c.imag + 1)


def test_negative_bit_is_refused_by_from_dlpack():
    with pytest.raises(loom.UserError, match=r"negative bit set .*resolve_neg\(\)"):
        loom.from_dlpack(torch.arange(4.0)._neg_view())
    # The conjugate bit of a complex tensor is refused the same way.
    with pytest.raises(loom.UserError, match=r"conjugate bit set .*resolve_conj\(\)"):
        loom.from_dlpack(torch.randn(3, dtype=torch.complex64).conj())


def test_conjugate_bit_is_resolved_for_execute(device):
    c = torch.randn(64, dtype=torch.complex64, device=device)
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.add(fd.from_pytorch(c), 1.0))
    view = c.conj()
    assert view.is_conj()
    (out,) = fd.execute([view])
    torch.testing.assert_close(out, c.conj().resolve_conj() + 1)  # not c + 1 (the memory)


def test_bool_bytes_other_than_zero_or_one_are_true(device):
    raw = torch.tensor([0, 1, 2, 3, 127, 128, 254, 255] * 40, dtype=torch.uint8, device=device)
    b = raw.view(torch.bool)
    truth = raw != 0
    x = torch.randn(raw.shape, device=device)
    with FusionDefinition() as fd:
        tb = fd.define_tensor(shape=[-1], dtype=DataType.Bool)
        tx = fd.define_tensor(shape=[-1])
        fd.add_output(fd.ops.cast(tb, DataType.Float))
        fd.add_output(fd.ops.logical_not(tb))
        fd.add_output(fd.ops.where(tb, tx, 0.0))
        fd.add_output(fd.ops.sum(fd.ops.cast(tb, DataType.Int), [0]))
    as_float, negated, picked, count = fd.execute([b, x])
    torch.testing.assert_close(as_float, truth.float())
    assert torch.equal(negated, ~truth)
    assert torch.equal(negated.view(torch.uint8), (~truth).to(torch.uint8))  # Loom writes 0/1
    torch.testing.assert_close(picked, torch.where(truth, x, 0.0))
    assert count.item() == int(truth.sum())


# ---- Python ints and device strings ------------------------------------------------------------


def _scalar_fusion():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1])
        s = fd.define_scalar(None, DataType.Int)
        fd.add_output(fd.ops.add(x, s))
    return fd


@pytest.mark.parametrize("value", [BIG, -BIG - 1, 2**200])
def test_scalar_input_past_int64_is_a_user_error(value):
    fd = _scalar_fusion()
    with pytest.raises(loom.UserError, match=f"execute: input 1 is .*{INT64_RANGE}"):
        fd.execute([torch.randn(3), value])
    (out,) = fd.execute([torch.zeros(3), BIG - 1])  # the largest int64 still fits
    assert out.dtype == torch.float32


def test_vector_input_entry_past_int64_is_a_user_error():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1])
        shape = fd.define_vector(1)
        fd.add_output(fd.ops.reshape(x, shape))
    with pytest.raises(loom.UserError, match=f"execute: input 1 is {BIG}, which {INT64_RANGE}"):
        fd.execute([torch.randn(4), [BIG]])


def test_constants_and_sizes_past_int64_are_user_errors():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1])
        with pytest.raises(loom.UserError, match=f"define_scalar: value is {BIG}, which"):
            fd.define_scalar(BIG)
        with pytest.raises(loom.UserError, match=f"add: argument b is {2**70}, which {INT64_RANGE}"):
            fd.ops.add(x, 2**70)
        with pytest.raises(loom.UserError, match=f"reshape: new_shape entry 0 is {BIG}"):
            fd.ops.reshape(x, [BIG])
        with pytest.raises(loom.UserError, match=f"expand: shape entry 0 is {BIG}"):
            fd.ops.expand(x, [BIG])
        with pytest.raises(loom.UserError, match=f"full: argument fill_value is {BIG}"):
            fd.ops.full([2], BIG, DataType.Int)
        with pytest.raises(loom.UserError, match="define_tensor\\(\\): incompatible function "
                           f"arguments. shape entry 1 is {BIG}"):
            fd.define_tensor(shape=[-1, BIG])
        with pytest.raises(loom.UserError, match=f"broadcast_in_dim: shape entry 0 is {BIG}"):
            fd.ops.broadcast_in_dim(x, [BIG], [0])
        with pytest.raises(loom.UserError, match=f"iota: length is {BIG}"):
            fd.ops.iota(BIG)
        y = fd.ops.neg(x)
        fd.add_output(y)
        with pytest.raises(loom.UserError, match=f"split of T.*: the factor is {BIG}, which"):
            y.split(0, BIG)


def test_huge_int_messages_are_short():
    # Past Python's int_max_str_digits (4300) repr() itself raises; the message names the size.
    fd = _scalar_fusion()
    with pytest.raises(loom.UserError, match="execute: input 1 is an int of 16610 bits, which"):
        fd.execute([torch.randn(3), 10**5000])
    with pytest.raises(loom.UserError, match=f"execute: input 1 is {2**200}, which"):
        fd.execute([torch.randn(3), 2**200])


def test_mesh_entry_past_int64_is_a_user_error():
    with pytest.raises(loom.UserError, match=f"DeviceMesh: device id 1 is {BIG}, which"):
        DeviceMesh([0, BIG])


@pytest.mark.parametrize(
    "device",
    ["cuda:abc", "cuda:1x", "cuda:", "cuda:-1", "cuda: 1", "cuda:99999999999", "gpu", "cpu:0",
     BIG, -1, 2**31, True],
    ids=repr,
)
def test_bad_device_arguments_are_user_errors(device):
    fd = _add_one_fusion()
    with pytest.raises(loom.UserError, match="execute: device must be None, 'cpu', 'cuda', "
                       "'cuda:N', a GPU index N >= 0 or 'host', got"):
        fd.execute([torch.randn(3)], device=device)
    ke = KernelExecutor()
    with pytest.raises(loom.UserError, match="KernelExecutor.compile: device must be None"):
        ke.compile(fd, device=device)


def test_good_device_arguments_still_work():
    fd = _add_one_fusion()
    x = torch.randn(5)
    for device in ("cpu", "host", torch.device("cpu")):
        (out,) = fd.execute([x], device=device)
        torch.testing.assert_close(out, x + 1)


# ---- expand of a non-broadcast dim -------------------------------------------------------------


def test_expand_of_a_non_broadcast_dim_checks_its_size():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1])
        fd.add_output(fd.ops.expand(x, [4, 3]))
    for bad in [(2, 3), (1, 3), (4, 5)]:
        # before: the requested size was ignored and the output had the input's shape
        with pytest.raises(loom.UserError, match=r"expand to T1: dimension \d of T0 is not a broadcast "
                                                 r"dimension, so it must already have the size "
                                                 r"[43] .* the arguments make that extent \d"):
            fd.execute([torch.randn(bad)])
    x = torch.randn(4, 3)
    (out,) = fd.execute([x])
    assert torch.equal(out, x)


# ---- DeviceMesh nesting ------------------------------------------------------------------------


def test_device_mesh_nested_deep_is_a_user_error():
    deep = [0]
    for _ in range(20000):
        deep = [deep]
    with pytest.raises(loom.UserError, match="at most 3 axes .*nested more than 3 deep"):
        DeviceMesh(deep)  # before: a stack overflow
    with pytest.raises(loom.UserError, match="at most 3 axes"):
        DeviceMesh([[[[0]]]])
    assert DeviceMesh([[[0, 1]]]).shape == [1, 1, 2]


# ---- KernelExecutor.compile() while another thread runs it -------------------------------------


def _scheduled(op):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1], contiguity=True)
        out = op(fd, x)
        fd.add_output(out)
        out.split(0, 128)
        out.axis(0).parallelize(ParallelType.grid_x)
        out.axis(1).parallelize(ParallelType.block_x)
        propagate_transforms(out)
        parallelize_all_like(out)
        inline_most(fd.fusion)
    return fd


def test_kernel_executor_compile_waits_for_runs_in_flight():
    add = _scheduled(lambda fd, x: fd.ops.add(x, 1.0))
    mul = _scheduled(lambda fd, x: fd.ops.mul(x, 2.0))
    ke = KernelExecutor()
    x = torch.randn(4096)
    for fd in (add, mul):  # both modules built once (the host compiler's cache)
        ke.compile(fd, [x])
        ke.run([x])
    stop = threading.Event()
    failures = []
    runs = [0]

    def runner():
        while not stop.is_set():
            try:
                (y,) = ke.run([x])
                if not (torch.equal(y, x + 1.0) or torch.equal(y, x * 2.0)):
                    failures.append("a run computed neither kernel")
            except Exception as e:  # noqa: BLE001 - any error is a failure here
                failures.append(repr(e))
            runs[0] += 1

    threads = [threading.Thread(target=runner) for _ in range(3)]
    for t in threads:
        t.start()
    for i in range(12):
        start = runs[0]
        while runs[0] < start + 2 and not failures:
            pass
        ke.compile(add if i % 2 == 0 else mul, [x])
    stop.set()
    for t in threads:
        t.join()
    assert failures == []
    (y,) = ke.run([x])
    assert torch.equal(y, x * 2.0)  # the last compile (i = 11) was mul
