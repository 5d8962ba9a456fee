"""The ``privelet`` command line, end to end (subprocesses) and error by error (in process)."""

from __future__ import annotations

import io
import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import privelet_gui
from privelet_gui.cli import ProgressBar, main
from privelet_gui.engine import (
    InternalError,
    ReleaseSpec,
    best_strategy,
    paper_bound,
    paper_workload,
    recommend_sa,
    worst_case_variance,
)
from privelet_gui.io import load_release, load_release_metadata, load_schema, sample_schema_path
from privelet_gui.io.choices import parse_marginals_argument, redo_arguments, release_choices


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``privelet ARGS`` in a fresh process."""
    result = subprocess.run(
        [sys.executable, "-m", "privelet_gui.cli", *args], capture_output=True, cwd=cwd, timeout=300, check=False
    )
    # decoded by hand: text mode would turn the progress bar's carriage returns into newlines
    return subprocess.CompletedProcess(
        result.args, result.returncode, result.stdout.decode().replace("\r\n", "\n"),
        result.stderr.decode().replace("\r\n", "\n"),
    )


def call(capsys, *args: str) -> tuple[int, str, str]:
    """``privelet ARGS`` in this process (same code path, much faster than a subprocess)."""
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(code: int, err: str, *needles: str) -> None:
    assert code == 1, err
    lines = [line for line in err.replace("\r", "\n").splitlines() if line.startswith("privelet: error:")]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


# -- version, help, usage errors -------------------------------------------------------------------


def test_version(capsys):
    code, out, _ = call(capsys, "--version")
    assert code == 0 and out.strip() == f"privelet {privelet_gui.__version__}"


@pytest.mark.parametrize(
    "command",
    [[], ["release"], ["bounds"], ["query"], ["export"], ["schema"], ["schema", "infer"], ["hierarchy"],
     ["hierarchy", "check"], ["hierarchy", "convert"]],
)
def test_every_command_has_help(capsys, command):
    code, out, _ = call(capsys, *command, "--help")
    assert code == 0
    assert "usage: privelet" in out


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ([], "choose a command"),
        (["frobnicate"], "invalid choice"),
        (["release", "--demo"], "missing --out"),
        (["release", "t.csv", "--out", "r.npz"], "missing --schema, --epsilon"),
        (["release", "--demo", "--out", "r.npz", "--epsilon", "abc"], "epsilon must be a number"),
        (["release", "--demo", "--out", "r.npz", "--epsilon", "-1"], "epsilon must be a positive number"),
        (["release", "--demo", "--out", "r.npz", "--epsilon", "0"], "epsilon must be a positive number"),
        (["release", "--demo", "t.csv", "--out", "r.npz"], "--demo uses the bundled sample"),
        (["release", "--demo", "--out", "r.npz", "--mechanism", "basic", "--sa", "age"], "--sa applies to"),
        (["release", "--demo", "--out", "r.npz", "--mechanism", "laplace"], "invalid choice"),
        (["release", "--demo", "--out", "r.npz", "--seed", "x"], "seed must be a non-negative integer"),
        (["bounds", "--epsilon", "1"], "--schema"),
        (["query"], "RELEASE.npz"),
        (["export", "r.npz"], "--out"),
        (["schema"], "choose an action"),
        (["hierarchy", "convert", "a.csv"], "OUT"),
    ],
)
def test_usage_errors_exit_2(capsys, tmp_path, monkeypatch, args, needle):
    monkeypatch.chdir(tmp_path)
    code, _, err = call(capsys, *args)
    assert code == 2, err
    assert needle in err
    assert "Traceback" not in err
    assert not list(tmp_path.iterdir())  # nothing written


# -- the bundled sample, end to end ---------------------------------------------------------------


def test_demo_release_query_export_end_to_end(tmp_path):
    result = run("release", "--demo", "--out", "demo.npz", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "wrote demo.npz" in result.stdout
    assert "the paper bounds only its own mechanisms" in result.stdout  # the default strategies go beyond it
    # stderr is a pipe here: the progress comes as plain lines, no carriage returns
    assert "\r" not in result.stderr
    assert re.search(r"\n100% transform, noise and inverse: (\d+) of \1 blocks done\n", result.stderr)
    assert "every row was counted" in result.stderr and "30,162" not in result.stderr + result.stdout
    schema = load_schema(sample_schema_path())
    meta = load_release_metadata(tmp_path / "demo.npz")
    assert meta["epsilon"] == 1.0
    # the default strategy: the least expected error on the paper's workload, and why
    choice = best_strategy(ReleaseSpec(schema, 1.0), paper_workload(schema))
    assert meta["mechanism"] == choice.spec.label and meta["strategies"] == list(choice.spec.strategies)
    assert meta["sa"] == list(choice.spec.effective_sa)
    assert meta["seeded"] is False and meta["seed"] is None
    assert meta["extra"]["source"] == "demo"
    recorded = meta["extra"]["strategy_choice"]
    assert recorded["workload"] == choice.workload and recorded["expected_error"] == pytest.approx(choice.error)
    assert recorded["alternatives"]["Privelet+ (recommended S_A)"] > recorded["expected_error"]
    assert meta["extra"]["choices"]["demo"] is True and meta["extra"]["choices"]["table"] is None
    assert meta["extra"]["choices"]["strategies"] == list(choice.spec.strategies)
    release = load_release(tmp_path / "demo.npz")
    assert release.noisy.shape == schema.shape
    # the whole-table count is a range query: within 6 sigma of the 30,162 rows
    assert abs(release.noisy.sum() - 30_162) < 6 * math.sqrt(meta["exact_worst_case_variance"])

    query = run("query", "demo.npz", "--where", "age=20..30", "--where", "occupation=Technical", "--json", cwd=tmp_path)
    assert query.returncode == 0, query.stderr
    answer = json.loads(query.stdout)
    assert set(answer) == {"noisy_count", "variance", "ci95"}
    lo, hi = answer["ci95"]
    assert lo < answer["noisy_count"] < hi
    assert hi - lo == pytest.approx(2 * 1.959963984540054 * math.sqrt(answer["variance"]))

    text = run("query", "demo.npz", "--where", "sex=Female", cwd=tmp_path)
    assert text.returncode == 0 and "95% interval" in text.stdout

    export = run("export", "demo.npz", "--format", "parquet", "--out", "demo.parquet", cwd=tmp_path)
    assert export.returncode == 0, export.stderr
    frame = pd.read_parquet(tmp_path / "demo.parquet")
    assert len(frame) == schema.size == 6_796_160
    assert list(frame.columns) == [*schema.names, "noisy_count"]
    np.testing.assert_array_equal(frame["noisy_count"].to_numpy(), release.noisy.reshape(-1))

    again = run("release", "--demo", "--out", "demo.npz", cwd=tmp_path)
    assert again.returncode == 1
    assert again.stderr.strip().splitlines()[-1].startswith("privelet: error:")
    assert "demo.npz exists already" in again.stderr and "Traceback" not in again.stderr
    quiet = run("release", "--demo", "--out", "demo.npz", "--force", "--quiet", "--epsilon", "0.5", "--yes", cwd=tmp_path)
    assert quiet.returncode == 0 and quiet.stderr == ""
    assert load_release_metadata(tmp_path / "demo.npz")["epsilon"] == 0.5


def test_seeded_releases_warn_and_record_the_seed(capsys, tmp_path):
    a, b = tmp_path / "a.npz", tmp_path / "b.npz"
    code, _, err = call(capsys, "release", "--demo", "--out", str(a), "--seed", "42", "--sa", "none")
    assert code == 0
    assert "--seed" in err and "NOT private" in err
    call(capsys, "release", "--demo", "--out", str(b), "--seed", "42", "--sa", "none", "--quiet", "--yes")
    meta = load_release_metadata(a)
    assert (meta["seed"], meta["seeded"], meta["mechanism"], meta["sa"]) == (42, True, "privelet", [])
    np.testing.assert_array_equal(load_release(a).noisy, load_release(b).noisy)


def test_bounds_json_shape_and_values(capsys, tmp_path):
    schema_path = str(sample_schema_path())
    schema = load_schema(schema_path)
    code, out, _ = call(capsys, "bounds", "--schema", schema_path, "--epsilon", "0.5", "--sa", "sex,race", "--json")
    assert code == 0
    result = json.loads(out)
    assert set(result) == {"basic", "privelet", "privelet_plus", "sa", "recommended_sa"}
    for key, sa in (("basic", schema.names), ("privelet", ()), ("privelet_plus", ("sex", "race"))):
        assert result[key] == {
            "paper_bound": paper_bound(schema, 0.5, sa),
            "exact_worst_case": worst_case_variance(schema, 0.5, sa),
        }
    assert result["sa"] == ["sex", "race"]
    assert result["recommended_sa"] == list(recommend_sa(schema))
    code, out, _ = call(capsys, "bounds", "--schema", schema_path, "--epsilon", "1")
    assert code == 0 and "Privelet+" in out and "recommended S_A" in out
    code, out, _ = call(capsys, "bounds", "--schema", schema_path, "--epsilon", "1", "--neighbours", "add-remove", "--json")
    assert json.loads(out)["basic"]["paper_bound"] == paper_bound(schema, 1.0, schema.names, neighbours="add-remove")


# -- census income (real, 199,523 rows), end to end -------------------------------------------------


def test_census_income_end_to_end(shared_data, tmp_path):
    census = shared_data / "census_income_kdd"
    shutil.copy(census / "hierarchy_detailed_occupation_recode.csv", tmp_path / "occupation.csv")
    (tmp_path / "census.json").write_text(json.dumps({
        "version": 1,
        "attributes": [
            {"name": "age", "type": "ordinal", "range": [0, 90]},
            {"name": "sex", "type": "nominal", "hierarchy": {"*": ["Female", "Male"]}},
            {"name": "occupation", "column": "detailed_occupation_recode", "type": "nominal",
             "hierarchy_file": "occupation.csv"},
            {"name": "wage", "column": "wage_per_hour", "type": "ordinal",
             "bins": {"start": 0, "stop": 10000, "width": 100}},
        ],
    }))
    table = str(census / "census_income_kdd_train.csv.gz")
    result = run("release", table, "--schema", "census.json", "--epsilon", "1", "--sa", "auto",
                 "--out", "census.npz", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "every row was counted" in result.stderr and "199,523" not in result.stderr + result.stdout
    release = load_release(tmp_path / "census.npz")
    assert release.noisy.shape == (91, 2, 47, 100)
    assert release.mechanism == "privelet+"

    frame = pd.read_csv(table, dtype=str, keep_default_na=False,
                        usecols=["age", "sex", "major_occupation_code", "wage_per_hour"])
    major = "Executive admin and managerial"
    truth = int(((frame["major_occupation_code"] == major) & (frame["wage_per_hour"].astype(int) < 1000)
                 & (frame["sex"] == "Female")).sum())
    query = run("query", "census.npz", "--where", f"occupation={major}", "--where", "wage=0..999",
                "--where", "sex=Female", "--json", cwd=tmp_path)
    assert query.returncode == 0, query.stderr
    answer = json.loads(query.stdout)
    assert truth > 1000
    assert abs(answer["noisy_count"] - truth) < 8 * math.sqrt(answer["variance"])  # 8 sigma: never flaky

    basic = run("release", table, "--schema", "census.json", "--epsilon", "1", "--mechanism", "basic",
                "--neighbours", "add-remove", "--out", "basic.npz", "--quiet", "--yes", cwd=tmp_path)
    assert basic.returncode == 0, basic.stderr
    meta = load_release_metadata(tmp_path / "basic.npz")
    assert (meta["mechanism"], meta["neighbours"]) == ("basic", "add-remove")

    export = run("export", "census.npz", "--out", "census.csv", cwd=tmp_path)
    assert export.returncode == 0, export.stderr
    cells = pd.read_csv(tmp_path / "census.csv", dtype=str)
    assert len(cells) == 91 * 2 * 47 * 100
    assert cells.iloc[0, :4].tolist() == ["0", "Female", "0", "[0, 100)"]
    assert cells.iloc[-1, :4].tolist() == ["90", "Male", "46", "[9900, 10000)"]


# -- schema infer and hierarchy tools ------------------------------------------------------------------


def test_schema_infer_warns_loudly(tmp_path):
    (tmp_path / "t.csv").write_text("age;sex;wage\n30;F;12.5\n41;M;900\n17;F;0\n")
    result = run("schema", "infer", "t.csv", "--quiet", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "NOT private" in result.stderr and "!!!!!!!!" in result.stderr  # loud, even with --quiet
    obj = json.loads(result.stdout)
    assert [a["name"] for a in obj["attributes"]] == ["age", "sex", "wage"]
    assert all(a["domain_from_data"] is True for a in obj["attributes"])
    written = run("schema", "infer", "t.csv", "--out", "s.json", cwd=tmp_path)
    assert written.returncode == 0 and "NOT private" in written.stderr
    release = run("release", "t.csv", "--schema", "s.json", "--epsilon", "1", "--out", "r.npz", "--quiet", cwd=tmp_path)
    assert release.returncode == 0, release.stderr
    assert "learned from the data" in release.stderr and "NOT private" in release.stderr  # even with --quiet
    assert load_release_metadata(tmp_path / "r.npz")["domain_from_data"] == ["age", "sex", "wage"]


def test_hierarchy_check_and_convert(capsys, tmp_path, shared_data):
    source = shared_data / "adult_arx" / "adult_hierarchy_occupation.csv"
    code, out, _ = call(capsys, "hierarchy", "check", str(source))
    assert code == 0
    assert "valid hierarchy" in out and "14 leaves, height 3" in out
    code, out, _ = call(capsys, "hierarchy", "check", str(source), "--json")
    assert json.loads(out)["leaves"] == 14
    as_json, back = tmp_path / "o.json", tmp_path / "o.csv"
    assert call(capsys, "hierarchy", "convert", str(source), str(as_json))[0] == 0
    assert call(capsys, "hierarchy", "convert", str(as_json), str(back))[0] == 0
    code, out, _ = call(capsys, "hierarchy", "check", str(back), "--json")
    assert json.loads(out)["nodes_per_level"] == [1, 3, 14]
    code, _, err = call(capsys, "hierarchy", "convert", str(source), str(back))
    assert_one_line_error(code, err, "exists already")
    assert call(capsys, "hierarchy", "convert", str(source), str(back), "--force")[0] == 0
    m49 = shared_data / "hierarchies" / "country_m49" / "hierarchy_country_name_m49.csv"
    code, out, err = call(capsys, "hierarchy", "check", str(m49))
    assert code == 0 and "248 leaves, height 4" in out
    assert "'Micronesia' -> 'Micronesia (level 1)'" in err


# -- every malformed input: exit 1 and one line naming the problem -----------------------------------------

GOOD_TABLE = "age,sex\n30,F\n41,M\n"
GOOD_SCHEMA = {"version": 1, "attributes": [{"name": "age", "type": "ordinal", "range": [0, 99]},
                                            {"name": "sex", "type": "nominal", "hierarchy": {"*": ["F", "M"]}}]}


def _release_args(table="t.csv", schema="s.json"):
    return ["release", table, "--schema", schema, "--epsilon", "1", "--out", "r.npz"]


@pytest.mark.parametrize(
    ("files", "args", "needles"),
    [
        # tables
        ({}, _release_args(table="missing.csv"), ["no such file", "missing.csv"]),
        ({"t.csv": b""}, _release_args(), ["t.csv is empty"]),
        ({"t.csv": b"age,sex\n30,F\n41,M,extra\n"}, _release_args(), ["line 3 has 3 fields but the header has 2"]),
        ({"t.csv": "age,sex\n30,F\n41,Ö\n".encode("latin-1")}, _release_args(), ["not valid utf-8 text", "encoding"]),
        ({"t.csv": b"years,sex\n30,F\n"}, _release_args(), ["has no column 'age'", "'years'"]),
        ({"t.csv": b"age,sex\n30,F\n41,X\n"}, _release_args(), ["attribute sex", "'X'", "outside its domain"]),
        ({"t.csv": b"age,sex\n300,F\n"}, _release_args(), ["attribute age", "e.g. 300", "out_of_range"]),
        ({"t.csv": b"age,sex\n,F\n"}, _release_args(), ["attribute age", "(empty)", "missing"]),
        ({"t.csv.gz": b"\x1f\x8bnot really gzip"}, _release_args(table="t.csv.gz"), ["cannot decompress"]),
        # schemas
        ({}, _release_args(schema="nope.json"), ["no such schema file"]),
        ({"s.json": b'{"version": 1, "attributes": ['}, _release_args(), ["s.json: not valid JSON", "line 1"]),
        ({"s.json": json.dumps({"version": 1, "attributes": [
            {"name": "age", "type": "ordinal", "bins": {"start": 0, "stop": 9, "width": -1}}]}).encode()},
         _release_args(), ["attribute 'age' at attributes[0].bins.width", "positive"]),
        ({"s.json": json.dumps({"version": 1, "attributes": [{"name": "age", "type": "numeric"}]}).encode()},
         _release_args(), ["attributes[0].type", "ordinal"]),
        ({"s.json": json.dumps({"version": 1, "attributes": [
            {"name": "sex", "type": "nominal", "hierarchy_file": "h.csv"}]}).encode()},
         _release_args(), ["attributes[0].hierarchy_file: no such file"]),
        ({"s.json": json.dumps({"version": 1, "attributes": [
            {"name": "sex", "type": "nominal", "hierarchy_file": "h.csv"}]}).encode(), "h.csv": b"F;G;*\nM;*\n"},
         _release_args(), ["attributes[0].hierarchy_file", "rows have different lengths"]),
        ({"s.json": json.dumps({"version": 1, "attributes": [GOOD_SCHEMA["attributes"][0]] * 2}).encode()},
         _release_args(), ["the name 'age' is also used"]),
        ({}, ["release", "t.csv", "--schema", "s.json", "--epsilon", "1", "--sa", "height", "--out", "r.npz"],
         ["unknown attribute 'height'"]),
        ({}, ["bounds", "--schema", "s.json", "--epsilon", "1", "--sa", "age,age"], ["named twice"]),
        # hierarchies
        ({"h.csv": b"a;G;*\nb;*\n"}, ["hierarchy", "check", "h.csv"], ["h.csv", "line 2 has 2"]),
        ({"h.csv": b"a;G;X;*\nb;G;Y;*\n"}, ["hierarchy", "check", "h.csv"],
         ["'G' (level 1) can be generalised to 'X' (line 1) or to 'Y' (line 2)"]),
        ({"h.csv": b"a;G;*\na;H;*\n"}, ["hierarchy", "check", "h.csv"], ["leaf 'a' is listed twice, on lines 1 and 2"]),
        ({"h.json": b'{"*": {"A": []}}'}, ["hierarchy", "check", "h.json"], ["group * > A is empty"]),
        ({}, ["hierarchy", "check", "none.csv"], ["no such hierarchy file"]),
        ({"h.csv": b"a;*\n"}, ["hierarchy", "convert", "h.csv", "h.xyz"], ["cannot tell the hierarchy format"]),
        # release files
        ({"r.npz": b"not a zip"}, ["query", "r.npz", "--where", "age=3"], ["not a Privelet release file"]),
        ({}, ["export", "missing.npz", "--out", "x.csv"], ["no such release file"]),
        # existing outputs
        ({"r.npz": b"precious"}, _release_args(), ["r.npz exists already", "--force"]),
    ],
)
def test_malformed_inputs_exit_1_with_one_line(capsys, tmp_path, monkeypatch, files, args, needles):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.csv").write_text(GOOD_TABLE)
    (tmp_path / "s.json").write_text(json.dumps(GOOD_SCHEMA))
    for name, content in files.items():
        (tmp_path / name).write_bytes(content)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    code, _, err = call(capsys, *args)
    assert_one_line_error(code, err, *needles)
    after = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert after == before  # nothing written or overwritten on failure


def test_query_errors_on_a_good_release(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.csv").write_text(GOOD_TABLE)
    (tmp_path / "s.json").write_text(json.dumps(GOOD_SCHEMA))
    assert call(capsys, *_release_args(), "--quiet")[0] == 0
    for where, needle in (("sex=X", "no node called 'X'"), ("age=5..2", "is empty"), ("age", "name=value"),
                          ("job=x", "unknown attribute 'job'")):
        code, _, err = call(capsys, "query", "r.npz", "--where", where)
        assert_one_line_error(code, err, needle)
    code, _, err = call(capsys, "export", "r.npz", "--out", "r.xlsx")
    assert_one_line_error(code, err, "cannot tell the export format")


def test_a_data_error_in_a_real_process_is_one_line_and_debug_shows_the_traceback(tmp_path):
    (tmp_path / "h.csv").write_text("a;G;*\na;H;*\n")
    result = run("hierarchy", "check", "h.csv", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.strip() == "privelet: error: h.csv: leaf 'a' is listed twice, on lines 1 and 2; " \
                                    "each value needs exactly one row"
    debug = run("hierarchy", "check", "h.csv", "--debug", cwd=tmp_path)
    assert debug.returncode == 1 and "Traceback" in debug.stderr and "HierarchyError" in debug.stderr


@pytest.mark.parametrize("bug", [InternalError("the matrix lost a cell"), KeyError("shape")])
def test_a_bug_exits_70_says_it_is_a_bug_and_logs_its_traceback_once(capsys, tmp_path, monkeypatch, bug):
    from privelet_gui.cli import EX_SOFTWARE, tools
    from privelet_gui.error_log import ERROR_LOG_ENVIRONMENT, issue_tracker

    log = tmp_path / "errors.log"
    monkeypatch.setenv(ERROR_LOG_ENVIRONMENT, str(log))

    def broken(args, path):
        raise bug

    monkeypatch.setattr(tools, "_read_hierarchy_noting", broken)
    (tmp_path / "h.csv").write_text("a;G;*\n")
    code, _, err = call(capsys, "hierarchy", "check", str(tmp_path / "h.csv"))
    assert code == EX_SOFTWARE == 70
    assert "privelet: error:" not in err  # never reported as a data error
    assert f"This is a bug in Privelet Studio ({type(bug).__name__}), not a problem with your data" in err
    assert str(log) in err
    tracker = issue_tracker()
    assert tracker is None or tracker in err  # from pyproject's [project.urls] when installed
    text = log.read_text()
    assert text.count("--- ") == 1 and type(bug).__name__ in text and "privelet hierarchy" in text
    assert "the matrix lost a cell" not in text  # the log holds no message


def test_progress_out_of_a_terminal_is_plain_throttled_lines():
    stream = io.StringIO()  # a pipe or a log file: not a terminal
    bar = ProgressBar(stream, interval=3600)
    for i in range(1000):
        bar(i / 1000, "counting rows")
    bar(1.0, "counting done")
    bar.close()
    lines = stream.getvalue().splitlines()
    assert "\r" not in stream.getvalue() and stream.getvalue().endswith("\n")
    assert [line.split()[0] for line in lines] == [f"{p}%" for p in range(0, 101, 10)]  # every 10%
    assert lines[0] == "  0% counting rows" and lines[-1] == "100% counting done"
    bar(0.0, "releasing")  # after close, the next task starts its own lines
    assert stream.getvalue().splitlines()[-1] == "  0% releasing"
    silent = io.StringIO()
    off = ProgressBar(silent, enabled=False)
    off(0.5, "x")
    off.close()
    assert silent.getvalue() == ""


def test_slow_progress_out_of_a_terminal_still_shows_a_line_every_few_seconds(monkeypatch):
    from privelet_gui.cli import _common

    clock = [0.0]
    monkeypatch.setattr(_common.time, "monotonic", lambda: clock[0])
    stream = io.StringIO()
    bar = ProgressBar(stream, plain_interval=5.0)
    for step in range(6):  # 1% every 3 s: a line every other step
        bar(step / 100, "transforming")
        clock[0] += 3.0
    assert [line.split()[0] for line in stream.getvalue().splitlines()] == ["0%", "2%", "4%"]


class Terminal:
    """A pseudo-terminal of ``columns`` columns: what is written to ``stream`` is read back by :meth:`output`."""

    def __init__(self, columns: int):
        import pty

        self.master, self.slave = pty.openpty()
        self.resize(columns)
        self.stream = open(self.slave, "w", encoding="utf-8", closefd=False)  # noqa: SIM115 (closed in close())

    def resize(self, columns: int) -> None:
        import fcntl
        import struct
        import termios

        fcntl.ioctl(self.slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))

    def output(self) -> str:
        import select

        chunks = []
        while select.select([self.master], [], [], 0.2)[0]:
            chunks.append(os.read(self.master, 65536))
        return b"".join(chunks).decode("utf-8").replace("\r\n", "\n")

    def close(self) -> None:
        self.stream.close()
        os.close(self.slave)
        os.close(self.master)


@pytest.fixture
def terminal():
    pytest.importorskip("pty")
    if not sys.platform.startswith(("linux", "darwin")):
        pytest.skip("pseudo-terminals are POSIX")
    term = Terminal(60)
    yield term
    term.close()


def redraws(text: str) -> list[str]:
    """The successive states of the bar's line (each redraw starts with a carriage return)."""
    return [part for line in text.split("\n") for part in line.split("\r") if part.strip()]


