"""Command-line conventions: ``--out -`` is standard output, help texts print what they mean."""

from __future__ import annotations

import argparse
import io
import os
import pty
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privelet_gui.cli import build_parser
from privelet_gui.engine import Hierarchy, NominalAttribute, OrdinalAttribute, Schema, privelet_plus
from privelet_gui.io import export_release, save_release
from privelet_gui.io.releases import SEEDED_WARNING

SCHEMA = Schema([OrdinalAttribute.integer_range("age", 0, 7), NominalAttribute("sex", Hierarchy.flat(["F", "M"]))])
TRUTH = np.arange(16, dtype=float).reshape(8, 2)


def privelet(*args: str, cwd: Path, stdout: int | None = subprocess.PIPE) -> subprocess.CompletedProcess[bytes]:
    """``privelet ARGS`` in a fresh process, standard output as bytes."""
    return subprocess.run([sys.executable, "-m", "privelet_gui.cli", *args], stdout=stdout, stderr=subprocess.PIPE,
                          cwd=cwd, timeout=300, check=False)


@pytest.fixture
def release_file(tmp_path: Path) -> Path:
    path = tmp_path / "r.npz"
    save_release(privelet_plus(TRUTH, SCHEMA, 1.0), path)
    return path


def test_export_to_standard_output_is_the_file_export(tmp_path, release_file):
    from privelet_gui.io import load_release

    release = load_release(release_file)
    export_release(release, tmp_path / "cells.csv")
    export_release(release, tmp_path / "cells.parquet")
    csv = privelet("export", "r.npz", "--out", "-", cwd=tmp_path)
    assert csv.returncode == 0, csv.stderr
    assert csv.stdout == (tmp_path / "cells.csv").read_bytes()  # byte for byte, header first
    assert b"wrote 16 rows to standard output" in csv.stderr  # the report goes to stderr, not into the data
    assert not (tmp_path / "-").exists()

    parquet = privelet("export", "r.npz", "--out", "-", "--format", "parquet", "--counts", "integer", cwd=tmp_path)
    assert parquet.returncode == 0, parquet.stderr
    frame = pd.read_parquet(io.BytesIO(parquet.stdout))
    assert list(frame.columns) == ["age", "sex", "noisy_count_integer"] and len(frame) == SCHEMA.size
    assert frame["noisy_count_integer"].sum() == pytest.approx(release.noisy.sum(), abs=1e-6)

    quiet = privelet("export", "r.npz", "--out", "-", "--quiet", cwd=tmp_path)
    assert quiet.returncode == 0 and quiet.stderr == b"" and quiet.stdout == csv.stdout


def test_seeded_exports_to_standard_output_are_marked(tmp_path):
    save_release(privelet_plus(TRUTH, SCHEMA, 1.0, rng=np.random.default_rng(3)), tmp_path / "s.npz", seed=3)
    refused = privelet("export", "s.npz", "--out", "-", cwd=tmp_path)
    assert refused.returncode == 1 and refused.stdout == b"" and b"--allow-seeded" in refused.stderr
    marked = privelet("export", "s.npz", "--out", "-", "--allow-seeded", cwd=tmp_path)
    assert marked.returncode == 0
    assert marked.stdout.decode().startswith(f"# {SEEDED_WARNING}\nage,sex,noisy_count\n")
    assert b"NOT PRIVATE" in marked.stderr


def test_a_zarr_release_exports_to_standard_output_slab_by_slab(tmp_path):
    pytest.importorskip("zarr")
    from privelet_gui.io import load_release
    from privelet_gui.io.zarr_releases import save_zarr_release

    save_zarr_release(privelet_plus(TRUTH, SCHEMA, 1.0), tmp_path / "r.zarr", chunks=(4, 2))
    lazy = load_release(tmp_path / "r.zarr")
    export_release(lazy, tmp_path / "cells.csv")
    result = privelet("export", "r.zarr", "--out", "-", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == (tmp_path / "cells.csv").read_bytes()


def test_parquet_to_a_terminal_is_refused(tmp_path, release_file):
    controller, terminal = pty.openpty()
    try:
        result = privelet("export", "r.npz", "--out", "-", "--format", "parquet", cwd=tmp_path, stdout=terminal)
    finally:
        os.close(terminal)
        os.close(controller)
    assert result.returncode == 2
    assert b"Parquet is binary" in result.stderr and b"> cells.parquet" in result.stderr
    assert not (tmp_path / "-").exists()


def test_a_reader_that_stops_early_ends_the_export_quietly(tmp_path):
    big = Schema([OrdinalAttribute.integer_range("x", 0, 199_999)])  # a few MB of CSV: more than a pipe holds
    save_release(privelet_plus(np.zeros(big.shape), big, 1.0), tmp_path / "big.npz")
    command = [sys.executable, "-m", "privelet_gui.cli", "export", "big.npz", "--out", "-"]
    with subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        assert process.stdout is not None and process.stderr is not None
        assert process.stdout.readline() == b"x,noisy_count\n"
        process.stdout.close()  # as `| head -1` does
        error = process.stderr.read()
        code = process.wait(timeout=300)
    assert code == 1
    assert b"Traceback" not in error and b"error" not in error and b"Broken pipe" not in error


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _helps(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> dict[tuple[str, ...], str]:
    """The help text of every command and subcommand under ``parser``."""
    found = {path: parser.format_help()}
    for name, sub in _subcommands(parser).items():
        found.update(_helps(sub, (*path, name)))
    return found


def test_no_help_text_shows_a_doubled_percent_sign():
    helps = _helps(build_parser())
    assert ("evaluate",) in helps and ("hierarchy", "convert") in helps
    for command, text in helps.items():
        assert "%%" not in text, (command, text)
    assert "0.1% of n" in " ".join(helps[("evaluate",)].split())
    assert "95% interval" in " ".join(helps[("query",)].split())
