# SPDX-License-Identifier: Apache-2.0
"""The IR graph from Python: Val.definition() / Val.uses() give Expr nodes of their own classes
(Merge, Split, ReshapeOp, ...), and idm.IdModel gives the IterDomain graphs, in the forms of
nvFuser's direct bindings (its tutorial's reshape walk and IdModel analysis)."""

import pytest

import loom
from loom.direct import (
    BroadcastOp,
    Expr,
    FusionDefinition,
    IdMappingMode,
    Merge,
    ReshapeOp,
    Split,
    SqueezeOp,
    idm,
)


def test_reshape_is_a_merge_of_its_root():
    """A reshape [4, 8] -> [32] has a root of two IDs whose Merge is its logical ID."""
    with FusionDefinition() as fd:
        tv0 = fd.define_tensor(shape=[4, 8])
        tv1 = fd.ops.reshape(tv0, [32])
        fd.add_output(tv1)
    assert tv1.has_root()
    merge = tv1.get_logical_domain()[0].definition()
    assert type(merge) is Merge
    assert isinstance(merge, Expr)
    assert merge.outer() == tv1.get_root_domain()[0]
    assert merge.inner() == tv1.get_root_domain()[1]
    assert merge.out() == tv1.get_logical_domain()[0]
    assert merge.output(0) == merge.out()
    assert merge.inputs() == [merge.outer(), merge.inner()]
    # Identity, not structure: the two root IDs look alike but are different nodes.
    assert merge.outer() != merge.inner()
    assert len({merge.outer(), merge.outer(), merge.inner()}) == 2


def test_reshape_with_unit_dims_walks_squeeze_reshape_broadcast():
    """[1, 2, 3] -> [3, 2, 1] is a squeeze, a reshape (merge, then split) and a broadcast."""
    with FusionDefinition() as fd:
        tv0 = fd.define_tensor(shape=[1, 2, 3])
        tv1 = fd.ops.reshape(tv0, [3, 2, 1])
        fd.add_output(tv1)
    assert type(tv1.definition()) is BroadcastOp
    reshaped = tv1.definition().input(0)
    assert type(reshaped.definition()) is ReshapeOp
    squeezed = reshaped.definition().input(0)
    assert type(squeezed.definition()) is SqueezeOp
    assert squeezed.definition().input(0) == tv0
    assert tv0.definition() is None
    split = reshaped.get_logical_domain()[0].definition()
    assert type(split) is Split
    assert split.outer() == reshaped.get_logical_domain()[0]
    assert split.inner() == reshaped.get_logical_domain()[1]
    merge = split.input(0).definition()
    assert type(merge) is Merge
    assert merge.outer() == reshaped.get_root_domain()[0]
    assert merge.inner() == reshaped.get_root_domain()[1]
    # A scheduling split and merge on top show up the same way.
    reshaped.merge(0, 1)
    reshaped.split(0, 128)
    loop_split = reshaped.get_loop_domain()[0].definition()
    assert type(loop_split) is Split and loop_split.inner() == reshaped.get_loop_domain()[1]
    assert loop_split.factor().is_const()
    assert type(loop_split.input(0).definition()) is Merge


def test_uses_and_operand_errors():
    with FusionDefinition() as fd:
        tv0 = fd.define_tensor(shape=[-1, -1])
        tv1 = fd.ops.neg(tv0)
        tv2 = fd.ops.exp(tv0)
        fd.add_output(tv1)
        fd.add_output(tv2)
    uses = tv0.uses()
    assert [u.output(0) for u in uses] == [tv1, tv2]
    assert tv1.definition() == uses[0]
    assert uses[0].output(-1) == tv1
    with pytest.raises(IndexError, match="out of range"):
        uses[0].input(3)
    with pytest.raises(loom.UserError, match="out of range"):
        uses[0].output(-2)


def test_id_model_maps_equivalent_reshapes_once_their_inputs_are_mapped():
    """nvFuser's tutorial: two reshapes of unrelated inputs are unmapped in the exact graph until
    the inputs are mapped by hand; then their roots, the merge between and the loop IDs map."""
    with FusionDefinition() as fd:
        tv0 = fd.define_tensor(shape=[10, 20])
        tv1 = fd.define_tensor(shape=[10, 20])
        tv2 = fd.ops.reshape(tv0, [20, 10])
        tv3 = fd.ops.reshape(tv1, [20, 10])
        fd.add_output(tv2)
        fd.add_output(tv3)
    model = idm.IdModel(fd.fusion)
    exact = model.maybe_build_graph(IdMappingMode.exact)
    sets = exact.disjoint_val_sets()
    for a, b in zip(tv0.get_logical_domain(), tv1.get_logical_domain()):
        assert not sets.strict_are_mapped(a, b)
    for a, b in zip(tv2.get_loop_domain(), tv3.get_loop_domain()):
        assert not sets.strict_are_mapped(a, b)
    # A producer and its consumer are mapped from the start.
    assert sets.strict_are_mapped(tv0.get_logical_domain()[0], tv2.get_root_domain()[0])
    before = exact.num_sets()
    for a, b in zip(tv0.get_logical_domain(), tv1.get_logical_domain()):
        exact.map_vals(a, b)
    assert exact.num_sets() < before
    sets = exact.disjoint_val_sets()
    for a, b in zip(tv2.get_root_domain(), tv3.get_root_domain()):
        assert sets.strict_are_mapped(a, b)
    assert sets.strict_are_mapped(
        tv2.get_root_domain()[0].uses()[0].output(0), tv3.get_root_domain()[0].uses()[0].output(0)
    )
    for a, b in zip(tv2.get_loop_domain(), tv3.get_loop_domain()):
        assert sets.strict_are_mapped(a, b)
    # The same model gives the same graph again; printing names the sets.
    assert model.maybe_build_graph(IdMappingMode.exact).num_sets() == exact.num_sets()
    assert "exact" in repr(exact) and "exact" in repr(model)


def test_permissive_graph_forwards_broadcasts():
    with FusionDefinition() as fd:
        tv0 = fd.define_tensor(shape=[-1])
        tv1 = fd.define_tensor(shape=[-1, -1])
        tv2 = fd.ops.broadcast(tv0, [True, False])
        tv3 = fd.ops.add(tv2, tv1)
        fd.add_output(tv3)
    model = idm.IdModel(fd.fusion)
    exact = model.maybe_build_graph(IdMappingMode.exact).disjoint_val_sets()
    permissive = model.maybe_build_graph(IdMappingMode.permissive).disjoint_val_sets()
    b, i = tv2.get_logical_domain()[0], tv1.get_logical_domain()[0]
    assert not exact.strict_are_mapped(b, i)
    assert permissive.strict_are_mapped(b, i)


def test_id_model_errors():
    with FusionDefinition() as fd:
        tv0 = fd.define_tensor(shape=[-1])
        fd.add_output(fd.ops.neg(tv0))
    with FusionDefinition() as other:
        tv9 = other.define_tensor(shape=[-1])
        other.add_output(other.ops.neg(tv9))
    graph = idm.IdModel(fd.fusion).maybe_build_graph(IdMappingMode.exact)
    with pytest.raises(TypeError, match="IterDomains"):
        graph.map_vals(tv0, tv0)
    with pytest.raises(loom.UserError, match="not an IterDomain of this graph"):
        graph.map_vals(tv0.get_logical_domain()[0], tv9.get_logical_domain()[0])
    assert not graph.disjoint_val_sets().strict_are_mapped(
        tv0.get_logical_domain()[0], tv9.get_logical_domain()[0]
    )
