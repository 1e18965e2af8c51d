# SPDX-License-Identifier: Apache-2.0
"""Random ops defined without rng_seed / rng_offset take them as nvFuser does: the seed of
torch's default generator and a Philox offset counting the ops drawn since it was seeded, so the
i-th run after torch.manual_seed(s) equals the run with rng_seed=s, rng_offset=i. Seeding again
repeats the runs; torch's own draws in between give new, reproducible ones."""

import torch

from loom.direct import DataType, FusionDefinition


def fusions(ops=1):
    """(seedless, seeded) fusions of `ops` uniform draws of [3, 5] added together; the seeded one
    takes a seed and one offset per op as inputs."""
    with FusionDefinition() as seedless:
        out = None
        for _ in range(ops):
            u = seedless.ops.uniform(0.0, 1.0, [3, 5], dtype=DataType.Double)
            out = u if out is None else seedless.ops.mul(out, u)
        seedless.add_output(out)
    with FusionDefinition() as seeded:
        seed = seeded.define_scalar(None, DataType.Int)
        out = None
        for _ in range(ops):
            offset = seeded.define_scalar(None, DataType.Int)
            u = seeded.ops.uniform(0.0, 1.0, [3, 5], dtype=DataType.Double, rng_seed=seed,
                                   rng_offset=offset)
            out = u if out is None else seeded.ops.mul(out, u)
        seeded.add_output(out)
    return seedless, seeded


def test_the_ith_run_after_seeding_is_offset_i():
    seedless, seeded = fusions()
    for seed in (0, 12345, 2**62 + 7):
        torch.manual_seed(seed)
        runs = [seedless.execute([])[0] for _ in range(5)]
        for i, got in enumerate(runs):
            (want,) = seeded.execute([seed, i])
            assert torch.equal(got, want), (seed, i)
        assert not torch.equal(runs[0], runs[1])


def test_several_ops_take_consecutive_offsets():
    seedless, seeded = fusions(ops=2)
    torch.manual_seed(5)
    first, second = seedless.execute([])[0], seedless.execute([])[0]
    assert torch.equal(first, seeded.execute([5, 0, 1])[0])
    assert torch.equal(second, seeded.execute([5, 2, 3])[0])


def test_seeding_again_repeats_even_with_the_same_seed():
    seedless, _ = fusions()
    torch.manual_seed(9)
    a = [seedless.execute([])[0] for _ in range(3)]
    torch.manual_seed(9)
    b = [seedless.execute([])[0] for _ in range(3)]
    for x, y in zip(a, b):
        assert torch.equal(x, y)


def test_torch_draws_in_between_give_new_runs_that_repeat_after_seeding():
    seedless, _ = fusions()

    def session():
        torch.manual_seed(3)
        outs = []
        for _ in range(4):
            noise = torch.randn(2)  # torch draws between the runs, as a training loop does
            outs.append(seedless.execute([])[0] + 0 * noise.sum())
        return outs

    a, b = session(), session()
    for x, y in zip(a, b):
        assert torch.equal(x, y)
    for i in range(len(a)):
        for j in range(i):
            assert not torch.equal(a[i], a[j]), (i, j)


def test_printed_definition_draws_as_the_defined_one():
    """print(fd) of random ops defined without seeds leaves them out too, so executing the
    printed definition after the same torch.manual_seed gives the same numbers (nvFuser's
    exec_nvfuser checks every test's printed definition this way); a repro script keeps this
    run's seed and offset as inputs, so it repeats the run."""
    x = torch.randn(5, 9)
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], contiguity=True)
        u = fd.ops.uniform(fd.define_scalar(0.3), fd.define_scalar(1.7), shape=[5, 9])
        n = fd.ops.normal(0.0, 1.0, shape=[5, 9])
        fd.add_output(fd.ops.add(fd.ops.mul(t, u), n))
    torch.manual_seed(0)
    (want,) = fd.execute([x])
    text = repr(fd)
    assert "rng_seed" not in text and "DataType.Int)" not in text, text
    namespace = {"FusionDefinition": FusionDefinition, "DataType": DataType}
    exec(text, namespace)
    with FusionDefinition() as again:
        namespace["nvfuser_fusion"](again)
    torch.manual_seed(0)
    (got,) = again.execute([x])
    assert torch.equal(got, want)
    script = fd.repro_script_for([x])
    assert script.count("rng_seed=") == 2, script
