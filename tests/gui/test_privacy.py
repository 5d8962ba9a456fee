"""Privacy step: the logarithmic slider, S_A, live bounds from the engine, target accuracy."""

from __future__ import annotations

import math
import time

import pytest
from PySide6.QtCore import Qt

from privelet_gui.engine import (
    EPSILON_MAX,
    EPSILON_MIN,
    epsilon_for_variance,
    paper_bound,
    recommend_sa,
    variance_model,
)
from privelet_gui.formatting import fmt_number
from privelet_gui.gui.panels.privacy_panel import (
    Z95,
    epsilon_to_slider,
    round_up,
    slider_to_epsilon,
)


def test_slider_is_logarithmic_from_0_01_to_10():
    assert slider_to_epsilon(0) == pytest.approx(0.01)
    assert slider_to_epsilon(1000) == pytest.approx(10.0)
    assert slider_to_epsilon(epsilon_to_slider(1.0)) == pytest.approx(1.0, rel=0.01)
    assert epsilon_to_slider(0.1) == pytest.approx(333, abs=1)
    assert epsilon_to_slider(100.0) == 1000  # clamped


def test_slider_field_and_one_undo_step(sample_window, qtbot):
    window = sample_window
    panel = window.privacy_panel
    doc = window.document
    before = doc.undo_stack.count()
    panel.slider.setValue(0)
    assert doc.epsilon == pytest.approx(0.01)
    assert panel.epsilon_field.text() == "0.01"
    panel.slider.setValue(1000)
    assert doc.epsilon == pytest.approx(10.0)
    assert doc.undo_stack.count() == before + 1  # a drag is one undo step
    type_epsilon(panel, qtbot, "0.25")
    assert doc.epsilon == 0.25
    assert panel.slider.value() == epsilon_to_slider(0.25)
    window.act_undo.trigger()
    assert doc.epsilon == 1.0


def type_epsilon(panel, qtbot, text: str) -> None:
    """Type ``text`` into the epsilon field as a user does, and press Enter."""
    field = panel.epsilon_field
    field.setFocus()
    field.selectAll()
    qtbot.keyClick(field, Qt.Key.Key_Backspace)
    qtbot.keyClicks(field, text)
    qtbot.keyClick(field, Qt.Key.Key_Return)


@pytest.mark.parametrize("typed", ["1e-13", "0,5", "-1", "0", "1e13", "abc", ""])
def test_a_typed_epsilon_the_engine_refuses_is_refused_with_the_range_and_the_separator(sample_window, qtbot, typed):
    """Issue 39, item 3: the field never turns what was typed into another number."""
    panel = sample_window.privacy_panel
    doc = sample_window.document
    type_epsilon(panel, qtbot, "0.3")
    assert doc.epsilon == 0.3
    type_epsilon(panel, qtbot, typed)
    assert doc.epsilon == 0.3  # unchanged
    assert panel.epsilon_field.text() == typed  # what was typed stays, to be corrected
    message = panel.epsilon_problem.text()
    assert panel.epsilon_problem.isVisibleTo(panel)
    assert f"from {EPSILON_MIN:g} to {EPSILON_MAX:g}" in message and "a point as the decimal separator" in message
    assert message.endswith("Epsilon stays 0.3.")
    if typed == "0,5":
        assert "a comma is no decimal separator here: 0.5" in message


@pytest.mark.parametrize(("typed", "epsilon"), [("1e-3", 0.001), ("5000", 5000.0), ("1e-12", 1e-12), ("1e12", 1e12),
                                                ("0.123456789", 0.123456789), (" .5 ", 0.5)])
def test_a_typed_epsilon_the_engine_accepts_is_taken_exactly(sample_window, qtbot, typed, epsilon):
    panel = sample_window.privacy_panel
    doc = sample_window.document
    doc.set_privacy(mechanism="privelet+")  # the paper's mechanisms take every epsilon the engine accepts
    type_epsilon(panel, qtbot, "abc")  # a refusal first: an accepted number clears it
    type_epsilon(panel, qtbot, typed)
    assert doc.epsilon == epsilon and doc.release_spec().epsilon == epsilon
    assert float(panel.epsilon_field.text()) == epsilon
    assert not panel.epsilon_problem.isVisibleTo(panel)


