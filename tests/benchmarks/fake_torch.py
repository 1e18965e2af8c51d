# SPDX-License-Identifier: Apache-2.0
"""A stand-in for the few torch and triton calls torch_baseline.py makes, so its flow runs on CPU.

Tensors carry only a shape; every kernel "takes" a fixed time. This checks the script's plumbing
(case loop, timing loop, JSON it writes), not any number.
"""

import sys
import types

FAKE_KERNEL_MS = 0.1


class FakeTensor:
    def __init__(self, shape):
        self.shape = tuple(shape)
        self.dtype = "float32"

    def _binary(self, other):
        return FakeTensor(self.shape)

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _binary

    def zero_(self):
        return self

    def float(self):
        return self

    def abs(self):
        return self

    def max(self):
        return self

    def item(self):
        return 0.0

    def t(self):
        return FakeTensor(self.shape[::-1])

    def contiguous(self):
        return self

    def clone(self):
        return FakeTensor(self.shape)

    def permute(self, *dims):
        return FakeTensor(tuple(self.shape[d] for d in dims))

    def pow(self, e):
        return self

    def mean(self, dim, keepdim=False):
        return FakeTensor(self.shape[:dim] + ((1,) if keepdim else ()) + self.shape[dim + 1:]
                          if dim >= 0 else self.shape[:dim] + ((1,) if keepdim else ()))

    def sum(self, dim):
        return FakeTensor(self.shape[:dim] + self.shape[dim + 1:])

    def to(self, dtype):
        return self

    def index_add(self, dim, index, source):
        return FakeTensor(self.shape)


class FakeEvent:
    clock = 0.0

    def __init__(self, enable_timing=False):
        self.t = 0.0

    def record(self):
        FakeEvent.clock += FAKE_KERNEL_MS
        self.t = FakeEvent.clock

    def elapsed_time(self, end):
        return end.t - self.t


def _shape(size):
    return (size,) if isinstance(size, int) else tuple(size)


def install():
    """Registers fake torch, torch._dynamo, torch.nn.functional, triton and triton.testing."""
    torch = types.ModuleType("torch")
    torch.__version__ = "0.0-fake"
    torch.float32, torch.bfloat16, torch.int8 = "float32", "bfloat16", "int8"
    torch.version = types.SimpleNamespace(cuda="0.0")
    torch.cuda = types.SimpleNamespace(
        is_available=lambda: True, synchronize=lambda: None, empty_cache=lambda: None,
        get_device_name=lambda i: "Fake GPU", Event=FakeEvent,
        get_device_properties=lambda i: types.SimpleNamespace(L2_cache_size=60 << 20))
    torch.randn = lambda size, device=None, dtype=None: FakeTensor(_shape(size))
    torch.empty = lambda size, dtype=None, device=None: FakeTensor(_shape(size))
    torch.randint = lambda low, high, size, device=None: FakeTensor(_shape(size))
    torch.manual_seed = lambda s: None
    torch.var_mean = lambda x, dim: (FakeTensor(x.shape[:dim]), FakeTensor(x.shape[:dim]))
    torch.softmax = lambda x, dim: FakeTensor(x.shape)
    torch.sum = lambda x, dim: FakeTensor(x.shape[1:])
    torch.tanh = lambda x: FakeTensor(x.shape)
    torch.rsqrt = lambda x: FakeTensor(x.shape)
    torch.compile = lambda fn, dynamic=None, mode=None: fn
    dynamo = types.ModuleType("torch._dynamo")
    dynamo.reset = lambda: None
    torch._dynamo = dynamo
    nn = types.ModuleType("torch.nn")
    functional = types.ModuleType("torch.nn.functional")
    functional.layer_norm = lambda x, shape, w, b, eps: FakeTensor(x.shape)
    functional.rms_norm = lambda x, shape, w, eps: FakeTensor(x.shape)
    functional.gelu = lambda x, approximate: FakeTensor(x.shape)
    functional.linear = lambda x, w, b: FakeTensor(x.shape[:-1] + w.shape[:1])
    functional.batch_norm = lambda x, rm, rv, w, b, training, eps: FakeTensor(x.shape)
    aten = types.SimpleNamespace(native_batch_norm_backward=lambda dy, x, w, rm, rv, sm, si, t,
                                 eps, mask: (FakeTensor(x.shape), FakeTensor(w.shape),
                                             FakeTensor(w.shape)),
                           native_layer_norm_backward=lambda dy, x, shape, m, r, w, b, mask: (
                               FakeTensor(x.shape), FakeTensor(w.shape), FakeTensor(w.shape)))
    torch.ops = types.SimpleNamespace(aten=aten)
    nn.functional = functional
    torch.nn = nn
    triton = types.ModuleType("triton")
    triton.__version__ = "0.0-fake"
    testing = types.ModuleType("triton.testing")
    testing.do_bench = lambda fn, return_mode: FAKE_KERNEL_MS
    triton.testing = testing
    sys.modules.update({"torch": torch, "torch._dynamo": dynamo, "torch.nn": nn,
                        "torch.nn.functional": functional, "triton": triton,
                        "triton.testing": testing})
