"""Fuzz: argument lists for the ``privelet`` command line, run in-process by ``main(argv)``.

Contract: the exit code is 0, 1 (a problem with the data or files, one line on stderr) or 2
(a usage error), and no exception escapes ``main``.
"""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from privelet_gui.cli import main
from privelet_gui.engine import Hierarchy, NominalAttribute, OrdinalAttribute, Schema, privelet_plus
from privelet_gui.io import save_release, write_arx_hierarchy

from .support import TALLY, fuzz

SCHEMA = Schema([OrdinalAttribute.integer_range("age", 0, 9), NominalAttribute("sex", Hierarchy.flat(["F", "M"]))])
SCHEMA_TEXT = json.dumps({"version": 1, "attributes": [
    {"name": "age", "type": "ordinal", "range": [0, 9]}, {"name": "sex", "type": "nominal", "values": ["F", "M"]},
]})


@cache
def workspace() -> Path:
    """Input files every case may name: valid, damaged, missing, a folder (made once)."""
    folder = Path(tempfile.mkdtemp(prefix="privelet-cli-fuzz-"))
    (folder / "table.csv").write_text("age,sex\n1,F\n2,M\n3,F\n9,M\n")
    (folder / "bad.csv").write_text("age,sex\n1,F,extra\n12,Q\n")
    (folder / "table.tsv").write_text("age\tsex\n1\tF\n")
    (folder / "schema.json").write_text(SCHEMA_TEXT)
    (folder / "bad.json").write_text('{"version": 1, "attributes": [{"name": "age", "type": "ordinal", "range": [0]}]}')
    (folder / "h.csv").write_text(write_arx_hierarchy(Hierarchy.from_nested({"*": {"G": ["a", "b"], "H": ["c"]}})))
    (folder / "h.json").write_text('{"*": ["a", "b"]}')
    (folder / "dir").mkdir()
    release = privelet_plus(np.ones(SCHEMA.shape), SCHEMA, 1.0, sa=["sex"], rng=np.random.default_rng(0))
    save_release(release, folder / "release.npz", seed=0)
    (folder / "broken.npz").write_bytes((folder / "release.npz").read_bytes()[:300])
    return folder


_OUTPUTS = ["out/r.npz", "out/e.csv", "out/e.parquet", "out/e.csv.gz", "out/h.json", "out/h.csv", "out/s.json",
            "out/eval", "release.npz", "dir", "no/such/folder/x.npz", "out/x.txt"]
_VALUES = {
    # (no epsilon near the ends of the floats: see test_an_extreme_epsilon_is_refused)
    "--epsilon": ["1", "0.5", "0", "-1", "nan", "inf", "abc", "1e-4", "1e4", ""],
    "--epsilons": ["0.5,1", "1", "", "1,1", "x", "-1,2", ",,"],
    "--sa": ["auto", "none", "age", "age,sex", "ghost", "", "sex,sex"],
    "--mechanism": ["privelet", "basic", "other"],
    "--neighbours": ["replace", "add-remove", "swap"],
    "--seed": ["0", "7", "-1", "x", str(2**70)],
    "--invalid": ["error", "drop", "ignore"],
    "--delimiter": [",", ";", "tab", "::", '"', "", "\n"],
    "--encoding": ["utf-8", "latin-1", "nope", "utf-16", ""],
    "--where": ["age=2..5", "sex=F", "age=..3", "ghost=1", "age", "age=x..y", "sex=Q", "age=1..2..3"],
    "--format": ["csv", "parquet", "xml"],
    "--queries": ["5", "20", "4", "x"],
    "--columns": ["age", "age,sex", "ghost", ""],
}


# Per command: the arguments it needs (as kinds of words) and the options it takes.
_USES = {
    "release": (["table", "--schema", "--epsilon", "--out"],
                ["--sa", "--mechanism", "--neighbours", "--seed", "--invalid", "--delimiter", "--encoding", "--no-header",
                 "--force", "--demo"]),
    "bounds": (["--schema", "--epsilon"], ["--sa", "--neighbours", "--json"]),
    "query": (["release"], ["--where", "--where", "--json"]),
    "export": (["release", "--out"], ["--format", "--force"]),
    "evaluate": (["table", "--schema", "--epsilons", "--out"],
                 ["--sa", "--seed", "--neighbours", "--invalid", "--force", "--delimiter", "--encoding", "--no-header"]),
    "schema infer": (["table"], ["--out", "--force", "--columns", "--delimiter", "--encoding", "--no-header"]),
    "hierarchy check": (["hierarchy"], ["--delimiter", "--json"]),
    "hierarchy convert": (["hierarchy", "output"], ["--delimiter", "--force"]),
}
_KINDS = {
    "table": ["table.csv", "table.csv", "table.tsv", "bad.csv", "h.csv", "missing.csv", "dir", "release.npz"],
    "release": ["release.npz", "release.npz", "broken.npz", "table.csv", "missing.npz"],
    "hierarchy": ["h.csv", "h.json", "table.csv", "schema.json", "missing.csv", "dir"],
    "output": ["out/h.json", "out/h.csv", "out/h.txt", "h.csv", "dir"],
}