def test_in_a_terminal_a_bar_as_wide_as_the_terminal_with_whole_words(terminal):
    label = "transforming age, sex, race, education: 11 of 11 slabs done"
    bar = ProgressBar(terminal.stream, interval=0)
    assert bar.terminal
    bar(0.25, label)
    first = redraws(terminal.output())
    assert len(first) == 1 and len(first[0]) <= 60
    shown = first[0].split(":  25%")[0]
    words = label.split()
    # cut between words (a comma before the cut dropped)
    assert shown.endswith("...") and any(shown[:-3] == " ".join(words[:n]).rstrip(",") for n in range(1, len(words)))
    terminal.resize(100)  # wider: the whole label fits now
    bar(0.5, label)
    wide = redraws(terminal.output())[-1]
    assert wide.startswith(label + ":  50%|") and 60 < len(wide) <= 100
    terminal.resize(40)
    bar(0.75, label)
    assert len(redraws(terminal.output())[-1]) <= 40
    bar(1.0, "release done")
    bar.close()
    end = terminal.output()
    assert end.endswith("\n") and redraws(end)[-1].startswith("release done: 100%|")


def test_in_a_terminal_the_bar_is_throttled(terminal):
    bar = ProgressBar(terminal.stream, interval=3600)
    for i in range(1000):
        bar(i / 1000, "counting rows")
    bar(1.0, "counting done")
    bar.close()
    states = redraws(terminal.output())
    assert 2 <= len(states) <= 3  # the first update, the final one (and its redraw on closing)
    assert states[0].startswith("counting rows:   0%|") and states[-1].startswith("counting done: 100%|")


