"""The range-query workbench: noisy count and exact 95% interval, on fresh and on loaded releases."""

from __future__ import annotations

import csv
import dataclasses
import math

import numpy as np
import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QValidator
from PySide6.QtWidgets import QComboBox

from privelet_gui.engine import (
    Z95,
    Hierarchy,
    NominalAttribute,
    OrdinalAttribute,
    RangeQuery,
    ReleaseSpec,
    Schema,
    privelet_plus,
    query_variance,
)
from privelet_gui.gui.workbench import IntervalPicker, NodePicker, QueryWorkbench
from privelet_gui.io import load_release, save_release

JOBS = Hierarchy.from_nested({"*": {"Technical": ["Tech-support", "Craft-repair"], "Other": ["Sales", "Other-service"]}})
SCHEMA = Schema([OrdinalAttribute.integer_range("age", 17, 40), NominalAttribute("occupation", JOBS)])


@pytest.fixture
def release():
    matrix = np.random.default_rng(0).integers(0, 30, SCHEMA.shape).astype(float)
    return privelet_plus(matrix, SCHEMA, 0.7, ["occupation"], np.random.default_rng(1))


def choose(bench: QueryWorkbench, first: str, last: str, node: str) -> RangeQuery:
    picker = bench.picker("age")
    assert isinstance(picker, IntervalPicker)
    picker.set_interval(SCHEMA["age"].index_of(first), SCHEMA["age"].index_of(last))
    nodes = bench.picker("occupation")
    assert isinstance(nodes, NodePicker)
    nodes.set_node(node)
    return RangeQuery.build(SCHEMA, {"age": (first, last), "occupation": node})


def test_answer_and_interval_match_the_engine(qtbot, release):
    bench = QueryWorkbench()
    qtbot.addWidget(bench)
    bench.set_release(release)
    with qtbot.waitSignal(bench.answered, timeout=2000):
        query = choose(bench, "20", "29", "Technical")
    answer = bench.last_answer
    box = release.noisy[3:13, 0:2]
    assert answer.noisy_count == pytest.approx(box.sum(), rel=1e-12, abs=1e-9)
    # the release's exact variance: the formula with its effective scale (a hair above lambda)
    assert answer.variance == pytest.approx(release.variance(query), rel=1e-12)
    # the release is shifted to the public total by default: the exact variance includes the covariance with it
    from privelet_gui.engine import QueryBatch, VarianceModel

    shifted = VarianceModel(SCHEMA).batch(QueryBatch.of([query]), 0.7, ["occupation"], public_total=True)[0]
    assert answer.variance == pytest.approx(shifted, rel=1e-4)
    assert release.variance(query, raw=True) == pytest.approx(query_variance(SCHEMA, 0.7, ["occupation"], query), rel=1e-4)
    half = Z95 * math.sqrt(answer.variance)
    assert answer.ci95 == pytest.approx((box.sum() - half, box.sum() + half), rel=1e-12)
    assert "age=20..29" in answer.query and "occupation=Technical" in answer.query
    assert "95% interval" in bench.answer_label.text()


def test_keep_list_and_export_csv_from_a_release_file(qtbot, release, tmp_path):
    path = tmp_path / "r.npz"
    save_release(release, path)
    loaded = load_release(path)
    bench = QueryWorkbench()
    qtbot.addWidget(bench)
    bench.set_release(loaded)
    choose(bench, "17", "40", "*")
    bench.keep()
    choose(bench, "30", "30", "Sales")
    bench.keep()
    assert bench.table.rowCount() == 2
    out = bench.export_csv(tmp_path / "queries.csv")
    with out.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == list(QueryWorkbench.COLUMNS)
    assert float(rows[1][1]) == pytest.approx(loaded.noisy.sum(), rel=1e-9)
    assert float(rows[2][1]) == pytest.approx(loaded.noisy[13, 2], rel=1e-9)
    assert rows[2][0] == "age=30, occupation=Sales"
    bench.clear_list()
    assert bench.table.rowCount() == 0 and not bench.export_button.isEnabled()


