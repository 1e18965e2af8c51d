#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Host time of one cached call of a 3-op pointwise fusion from Python: Loom (loom.direct), torch
eager and torch.compile, on the same tensors. Small tensors, so that the time is the host's:
argument handling, the cache lookup, the launch and the output tensors.

    PYTHONPATH=build/python python3 benchmarks/python_host_time.py [--device cpu|cuda]
        [--size 64] [--iters 20000]

The fusion is y = relu(x * 2 + b) on x [n] and b [n] (fp32). Each figure is the median over
`--repeats` runs of the mean time per call of `--iters` back-to-back calls (CUDA: synchronized
once per run, so it is the host time of queueing while the GPU keeps up). docs/performance.md
records the figures.
"""

import argparse
import platform
import statistics
import time

import torch

from loom.direct import DataType, FusionDefinition


def per_call_us(fn, iters, repeats, sync):
    times = []
    for _ in range(repeats):
        sync()
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        sync()
        times.append((time.perf_counter() - t0) / iters * 1e6)
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--size", type=int, default=64, help="elements per tensor")
    p.add_argument("--iters", type=int, default=20000)
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()

    dev = args.device
    x = torch.randn(args.size, device=dev)
    b = torch.randn(args.size, device=dev)
    sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)

    with FusionDefinition() as fd:
        tx = fd.define_tensor(shape=[-1], contiguity=True, dtype=DataType.Float)
        tb = fd.define_tensor(shape=[-1], contiguity=True, dtype=DataType.Float)
        fd.add_output(fd.ops.relu(fd.ops.add(fd.ops.mul(tx, 2.0), tb)))
    inputs = [x, b]
    (y,) = fd.execute(inputs)  # compiles
    expected = torch.relu(x * 2 + b)
    torch.testing.assert_close(y, expected)

    def eager():
        return torch.relu(x * 2 + b)

    compiled = torch.compile(eager)
    torch.testing.assert_close(compiled(), expected)  # compiles
    compiled()

    # The same call on 0-element tensors: no kernel is launched, so this is the Python and
    # binding side alone (argument exchange, cache key and lookup, output tensors).
    empty = [torch.empty(0, device=dev), torch.empty(0, device=dev)]
    fd.execute(empty)

    rows = [
        ("loom.direct fd.execute", lambda: fd.execute(inputs)),
        ("  same, 0 elements (no launch)", lambda: fd.execute(empty)),
        ("torch eager (3 ops)", eager),
        ("torch.compile", compiled),
    ]
    print(f"# {platform.processor() or platform.machine()}, torch {torch.__version__}, "
          f"device {dev}, {args.size} fp32 elements, {args.iters} calls x {args.repeats}")
    for name, fn in rows:
        fn()
        us = per_call_us(fn, args.iters, args.repeats, sync)
        print(f"{name:32s} {us:9.2f} us/call")


if __name__ == "__main__":
    main()
