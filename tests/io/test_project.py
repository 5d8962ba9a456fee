"""Project files: versioned JSON, saved and reopened identically, clear errors."""

from __future__ import annotations

import json

import pytest

from privelet_gui.engine import Hierarchy, NominalAttribute, NumericBins, OrdinalAttribute, Schema
from privelet_gui.io import TableOptions
from privelet_gui.io.project import (
    PROJECT_FORMAT,
    PROJECT_VERSION,
    Project,
    ProjectError,
    load_project,
    migrate_project,
    project_from_json,
    project_to_json,
    save_project,
)


def full_schema() -> Schema:
    occupation = Hierarchy.from_nested({"*": {"Technical": ["Tech-support", "Craft-repair"], "Other": ["Sales"]}})
    return Schema(
        [
            OrdinalAttribute.integer_range("age", 0, 99, out_of_range="clamp"),
            NominalAttribute("occupation", occupation, domain_from_data=True),
            OrdinalAttribute("income", bins=NumericBins(0, 1000, 50), out_of_range="drop"),
            OrdinalAttribute("grade", ["low", "mid", "high"], column="grade_text", missing="low"),
        ]
    )


def test_save_and_reopen_is_identical(tmp_path):
    (tmp_path / "data").mkdir()
    project = Project(
        table_path=tmp_path / "data" / "people.csv",
        table_options=TableOptions(delimiter=";", encoding="latin-1", header=False, format="csv"),
        schema=full_schema(),
        epsilon=0.25,
        sa=("age", "grade"),
        neighbours="add-remove",
        mechanism="privelet+",
        invalid="drop",
    )
    path = tmp_path / "study.privelet"
    save_project(project, path)
    again = load_project(path)
    assert again == project
    assert again.schema == project.schema
    assert again.table_options == project.table_options
    # Saving the reopened project gives the same file.
    save_project(again, tmp_path / "copy.privelet")
    first = json.loads(path.read_text())
    second = json.loads((tmp_path / "copy.privelet").read_text())
    assert first == second


def test_file_is_versioned_json_with_a_relative_table_path(tmp_path):
    project = Project(table_path=tmp_path / "t.csv", schema=full_schema())
    path = tmp_path / "p.privelet"
    save_project(project, path)
    obj = json.loads(path.read_text())
    assert obj["format"] == PROJECT_FORMAT and obj["version"] == PROJECT_VERSION
    assert obj["table"]["path"] == "t.csv"  # the project folder can move as a whole
    assert obj["privacy"] == {"epsilon": 1.0, "sa": [], "sa_rule": "given", "neighbours": "replace",
                              "mechanism": "privelet+", "strategies": [], "marginals": [], "sampler": "exact", "dataset": None}
    assert [a["name"] for a in obj["schema"]["attributes"]] == ["age", "occupation", "income", "grade"]
    moved = tmp_path / "moved"
    moved.mkdir()
    (moved / "p.privelet").write_text(path.read_text())
    assert load_project(moved / "p.privelet").table_path == moved / "t.csv"