def test_a_release_in_a_terminal_draws_within_the_terminals_width(tmp_path, terminal):
    terminal.resize(70)
    result = subprocess.run([sys.executable, "-m", "privelet_gui.cli", "release", "--demo", "--out", "d.npz"],
                            stdout=subprocess.PIPE, stderr=terminal.slave, cwd=tmp_path, timeout=300)
    assert result.returncode == 0
    states = redraws(terminal.output())
    bars = [s for s in states if "%|" in s]
    assert bars and all(len(s) <= 70 for s in bars), bars
    assert any(s.startswith("release done: 100%|") for s in bars)


def test_the_cli_imports_no_qt():
    code = (
        "import sys, privelet_gui.cli\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('PySide6', 'shiboken6', 'pyqtgraph')"
        " or m.startswith('privelet_gui.gui')]\n"
        "print(bad)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


# -- weighted marginals ---------------------------------------------------------------------------


def test_a_workload_of_marginals_gets_weighted_marginals_and_their_redo_makes_the_same_release(capsys, tmp_path):
    out, again = tmp_path / "m.npz", tmp_path / "again.npz"
    code, stdout, err = call(capsys, "release", "--demo", "--workload", "marginals:2", "--seed", "5",
                             "--out", str(out), "--quiet")
    assert code == 0, err
    meta = load_release_metadata(out)
    assert meta["mechanism"] == "marginals"
    chosen = meta["marginals"]
    assert len(chosen) >= 2 and all(len(names) <= 2 and weight >= 1 for names, weight in chosen)
    assert "mechanism Weighted marginals" in stdout and "measured: weighted marginals" in stdout
    assert "S_A" not in stdout and "answered with a bias" in stdout  # pairs no marginal holds: no worst case
    choices = release_choices(meta)
    assert choices is not None and choices.marginals == tuple((tuple(names), weight) for names, weight in chosen)
    redo = redo_arguments(choices)
    assert redo[redo.index("--mechanism") + 1] == "marginals"
    assert parse_marginals_argument(redo[redo.index("--marginals") + 1]) == choices.marginals
    code, _, err = call(capsys, "release", *redo, "--seed", "5", "--out", str(again), "--quiet")
    assert code == 0, err
    assert load_release_metadata(again)["marginals"] == chosen
    np.testing.assert_array_equal(load_release(again).noisy, load_release(out).noisy)  # same seed, same release


def test_marginals_named_on_the_command_line(capsys, tmp_path):
    out = tmp_path / "m.npz"
    code, stdout, err = call(capsys, "release", "--demo", "--mechanism", "marginals", "--marginals",
                             "age,sex=3; race", "--seed", "1", "--out", str(out), "--quiet")
    assert code == 0, err
    assert load_release_metadata(out)["marginals"] == [[["age", "sex"], 3], [["race"], 1]]
    assert "measured: weighted marginals age x sex (weight 3); race (weight 1)" in stdout
    redo = " ".join(redo_arguments(release_choices(load_release_metadata(out))))
    assert "--mechanism marginals --marginals age,sex=3;race=1" in redo
    code, stdout, err = call(capsys, "query", str(out), "--where", "age=17..29", "--where", "sex=Male")
    assert code == 0 and "95% interval" in stdout and "bias" not in stdout, err  # a measured marginal
    code, stdout, err = call(capsys, "query", str(out), "--where", "age=17..29", "--where", "race=White", "--json")
    assert code == 0, err
    answer = json.loads(stdout)  # valid JSON: no Infinity
    assert answer["variance"] is None and answer["ci95"] is None
    code, stdout, err = call(capsys, "query", str(out), "--where", "age=17..29", "--where", "race=White")
    assert "answered with a bias" in stdout and "inf" not in stdout


def test_an_export_of_weighted_marginals_refuses_a_standard_error_its_cells_do_not_have(capsys, tmp_path):
    out = tmp_path / "m.npz"
    code, _, err = call(capsys, "release", "--demo", "--mechanism", "marginals", "--marginals", "age,sex=3; race",
                        "--seed", "1", "--out", str(out), "--quiet")
    assert code == 0, err
    cells = tmp_path / "cells.csv"
    for target in (str(cells), "-"):
        code, stdout, err = call(capsys, "export", str(out), "--out", target, "--allow-seeded", "--standard-error")
        assert_one_line_error(code, err, "weighted marginals answers single cells with a bias",
                              "export it without the standard error, or query the marginals it measured")
        assert stdout == ""  # not a row on standard output either
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.npz"]  # nothing written
    code, _, err = call(capsys, "export", str(out), "--out", str(cells), "--allow-seeded")
    assert code == 0, err
    assert "inf" not in cells.read_text().splitlines()[0]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--mechanism", "marginals"], "give both or neither"),
        (["--marginals", "age"], "give both or neither"),
        (["--mechanism", "marginals", "--marginals", "age", "--sa", "age"], "give no --sa"),
        (["--mechanism", "marginals", "--marginals", "age", "--workload", "marginals:1"], "--marginals names them"),
    ],
)
def test_marginals_usage_errors(capsys, tmp_path, args, needle):
    code, _, err = call(capsys, "release", "--demo", *args, "--out", str(tmp_path / "m.npz"))
    assert code == 2 and needle in err, err
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("written", ["age,sex=0", "age=two", ";", "age,nope=2"])
def test_marginals_written_wrong_are_refused_with_how_to_write_them(capsys, tmp_path, written):
    code, _, err = call(capsys, "release", "--demo", "--mechanism", "marginals", "--marginals", written,
                        "--out", str(tmp_path / "m.npz"))
    assert_one_line_error(code, err, "nope" if "nope" in written else "'age,sex=3;race=1'")
    assert not list(tmp_path.iterdir())
