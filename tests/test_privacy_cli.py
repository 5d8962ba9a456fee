"""The command line's privacy guards: the budget ledger, samplers, seeded exports, no counts under add/remove."""

from __future__ import annotations

import io
import json
import re

import numpy as np
import pandas as pd
import pytest

from privelet_gui.cli import main
from privelet_gui.engine import Hierarchy, NominalAttribute, OrdinalAttribute, Schema
from privelet_gui.engine.counting import CountReport
from privelet_gui.io import load_release, load_release_metadata, save_schema
from privelet_gui.io.ledger import Ledger
from privelet_gui.io.releases import SEEDED_WARNING


def call(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def table(tmp_path):
    """A small table, its schema, and a value outside the domain (age 99) in one row."""
    schema = Schema(
        [OrdinalAttribute.integer_range("age", 0, 9), NominalAttribute("sex", Hierarchy.flat(["F", "M"]))]
    )
    save_schema(schema, tmp_path / "schema.json")
    rows = [(a % 10, "FM"[a % 2]) for a in range(200)] + [(99, "F")]
    pd.DataFrame(rows, columns=["age", "sex"]).to_csv(tmp_path / "people.csv", index=False)
    return tmp_path / "people.csv", tmp_path / "schema.json"


class Terminal(io.StringIO):
    """Standard input that is a terminal, answering ``answer``."""

    def __init__(self, answer: str):
        super().__init__(answer + "\n")

    def isatty(self) -> bool:
        return True


def release(capsys, table, out, *extra: str) -> tuple[int, str, str]:
    data, schema = table
    return call(capsys, "release", str(data), "--schema", str(schema), "--epsilon", "0.5", "--invalid", "drop",
                "--out", str(out), *extra)


def test_a_second_release_of_a_table_asks_before_spending_more(capsys, table, tmp_path, monkeypatch, private_ledger):
    code, _, err = release(capsys, table, tmp_path / "a.npz")
    assert code == 0 and "this table has spent nothing yet; this release spends epsilon 0.5 more (replace)" in err
    # no terminal and no --yes: refused, saying which flag
    code, _, err = release(capsys, table, tmp_path / "b.npz")
    assert code == 2 and not (tmp_path / "b.npz").exists()
    assert "already spent epsilon 0.5 (replace) in 1 release" in err and "--yes" in err
    # a terminal: asked; "no" releases nothing, "yes" goes on
    monkeypatch.setattr("sys.stdin", Terminal("n"))
    code, _, err = release(capsys, table, tmp_path / "b.npz")
    assert code == 1 and "cancelled" in err and not (tmp_path / "b.npz").exists()
    monkeypatch.setattr("sys.stdin", Terminal("yes"))
    assert release(capsys, table, tmp_path / "b.npz")[0] == 0
    # --yes: told, not asked
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    code, _, err = release(capsys, table, tmp_path / "c.npz", "--yes", "--sampler", "standard")
    assert code == 0 and "already spent epsilon 1 (replace) in 2 releases" in err
    assert load_release_metadata(tmp_path / "c.npz")["sampler"] == "standard"

    entries = Ledger(private_ledger).entries()
    assert [e.output for e in entries] == [str((tmp_path / n).resolve()) for n in ("a.npz", "b.npz", "c.npz")]
    assert [e.sampler for e in entries] == ["exact", "exact", "standard"]
    code, out, _ = call(capsys, "ledger")
    assert code == 0 and "3 releases" in out and "epsilon 1.5 (replace) in 3 releases" in out
    code, out, _ = call(capsys, "ledger", "--json")
    listing = json.loads(out)
    assert [r["epsilon"] for r in listing["releases"]] == [0.5, 0.5, 0.5]
    assert listing["tables"][0]["epsilon"] == {"replace": 1.5} and listing["ledger"] == str(private_ledger)


def test_an_empty_ledger_lists_nothing(capsys):
    code, out, _ = call(capsys, "ledger")
    assert code == 0 and "0 releases" in out


def test_under_add_remove_no_row_numbers_are_printed(capsys, table, tmp_path):
    code, out, err = release(capsys, table, tmp_path / "r.npz", "--neighbours", "add-remove")
    assert code == 0
    assert "rows dropped for 'age'" in err and "number of rows is private" in err
    # the output's own path is pytest's folder, whose name counts pytest's runs ("pytest-200")
    printed = (out + err).replace(str(tmp_path), "<tmp>")
    for number in ("200", "201"):  # as numbers of their own (not digits of a time or a float)
        assert not re.search(rf"(?<![0-9.]){number}(?![0-9])", printed)
    assert not re.search(r"(?<![0-9.])1(?![0-9.])(?! of )", printed)  # the row dropped (progress says "1 of N")
    code, _, err = release(capsys, table, tmp_path / "s.npz", "--yes")  # replace: n is public
    assert "200 of 201 rows counted" in err
    data, schema = table
    code, _, err = call(capsys, "evaluate", str(data), "--schema", str(schema), "--epsilons", "1", "--queries", "5",
                        "--no-figures", "--invalid", "drop", "--neighbours", "add-remove", "--out", str(tmp_path / "e"))
    assert code == 0 and "number of rows is private" in err and not re.search(r"(?<![0-9.])200(?![0-9])", err)
    report = CountReport(rows_read=10, rows_counted=9, dropped={"age": 1}, clamped={"sex": 2})
    assert report.custodian_summary("add-remove") == (
        "rows dropped for 'age'; values clamped in 'sex' (how many is not shown: under add/remove neighbours the "
        "number of rows is private)"
    )


def test_a_seeded_release_is_exported_only_with_the_flag_and_then_marked(capsys, table, tmp_path):
    seeded = tmp_path / "seeded.npz"
    assert release(capsys, table, seeded, "--seed", "7", "--quiet")[0] == 0
    code, _, err = call(capsys, "export", str(seeded), "--out", str(tmp_path / "x.csv"))
    assert code == 1 and "--allow-seeded" in err and not (tmp_path / "x.csv").exists()
    code, out, err = call(capsys, "export", str(seeded), "--out", str(tmp_path / "x.csv"), "--allow-seeded", "--quiet")
    assert code == 0 and "marked as a seeded test release" in out and "NOT PRIVATE" in err
    with open(tmp_path / "x.csv", encoding="utf-8") as handle:
        assert handle.readline() == f"# {SEEDED_WARNING}\n"
    np.testing.assert_array_equal(
        # as text, parsed exactly by numpy (pandas before 3.0 parses CSV floats only to within an ulp)
        pd.read_csv(tmp_path / "x.csv", comment="#", dtype={"noisy_count": str})["noisy_count"].to_numpy(dtype=float),
        load_release(seeded).noisy.reshape(-1),
    )


# -- what a release read says about trusting it ---------------------------------------------------------


def test_query_and_export_warn_when_a_release_file_was_changed_after_it_was_written(capsys, table, tmp_path):
    from tests.io.test_release_trust import release_file_metadata, rewrite_release_file

    path, other = tmp_path / "r.npz", tmp_path / "other.npz"
    assert release(capsys, table, path, "--quiet")[0] == 0
    assert release(capsys, table, other, "--quiet", "--yes", "--epsilon", "8")[0] == 0
    assert release_file_metadata(other)["epsilon"] == 8
    code, out, err = call(capsys, "query", str(path), "--where", "age=2..5")
    assert code == 0 and "warning" not in err  # written here, unchanged
    rewrite_release_file(path, meta=release_file_metadata(other))  # relabelled: epsilon 8, the scale to match
    code, out, err = call(capsys, "query", str(path), "--where", "age=2..5", "--quiet")
    assert code == 0 and "95% interval" in out  # still answered...
    assert f"privelet: warning: {path} FAILED its signature check" in err  # ...with the warning, even with --quiet
    code, out, err = call(capsys, "export", str(path), "--out", str(tmp_path / "cells.csv"))
    assert code == 0 and "FAILED its signature check" in err and (tmp_path / "cells.csv").is_file()
    rewrite_release_file(path, signature=False)
    code, out, err = call(capsys, "query", str(path), "--where", "age=2..5")
    assert code == 0 and f"privelet: warning: {path} carries no signature" in err


def test_a_seeded_release_whose_flag_was_cleared_is_still_refused_without_the_flag(capsys, table, tmp_path):
    from tests.io.test_release_trust import release_file_metadata, rewrite_release_file

    seeded = tmp_path / "seeded.npz"
    assert release(capsys, table, seeded, "--seed", "7", "--quiet")[0] == 0
    meta = release_file_metadata(seeded)
    meta["seeded"], meta["seed"] = False, None
    rewrite_release_file(seeded, meta=meta)
    code, _, err = call(capsys, "export", str(seeded), "--out", str(tmp_path / "x.csv"))
    assert code == 1 and "--allow-seeded" in err and not (tmp_path / "x.csv").exists()
    assert "its seeded flag (false) and its bit source ('seeded generator (tests only)') disagree" in err
    code, out, err = call(capsys, "export", str(seeded), "--out", str(tmp_path / "x.csv"), "--allow-seeded")
    assert code == 0 and "marked as a seeded test release" in out
    assert (tmp_path / "x.csv").read_text(encoding="utf-8").startswith(f"# {SEEDED_WARNING}")


def test_a_damaged_zarr_release_is_a_one_line_error(capsys, tmp_path):
    pytest.importorskip("zarr")
    from privelet_gui.engine import ReleaseSpec
    from privelet_gui.io.zarr_releases import save_zarr_release

    schema = Schema([OrdinalAttribute.integer_range("age", 0, 99), NominalAttribute("sex", Hierarchy.flat(["F", "M"]))])
    folder = tmp_path / "r.zarr"
    save_zarr_release(ReleaseSpec(schema, 1.0).run(np.ones(schema.shape)), folder, chunks=(10, 2))
    chunk = folder / "noisy" / "c" / "3" / "0"
    chunk.write_bytes(np.full(20, np.inf).tobytes())
    code, out, err = call(capsys, "export", str(folder), "--out", str(tmp_path / "cells.csv"))
    assert code == 1 and not (tmp_path / "cells.csv").exists()
    assert err.startswith("privelet: error: ") and "the chunk noisy/c/3/0 differs from the checksum" in err
    assert "Traceback" not in err
    chunk.unlink()
    code, out, err = call(capsys, "query", str(folder), "--where", "age=0..5")
    assert code == 1 and out == "" and "the chunk noisy/c/3/0 of the noisy matrix is missing" in err
    (folder / "noisy" / "zarr.json").write_text("[" * 50_000 + "]" * 50_000)
    code, out, err = call(capsys, "query", str(folder), "--where", "age=0..5")
    assert code == 1 and "nested 50,000 levels deep" in err and "Traceback" not in err


def test_a_damaged_signing_key_stops_a_release_before_its_noise_is_drawn(capsys, table, tmp_path):
    from privelet_gui.io.signing import signing_key_path

    signing_key_path().parent.mkdir(parents=True, exist_ok=True)
    signing_key_path().write_text("damaged", encoding="ascii")
    code, _, err = release(capsys, table, tmp_path / "r.npz")
    assert code == 1 and "release signing key" in err and "move it away" in err
    assert not (tmp_path / "r.npz").exists()
    assert Ledger().entries() == []  # nothing spent
