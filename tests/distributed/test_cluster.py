"""Counting and releasing on local Dask clusters of worker processes (512 MB each).

What the issue asks, end to end: counts of a table split in several files equal the
one-machine ``count_table`` exactly (report and errors included); a release with a seed is
identical for one and two workers, and equal to the one-machine release; a release whose
matrix (1 GB) is larger than a worker's memory completes and answers queries.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import dask.array as da
import numpy as np
import pandas as pd
import pytest
from distributed import Client

from privelet_gui.bench import occupation_hierarchy
from privelet_gui.cli import main
from privelet_gui.distributed import count_dataset, dask_client, release_layout, release_to_zarr
from privelet_gui.distributed.cluster import wait_for
from privelet_gui.engine import (
    Cancelled,
    DomainError,
    Hierarchy,
    NominalAttribute,
    OrdinalAttribute,
    PriveletError,
    ReleaseSpec,
    Schema,
)
from privelet_gui.engine.progress import Progress
from privelet_gui.io import (
    answer_query,
    count_table,
    load_release,
    load_schema,
    parse_where,
    read_table,
    release_metadata,
    sample_schema_path,
    sample_table_path,
)

from .conftest import split

SEED = 11


def gather(client: Client, array: da.Array) -> np.ndarray:
    """A dask array's chunks fetched here one by one and joined here (computing it whole would
    join it on a worker, which would need more than its 512 MB for the sample's 54 MB matrix)."""
    parts = array.to_delayed()
    futures = client.compute(parts.ravel().tolist())
    chunks = np.empty(parts.shape, dtype=object)
    for position, chunk in zip(np.ndindex(*parts.shape), client.gather(futures), strict=True):
        chunks[position] = chunk
    return np.block(chunks.tolist())


@pytest.fixture(scope="module")
def schema() -> Schema:
    return load_schema(sample_schema_path())


def _chunks(schema: Schema, sa: tuple[str, ...] = ("age", "sex")) -> tuple[tuple[int, ...], ...]:
    return release_layout(ReleaseSpec(schema, 1.0, sa=sa)).chunks


# -- counting -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["parquet", "csv"])
def test_counts_of_split_files_equal_count_table(client: Client, adult_parts: dict[str, Path], schema: Schema, kind: str) -> None:
    whole = adult_parts["all"] if kind == "parquet" else adult_parts["all_csv"]
    expected, expected_report = count_table(whole, schema)
    counts = count_dataset(client, adult_parts[kind], schema, _chunks(schema))
    assert counts.report == expected_report
    assert counts.rows == 30162
    assert np.array_equal(gather(client, counts.matrix), expected)


def test_counts_of_a_glob_and_of_a_dask_dataframe(client: Client, adult_parts: dict[str, Path], schema: Schema) -> None:
    import dask.dataframe as dd

    expected, _ = count_table(adult_parts["all"], schema)
    globbed = count_dataset(client, str(adult_parts["parquet"] / "part-[02]*.parquet"), schema, _chunks(schema))
    halves = [count_table(adult_parts["parquet"] / f"part-{n}.parquet", schema)[0] for n in (0, 2)]
    assert np.array_equal(gather(client, globbed.matrix), halves[0] + halves[1])
    frame = dd.from_pandas(read_table(sample_table_path()), npartitions=5)
    counted = count_dataset(client, frame, schema, _chunks(schema))
    assert np.array_equal(gather(client, counted.matrix), expected)


def test_a_matrix_chunked_otherwise_sums_the_same(client: Client, adult_parts: dict[str, Path], schema: Schema) -> None:
    """Counts are cut along any chunks (here Privelet's, along age only) and summed exactly."""
    expected, _ = count_table(adult_parts["all"], schema)
    chunks = ((10,) * 7 + (4,), (1, 1), (5,), (16,), (14,), (41,))
    counts = count_dataset(client, adult_parts["parquet"], schema, chunks)
    assert counts.matrix.chunks == chunks
    assert np.array_equal(gather(client, counts.matrix), expected)


