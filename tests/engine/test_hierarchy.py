import itertools

import pytest
from hypothesis import given

from privelet_gui.engine import Hierarchy, HierarchyError, HierarchyNode

from .strategies import hierarchies

WORLD = {"All": {"Europe": ["FR", "DE"], "Asia": {"East": ["CN", "JP"], "South": ["IN"]}}}


def test_from_nested_leaf_order_height_and_ranges():
    h = Hierarchy.from_nested(WORLD)
    assert h.leaves == ("FR", "DE", "CN", "JP", "IN")
    assert h.height == 4
    assert h.size == 5
    assert h.n_nodes == 10
    assert h.leaf_range("All") == (0, 5)
    assert h.leaf_range("Europe") == (0, 2)
    assert h.leaf_range("South") == (4, 5)
    assert h.leaf_range("JP") == (3, 4)
    walked = {n.label: (n.depth, n.lo, n.hi, n.fanout) for n in h.nodes()}
    assert walked["Asia"] == (2, 2, 5, 2)
    assert walked["IN"] == (4, 4, 5, 0)
    # level order: the coefficient order of the nominal transform
    assert h.labels[:3] == ("All", "Europe", "Asia")


def test_rho_skips_only_child_levels():
    # Figure 3 of the paper: h = 3
    fig3 = Hierarchy.from_nested({"root": {"a": ["v1", "v2", "v3"], "b": ["v4", "v5", "v6"]}})
    assert fig3.rho == 3 and fig3.height == 3
    chain = Hierarchy.from_nested({"*": {"only": {"still": ["x", "y"]}}})
    assert chain.height == 4
    assert chain.rho == 2  # root + the x/y split; "only" and "still" are only children
    assert Hierarchy.flat(["Male", "Female"]).rho == 2


def test_mixed_lists_and_integer_labels():
    h = Hierarchy.from_nested({"*": ["a", {"G": [1, 2]}, "b"]})
    assert h.leaves == ("a", "1", "2", "b")
    assert h.leaf_range("G") == (1, 3)


def test_round_trip_nested():
    h = Hierarchy.from_nested(WORLD)
    assert Hierarchy.from_nested(h.to_nested()) == h
    assert hash(Hierarchy.from_nested(WORLD)) == hash(h)


@given(hierarchies())
def test_round_trip_random(h):
    again = Hierarchy.from_nested(h.to_nested())
    assert again == h
    assert again.leaves == h.leaves
    # every node covers a contiguous leaf range that its children partition
    for node in h.nodes():
        if node.fanout:
            children = [c for c in h.nodes() if c.parent == node.index]
            assert children[0].lo == node.lo and children[-1].hi == node.hi
            assert all(a.hi == b.lo for a, b in itertools.pairwise(children))


@pytest.mark.parametrize(
    "bad, words",
    [
        ({"*": ["a", "a"]}, ["'a'", "twice", "rename"]),
        ({"*": {"G": ["x"], "H": ["G"]}}, ["'G'", "twice"]),
        ({"*": {"G": [], "H": ["x"]}}, ["* > G", "empty"]),
        ({"*": {"G": {}}}, ["* > G", "empty"]),
        ({"a": ["x"], "b": ["y"]}, ["exactly one key", "root"]),
        (["x", "y"], ["exactly one key"]),
        ({"*": ["x", ""]}, ["empty label"]),
        ({"*": ["x", 1.5]}, ["1.5", "text"]),
        ({"*": "x"}, ["list of leaves", "str"]),
    ],
)
def test_invalid_hierarchies_name_the_problem(bad, words):
    with pytest.raises(HierarchyError) as info:
        Hierarchy.from_nested(bad)
    for word in words:
        assert word in str(info.value)


def test_node_lookup_errors():
    h = Hierarchy.from_nested(WORLD)
    with pytest.raises(HierarchyError, match="no node called 'Africa'"):
        h.leaf_range("Africa")
    assert "Asia" in h and "Africa" not in h


def test_constructed_from_nodes_validates():
    with pytest.raises(HierarchyError, match="twice"):
        Hierarchy(HierarchyNode("*", (HierarchyNode("x"), HierarchyNode("*"))))


def test_group_by_prefix_never_labels_a_group_as_the_key_of_its_values():
    from privelet_gui.engine.model.builders import group_by_prefix

    # "\x00leaves" is the builder's own key for a group's values: a prefix spelling it once
    # crashed the builder (an assert); it is now a group like any other, relabelled.
    hierarchy, moved = group_by_prefix(["x", "\x00leaves1", "\x00leaves2"], [7])
    assert [n.label for n in hierarchy.root.children] == ["x", "\x00leaves*"]
    assert [n.label for n in hierarchy.root.children[1].children] == ["\x00leaves1", "\x00leaves2"]
    assert not moved