def _value(draw: Any, option: str) -> list[str]:
    folder = workspace()
    if option == "--schema":
        return [option, str(folder / draw(st.sampled_from(["schema.json"] * 3 + ["bad.json", "missing.json", "dir"])))]
    if option == "--out":
        return [option, str(folder / draw(st.sampled_from(_OUTPUTS)))]
    if option in _VALUES:
        return [option, draw(st.sampled_from(_VALUES[option]))]
    if option in _KINDS:
        return [str(folder / draw(st.sampled_from(_KINDS[option])))]
    return [option]


@st.composite
def argument_lists(draw: Any) -> list[str]:
    """An argument list for one command, mostly well formed, then damaged: a required
    argument left out, a value that does not fit, an unknown option or a stray word."""
    name = draw(st.sampled_from([*sorted(_USES), "schema", "hierarchy", "nonsense", ""]))
    needed, optional = _USES.get(name, ([], []))
    words: list[str] = []
    for kind in needed:
        if draw(st.integers(0, 9)):  # sometimes left out
            words += _value(draw, kind)
    for option in draw(st.lists(st.sampled_from(optional), max_size=4)) if optional else []:
        if option == "--demo" and draw(st.integers(0, 3)):  # the demo counts 30,162 rows: rarely
            continue
        words += _value(draw, option)
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 2]))):  # damage
        words += draw(st.sampled_from([["--bogus"], ["--help"], ["--version"], ["-q"], ["--debug"], [""],
                                       [draw(st.text(max_size=6))], _value(draw, draw(st.sampled_from(sorted(_VALUES))))]))
    if draw(st.integers(0, 5)) == 0:
        words = draw(st.permutations(words))
    if name == "evaluate":
        words += ["--no-figures", "--queries", "5"]  # figures need Qt; 40,000 queries take long
    return [*name.split(), *words]


@fuzz()
@given(argv=argument_lists())
def test_any_argument_list_exits_0_1_or_2_without_an_exception(argv):
    (workspace() / "out").mkdir(exist_ok=True)
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr), contextlib.chdir(workspace()):
        code = main(argv)
    assert code in (0, 1, 2), (code, stderr.getvalue())
    if code == 1 and "--debug" not in argv:  # a problem with the data or files: said in one line
        errors = [line for line in stderr.getvalue().splitlines() if line.startswith("privelet: error: ")]
        assert len(errors) == 1 and "Traceback" not in stderr.getvalue(), stderr.getvalue()
    TALLY.cases["CLI argument lists"] += 1
    TALLY.outcomes["CLI argument lists"][f"exit {code}"] += 1


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--delimiter", "::", "the delimiter must be one character"),
        ("--delimiter", '"', "cannot be a delimiter"),
        ("--encoding", "nope", "unknown encoding 'nope'"),
    ],
)
def test_a_bad_delimiter_or_encoding_is_a_usage_error(capsys, option, value, message):
    folder = workspace()
    argv = ["release", str(folder / "table.csv"), "--schema", str(folder / "schema.json"), "--epsilon", "1",
            "--out", str(folder / "out" / "never.npz"), option, value]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"argument {option}: " in err and message in err and "Traceback" not in err
    assert not (folder / "out" / "never.npz").exists()


@pytest.mark.parametrize("command", ["release", "bounds"])
@pytest.mark.parametrize("epsilon", ["1e300", "1e-300"])
def test_an_extreme_epsilon_is_refused(tmp_path, command, epsilon):
    folder = workspace()
    argv = [command, "--schema", str(folder / "schema.json"), "--epsilon", epsilon]
    if command == "release":
        argv += [str(folder / "table.csv"), "--out", str(tmp_path / "r.npz"), "-q"]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(argv) in (1, 2)


def teardown_module() -> None:
    import shutil

    if workspace.cache_info().currsize:
        shutil.rmtree(workspace(), ignore_errors=True)
        workspace.cache_clear()