def test_out_of_domain_values_are_reported_as_on_one_machine(client: Client, tmp_path: Path, schema: Schema) -> None:
    table = read_table(sample_table_path())
    table.loc[[20_000, 20_005, 20_007], "age"] = ["130", "131", "130"]  # all in the third of four parts
    table.to_parquet(tmp_path / "all.parquet")
    split(table, tmp_path / "parts", 4)
    with pytest.raises(DomainError) as one_machine:
        count_table(tmp_path / "all.parquet", schema)
    with pytest.raises(DomainError) as cluster:
        count_dataset(client, tmp_path / "parts", schema, _chunks(schema))
    assert str(cluster.value) == str(one_machine.value)
    assert "3 rows" in str(cluster.value)
    assert (cluster.value.attribute, cluster.value.count) == ("age", 3)
    assert cluster.value.examples == one_machine.value.examples

    expected, expected_report = count_table(tmp_path / "all.parquet", schema, invalid="drop")
    counts = count_dataset(client, tmp_path / "parts", schema, _chunks(schema), invalid="drop")
    assert counts.report == expected_report
    assert counts.report.dropped["age"] == 3 and counts.rows == 30162 - 3
    assert np.array_equal(gather(client, counts.matrix), expected)


def test_a_missing_column_or_folder_is_a_clear_error(client: Client, tmp_path: Path, schema: Schema) -> None:
    read_table(sample_table_path()).drop(columns=["race"]).to_parquet(tmp_path / "no-race.parquet")
    with pytest.raises(PriveletError, match=r"has no column 'race'"):
        count_dataset(client, tmp_path / "no-race.parquet", schema, _chunks(schema))
    with pytest.raises(PriveletError, match="no such file or folder"):
        count_dataset(client, tmp_path / "absent", schema, _chunks(schema))
    (tmp_path / "empty").mkdir()
    with pytest.raises(PriveletError, match="holds no table file"):
        count_dataset(client, tmp_path / "empty", schema, _chunks(schema))


# -- releases ------------------------------------------------------------------------------------------


def test_release_is_identical_for_one_and_two_workers_and_equals_one_machine(
    clusters: dict[int, Client], adult_parts: dict[str, Path], schema: Schema, tmp_path: Path
) -> None:
    spec = ReleaseSpec(schema, 1.0, sa=("age", "sex"))
    matrix, _ = count_table(adult_parts["all"], schema)
    one_machine = spec.run(matrix, rng=np.random.default_rng(SEED))
    noisy = {}
    for workers, client in clusters.items():
        counts = count_dataset(client, adult_parts["parquet"], schema, release_layout(spec).chunks)
        release, meta = release_to_zarr(
            client, counts.matrix, spec, tmp_path / f"{workers}.zarr", rows=counts.rows,
            rng=np.random.default_rng(SEED), seed=SEED,
        )
        noisy[workers] = np.asarray(release.noisy)
        expected = release_metadata(one_machine, seed=SEED)
        assert {k: v for k, v in meta.items() if k != "created"} == {k: v for k, v in expected.items() if k != "created"}
    assert np.array_equal(noisy[1], noisy[2])
    assert np.array_equal(noisy[2], one_machine.noisy)


def test_privelet_with_sa_empty_goes_axis_by_axis_with_the_same_noise(
    roomy_clusters: dict[int, Client], tmp_path: Path
) -> None:
    """One block of 4.5 million cells: the pipeline's three passes, each measurement's noise from
    its position as on one machine (the matrix given as numpy, rows computed)."""
    schema = Schema([
        OrdinalAttribute.integer_range("a", 0, 99),
        NominalAttribute("b", Hierarchy.flat(["x", "y", "z"])),
        OrdinalAttribute.integer_range("c", 0, 14_999),
    ])
    spec = ReleaseSpec(schema, 0.5, "privelet")
    layout = release_layout(spec)
    assert layout.big and len(layout.blocks.boxes) == 1
    matrix = np.random.default_rng(0).poisson(0.05, schema.shape).astype(np.float64)
    expected = spec.run(matrix, rng=np.random.default_rng(SEED)).noisy
    stages: list[str] = []
    for workers, client in roomy_clusters.items():
        release, _ = release_to_zarr(
            client, matrix, spec, tmp_path / f"{workers}.zarr", rng=np.random.default_rng(SEED),
            progress=lambda fraction, stage: stages.append(stage),
        )
        assert release.mechanism == "privelet" and release.sa == ()
        assert np.array_equal(np.asarray(release.noisy), expected)
    for number in (1, 2, 3):  # the one-machine pipeline's three passes, in order
        assert any(stage.startswith(f"transform pass {number} of 3") for stage in stages), stages