def test_bounds_follow_every_change_instantly(sample_window, qtbot):
    panel = sample_window.privacy_panel
    doc = sample_window.document
    schema = doc.schema()
    doc.set_sa(())  # Privelet+ with S_A empty, as below
    qtbot.waitUntil(lambda: "exact" in panel.bounds.get("privelet", {}), timeout=10_000)
    model = variance_model(schema)
    for neighbours in ("add-remove", "replace"):
        panel.add_remove.setChecked(neighbours == "add-remove")
        panel.replace.setChecked(neighbours == "replace")
        for epsilon in (0.1, 2.0):
            started = time.perf_counter()
            doc.set_epsilon(epsilon)
            elapsed = time.perf_counter() - started
            assert elapsed < 0.25  # cached factors: no recomputation
            for key, sa in (("basic", schema.names), ("privelet", ()), ("privelet+", ())):
                entry = panel.bounds[key]
                assert entry["paper"] == paper_bound(schema, epsilon, sa, neighbours=neighbours)
                assert entry["exact"] == model.worst_case(epsilon, sa, neighbours=neighbours)
                assert entry["margin"] == pytest.approx(Z95 * math.sqrt(entry["exact"]))
    assert panel.bounds["privelet"]["paper"] == pytest.approx(4 * paper_bound(schema, 2.0, (), neighbours="add-remove"))


def test_use_recommended_sa_and_mechanisms(sample_window):
    panel = sample_window.privacy_panel
    doc = sample_window.document
    panel.mech_buttons["privelet+"].setChecked(True)  # S_A is Privelet+'s
    assert doc.sa == recommend_sa(doc.schema()) and doc.sa_rule == "recommended"  # the default
    panel.clear_sa.click()
    assert doc.sa == () and doc.sa_rule == "given"
    panel.use_recommended.click()
    assert doc.sa == recommend_sa(doc.schema())
    recommended = set(recommend_sa(doc.schema()))
    for name, box in panel.sa_boxes.items():
        assert box.isChecked() == (name in recommended)
        assert box.font().bold() == (name in recommended)  # the recommended set is marked
    panel.clear_sa.click()
    assert doc.sa == ()
    panel.sa_boxes["sex"].setChecked(True)
    assert doc.effective_sa() == ("sex",)
    panel.mech_buttons["basic"].setChecked(True)
    assert doc.mechanism == "basic" and doc.effective_sa() == doc.schema().names
    assert not panel.sa_boxes["sex"].isEnabled()  # S_A is fixed for Basic
    assert panel.table.item(3, 0).font().bold()
    panel.mech_buttons["privelet"].setChecked(True)
    assert doc.effective_sa() == ()


def test_target_accuracy_gives_the_smallest_epsilon(sample_window, qtbot):
    panel = sample_window.privacy_panel
    doc = sample_window.document
    doc.set_privacy(mechanism="privelet+")
    doc.set_sa(("sex", "race"))
    qtbot.waitUntil(lambda: panel.target_epsilon is not None, timeout=10_000)
    panel.target.setValue(800)
    at_one = variance_model(doc.schema()).worst_case(1.0, ("sex", "race"))
    expected = round_up(epsilon_for_variance(at_one, (800 / Z95) ** 2))
    assert panel.target_epsilon == expected
    assert f"{expected:g}" in panel.target_result.text()
    panel.use_target.click()
    assert doc.epsilon == expected
    assert panel.bounds["privelet+"]["margin"] <= 800  # achieved
    slightly_less = expected - 0.001
    assert Z95 * math.sqrt(variance_model(doc.schema()).worst_case(slightly_less, ("sex", "race"))) > 800 - 1e-6


def test_first_factors_of_a_new_schema_are_computed_off_the_gui_thread(sample_window, qtbot, monkeypatch):
    import threading

    from privelet_gui.engine.bounds import VarianceModel

    panel = sample_window.privacy_panel
    doc = sample_window.document
    gate = threading.Event()
    prepare = VarianceModel.prepare

    def slow_prepare(model):  # the worker computes the factors only once the GUI side was checked
        assert threading.current_thread() is not threading.main_thread()
        gate.wait(10)
        return prepare(model)

    monkeypatch.setattr(VarianceModel, "prepare", slow_prepare)
    doc.set_attribute("age", lo=0, hi=2_999)  # a schema whose factors are not cached yet
    schema = doc.schema()
    assert not variance_model(schema).ready
    assert panel.displayed("privelet", 2) == "computing..."
    assert panel.bounds["privelet"]["paper"] == paper_bound(schema, doc.epsilon, ())  # the paper bound is instant
    gate.set()
    qtbot.waitUntil(lambda: "exact" in panel.bounds["privelet"], timeout=10_000)
    assert panel.bounds["privelet"]["exact"] == variance_model(schema).worst_case(doc.epsilon, ())


