"""The workspace on a real-looking table: texts meaning missing (the table's and a column's own),
what missing cells count as, and display labels in the tree, the project and a held release."""

from __future__ import annotations

import numpy as np
import pytest

from privelet_gui import io as pio
from privelet_gui.engine import Hierarchy, PriveletError
from privelet_gui.workspace import Workspace
from privelet_gui.workspace.jobs import run_release
from privelet_gui.workspace.tree import HierarchyTree, tree_from_json, tree_to_json
from tests.acs_like import write_acs_like

N = pio.TableOptions(delimiter=",", missing_values=("N",))


@pytest.fixture
def acs(tmp_path):
    return write_acs_like(tmp_path / "acs")


@pytest.fixture
def workspace(acs) -> Workspace:
    workspace = Workspace()
    workspace.set_table(pio.summarize_table(acs.table, N))
    for config in workspace.configs:
        workspace.set_attribute(config.column, include=config.column in ("PUMA", "SEX", "INDP_CAT", "NOC", "PINCP"))
    workspace.set_attribute("INDP_CAT", kind="nominal")
    workspace.history.clear()
    return workspace


def test_the_table_texts_apply_to_every_column_without_its_own(workspace):
    schema = workspace.schema()
    assert all(a.missing_values == ("N",) for a in schema)  # what counting (and an exported schema) uses
    assert workspace.to_project().schema["NOC"].missing_values is None  # the project keeps "the table's"
    noc = workspace.config("NOC")
    assert workspace.missing_choice(noc) == "own" and schema["NOC"].labels[-1] == "N"  # the inference rule
    assert workspace.column_summary("PINCP").numeric


def test_a_column_of_its_own_and_undo(workspace):
    config = workspace.config("INDP_CAT")
    workspace.set_missing_values("INDP_CAT", [])
    summary = workspace.column_summary("INDP_CAT")
    assert summary.missing == 0 and "N" in summary.values  # N is a value of this column now
    # ... counted at the leaf N, which is no value of their own for missing cells any more
    assert workspace.missing_choice(config) == "value" and not workspace.hierarchy_problems(config)
    workspace.set_attribute("INDP_CAT", missing=None)
    assert not [text for _, text in workspace.attribute_issues(config) if "missing" in text]  # none left
    workspace.history.undo()
    workspace.history.undo()
    assert workspace.config("INDP_CAT").missing_values is None and workspace.column_summary("INDP_CAT").missing == 4
    with pytest.raises(PriveletError, match="listed twice"):
        workspace.set_missing_values("INDP_CAT", ["N", "N"])


def test_what_missing_cells_count_as(workspace):
    config = workspace.config("INDP_CAT")
    assert workspace.missing_choice(config) == "own"  # inference added a leaf N for them
    assert config.domain_text() == "hierarchy of 6 values, 'N' for missing cells"
    workspace.set_missing("INDP_CAT", "drop")
    assert workspace.schema()["INDP_CAT"].drop_missing and workspace.missing_choice(config) == "drop"
    assert config.domain_text() == "hierarchy of 5 values"  # the leaf N went with them
    assert workspace.schema()["INDP_CAT"].missing is None
    assert config.hierarchy.find("N") is None  # the leaf made for missing cells went with them
    workspace.set_missing("INDP_CAT", "refuse")
    issues = workspace.attribute_issues(config)
    assert any("INDP_CAT: missing cells (4, all 'N')" in text for _, text in issues)
    workspace.set_missing("INDP_CAT", "value", "0")
    assert workspace.schema()["INDP_CAT"].missing == "0" and workspace.missing_choice(config) == "value"
    for _ in range(3):
        workspace.history.undo()
    assert workspace.missing_choice(config) == "own" and config.hierarchy.find("N") is not None
    workspace.set_missing("NOC", "drop")
    assert workspace.schema()["NOC"].size == 4  # 0..3 without the value of its own


def test_a_value_of_its_own_goes_at_the_depth_of_the_other_leaves(workspace, acs):
    workspace.set_attribute("INDP", include=True, kind="nominal")
    tree = workspace.config("INDP").hierarchy
    tree.replace(pio.read_hierarchy(acs.hierarchy))
    workspace.set_missing("INDP", "drop")
    assert tree.find("N") is None
    workspace.set_missing("INDP", "own")
    attribute = workspace.schema()["INDP"]
    assert attribute.missing == "N" and attribute.hierarchy.leaves[-1] == "N"
    assert attribute.hierarchy.leaf_range("N (group)") == (6, 7)  # a group of its own, one level down
    workspace.set_missing("INDP", "refuse")  # the leaf goes, and the group made for it
    assert tree.find("N") is None and tree.find("N (group)") is None
    assert workspace.config("INDP").hierarchy.to_hierarchy().leaves == pio.read_hierarchy(acs.hierarchy).leaves
    workspace.history.undo()
    assert workspace.schema()["INDP"].hierarchy.leaf_range("N (group)") == (6, 7)
    workspace.history.undo()
    assert tree.find("N") is None and workspace.config("INDP").drop_missing