def test_tables_outside_the_project_folder_keep_an_absolute_path(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    project = Project(table_path=tmp_path / "a" / "t.csv")
    save_project(project, tmp_path / "b" / "p.privelet")
    obj = json.loads((tmp_path / "b" / "p.privelet").read_text())
    assert obj["table"]["path"] == str(tmp_path / "a" / "t.csv")
    assert load_project(tmp_path / "b" / "p.privelet") == project


def test_drafts_keep_hierarchies_that_are_not_valid_yet(tmp_path):
    tree = {"label": "*", "children": [{"label": "a"}, {"label": "empty group", "children": []}]}
    project = Project(
        schema=Schema([OrdinalAttribute.integer_range("age", 0, 9)]),
        attribute_order=("age", "job"),
        drafts={"job": {"column": "job", "tree": tree}},
        sa=("job",),
    )
    save_project(project, tmp_path / "p.privelet")
    again = load_project(tmp_path / "p.privelet")
    assert again == project
    assert again.drafts["job"]["tree"] == tree


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ({"format": "something else", "version": 1}, "not a Privelet Studio project"),
        ([1, 2], "not a Privelet Studio project"),
        ({"format": PROJECT_FORMAT, "version": PROJECT_VERSION + 1}, "newer Privelet Studio"),
        ({"format": PROJECT_FORMAT, "version": "1"}, "invalid version"),
        ({"format": PROJECT_FORMAT, "version": 1, "privacy": {"epsilon": -1}}, "epsilon must be a positive"),
        ({"format": PROJECT_FORMAT, "version": 1, "privacy": {"neighbours": "swap"}}, "neighbours"),
        ({"format": PROJECT_FORMAT, "version": 1, "privacy": {"sa": ["ghost"]}}, "S_A names 'ghost'"),
        ({"format": PROJECT_FORMAT, "version": 3, "privacy": {"sampler": "fast"}}, "privacy.sampler"),
        ({"format": PROJECT_FORMAT, "version": 2, "privacy": []}, '"privacy" must be a JSON object'),
        ({"format": PROJECT_FORMAT, "version": 1, "schema": {"attributes": "no"}}, "schema is invalid"),
        ({"format": PROJECT_FORMAT, "version": 1, "table": {"path": 3}}, "table.path"),
        ({"format": PROJECT_FORMAT, "version": 1, "table": {"options": {"delimiter": "::"}}}, "delimiter"),
    ],
)
def test_bad_projects_are_refused_with_a_clear_message(obj, message):
    with pytest.raises(Exception, match=message) as info:
        project_from_json(obj)
    assert isinstance(info.value, ValueError)  # PriveletError (TableError for bad options)


def test_unreadable_files(tmp_path):
    with pytest.raises(ProjectError, match="no such project file"):
        load_project(tmp_path / "missing.privelet")
    (tmp_path / "bad.privelet").write_text("{not json")
    with pytest.raises(ProjectError, match="not valid JSON"):
        load_project(tmp_path / "bad.privelet")


def test_migration_accepts_the_current_version_unchanged():
    obj = project_to_json(Project())
    assert migrate_project(obj) == obj
    assert project_from_json(obj) == Project()


@pytest.mark.parametrize("sampler", ["exact", "standard"])
def test_the_sampler_round_trips(tmp_path, sampler):
    save_project(Project(sampler=sampler), tmp_path / "p.privelet")
    assert json.loads((tmp_path / "p.privelet").read_text())["privacy"]["sampler"] == sampler
    assert load_project(tmp_path / "p.privelet").sampler == sampler


@pytest.mark.parametrize("version", [1, 2])
def test_projects_saved_before_the_sampler_get_the_exact_one(version):
    old = project_to_json(Project(epsilon=0.5, sampler="standard"))
    old["version"] = version
    del old["privacy"]["sampler"]
    if version == 1:
        del old["workload"]
    migrated = migrate_project(old)
    assert migrated["version"] == PROJECT_VERSION == 5 and migrated["privacy"]["sampler"] == "exact"
    assert project_from_json(old) == Project(epsilon=0.5, sampler="exact")


@pytest.mark.parametrize(("saved", "read"), [("chosen", "given"), ("recommended", "recommended"), ("best", "best")])
def test_version_4_projects_read_their_s_a_rule_by_its_name_today(saved, read):
    # Version 5 names the custodian's own S_A "given", as the command line and release files do.
    old = project_to_json(Project(schema=full_schema(), sa=("age",)))
    old["version"] = 4
    old["privacy"]["sa_rule"] = saved
    project = project_from_json(old)
    assert project.sa_rule == read and project.sa == ("age",)
    assert project_to_json(project)["privacy"]["sa_rule"] == read  # and written so


def test_version_4_projects_without_an_s_a_rule_have_the_custodians():
    old = project_to_json(Project(schema=full_schema(), sa=("age",)))
    old["version"] = 4
    del old["privacy"]["sa_rule"]
    assert project_from_json(old).sa_rule == "given"


def test_a_version_5_project_names_its_s_a_rule_today():
    obj = project_to_json(Project(schema=full_schema()))
    obj["privacy"]["sa_rule"] = "chosen"  # the earlier name is read from earlier versions only
    with pytest.raises(ProjectError, match=r'"privacy\.sa_rule" must be one of recommended, best, given'):
        project_from_json(obj)


