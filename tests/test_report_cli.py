"""``privelet report``: the report file, the script that redoes a release (run on the bundled
sample), the evaluation's confidential report, and the report in a real browser."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from privelet_gui.cli import build_parser, main
from privelet_gui.engine import Hierarchy, NominalAttribute, OrdinalAttribute, Schema
from privelet_gui.io import load_release, load_release_metadata, sample_schema_path, sample_table_path, save_schema
from privelet_gui.io.choices import redo_arguments, redo_script, release_choices
from privelet_gui.io.ledger import Ledger
from privelet_gui.io.report import CONFIDENTIAL_TEXT


@pytest.fixture
def small(tmp_path):
    schema = Schema([OrdinalAttribute.integer_range("age", 0, 9), NominalAttribute("sex", Hierarchy.flat(["F", "M"]))])
    save_schema(schema, tmp_path / "schema.json")
    pd.DataFrame([(a % 10, "FM"[a % 3 == 0]) for a in range(300)], columns=["age", "sex"]).to_csv(
        tmp_path / "people.csv", index=False)
    return tmp_path / "people.csv", tmp_path / "schema.json"


def privelet_on_path(tmp_path: Path) -> dict[str, str]:
    """An environment whose ``privelet`` is this interpreter's (what the script calls)."""
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    shim = folder / "privelet"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m privelet_gui.cli "$@"\n')
    shim.chmod(0o755)
    return {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"}


def test_report_and_script_need_a_target(capsys, small, tmp_path):
    table, schema = small
    assert main(["release", str(table), "--schema", str(schema), "--epsilon", "1", "--out", str(tmp_path / "r.npz"),
                 "--quiet"]) == 0
    assert main(["report", str(tmp_path / "r.npz")]) == 2
    assert "--out REPORT.html, --script REDO.sh" in capsys.readouterr().err
    assert main(["report", str(tmp_path / "r.npz"), "--out", str(tmp_path / "r.html"), "--quiet"]) == 0
    assert main(["report", str(tmp_path / "r.npz"), "--out", str(tmp_path / "r.html"), "--quiet"]) == 1  # exists
    assert "<!DOCTYPE html>" in (tmp_path / "r.html").read_text(encoding="utf-8")


def test_the_script_redoes_a_release_of_the_bundled_sample(tmp_path, private_ledger):
    first = tmp_path / "adult.npz"
    assert main(["release", str(sample_table_path()), "--schema", str(sample_schema_path()), "--epsilon", "0.7",
                 "--sa", "age,sex", "--neighbours", "add-remove", "--sampler", "standard", "--record-paths",
                 "--out", str(first), "--quiet"]) == 0
    script = tmp_path / "redo.sh"
    assert main(["report", str(first), "--script", str(script), "--quiet"]) == 0
    text = script.read_text()
    assert os.access(script, os.X_OK)
    assert "SPENDS THE PRIVACY BUDGET AGAIN" in text.splitlines()[3]
    assert "epsilon 0.7 (add or remove one record) more on this table" in text
    assert f"SCHEMA={sample_schema_path()}" in text  # the recorded schema file still holds the schema

    result = subprocess.run(["sh", str(script), "--yes", "--quiet", "--out", str(tmp_path / "again.npz")],
                            cwd=tmp_path, env=privelet_on_path(tmp_path), capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    old, new = load_release(first), load_release(tmp_path / "again.npz")
    assert new.schema == old.schema
    assert (new.mechanism, new.sa, new.epsilon, new.neighbours, new.sampler) == (
        old.mechanism, old.sa, old.epsilon, old.neighbours, old.sampler) == ("privelet+", ("age", "sex"), 0.7,
                                                                            "add-remove", "standard")
    assert not (new.noisy == old.noisy).all()  # fresh noise
    assert release_choices(load_release_metadata(tmp_path / "again.npz")) is not None
    spent = Ledger().report().tables
    assert len(spent) == 1 and spent[0].epsilon == {"add-remove": pytest.approx(1.4)}  # spent twice


def test_a_demo_release_is_redone_with_demo_and_its_command_parses(tmp_path):
    assert main(["release", "--demo", "--epsilon", "0.25", "--sa", "none", "--out", str(tmp_path / "d.npz"),
                 "--quiet"]) == 0
    meta = load_release_metadata(tmp_path / "d.npz")
    choices = release_choices(meta)
    assert choices is not None and choices.demo and choices.table is None
    text = redo_script(meta, tmp_path / "d.npz")
    assert "privelet release --demo --epsilon 0.25 --sa none" in text
    args = build_parser().parse_args(["release", *redo_arguments(choices), "--out", "x.npz"])
    assert (args.demo, args.epsilon, args.sa, args.neighbours) == (True, 0.25, "none", "replace")


def test_without_recorded_paths_the_script_asks_for_the_table(small, tmp_path):
    table, schema = small
    out = tmp_path / "r.npz"
    assert main(["release", str(table), "--schema", str(schema), "--epsilon", "1", "--mechanism", "basic",
                 "--missing", "N,NA", "--delimiter", ",", "--raw", "--out", str(out), "--quiet"]) == 0
    meta = load_release_metadata(out)
    assert str(table) not in str(meta) and "people.csv" not in str(meta)  # no path unless asked (issue 11)
    text = redo_script(meta, out)
    assert "TABLE=FILL-IN-THE-TABLE-PATH" in text and "PRIVELET_SCHEMA_END" in text  # the schema comes from the file
    assert "--mechanism basic" in text and "--raw" in text and "--missing N,NA" in text and "--delimiter ," in text
    script = tmp_path / "redo.sh"
    script.write_text(text)
    result = subprocess.run(["sh", str(script)], cwd=tmp_path, env=privelet_on_path(tmp_path), capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 2 and "edit TABLE" in result.stderr


def test_evaluate_writes_a_confidential_report(small, tmp_path):
    table, schema = small
    report = tmp_path / "evaluation.html"
    assert main(["evaluate", str(table), "--schema", str(schema), "--epsilons", "1", "--queries", "50", "--seed", "1",
                 "--no-figures", "--out", str(tmp_path / "ev"), "--report", str(report), "--quiet"]) == 0
    text = report.read_text(encoding="utf-8")
    assert "CONFIDENTIAL" in text.split("<body", 1)[1][:400]  # the first thing on the page
    assert CONFIDENTIAL_TEXT.split(":")[0] in text and "TRUE" in text


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="needs headless Chromium (Debian's chromium package) to render the report")
def test_the_report_renders_in_a_browser_and_prints_to_pdf(small, tmp_path):
    table, schema = small
    assert main(["release", str(table), "--schema", str(schema), "--epsilon", "1", "--out", str(tmp_path / "r.npz"),
                 "--quiet"]) == 0
    report = tmp_path / "report.html"
    assert main(["report", str(tmp_path / "r.npz"), "--out", str(report), "--name", "People", "--quiet"]) == 0
    shot, pdf = tmp_path / "report.png", tmp_path / "report.pdf"
    browser = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={tmp_path / 'profile'}"]
    for flags in ([f"--screenshot={shot}", "--window-size=900,2400"], ["--no-pdf-header-footer", f"--print-to-pdf={pdf}"]):
        result = subprocess.run([*browser, *flags, report.as_uri()], capture_output=True, text=True, timeout=180)
        assert result.returncode == 0, result.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    data = pdf.read_bytes()
    assert data[:5] == b"%PDF-"
    # every page A4: 595 x 842 points (210 x 297 mm), as the report's print CSS asks
    boxes = re.findall(rb"/MediaBox\s*\[\s*0 0 ([\d.]+) ([\d.]+)\s*\]", data)
    assert boxes and all(abs(float(w) - 595.3) < 1 and abs(float(h) - 841.9) < 1 for w, h in boxes)