def test_display_labels_in_the_tree(acs):
    tree = HierarchyTree(pio.read_hierarchy(acs.hierarchy))
    assert tree.set_display_label(tree.find("4"), "  MFG:\nManufacturing ")
    assert tree.find("4").display == "MFG: Manufacturing" and tree.find("4").label == "4"
    assert not tree.set_display_label(tree.find("4"), "MFG: Manufacturing")  # nothing changes
    assert tree.set_display_labels({"0": "AGR", "170": "Crop production", "nope": "x"}) == 2
    hierarchy = tree.to_hierarchy()
    assert dict(hierarchy.display_labels) == {"4": "MFG: Manufacturing", "0": "AGR", "170": "Crop production"}
    assert hierarchy.leaves == pio.read_hierarchy(acs.hierarchy).leaves  # codes unchanged
    assert tree.set_display_label(tree.find("0"), "0")  # its own code: no label
    tree.history.undo()
    tree.history.undo()
    assert tree.find("170").display is None and tree.find("0").display is None
    again = tree_from_json(tree_to_json(tree.root))
    assert [(n.label, n.display) for n in again.walk()] == [(n.label, n.display) for n in tree.root.walk()]


def test_a_reworded_label_keeps_the_release(workspace, acs):
    workspace.table_path = acs.table
    outcome = run_release(workspace.release_job(), ask=lambda check: False)  # a fresh ledger: nothing to ask
    workspace.set_release_outcome(outcome)
    tree = workspace.config("INDP_CAT").hierarchy
    tree.set_display_label(tree.find("4"), "Manufacturing")
    assert workspace.outcome is not outcome and not workspace.release_is_stale()
    held = workspace.outcome.release
    assert held.schema["INDP_CAT"].hierarchy.display_label("4") == "Manufacturing"
    np.testing.assert_array_equal(held.noisy, outcome.release.noisy)  # the same release, relabelled
    assert "INDP_CAT_label" in pio.release_frame(held).columns
    workspace.set_missing("INDP_CAT", "drop")  # a change of what is counted: stale
    assert workspace.release_is_stale()


def test_the_project_keeps_it_all(workspace, tmp_path):
    workspace.set_missing_values("PUMA", ["NA"])
    workspace.set_missing("NOC", "drop")
    workspace.set_attribute("SEX", kind="nominal")
    tree = workspace.config("SEX").hierarchy
    tree.set_display_labels({"1": "Male", "2": "Female"})
    path = tmp_path / "p.privelet"
    pio_project = workspace.to_project()
    from privelet_gui.io.project import load_project, save_project

    save_project(pio_project, path)
    reopened = Workspace()
    reopened.apply_project(load_project(path), path, workspace.summary)
    assert reopened.schema() == workspace.schema()
    assert reopened.config("PUMA").missing_values == ("NA",) and reopened.config("NOC").drop_missing
    assert reopened.table_missing_values() == ("N",)
    assert reopened.config("SEX").hierarchy.to_hierarchy().display_label("2") == "Female"
    assert Hierarchy.flat(["1", "2"]) == reopened.schema()["SEX"].hierarchy


def test_a_rebuilt_tree_keeps_the_labels_of_its_codes(acs):
    tree = HierarchyTree(pio.read_hierarchy(acs.hierarchy))
    tree.set_display_labels({"0": "AGR", "170": "Crop production", "3390": "Cars"})
    tree.replace(Hierarchy.flat(["170", "180", "3390"]).with_display_labels({"3390": "Motor vehicles"}))
    assert tree.display_labels() == {"170": "Crop production", "3390": "Motor vehicles"}  # 0 is gone
    tree.history.undo()
    assert tree.display_labels() == {"0": "AGR", "170": "Crop production", "3390": "Cars"}


def test_an_imported_tree_without_the_value_for_missing_cells_says_so(workspace, acs):
    workspace.set_attribute("INDP", include=True, kind="nominal")
    config = workspace.config("INDP")
    assert workspace.missing_choice(config) == "own" and not workspace.hierarchy_problems(config)
    config.hierarchy.replace(pio.read_hierarchy(acs.hierarchy))  # the custodian's tree: no leaf N
    problems = workspace.hierarchy_problems(config)
    assert [(p.kind, p.value) for p in problems] == [("missing", "N")]
    assert "the value missing cells count as, is not in the hierarchy" in problems[0].message
    assert workspace.values_missing_from_hierarchy(config) == ["N"]
    assert workspace.step_status("hierarchies").state == "error"
    config.hierarchy.add_leaves_at_depth(workspace.values_missing_from_hierarchy(config))
    assert not workspace.hierarchy_problems(config) and workspace.schema()["INDP"].missing == "N"
    workspace.history.undo()
    workspace.set_missing("INDP", "drop")  # no value for them wanted any more
    assert not workspace.hierarchy_problems(config) and not workspace.values_missing_from_hierarchy(config)
