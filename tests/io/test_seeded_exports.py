"""Seeded (test) releases: refused by exports unless asked for, then marked in the file itself."""

from __future__ import annotations

import gzip

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from privelet_gui.engine import Hierarchy, NominalAttribute, OrdinalAttribute, PriveletError, Schema, privelet_plus
from privelet_gui.io import export_release, save_release
from privelet_gui.io.releases import SEEDED_WARNING

SCHEMA = Schema([OrdinalAttribute.integer_range("age", 0, 7), NominalAttribute("sex", Hierarchy.flat(["F", "M"]))])
TRUTH = np.arange(16, dtype=float).reshape(8, 2)


def test_a_seed_lets_anyone_remove_the_noise():
    # Why seeded exports must say so: brute-forcing small seeds recovers the exact true matrix.
    published = privelet_plus(TRUTH, SCHEMA, 1.0, rng=np.random.default_rng(7)).noisy
    zeros = np.zeros_like(TRUTH)
    for seed in range(1000):
        noise = privelet_plus(zeros, SCHEMA, 1.0, rng=np.random.default_rng(seed)).noisy
        if np.allclose(published - noise, np.round(published - noise), atol=1e-6):
            break
    np.testing.assert_allclose(published - noise, TRUTH, atol=1e-6)
    assert seed == 7


@pytest.mark.parametrize("suffix", ["csv", "csv.gz", "parquet"])
def test_seeded_exports_are_refused_unless_asked_and_then_marked(tmp_path, suffix):
    seeded = privelet_plus(TRUTH, SCHEMA, 1.0, rng=np.random.default_rng(3))
    path = tmp_path / f"r.{suffix}"
    with pytest.raises(PriveletError, match=r"NOT private.*allow_seeded=True \(privelet export --allow-seeded\)"):
        export_release(seeded, path)
    assert not path.exists()
    assert export_release(seeded, path, allow_seeded=True) == SCHEMA.size
    if suffix == "parquet":
        metadata = pq.read_schema(path).metadata
        assert metadata[b"privelet.seeded"] == b"true" and metadata[b"privelet.warning"] == SEEDED_WARNING.encode()
        frame = pd.read_parquet(path)
    else:
        opener = gzip.open if suffix.endswith("gz") else open
        with opener(path, "rt", encoding="utf-8") as handle:
            assert handle.readline() == f"# {SEEDED_WARNING}\n"
        # as text, parsed exactly by numpy (pandas before 3.0 parses CSV floats only to within an ulp)
        frame = pd.read_csv(path, comment="#", dtype={"noisy_count": str})
    np.testing.assert_array_equal(frame["noisy_count"].to_numpy(dtype=np.float64), seeded.noisy.reshape(-1))


@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_unseeded_exports_carry_no_warning(tmp_path, suffix):
    release = privelet_plus(TRUTH, SCHEMA, 1.0)
    path = tmp_path / f"r.{suffix}"
    export_release(release, path)
    if suffix == "parquet":
        assert pq.read_schema(path).metadata[b"privelet.seeded"] == b"false"
    else:
        assert path.read_text(encoding="utf-8").startswith("age,sex,noisy_count\n")


def test_release_files_name_the_sampler_and_the_bit_source(tmp_path):
    meta = save_release(privelet_plus(TRUTH, SCHEMA, 1.0), tmp_path / "r.npz")
    assert (meta["sampler"], meta["bit_source"], meta["seeded"]) == ("exact", "aes128-ecb(position)/os-key", False)
    seeded = privelet_plus(TRUTH, SCHEMA, 1.0, rng=np.random.default_rng(3))
    meta = save_release(seeded, tmp_path / "s.npz", seed=3)
    assert meta["bit_source"] == "seeded generator (tests only)" and meta["seeded"]
