# SPDX-License-Identifier: Apache-2.0
# The backward and loss composites (fd.ops.*_backward, cross_entropy) against torch autograd.
import pytest
import torch
import torch.nn.functional as F

import loom
from loom.direct import DataType, FusionDefinition


def close(actual, expected, rtol=1e-5, atol=1e-5):
    torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol)


def grads(fn, *inputs, grad_out):
    """torch autograd gradients of fn(*inputs) for grad_out, for the inputs that require grad."""
    leaves = [t.detach().clone().requires_grad_(t.is_floating_point()) for t in inputs]
    out = fn(*leaves)
    out.backward(grad_out)
    return [t.grad for t in leaves if t.requires_grad]


def tensor(fd, t):
    return fd.define_tensor(shape=[-1] * t.dim(), contiguity=True,
                            dtype=DataType.Float if t.is_floating_point() else DataType.Int)


@pytest.mark.parametrize("dim", [1, 0])
def test_softmax_and_log_softmax_backward(device, dim):
    x = torch.randn(6, 37, device=device) * 2
    go = torch.randn(6, 37, device=device)
    with FusionDefinition() as fd:
        g, xi = tensor(fd, go), tensor(fd, x)
        fd.add_output(fd.ops.softmax_backward(g, fd.ops.softmax(xi, dim), dim))
        fd.add_output(fd.ops.log_softmax_backward(g, fd.ops.log_softmax(xi, dim), dim))
    a, b = fd.execute([go, x])
    close(a, grads(lambda t: torch.softmax(t, dim), x, grad_out=go)[0])
    close(b, grads(lambda t: torch.log_softmax(t, dim), x, grad_out=go)[0])


def test_layer_norm_backward(device):
    x = torch.randn(8, 300, device=device) * 3
    w, b = torch.randn(300, device=device), torch.randn(300, device=device)
    go = torch.randn(8, 300, device=device)
    with FusionDefinition() as fd:
        g, xi, wi, bi = (tensor(fd, t) for t in (go, x, w, b))
        _, mean, rstd = fd.ops.layer_norm(xi, 1, wi, bi)
        gx, gw, gb = fd.ops.layer_norm_backward(g, xi, 1, mean, rstd, wi, bi)
        for t in (gx, gw, gb):
            fd.add_output(t)
    outs = fd.execute([go, x, w, b])
    refs = grads(lambda x, w, b: F.layer_norm(x, (300,), w, b), x, w, b, grad_out=go)
    for out, ref in zip(outs, refs):
        close(out, ref, rtol=1e-4, atol=1e-4)


def test_rms_norm_backward(device):
    x = torch.randn(5, 2, 64, device=device)
    w = torch.randn(2, 64, device=device)
    go = torch.randn(5, 2, 64, device=device)
    with FusionDefinition() as fd:
        g, xi, wi = (tensor(fd, t) for t in (go, x, w))
        gx, gw = fd.ops.rms_norm_backward(g, xi, 2, wi, eps=1e-6)
        fd.add_output(gx)
        fd.add_output(gw)
    gx, gw = fd.execute([go, x, w])

    def rms(x, w):
        return x * torch.rsqrt(x.pow(2).mean((-2, -1), keepdim=True) + 1e-6) * w

    rx, rw = grads(rms, x, w, grad_out=go)
    close(gx, rx, rtol=1e-4, atol=1e-4)
    close(gw, rw, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_and_silu_backward(device, approximate):
    x = torch.randn(4, 129, device=device) * 2
    go = torch.randn(4, 129, device=device)
    with FusionDefinition() as fd:
        g, xi = tensor(fd, go), tensor(fd, x)
        fd.add_output(fd.ops.gelu_backward(g, xi, approximate=approximate))
        fd.add_output(fd.ops.silu_backward(g, xi))
    a, b = fd.execute([go, x])
    close(a, grads(lambda t: F.gelu(t, approximate=approximate), x, grad_out=go)[0])
    close(b, grads(F.silu, x, grad_out=go)[0])


@pytest.mark.parametrize("reduction,ignore_index", [("mean", -100), ("sum", -100), ("none", -100),
                                                    ("mean", 3)])
def test_cross_entropy_forward_and_backward(device, reduction, ignore_index):
    torch.manual_seed(30)
    x = torch.randn(9, 37, device=device) * 3
    t = torch.randint(0, 37, (9,), device=device)
    t[2] = t[5] = ignore_index
    go = torch.randn(9 if reduction == "none" else (), device=device)
    with FusionDefinition() as fd:
        xi, ti, g = tensor(fd, x), tensor(fd, t), tensor(fd, go)
        fd.add_output(fd.ops.cross_entropy(xi, ti, ignore_index=ignore_index, reduction=reduction))
        fd.add_output(fd.ops.cross_entropy_backward(g, xi, ti, ignore_index=ignore_index,
                                                    reduction=reduction))
    loss, gx = fd.execute([x, t, go])

    def ce(x):
        return F.cross_entropy(x, t, ignore_index=ignore_index, reduction=reduction)

    close(loss, ce(x))
    close(gx, grads(ce, x, grad_out=go)[0])


def test_bad_arguments_name_the_op():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.Float)
        t = fd.define_tensor(shape=[-1], contiguity=True, dtype=DataType.Int)
        with pytest.raises(loom.UserError, match="reduction must be 'mean', 'sum' or 'none'"):
            fd.ops.cross_entropy(x, t, reduction="max")
        with pytest.raises(loom.UserError, match="approximate must be 'none' or 'tanh'"):
            fd.ops.gelu_backward(x, x, approximate="fast")
