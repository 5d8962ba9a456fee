"""The workspace's rules for bin edges and open ends (the app's Attributes step uses them)."""

from __future__ import annotations

import pytest

from privelet_gui.engine import NumericBins, OrdinalAttribute, PriveletError
from privelet_gui.io.project import load_project, save_project
from privelet_gui.workspace import Workspace
from privelet_gui.workspace.model import MAX_EDITED_EDGES, config_from_attribute, parse_bin_edges


@pytest.mark.parametrize(
    ("text", "edges"),
    [("0, 1, 10000, 50000", (0, 1, 10000, 50000)), ("0;1.5 ;  2e3", (0, 1.5, 2000)), (" -5 0\t5 ", (-5, 0, 5))],
)
def test_typed_edges_are_numbers_in_increasing_order(text, edges):
    assert parse_bin_edges(text) == edges


@pytest.mark.parametrize(
    ("text", "message"),
    [("0, ten", r"'ten' is not a number"), ("5", "at least two edges"), ("0, 5, 5", "must increase, but 5 comes after 5"),
     ("0, inf", r"not 'inf'.*\"Open above\""), ("", "at least two edges")],
)
def test_typed_edges_that_make_no_bins_say_why(text, message):
    with pytest.raises(PriveletError, match=message):
        parse_bin_edges(text)


def test_edges_and_open_ends_are_undoable_and_saved_in_the_project(workspace, sample_summary, tmp_path):
    workspace.set_attribute("age", mode="bins", bins=(0.0, 100.0, 20.0))
    workspace.use_bin_edges("age")
    assert workspace.config("age").bin_edges == (0, 20, 40, 60, 80, 100)
    workspace.set_bin_edges("age", (17, 30, 65))
    workspace.set_attribute("age", open_above=True)
    age = workspace.schema()["age"]
    assert age.bins == NumericBins.from_edges([17, 30, 65], open_above=True) and age.size == 3
    with pytest.raises(PriveletError, match="not greater than"):
        workspace.set_bin_edges("age", (17, 10))
    assert workspace.config("age").bin_edges == (17, 30, 65)  # refused before any change

    path = tmp_path / "adult.privelet"
    save_project(workspace.to_project(), path)
    again = Workspace()
    again.apply_project(load_project(path), path, sample_summary)
    assert again.schema()["age"] == age and again.config("age").bin_edges == (17, 30, 65)

    workspace.history.undo()  # open above
    workspace.history.undo()  # the edges typed
    assert workspace.config("age").bin_edges == (0, 20, 40, 60, 80, 100) and not workspace.config("age").open_above
    workspace.set_bin_edges("age", None)
    assert workspace.schema()["age"].bins == NumericBins(0, 100, 20)


def test_many_equal_bins_start_edges_from_their_two_ends(workspace):
    workspace.set_attribute("age", mode="bins", bins=(0.0, 1000.0, 1000.0 / MAX_EDITED_EDGES))
    workspace.use_bin_edges("age")
    assert workspace.config("age").bin_edges == (0, 1000)


def test_a_config_reproduces_bins_with_edges_and_open_ends():
    bins = NumericBins.from_edges([0, 1, 10_000], open_below=True, open_above=True)
    attribute = OrdinalAttribute("income", bins=bins, out_of_range="clamp")
    config = config_from_attribute(attribute, None)
    assert (config.bin_edges, config.open_below, config.open_above) == ((0, 1, 10_000), True, True)
    assert config.to_attribute() == attribute
    assert config.bins_summary() == "= 4 bins: (-inf, 0), [0, 1), [1, 10000), [10000, inf)"
    equal = config_from_attribute(OrdinalAttribute("w", bins=NumericBins(0, 90, 10, open_above=True)), None)
    assert equal.bin_edges is None and equal.to_attribute().bins == NumericBins(0, 90, 10, open_above=True)
    assert equal.domain_text() == "bins of width 10 from 0 to 90, open above"
