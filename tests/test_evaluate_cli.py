"""``privelet evaluate``: the paper's evaluation from the command line, end to end and error by error."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privelet_gui.cli import EVALUATION_WARNING, SUMMARY_COLUMNS, main
from privelet_gui.engine.accuracy.evaluation import evaluate
from privelet_gui.io import count_table, load_schema

JOBS = {"*": {"T": ["t1", "t2", "t3"], "O": ["o1", "o2"], "S": ["s1", "s2", "s3", "s4"]}}
SCHEMA = {
    "version": 1,
    "attributes": [
        {"name": "age", "type": "ordinal", "range": [0, 63]},
        {"name": "sex", "type": "nominal", "hierarchy": {"*": ["F", "M"]}},
        {"name": "job", "type": "nominal", "hierarchy": JOBS},
        {"name": "income", "type": "ordinal", "range": [0, 99]},
    ],
}
EPSILONS = "0.5,1,1.25"
SEED = "7"
QUERIES = "1500"
SA = "age,sex"
FIGURES = ["figure_epsilon_0.5.png", "figure_epsilon_1.png", "figure_epsilon_1.25.png",
           "figure_relative_error_epsilon_0.5.png", "figure_relative_error_epsilon_1.png",
           "figure_relative_error_epsilon_1.25.png"]

# Same blocker as tests/engine/test_no_qt.py: any Qt import fails.
BLOCKER = textwrap.dedent(
    """
    import importlib.abc, sys

    class BlockQt(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in {"PySide6", "shiboken6", "pyqtgraph", "PyQt5", "PyQt6"}:
                raise ImportError(f"{name} is blocked: evaluate --no-figures must not import Qt")
            return None

    sys.meta_path.insert(0, BlockQt())
    """
)


def write_inputs(folder: Path) -> None:
    """A small synthetic table (3,000 rows; 64 x 2 x 9 x 100 cells) and its schema."""
    rng = np.random.default_rng(3)
    n = 3000
    leaves = [leaf for group in JOBS["*"].values() for leaf in group]
    pd.DataFrame({
        "age": np.clip(rng.normal(40, 15, n), 0, 63).astype(int),
        "sex": rng.choice(["F", "M"], n),
        "job": rng.choice(leaves, n),
        "income": np.clip(rng.lognormal(3, 1, n), 0, 99).astype(int),
    }).to_csv(folder / "t.csv", index=False)
    (folder / "s.json").write_text(json.dumps(SCHEMA))


def evaluate_args(out: str = "out", *extra: str) -> list[str]:
    return ["evaluate", "t.csv", "--schema", "s.json", "--epsilons", EPSILONS, "--sa", SA, "--queries", QUERIES,
            "--seed", SEED, "--out", out, *extra]


def run(args: list[str], cwd: Path, *, prelude: str = "") -> subprocess.CompletedProcess[str]:
    """``privelet ARGS`` in a fresh process (``prelude`` runs first, e.g. a Qt blocker)."""
    code = prelude + f"import sys\nfrom privelet_gui.cli import main\nsys.exit(main({args!r}))\n"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, cwd=cwd, timeout=300, check=False)
    return subprocess.CompletedProcess(result.args, result.returncode, result.stdout.decode(), result.stderr.decode())


def read_summary(path: Path) -> tuple[list[str], list[list[str]]]:
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    return rows[0], rows[1:]


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    """One real run with figures, into a folder that does not exist yet."""
    folder = tmp_path_factory.mktemp("evaluate")
    write_inputs(folder)
    result = run(evaluate_args("results/nested"), folder)
    return folder, folder / "results" / "nested", result


def test_summary_matches_the_engine_run_in_process(evaluated):
    folder, out, result = evaluated
    assert result.returncode == 0, result.stderr
    header, rows = read_summary(out / "summary.csv")
    assert tuple(header) == SUMMARY_COLUMNS  # error statistics only: no column holds a true count
    assert len(rows) == 3 * 2 * 5
    # The same table, schema, S_A and seed in this process: every number equal, exactly.
    schema = load_schema(folder / "s.json")
    matrix, _ = count_table(folder / "t.csv", schema)
    _, expected = evaluate(matrix, schema, [0.5, 1.0, 1.25], SA.split(","), queries=int(QUERIES),
                           rng=np.random.default_rng(int(SEED)))
    assert len(expected) == len(rows)
    for line, e in zip(rows, expected):
        epsilon, mechanism, quintile, coverage, square, relative, queries = line
        assert (float(epsilon), mechanism, int(quintile)) == (e.epsilon, e.mechanism, e.row.quintile)
        assert float(coverage) == e.row.coverage
        assert float(square) == e.row.square_error
        assert float(relative) == e.row.relative_error
        assert int(queries) == e.row.queries
    assert {line[1] for line in rows} == {"basic", "privelet+"}
    assert sum(int(line[6]) for line in rows) == 3 * 2 * int(QUERIES)
    # The summary on stdout shows the same numbers.
    assert f"wrote {Path('results/nested/summary.csv')} (30 rows" in result.stdout
    assert f"{float(rows[4][4]):.4e}" in result.stdout  # Basic, epsilon 0.5, highest quintile


def test_the_run_warns_loudly_and_shows_progress(evaluated):
    _, _, result = evaluated
    assert "!!!!!!!!" in result.stderr and "TRUE data" in result.stderr and "NOT publish" in result.stderr
    assert "--seed" in result.stderr and "FOR TESTING ONLY" in result.stderr
    # the progress, as plain lines: stderr is not a terminal here
    assert "\r" not in result.stderr and "\n100% figures done\n" in result.stderr
    assert "every row was counted" in result.stderr
    assert "not for publication" in result.stdout


def test_one_figure_per_epsilon_and_error_decodes_and_is_labelled(evaluated):
    QImage = pytest.importorskip("PySide6.QtGui").QImage
    _, out, result = evaluated
    assert sorted(p.name for p in out.iterdir()) == sorted([*FIGURES, "summary.csv"])
    for name in FIGURES:
        assert f"wrote {Path('results/nested') / name}" in result.stdout
        image = QImage(str(out / name))
        assert not image.isNull() and image.width() >= 1000 and image.height() > 400, name
        pixels = np.array([[image.pixel(x, y) for x in range(0, image.width(), 3)]
                           for y in range(0, image.height(), 3)], dtype=np.uint32)
        rgb = np.stack([(pixels >> 16) & 255, (pixels >> 8) & 255, pixels & 255], axis=-1).astype(int)
        assert len(np.unique(pixels)) > 10, name  # not blank

        def near(colour: str, area: np.ndarray = rgb) -> int:
            target = np.array([int(colour[i:i + 2], 16) for i in (1, 3, 5)])
            return int((np.abs(area - target).max(axis=-1) <= 25).sum())

        assert near("#D55E00") > 20 and near("#0072B2") > 20, name  # both lines are drawn
        top = rgb[: 70 // 3]  # the custodian-only label: the red second title line
        assert near("#B00020", top) > 50, name


def test_no_figures_imports_no_qt_and_is_reproducible(evaluated):
    folder, out, _ = evaluated
    result = run(evaluate_args("plain", "--no-figures", "--quiet"), folder,
                 prelude=BLOCKER + "import atexit\natexit.register(lambda: print(sorted(m for m in sys.modules "
                 "if m.startswith(('PySide6', 'pyqtgraph', 'shiboken6', 'privelet_gui.gui')))))\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"
    assert sorted(p.name for p in (folder / "plain").iterdir()) == ["summary.csv"]
    # --quiet: no progress bar, but the privacy warning still shows
    assert "\r" not in result.stderr and "TRUE data" in result.stderr
    # the same seed gives the same summary, byte for byte
    assert (folder / "plain" / "summary.csv").read_bytes() == (out / "summary.csv").read_bytes()


def call(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_help(capsys):
    code, out, _ = call(capsys, "evaluate", "--help")
    assert code == 0 and "usage: privelet evaluate" in out and "--no-figures" in out and "TRUE data" in out


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["evaluate", "--schema", "s.json", "--epsilons", "1", "--out", "o"], "TABLE"),
        (["evaluate", "t.csv", "--epsilons", "1", "--out", "o"], "--schema"),
        (["evaluate", "t.csv", "--schema", "s.json", "--out", "o"], "--epsilons"),
        (["evaluate", "t.csv", "--schema", "s.json", "--epsilons", "1"], "--out"),
        (evaluate_args("o", "--queries", "many"), "number of queries must be an integer"),
        (evaluate_args("o", "--queries", "3"), "at least 5 queries"),
        (evaluate_args("o", "--neighbours", "close"), "invalid choice"),
        (evaluate_args("o", "--seed", "-1"), "seed must be a non-negative integer"),
        (evaluate_args("o", "--figures"), "unrecognized arguments"),
    ],
)
def test_usage_errors_exit_2(capsys, tmp_path, monkeypatch, args, needle):
    monkeypatch.chdir(tmp_path)
    write_inputs(tmp_path)
    code, _, err = call(capsys, *args)
    assert code == 2, err
    assert needle in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.json", "t.csv"]


def with_epsilons(text: str) -> list[str]:
    args = evaluate_args()
    args[args.index("--epsilons") + 1] = text
    return args


@pytest.mark.parametrize(
    ("files", "args", "needles"),
    [
        ({}, with_epsilons("abc"), ["--epsilons", "'abc' is not a number"]),
        ({}, with_epsilons("0.5,-1"), ["--epsilons", "'-1' is not a positive"]),
        ({}, with_epsilons("0"), ["'0' is not a positive"]),
        ({}, with_epsilons("inf"), ["'inf' is not a positive"]),
        ({}, with_epsilons("1,,2"), ["empty entry"]),
        ({}, with_epsilons("1,1.0"), ["epsilon 1.0 is listed twice"]),
        ({}, ["evaluate", "t.csv", "--schema", "nope.json", "--epsilons", "1", "--out", "out"],
         ["no such schema file", "nope.json"]),
        ({}, ["evaluate", "gone.csv", "--schema", "s.json", "--epsilons", "1", "--out", "out"],
         ["no such table file", "gone.csv"]),
        ({}, evaluate_args("out", "--sa", "height"), ["unknown attribute 'height'"]),
        ({"t.csv": b"age,sex,job,income\n30,F,t1,5\n300,M,o2,7\n"}, evaluate_args(), ["attribute age", "300"]),
        ({"out/summary.csv": b"precious"}, evaluate_args(), ["summary.csv exists already", "--force"]),
        ({"out/figure_epsilon_1.png": b"precious"}, evaluate_args(), ["figure_epsilon_1.png exists already"]),
        ({"out": b"a file"}, evaluate_args(), ["out is a file, not a folder"]),
    ],
)
def test_data_errors_exit_1_with_one_line_and_write_nothing(capsys, tmp_path, monkeypatch, files, args, needles):
    monkeypatch.chdir(tmp_path)
    write_inputs(tmp_path)
    for name, content in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(content)
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    code, _, err = call(capsys, *args)
    assert code == 1, err
    lines = [line for line in err.splitlines() if line.startswith("privelet: error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before
    assert not (tmp_path / "out").is_dir() or "out/" in "".join(files)  # no folder made on failure


def test_existing_outputs_need_force(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_inputs(tmp_path)
    args = evaluate_args("out", "--no-figures", "--quiet")
    code, _, err = call(capsys, *args)
    assert code == 0, err
    assert EVALUATION_WARNING.split()[0] in err  # printed even with --quiet
    first = (tmp_path / "out" / "summary.csv").read_bytes()
    (tmp_path / "out" / "summary.csv").write_bytes(b"changed")
    code, _, err = call(capsys, *args)
    assert code == 1 and "exists already" in err
    assert (tmp_path / "out" / "summary.csv").read_bytes() == b"changed"
    code, _, err = call(capsys, *args, "--force")
    assert code == 0, err
    assert (tmp_path / "out" / "summary.csv").read_bytes() == first  # same seed, same numbers


def test_table_options_reach_the_reader(capsys, tmp_path, monkeypatch):
    """--no-header and --delimiter as for release: a headerless TSV, columns named column_1, ..."""
    monkeypatch.chdir(tmp_path)
    write_inputs(tmp_path)
    frame = pd.read_csv(tmp_path / "t.csv")
    frame.to_csv(tmp_path / "t.tsv", sep="\t", header=False, index=False)
    schema = json.loads((tmp_path / "s.json").read_text())
    for number, attribute in enumerate(schema["attributes"], start=1):
        attribute["column"] = f"column_{number}"
    (tmp_path / "s2.json").write_text(json.dumps(schema))
    args = ["evaluate", "t.tsv", "--schema", "s2.json", "--epsilons", "1", "--sa", SA, "--queries", QUERIES,
            "--seed", SEED, "--no-figures", "--no-header", "--delimiter", "tab"]
    code, _, err = call(capsys, *args, "--out", "tsv")
    assert code == 0, err
    assert "every row was counted" in err
    code, _, err = call(capsys, *evaluate_args("csv", "--no-figures"))
    assert code == 0, err
    # the same rows read both ways: the same workload (same seed), so the same coverages
    tsv = read_summary(tmp_path / "tsv" / "summary.csv")[1]
    csv_rows = [line for line in read_summary(tmp_path / "csv" / "summary.csv")[1] if line[0] == "1"]
    assert [line[3] for line in tsv] == [line[3] for line in csv_rows]
    code, _, err = call(capsys, *args[:-3], "--out", "bad")  # without --no-header: the first row is a header
    assert code == 1 and "has no column 'column_1'" in err


def test_workload_measures_the_custodians_queries(capsys, tmp_path, monkeypatch):
    """--workload: every query of the custodian's workload, as the engine measures it in process."""
    monkeypatch.chdir(tmp_path)
    write_inputs(tmp_path)
    code, out, err = call(capsys, *evaluate_args("out", "--no-figures", "--workload", "marginals:1,2:age/8,job/2,sex"))
    assert code == 0, err
    assert "queries of 1- and 2-way marginals of age, job, sex" in out
    schema = load_schema(tmp_path / "s.json")
    from privelet_gui.io import workloads_from_descriptions

    workload = workloads_from_descriptions(["marginals:1,2:age/8,job/2,sex"], schema)
    matrix, _ = count_table(tmp_path / "t.csv", schema)
    _, rows = evaluate(matrix, schema, [0.5, 1.0, 1.25], ("age", "sex"), rng=np.random.default_rng(int(SEED)),
                       workload=workload)
    _, written = read_summary(tmp_path / "out" / "summary.csv")
    assert sum(int(r[-1]) for r in written) == 3 * 2 * len(workload)  # per epsilon and mechanism, every query once
    assert [float(r[4]) for r in written] == [r.row.square_error for r in rows]
