"""The workspace model without Qt: a custodian's flow, step records, undo, staleness, projects."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import pytest

from privelet_gui import io as pio
from privelet_gui.engine import Hierarchy, ReleaseSpec, recommend_sa
from privelet_gui.workspace import (
    HierarchyTree,
    ReleaseOutcome,
    UndoHistory,
    Workspace,
    release_blockers,
    run_release,
)
from privelet_gui.workspace.model import default_cell_budget


def test_the_workspace_imports_no_qt():
    script = textwrap.dedent(
        """
        import importlib.abc, sys

        class BlockQt(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in {"PySide6", "shiboken6", "pyqtgraph"}:
                    raise ImportError(f"{name} is blocked")
                return None

        sys.meta_path.insert(0, BlockQt())
        from privelet_gui import io as pio
        from privelet_gui.workspace import Workspace
        ws = Workspace()
        ws.set_table(pio.summarize_table(pio.sample_table_path()), schema=pio.load_schema(pio.sample_schema_path()))
        ws.set_epsilon(0.5)
        print(ws.release_spec().epsilon, ws.step_status("privacy").state)
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0.5", "done"]


def test_a_custodians_flow_with_undo_and_a_spec(workspace):
    workspace.set_privacy(mechanism="privelet+")  # S_A is Privelet+'s
    history = workspace.history
    assert [c.name for c in workspace.included()] == list(pio.load_schema(pio.sample_schema_path()).names)
    assert workspace.step_status("attributes").complete
    # attribute settings, undoable
    workspace.set_attribute("age", "Narrow age", lo=20, hi=60)
    assert workspace.schema()["age"].size == 41
    assert workspace.step_status("attributes").state == "error"  # the data runs outside 20..60
    issue = next(i for i in workspace.step_status("attributes").issues if i.code == "out-of-range")
    assert (issue.step, issue.attribute, issue.severity) == ("attributes", "age", "error")
    history.undo()
    assert workspace.schema()["age"].size == 74 and workspace.step_status("attributes").complete
    # a hierarchy edit through the same history, with undo and redo
    tree = workspace.config("occupation").hierarchy
    assert isinstance(tree, HierarchyTree)
    before = tree.to_hierarchy()
    technical = tree.find("Technical")
    tree.move_nodes([tree.find("Sales")], technical)
    assert "Sales" in [n.label for n in technical.children]
    assert workspace.schema()["occupation"].hierarchy != before
    history.undo()
    assert workspace.schema()["occupation"].hierarchy == before
    history.redo()
    assert workspace.schema()["occupation"].hierarchy != before
    # S_A and the spec
    workspace.set_sa(["sex", "race"])
    workspace.set_epsilon(0.5)
    spec = workspace.release_spec()
    assert spec == ReleaseSpec(workspace.schema(), 0.5, "privelet+", ("sex", "race"))
    assert workspace.effective_sa() == ("sex", "race")
    assert workspace.release_spec(mechanism="basic").effective_sa == workspace.schema().names
    assert release_blockers(workspace) == []
    job = workspace.release_job()
    assert job.spec == spec
    assert history.texts[-2:] == ["Set S_A to {sex, race}", "Set epsilon to 0.5"]


def test_typing_an_epsilon_is_one_change(workspace):
    history = workspace.history
    start = len(history)
    for epsilon in (0.9, 0.8, 0.7):
        workspace.set_epsilon(epsilon)
    assert len(history) == start + 1 and workspace.epsilon == 0.7
    history.undo()
    assert workspace.epsilon == 1.0
    workspace.set_epsilon(0.5)
    workspace.set_epsilon(1.0)  # back where it started: nothing to undo
    assert len(history) == start


def test_steps_are_records_and_blockers_name_them(sample_summary):
    ws = Workspace()
    assert ws.step_status("data").state == "todo"
    ws.set_table(sample_summary)  # no schema: every domain inferred from the data
    attributes = ws.step_status("attributes")
    codes = {(i.attribute, i.code, i.severity) for i in attributes.issues}
    assert ("age", "domain-from-data", "warning") in codes and attributes.state == "warning"
    hierarchies = ws.step_status("hierarchies")
    assert hierarchies.state == "warning"  # flat hierarchies of the data's values: not ticked green
    assert {i.code for i in hierarchies.issues} == {"flat-from-data"}
    for config in ws.configs:
        ws.set_attribute(config.column, include=True)
    attributes = ws.step_status("attributes")
    assert (None, "too-many-cells", "error") in {(i.attribute, i.code, i.severity) for i in attributes.issues}
    too_many = next(i.message for i in attributes.issues if i.code == "too-many-cells")
    # said with grouped digits and binary units (not "(4.96 GB)" from a raw float)
    assert "would have 666,023,680 cells (5.0 GiB);" in too_many, too_many
    assert attributes.state == "error" and release_blockers(ws)[0] == attributes.message
    assert ws.step_status("hierarchies").state == "todo"  # its inputs, the attributes, are not ready
    assert ws.step_status("privacy").state == "todo"
    for config in ws.included():
        ws.set_attribute(config.column, include=False)
    assert ws.step_status("attributes").message == "include at least one attribute"
    assert release_blockers(ws)[0] == "include at least one attribute"
    with pytest.raises(Exception, match="include at least one attribute"):
        ws.release_job()


def test_columns_are_included_while_the_matrix_suits_the_table(sample_summary):
    ws = Workspace()
    ws.set_table(sample_summary)
    budget = default_cell_budget(sample_summary.rows)
    assert budget == 10 * 30_162
    schema = ws.schema()
    assert schema is not None and schema.size <= budget
    included = [c.name for c in ws.included()]
    assert included[:5] == ["sex", "age", "race", "marital-status", "education"]  # table order
    left_out = [c for c in ws.configs if not c.include]
    assert left_out and all("per row of the table" in c.note for c in left_out)
    # every left-out column would have pushed the matrix over the budget where it came
    cells = 1
    for config in ws.configs:
        size = config.to_attribute().size
        if config.include:
            cells *= size
        else:
            assert cells * size > budget


def test_the_release_summary_names_the_domains_taken_from_the_data(sample_summary):
    ws = Workspace()
    ws.set_table(sample_summary)  # no schema: every domain inferred from the data
    for config in ws.configs:
        ws.set_attribute(config.column, include=False)
    assert ws.domains_text() == ""  # nothing included, nothing to say
    for config in ws.configs:
        ws.set_attribute(config.column, include=config.column in ("sex", "age", "race", "education", "workclass"))
    assert ws.domains_from_data() == ["sex", "age", "race", "education", "workclass"]
    assert ws.domains_text().startswith("NOT private: the domains of sex, age, race and 2 more were taken from the data")
    for column in ("sex", "age", "race", "education"):
        ws.set_attribute(column, f"{column}: domain confirmed public", domain_from_data=False)
    assert ws.domains_text().startswith("NOT private: the domain of workclass was taken from the data")
    assert "Replace it with a public domain, or confirm in the Attributes step that it is public knowledge" in ws.domains_text()
    ws.set_attribute("workclass", "workclass: a public code list", domain_from_data=False)
    assert ws.domains_from_data() == []
    assert ws.domains_text() == "public: every domain was declared or confirmed public knowledge"


def test_including_every_column_is_one_change_announced_once(sample_summary):
    """A wide table's "Include all" refreshes the views once, not once per column (152 columns
    froze the app for about half a minute), and undoes as one change."""
    ws = Workspace()
    ws.set_table(sample_summary)
    before = {c.column: c.include for c in ws.configs}
    assert not all(before.values())  # the default leaves some out
    announced: list[str] = []
    ws.events.attributes_changed.connect(lambda: announced.append("attributes"))
    ws.events.state_changed.connect(lambda: announced.append("state"))
    assert ws.include_every_column() == list(before.values()).count(False)
    assert all(c.include for c in ws.configs) and announced == ["attributes", "state"]
    assert ws.include_every_column() == 0  # nothing left to change: no change recorded
    ws.history.undo()
    assert {c.column: c.include for c in ws.configs} == before and announced[2:] == ["attributes", "state"]
    ws.include_every_column(False)
    assert not any(c.include for c in ws.configs)


def test_a_switch_to_nominal_builds_the_flat_tree_of_the_datas_values(tmp_path):
    """An ordinal column gets its tree when it becomes nominal (none is built for every column
    when a table opens: 152 wide columns took 2 s), with its own value for missing cells."""
    path = tmp_path / "t.csv"
    path.write_text("age,sex\n30,F\n41,M\nN,F\n17,M\n")
    ws = Workspace()
    ws.set_table(pio.summarize_table(path, pio.TableOptions(missing_values=("N",))))
    assert ws.config("age").kind == "ordinal" and ws.config("age").hierarchy is None
    ws.set_missing("age", "own")
    ws.set_attribute("age", kind="nominal")
    tree = ws.config("age").hierarchy
    assert tree is not None and [leaf.label for leaf in tree.root.children] == ["17", "30", "41", "N"]
    ws.history.undo()
    assert ws.config("age").kind == "ordinal" and ws.config("age").hierarchy is None


def test_sa_follows_the_recommendation_until_chosen(workspace):
    workspace.set_privacy(mechanism="privelet+")  # S_A is Privelet+'s
    schema = workspace.schema()
    assert workspace.sa_rule == "recommended" and workspace.sa == recommend_sa(schema)
    assert workspace.release_spec().effective_sa == recommend_sa(schema)
    workspace.set_attribute("native-country", include=False)  # the schema changes: S_A follows it
    assert workspace.sa == recommend_sa(workspace.schema())
    workspace.set_sa(["sex"])
    assert (workspace.sa, workspace.sa_rule) == (("sex",), "given")
    assert workspace.sa_rule_text() == "chosen by you"
    workspace.history.undo()
    assert workspace.sa_rule == "recommended"
    workspace.set_sa(["sex"])
    workspace.use_recommended_sa()
    assert workspace.sa == recommend_sa(workspace.schema())


def test_a_release_goes_stale_when_its_settings_change(workspace):
    workspace.set_sa(["sex"])
    outcome = run_release(workspace.release_job(), ask=lambda check: False)  # a fresh ledger: nothing to ask
    assert isinstance(outcome, ReleaseOutcome)
    workspace.set_release_outcome(outcome)
    assert not workspace.release_is_stale()
    assert workspace.step_status("release").state == "done"
    workspace.set_epsilon(2.0)
    assert workspace.release_is_stale()
    workspace.history.undo()
    assert not workspace.release_is_stale()
    workspace.set_privacy(mechanism="basic")
    assert workspace.release_is_stale()
    workspace.history.undo()
    assert not workspace.release_is_stale()
    # Dropping rows outside a domain counts the table otherwise, and makes its total private:
    # the release was shifted to the public total, the one asked for now is not.
    assert outcome.release.public_total
    workspace.set_privacy(invalid="drop")
    assert not workspace.release_spec().uses_public_total
    assert workspace.release_is_stale()


def test_modified_follows_the_history_and_saving(workspace, tmp_path):
    seen: list[bool] = []
    workspace.events.modified_changed.connect(seen.append)
    assert workspace.modified  # a table read anew is a change to the saved project
    workspace.mark_saved(tmp_path / "p.privelet")
    assert not workspace.modified
    workspace.set_epsilon(0.25)
    assert workspace.modified
    workspace.history.undo()
    assert not workspace.modified
    assert seen == [False, True, False]


def test_projects_round_trip_through_the_workspace(workspace, sample_summary, tmp_path):
    tree = workspace.config("occupation").hierarchy
    tree.add_empty_group(tree.root, "Empty")  # invalid: kept as a draft
    workspace.set_sa(["sex"])
    path = tmp_path / "adult.privelet"
    from privelet_gui.io.project import load_project, save_project

    save_project(workspace.to_project(), path)
    again = Workspace()
    again.apply_project(load_project(path), path, sample_summary)
    assert again.sa == ("sex",) and not again.modified
    assert again.step_status("hierarchies").state == "error"
    occupation = again.config("occupation").hierarchy
    assert occupation.find("Empty") is not None and occupation.find("Empty").is_group


def test_a_plain_history_groups_and_drops_no_op_changes():
    history = UndoHistory()
    tree = HierarchyTree(Hierarchy.from_nested({"*": {"A": ["a1", "a2"], "B": ["b1"]}}), history)
    with history.group("Tidy up"):
        tree.move_nodes([tree.find("a2")], tree.find("B"))
        tree.rename(tree.find("b1"), "b-one")
    assert history.texts == ["Tidy up"]
    assert tree.to_hierarchy().to_nested() == {"*": {"A": ["a1"], "B": ["b-one", "a2"]}}
    history.undo()
    assert tree.to_hierarchy().to_nested() == {"*": {"A": ["a1", "a2"], "B": ["b1"]}}
    assert not tree.move_nodes([tree.find("a1")], tree.find("A"), 0)  # already there: no change
    assert history.can_redo and history.texts == [] and len(history) == 1  # the undone group stays redoable
    history.redo()
    assert tree.to_hierarchy().to_nested() == {"*": {"A": ["a1"], "B": ["b-one", "a2"]}}


def test_choosing_the_recommended_set_keeps_it_chosen(workspace):
    workspace.set_privacy(mechanism="privelet+")  # S_A is Privelet+'s
    recommended = recommend_sa(workspace.schema())
    workspace.set_sa(recommended)
    assert (workspace.sa, workspace.sa_rule) == (recommended, "given")
    workspace.set_attribute("age", "Bin age", mode="bins", bins=(0.0, 100.0, 10.0))  # the recommendation changes
    assert workspace.sa == recommended  # a chosen S_A stays as chosen
    assert workspace.release_spec().effective_sa == tuple(n for n in workspace.schema().names if n in recommended)


def test_a_new_value_can_join_at_the_depth_of_the_other_leaves():
    tree = HierarchyTree(Hierarchy.from_nested({"*": {"AGR": ["170", "180"], "MIN": ["370"]}}))
    assert tree.leaf_depth() == 3
    tree.add_leaves_at_depth(["N"])
    hierarchy = tree.to_hierarchy()
    assert hierarchy.to_nested() == {"*": {"AGR": ["170", "180"], "MIN": ["370"], "N (group)": ["N"]}}
    depths = {info.label: info.depth for info in hierarchy.nodes()}
    assert depths["N"] == depths["170"] == 3
    assert hierarchy.rho == Hierarchy.from_nested({"*": {"AGR": ["170", "180"], "MIN": ["370"]}}).rho  # a lone child is free
    tree.history.undo()
    assert "N" not in tree.leaves()
    flat = HierarchyTree(Hierarchy.flat(["a", "b"]))
    flat.add_leaves_at_depth(["N"])
    assert flat.to_hierarchy().to_nested() == {"*": ["a", "b", "N"]}  # already at the leaves' depth


def test_the_group_made_for_a_value_shows_the_values_label():
    """Issue 39, item 5: "N (group)", made so that N sits at the depth of the other leaves,
    shows N's label wherever labels are shown (the engine's display labels), and follows it."""
    tree = HierarchyTree(Hierarchy.from_nested({"*": {"AGR": ["170", "180"], "MIN": ["370", "380"]}}))
    tree.add_empty_group(tree.find("AGR"), "deeper")  # a deeper tree: N gets two groups of its own
    tree.move_nodes([tree.find("170")], tree.find("deeper"))
    tree.add_leaves_at_depth(["N"])
    top, inner = tree.find("N (group)'"), tree.find("N (group)")
    assert top.children == [inner] and inner.children == [tree.find("N")]
    assert tree.set_display_labels({"N": "Not applicable", "AGR": "Agriculture"}) == 4
    shown = tree.to_hierarchy().display_labels
    assert (shown["N (group)"], shown["N (group)'"], shown["AGR"]) == ("Not applicable (group)",) * 2 + ("Agriculture",)
    tree.set_display_label(tree.find("N"), "N/A")  # the groups follow
    assert (inner.display, top.display) == ("N/A (group)", "N/A (group)")
    tree.set_display_label(top, "Nobody")  # a label of its own is kept
    tree.set_display_label(tree.find("N"), None)
    assert (inner.display, top.display) == (None, "Nobody")
    tree.history.undo()
    tree.history.undo()
    assert (inner.display, top.display) == ("N/A (group)", "N/A (group)")
    plain = HierarchyTree(Hierarchy.from_nested({"*": {"N (group)": ["x", "N"]}}))  # not one the app made
    plain.set_display_labels({"N": "Not applicable"})
    assert plain.find("N (group)").display is None


def test_a_tree_is_edited_once_grouped_or_changed_in_place():
    """What the Hierarchies step asks about before an import replaces a tree."""
    tree = HierarchyTree(Hierarchy.flat(["a", "b", "c"]))
    assert not tree.is_edited()
    tree.set_display_label(tree.find("a"), "Alpha")
    assert tree.is_edited()
    tree.history.undo()
    assert not tree.is_edited()
    tree.delete_leaves([tree.find("c")])
    assert tree.is_edited()
    tree.replace(Hierarchy.flat(["a", "b"]))  # a new tree: nothing done to it yet
    assert not tree.is_edited()
    tree.history.undo()  # the edited one is back
    assert tree.is_edited()
    assert HierarchyTree(Hierarchy.from_nested({"*": {"g": ["a"], "h": ["b"]}})).is_edited()  # groups are work


def test_a_schema_with_a_huge_range_opens_without_building_its_values():
    """Sixty million integers are a range: the workspace, its checks and a switch to
    nominal never list them (a list of that size would take gigabytes and minutes)."""
    import tracemalloc

    from privelet_gui.engine import OrdinalAttribute, Schema
    from privelet_gui.io.summary import ColumnSummary, TableSummary

    column = ColumnSummary("id", distinct=2_000_000, values=None, missing=0, numeric=True,
                           integer=True, minimum=5.0, maximum=59_999_999.0)
    summary = TableSummary(pio.sample_table_path(), None, 2_000_000, (column,))
    schema = Schema([OrdinalAttribute.integer_range("id", 0, 59_999_999)])
    tracemalloc.start()
    ws = Workspace()
    ws.set_table(summary, schema=schema)
    config = ws.config("id")
    assert config.mode == "range" and (config.lo, config.hi) == (0, 59_999_999)
    assert ws.attribute_issues(config) == []
    ws.set_attribute("id", kind="nominal")  # too many values for a tree to start from: the root alone
    assert ws.config("id").hierarchy.root.children == []
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 50 * 2**20, f"peak {peak / 2**20:.0f} MiB"


def test_step_lines_count_as_people_count(workspace):
    """Step lines say "1 attribute", "5 hierarchies" (not "attribute(s)", "hierarchy(ies)")."""
    included = [c.column for c in workspace.included()]
    assert workspace.step_status("hierarchies").message == "5 hierarchies ready"
    for column in included[1:]:
        workspace.set_attribute(column, include=False)
    kept = workspace.included()
    assert len(kept) == 1
    assert workspace.step_status("attributes").message == f"1 attribute, {workspace.schema().size} cells"
    nominal = next(column for column in included if workspace.config(column).kind == "nominal")
    workspace.set_attribute(nominal, include=True)
    assert workspace.step_status("hierarchies").message == "1 hierarchy ready"


def test_a_domain_derived_from_the_data_keeps_its_flag_through_every_edit(sample_summary, tmp_path):
    """Issue 39, item 1: switching the type builds a flat tree of the observed values, editing
    a range or a list starts from the data's own: each is still a domain taken from the data.
    Only an import of a public domain or the custodian's confirmation clears the flag, and a
    saved project keeps it."""
    from privelet_gui.io.project import load_project, save_project

    ws = Workspace()
    ws.set_table(sample_summary)  # every domain inferred from the data
    ws.set_attribute("age", include=True)
    ws.set_attribute("age", "Make age nominal", kind="nominal")  # a flat tree of the observed ages
    age = ws.config("age")
    assert age.kind == "nominal" and age.hierarchy is not None and age.domain_from_data
    assert "age" in ws.domains_from_data() and ws.domains_text().startswith("NOT private")
    ws.set_attribute("age", "Make age ordinal", kind="ordinal")
    for changes in ({"mode": "range"}, {"lo": 0, "hi": 99}, {"mode": "values", "values": ("17", "18", "19")},
                    {"mode": "bins", "bins": (0.0, 100.0, 10.0)}):
        ws.set_attribute("age", **changes)
        assert ws.config("age").domain_from_data, changes
    ws.set_attribute("age", "Make age nominal", kind="nominal")
    path = tmp_path / "p.privelet"
    save_project(ws.to_project(), path)
    again = Workspace()
    again.apply_project(load_project(path), path, sample_summary)
    assert again.config("age").kind == "nominal" and again.config("age").domain_from_data
    assert "age" in again.domains_from_data()
    ws.confirm_domain_public("age")
    assert not ws.config("age").domain_from_data and "age" not in ws.domains_from_data()
    ws.history.undo()
    assert ws.config("age").domain_from_data


@pytest.mark.parametrize("typed", ["1e-13", "0,5", "-1", "0", "1e13", "1_000", "inf", "nan", "½"])
def test_a_typed_epsilon_is_taken_exactly_or_refused_with_the_engines_range(workspace, typed):
    """Issue 39, item 3: the rule behind the app's epsilon field."""
    from privelet_gui.engine import EPSILON_MAX, EPSILON_MIN, PriveletError
    from privelet_gui.workspace.model import epsilon_text, parse_epsilon

    with pytest.raises(PriveletError, match=re.escape(f"from {EPSILON_MIN:g} to {EPSILON_MAX:g}, written with a point as the decimal")):
        parse_epsilon(typed)
    for text, value in (("1e-3", 0.001), ("5000", 5000.0), (f"{EPSILON_MIN:g}", EPSILON_MIN), (f"{EPSILON_MAX:g}", EPSILON_MAX)):
        assert parse_epsilon(text) == value and parse_epsilon(epsilon_text(value)) == value
    workspace.set_epsilon(5000.0)
    assert workspace.release_spec().epsilon == 5000.0
    with pytest.raises(PriveletError, match="at most"):
        workspace.set_epsilon(EPSILON_MAX * 10)
    assert workspace.epsilon == 5000.0