def test_a_release_larger_than_each_worker_completes_and_is_queryable(client: Client, tmp_path: Path) -> None:
    """A 1 GB matrix (125 million cells) on workers limited to 512 MB each."""
    rng = np.random.default_rng(3)
    schema = Schema([
        OrdinalAttribute.integer_range("Age", 0, 99),
        NominalAttribute("Gender", Hierarchy.flat(["Male", "Female"])),
        NominalAttribute("Occupation", occupation_hierarchy(rng)),
        OrdinalAttribute.integer_range("Income", 0, 1219),
    ])
    assert 8 * schema.size > 0.99e9
    rows = 200_000
    occupations = list(schema["Occupation"].labels)
    table = pd.DataFrame({
        "Age": rng.integers(0, 100, rows),
        "Gender": rng.choice(["Male", "Female"], rows),
        "Occupation": rng.choice(occupations, rows),
        "Income": rng.integers(0, 1220, rows),
    })
    parts = split(table, tmp_path / "parts", 4)
    spec = ReleaseSpec(schema, 1.0, sa=("Age", "Gender"))
    counts = count_dataset(client, parts, schema, release_layout(spec).chunks)
    assert counts.rows == rows
    release, meta = release_to_zarr(client, counts.matrix, spec, tmp_path / "big.zarr", rows=counts.rows)
    assert not release.seeded and meta["shape"] == list(schema.shape)

    opened = load_release(tmp_path / "big.zarr")
    assert type(opened.noisy).__module__.startswith("zarr")  # lazy: read a chunk at a time
    query = parse_where(schema, ["Age=20..30", "Occupation=major-00", "Income=..400"])
    answer = answer_query(opened, query)
    first, last = schema["Occupation"].hierarchy.leaf_range("major-00")
    leaves = set(occupations[first:last])
    true = int(((table.Age.between(20, 30)) & table.Occupation.isin(leaves) & (table.Income <= 400)).sum())
    assert abs(answer.noisy_count - true) < 5 * math.sqrt(answer.variance)  # fails with probability < 1e-6


def test_cancel_leaves_no_folder(client: Client, adult_parts: dict[str, Path], schema: Schema, tmp_path: Path) -> None:
    spec = ReleaseSpec(schema, 1.0, sa=("age", "sex"))
    counts = count_dataset(client, adult_parts["parquet"], schema, release_layout(spec).chunks)
    asked: list[float] = []

    def cancel() -> bool:
        asked.append(1.0)
        return len(asked) > 2

    with pytest.raises(Cancelled):
        release_to_zarr(client, counts.matrix, spec, tmp_path / "r.zarr", rows=counts.rows, should_cancel=cancel)
    assert list(tmp_path.iterdir()) == []


def test_tasks_too_big_for_the_workers_are_refused_before_any_work(client: Client, schema: Schema, tmp_path: Path) -> None:
    spec = ReleaseSpec(schema, 1.0, sa=("sex",))  # two blocks of 3.4 million cells and their coefficients
    with pytest.raises(PriveletError, match=r"more than half of the .* a Dask worker may use; give the workers more memory"):
        release_to_zarr(client, np.zeros(schema.shape), spec, tmp_path / "r.zarr", rows=0)
    assert list(tmp_path.iterdir()) == []