def test_big_releases_wait_for_prefix_sums_from_the_caller(qtbot, release, monkeypatch):
    import privelet_gui.gui.workbench as workbench
    from privelet_gui.engine import PrefixSums

    monkeypatch.setattr(workbench, "INSTANT_PREFIX_CELLS", 10)
    bench = QueryWorkbench()
    qtbot.addWidget(bench)
    bench.set_release(release)
    assert not bench.keep_button.isEnabled() and "Preparing" in bench.answer_label.text()
    bench.set_prefix_sums(PrefixSums(release.noisy))
    assert bench.keep_button.isEnabled() and bench.last_answer is not None


# -- the drop-down tree of a hierarchy --------------------------------------------------------------


def open_list(qtbot, picker: NodePicker):
    picker.resize(300, picker.sizeHint().height())  # as wide as in the workbench's form: every row in sight
    picker.showPopup()
    view = picker.view()
    qtbot.waitUntil(view.isVisible, timeout=2000)
    return view


def row_of(view, label: str):
    model = view.model()
    stack = [model.index(0, 0)]
    while stack:
        index = stack.pop()
        if index.data().split("  ")[0] == label:
            return index
        stack.extend(model.index(r, 0, index) for r in range(model.rowCount(index)))
    raise KeyError(label)


def arrow_of(view, index) -> QPoint:
    """Where the expand arrow of ``index`` is drawn: in the indentation left of its text."""
    rect = view.visualRect(index)
    return QPoint(rect.left() - view.indentation() // 2, rect.center().y())


def click(qtbot, view, point: QPoint) -> None:
    qtbot.mouseMove(view.viewport(), point)
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=point)


def test_the_expand_arrow_opens_a_group_without_choosing_it(qtbot):
    picker = NodePicker(JOBS)
    qtbot.addWidget(picker)
    picker.show()
    changes = []
    picker.changed.connect(lambda: changes.append(picker.node()))
    view = open_list(qtbot, picker)
    technical = row_of(view, "Technical")
    assert not view.isExpanded(technical)
    click(qtbot, view, arrow_of(view, technical))
    assert view.isExpanded(technical)  # the group opened ...
    assert view.isVisible() and changes == [] and picker.node() == 0  # ... the list stayed open, nothing chosen
    click(qtbot, view, arrow_of(view, technical))
    assert not view.isExpanded(technical) and view.isVisible()  # and closes again
    click(qtbot, view, arrow_of(view, technical))
    # clicking a value chooses it and closes the list
    craft = row_of(view, "Craft-repair")
    click(qtbot, view, view.visualRect(craft).center())
    qtbot.waitUntil(lambda: not view.isVisible(), timeout=2000)
    assert changes == [JOBS.index_of("Craft-repair")] and picker.currentText() == "Craft-repair"
    # and a group by its text
    view = open_list(qtbot, picker)
    click(qtbot, view, view.visualRect(row_of(view, "Other")).center())
    qtbot.waitUntil(lambda: not view.isVisible(), timeout=2000)
    assert picker.node() == JOBS.index_of("Other") and picker.currentText() == "Other"


def test_the_keyboard_chooses_a_nested_value_too(qtbot):
    picker = NodePicker(JOBS)
    qtbot.addWidget(picker)
    picker.show()
    view = open_list(qtbot, picker)
    view.setCurrentIndex(row_of(view, "Sales"))
    view.expand(row_of(view, "Other"))
    qtbot.keyClick(view, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: not view.isVisible(), timeout=2000)
    assert picker.node() == JOBS.index_of("Sales") and picker.currentText() == "Sales"


def test_the_kept_list_writes_its_numbers_in_one_style(qtbot, release):
    bench = QueryWorkbench()
    qtbot.addWidget(bench)
    bench.set_release(release)
    choose(bench, "18", "40", "*")  # not the whole table, whose count (the public total) has no noise
    bench.keep()
    first = [bench.table.item(0, c).text() for c in range(1, 5)]
    assert all(" × 10" not in text for text in first)  # counts in the hundreds: grouped digits
    # a kept answer in the trillions turns the whole table scientific, the first row too
    huge = dataclasses.replace(bench.last_answer, noisy_count=3.2e13)
    bench.last_answer = huge
    bench.keep()
    texts = [bench.table.item(r, c).text() for r in range(2) for c in range(1, 5)]
    assert all(" × 10" in text for text in texts), texts
    assert bench.table.item(1, 1).text() == "3.200 × 10¹³"
    assert bench.table.item(0, 0).text() == bench.answers[0].query