def test_saving_is_atomic_and_overwrites_its_own_file(tmp_path):
    path = tmp_path / "p.privelet"
    save_project(Project(epsilon=1.0), path)
    save_project(Project(epsilon=2.0), path)
    assert load_project(path).epsilon == 2.0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.privelet"]  # no temporary file left
    with pytest.raises(FileExistsError):
        save_project(Project(), path, force=False)


# -- hostile project files --------------------------------------------------------------------------


def _project(**sections) -> dict:
    return {"format": PROJECT_FORMAT, "version": PROJECT_VERSION, **sections}


DRAFT_TREE = {"label": "*", "children": [{"label": "a"}]}


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        (_project(attribute_order=5), '"attribute_order" must be a list of attribute names'),
        (_project(attribute_order=["a", "a"]), "names 'a' twice"),
        (_project(privacy={"epsilon": 10**400}), '"privacy.epsilon" must be a positive number'),
        (_project(privacy={"epsilon": "1"}), '"privacy.epsilon" must be a positive number'),
        (_project(privacy={"epsilon": True}), '"privacy.epsilon" must be a positive number'),
        (_project(privacy={"sa": "age"}), '"privacy.sa" must be a list'),
        (_project(privacy={"mechanism": ["basic"]}), '"privacy.mechanism" must be one of'),
        (_project(counting=[]), '"counting" must be a JSON object'),
        (_project(table={"path": "a\x00b"}), '"table.path" must be a file path'),
        (_project(table={"options": {"header": "yes"}}), "header must be true or false"),
        (_project(table={"options": {"encoding": 5}}), "unknown encoding 5"),
        (_project(drafts={"job": {"tree": {"children": [{"label": "a"}]}}}), r"drafts\['job'\]\.tree must be a node"),
        (_project(drafts={"job": {"tree": {"label": "*", "children": [{"children": []}]}}}),
         r"drafts\['job'\]\.tree\.children\[0\] must be a node \{\"label\": \"non-empty text\""),
        (_project(drafts={"job": {"tree": {"label": "*", "children": [{"label": 5}]}}}), r"children\[0\] must be a node"),
        (_project(drafts={"job": {"tree": {"label": "*", "children": "a"}}}), r"children must be a list of nodes"),
        (_project(drafts={"job": {"tree": {"label": "leaf"}}}), r"tree must be a group"),
        (_project(drafts={"job": {"tree": DRAFT_TREE, "values": ["a"]}}), 'either "tree"'),
        (_project(drafts={"job": {"values": [1, 2]}}), r"values must be a list of text values"),
        (_project(drafts={"job": {"tree": DRAFT_TREE, "column": ""}}), r"column must be a column name"),
        (_project(drafts={"job": {"tree": DRAFT_TREE, "colour": "red"}}), "unknown key 'colour'"),
        (_project(drafts=["job"]), '"drafts" must map attribute names to drafts'),
    ],
)
def test_hostile_projects_are_refused_naming_the_value(obj, message):
    with pytest.raises(ProjectError, match=message):
        project_from_json(obj)


def test_deep_project_files_are_refused_with_a_message(tmp_path):
    deep = {"label": "*", "children": []}
    node = deep
    for level in range(110):  # within the JSON reader's depth, beyond a hierarchy's
        child = {"label": f"g{level}", "children": []}
        node["children"].append(child)
        node = child
    path = tmp_path / "p.privelet"
    path.write_text(json.dumps(_project(attribute_order=["job"], drafts={"job": {"tree": deep}})))
    with pytest.raises(ProjectError, match="nested more than 100 levels deep"):
        load_project(path)
    path.write_text('{"format": "privelet-studio-project", "version": 1, "extra": ' + "[" * 5000 + "]" * 5000 + "}")
    with pytest.raises(ProjectError, match="nested 5,001 levels deep"):
        load_project(path)
    path.write_text('{"format": "privelet-studio-project", "version": 1, "privacy": {"epsilon": NaN}}')
    with pytest.raises(ProjectError, match="NaN is not a number"):
        load_project(path)


def test_a_project_saved_with_a_byte_order_mark_opens(tmp_path):
    # found by the fuzz tests: Windows editors write one; schema files already accepted it
    path = tmp_path / "p.privelet"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(project_to_json(Project(epsilon=0.5))).encode())
    assert load_project(path).epsilon == 0.5