def test_an_unreachable_scheduler_is_a_clear_error() -> None:
    with (
        pytest.raises(PriveletError, match=r"cannot reach the Dask scheduler at tcp://127.0.0.1:9"),
        dask_client("tcp://127.0.0.1:9", timeout=1.0),
    ):
        pass


# -- the command line --------------------------------------------------------------------------------


def test_cli_release_of_a_folder_on_a_local_cluster_queries_and_exports_like_a_file(
    adult_parts: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    common = ["--schema", str(sample_schema_path()), "--epsilon", "1", "--sa", "age,sex", "--seed", "5", "-q"]
    zarr_out, npz_out = tmp_path / "r.zarr", tmp_path / "r.npz"
    assert main(["release", str(adult_parts["parquet"]), *common, "--dask", "--dask-workers", "2",
                 "--dask-memory", "512MB", "--out", str(zarr_out)]) == 0
    assert main(["release", str(adult_parts["all"]), *common, "--out", str(npz_out)]) == 0
    capsys.readouterr()
    where = ["--where", "age=20..30", "--where", "occupation=Sales", "--json"]
    assert main(["query", str(zarr_out), *where]) == 0
    from_folder = json.loads(capsys.readouterr().out)
    assert main(["query", str(npz_out), *where]) == 0
    from_file = json.loads(capsys.readouterr().out)
    # the same cells; their sum may differ in the last bits (summed from chunks or from the whole matrix)
    assert from_folder["variance"] == from_file["variance"]
    assert from_folder["noisy_count"] == pytest.approx(from_file["noisy_count"], rel=1e-12)
    assert main(["export", str(zarr_out), "--out", str(tmp_path / "a.parquet"), "--allow-seeded"]) == 0  # seeded: a test
    assert main(["export", str(npz_out), "--out", str(tmp_path / "b.parquet"), "--allow-seeded"]) == 0
    a, b = pd.read_parquet(tmp_path / "a.parquet"), pd.read_parquet(tmp_path / "b.parquet")
    assert np.array_equal(a["noisy_count"], b["noisy_count"])  # every cell, in the same order
    assert np.array_equal(a["age"].cat.codes, b["age"].cat.codes) and list(a["age"].cat.categories) == list(b["age"].cat.categories)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.parquet", "b.parquet", "r.npz", "r.zarr"]


def test_cli_release_at_a_scheduler_address(client: Client, adult_parts: dict[str, Path], tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.zarr"
    address = client.scheduler_info()["address"]
    args = ["release", str(adult_parts["csv"]), "--schema", str(sample_schema_path()), "--epsilon", "1",
            "--dask", address, "--out", str(out), "-q"]
    assert main(args) == 0
    assert "wrote" in capsys.readouterr().out
    assert main(args) == 1  # exists: refused before any work
    assert "exists" in capsys.readouterr().err
    assert main([*args, "--force", "--yes"]) == 0  # the same table again: the ledger asks, --yes answers
    assert main([*args[:-3], "--dask-workers", "2", "--out", str(out), "-q"]) == 2  # workers of a remote cluster
    assert "a cluster at an address has its own workers" in capsys.readouterr().err


def _sleep_then_mark(path: str, seconds: float) -> str:
    time.sleep(seconds)
    Path(path).write_text("done")
    return path


def test_a_cancel_returns_only_once_the_running_tasks_have_ended(client: Client, tmp_path: Path) -> None:
    """Dask cannot stop a task that runs (a thread): a cancelled release waits for it, so that
    no chunk is written after the release's temporary folder is removed."""
    marks = [tmp_path / f"task{i}" for i in range(2)]
    futures = [client.submit(_sleep_then_mark, str(mark), 1.5, pure=False) for mark in marks]
    client.wait_for_workers(2)
    deadline = time.monotonic() + 10
    while sum(len(keys) for keys in client.processing().values()) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)  # both tasks on a worker
    time.sleep(0.3)  # and running
    asked = iter([True])
    with pytest.raises(Cancelled):
        wait_for(client, futures, Progress(should_cancel=lambda: next(asked)), "test: task")
    assert all(mark.read_text() == "done" for mark in marks)  # both had ended when the cancel returned