@pytest.mark.parametrize("public_total", [True, False])
def test_the_notice_says_when_the_total_is_the_public_number_of_rows(qtbot, public_total):
    matrix = np.random.default_rng(0).integers(0, 30, SCHEMA.shape).astype(float)
    release = privelet_plus(matrix, SCHEMA, 0.7, ["occupation"], np.random.default_rng(1), public_total=public_total)
    bench = QueryWorkbench()
    qtbot.addWidget(bench)
    bench.set_release(release)
    assert ("total equals the public number of rows" in bench.notice.text()) is public_total
    whole = RangeQuery.build(SCHEMA, {})
    if public_total:  # what the notice says: the whole table's count is exact
        assert release.variance(whole) == pytest.approx(0.0, abs=1e-6)
        assert release.noisy.sum() == pytest.approx(matrix.sum())


def test_a_long_ordinal_axis_is_picked_with_spin_boxes_showing_its_values(qtbot):
    from privelet_gui.gui.workbench import MAX_LISTED_VALUES

    schema = Schema([OrdinalAttribute.integer_range("income", 1000, 1000 + 2_000_000 - 1)])
    assert schema.size > MAX_LISTED_VALUES
    release = ReleaseSpec(schema, 1.0, "basic").run(np.zeros(schema.shape), rng=np.random.default_rng(2))
    bench = QueryWorkbench()
    qtbot.addWidget(bench)
    bench.set_release(release)
    picker = bench.picker("income")
    assert isinstance(picker, IntervalPicker)
    assert not isinstance(picker.first, QComboBox)  # no list of two million labels
    assert (picker.first.text(), picker.last.text()) == ("1000", "2000999")
    picker.last.lineEdit().selectAll()
    qtbot.keyClicks(picker.last.lineEdit(), "1500")
    picker.last.interpretText()
    assert picker.interval() == (0, 500)
    assert bench.last_answer.noisy_count == pytest.approx(release.noisy[0:501].sum(), rel=1e-12, abs=1e-6)
    picker.first.setValue(900)  # past the other end: it is dragged along
    assert picker.interval() == (900, 900) and picker.last.text() == "1900"
    # A text that is no value of the axis is not taken.
    assert picker.first.validate("12x", 0)[0] != QValidator.State.Acceptable


def test_exported_queries_cannot_become_spreadsheet_formulas(qtbot, tmp_path):
    schema = Schema([OrdinalAttribute.integer_range("-x", 0, 3), NominalAttribute("job", Hierarchy.flat(["a", "b"]))])
    bench = QueryWorkbench()
    qtbot.addWidget(bench)
    bench.set_release(privelet_plus(np.ones(schema.shape), schema, 1.0))
    picker = bench.picker("-x")
    assert isinstance(picker, IntervalPicker)
    picker.set_interval(1, 2)
    bench.keep()
    with bench.export_csv(tmp_path / "queries.csv").open(newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    assert rows[1][0] == "'-x=1..2"  # a leading minus would make a formula of it


def test_examples_come_from_the_custodians_workload(qtbot, release):
    from privelet_gui.engine import marginals

    bench = QueryWorkbench()
    qtbot.addWidget(bench)
    bench.set_release(release)
    workload = marginals(SCHEMA, (2,), grains={"age": 8, "occupation": 2})
    bench.set_examples(workload)
    examples = workload.examples(12)
    assert bench.examples.isEnabled() and bench.examples.count() == len(examples) + 1
    assert workload.name in bench.examples.itemText(0)
    bench.use_example(1)
    shown = bench.query()
    assert shown is not None
    expected = examples.query(SCHEMA, 1)
    assert shown.lo == expected.lo and shown.hi == expected.hi and shown.nodes == expected.nodes
    bench.set_examples(None)
    assert not bench.examples.isEnabled()
