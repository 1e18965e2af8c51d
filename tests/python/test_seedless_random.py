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