def test_the_release_step_shows_the_worst_case_once_its_factors_are_computed(sample_window, qtbot, monkeypatch):
    """The Release step's summary said "computing..." until the next edit: the factors came
    in, the Privacy step showed them, and the Release step was never told (seen in a real
    window, where a custodian goes from Attributes straight to Release)."""
    import threading

    from privelet_gui.engine.bounds import VarianceModel

    window = sample_window
    doc = window.document
    doc.set_privacy(mechanism="privelet+")  # its worst case needs the factors only
    gate = threading.Event()
    prepare = VarianceModel.prepare
    monkeypatch.setattr(VarianceModel, "prepare", lambda model: (gate.wait(10), prepare(model))[1])
    window.go_to("release")
    doc.set_attribute("age", lo=0, hi=3_999)  # a schema whose factors are not cached yet
    bound = window.release_panel.setup_labels["bound"]
    assert bound.text() == "computing..."
    gate.set()
    qtbot.waitUntil(lambda: bound.text() != "computing...", timeout=10_000)
    spec = doc.release_spec()
    assert spec is not None and spec.model.ready
    assert bound.text().startswith(f"variance {fmt_number(spec.worst_case_variance())}, about ± ")


def _privacy_page(window):
    """The Privacy step in a 1200 x 800 window, and its scroll area."""
    from PySide6.QtWidgets import QScrollArea

    window.resize(1200, 800)
    window.show()
    window.go_to("privacy")
    return window.privacy_panel, window.privacy_panel.findChild(QScrollArea)


def _page_fits(scroll) -> bool:
    # Horizontal scrolling is off: a page wider than its viewport would be cut off on the right.
    return scroll.widget().minimumSizeHint().width() <= scroll.viewport().width()


def test_the_page_fits_a_modest_window_and_each_column_has_one_number_style(sample_window, qtbot):
    from PySide6.QtWidgets import QBoxLayout

    window = sample_window
    panel, scroll = _privacy_page(window)
    qtbot.waitUntil(lambda: "exact" in panel.bounds.get("best", {}), timeout=60_000)
    assert _page_fits(scroll)
    # where the two columns do not fit side by side they go one under the other, and still fit
    for width, direction in ((1000, QBoxLayout.Direction.TopToBottom), (1900, QBoxLayout.Direction.LeftToRight)):
        window.resize(width, 800)
        qtbot.waitUntil(lambda direction=direction: panel.columns.direction() == direction, timeout=5_000)
        qtbot.waitUntil(lambda: _page_fits(scroll), timeout=5_000)
        # the S_A table stays as tall as its rows when they rewrap at the new width
        table = panel.workload_box.table
        qtbot.waitUntil(lambda table=table: table.height() == table.horizontalHeader().sizeHint().height()
                        + 2 * table.frameWidth() + sum(table.rowHeight(r) for r in range(table.rowCount())),
                        timeout=5_000)
    for column in (1, 2, 3):
        texts = [panel.table.item(row, column).text() for row in range(panel.table.rowCount())]
        texts = [text for text in texts if text != "—"]  # the paper's bound is of its own mechanisms only
        assert len({"×" in text for text in texts}) == 1, texts


def test_the_page_still_fits_when_the_best_strategy_shows_weighted_marginals(sample_window, qtbot):
    from PySide6.QtWidgets import QBoxLayout

    from privelet_gui.workspace.workload import WorkloadChoice

    window = sample_window
    panel, scroll = _privacy_page(window)
    window.document.set_workload(WorkloadChoice(paper=None, ways=(2,)))  # a long table of marginals and weights
    qtbot.waitUntil(lambda: panel.strategy_box.result is not None, timeout=60_000)
    assert panel.strategy_box.result.spec.mechanism == "marginals"
    # the exact variances and the expected errors of the new strategy rewrite the note made wide
    # below: wait for both
    qtbot.waitUntil(lambda: "exact" in panel.bounds.get("best", {}) and panel.coverage_result is not None,
                    timeout=60_000)
    # new contents widen a column: the columns are fitted again, and nothing is cut off on the right
    qtbot.waitUntil(lambda: _page_fits(scroll), timeout=5_000)
    # any new contents that widen a column (here a long line that cannot wrap) put the columns one under the other
    assert panel.columns.direction() == QBoxLayout.Direction.LeftToRight
    panel.bounds_note.setWordWrap(False)
    panel.bounds_note.setText("a line that cannot wrap " * 4)
    qtbot.waitUntil(lambda: panel.columns.direction() == QBoxLayout.Direction.TopToBottom, timeout=5_000)
    qtbot.waitUntil(lambda: _page_fits(scroll), timeout=5_000)
