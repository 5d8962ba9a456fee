"""``privelet bounds/release --workload --sa best``, ``privelet advise`` and ``export --counts``."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from privelet_gui.cli import main
from privelet_gui.engine import ReleaseSpec, best_sa, best_strategy, expected_error, marginals
from privelet_gui.io import load_release, load_release_metadata, load_schema, sample_schema_path

SCHEMA = str(sample_schema_path())


def call(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_bounds_with_a_workload_gives_each_mechanisms_expected_error(capsys):
    code, out, _ = call(capsys, "bounds", "--schema", SCHEMA, "--epsilon", "1", "--workload", "marginals:2", "--json")
    assert code == 0
    result = json.loads(out)
    schema = load_schema(SCHEMA)
    w = marginals(schema, (2,))
    assert result["basic"]["workload_error"] == pytest.approx(expected_error(ReleaseSpec(schema, 1.0, "basic"), w))
    choice = best_sa(ReleaseSpec(schema, 1.0), w)
    assert result["best"]["sa"] == list(choice.sa)
    assert result["best"]["workload_error"] == pytest.approx(choice.error)
    assert result["best"]["workload_error"] <= min(result[k]["workload_error"] for k in ("basic", "privelet", "privelet_plus"))
    assert result["workload"]["public_total"] is True
    strategy = best_strategy(ReleaseSpec(schema, 1.0), w, marginals=True)
    # a workload of marginals: the release's best strategy measures weighted marginals
    assert strategy.spec.label == "marginals" and result["strategy"]["strategies"] == []
    assert result["strategy"]["marginals"] == [[list(names), weight] for names, weight in strategy.spec.marginals]
    # the paper's bound is for its own mechanisms; pairs no marginal holds have no worst case
    assert result["strategy"]["paper_bound"] is None and result["strategy"]["exact_worst_case"] is None
    assert result["strategy"]["workload_error"] == pytest.approx(strategy.error)
    assert result["strategy"]["workload_error"] <= result["best"]["workload_error"] * (1 + 1e-12)
    code, out, _ = call(capsys, "bounds", "--schema", SCHEMA, "--epsilon", "1", "--workload", "marginals:2", "--raw")
    assert code == 0 and "release raw" in out and "in 95% of releases" in out
    assert "best strategy for this workload: weighted marginals " in out
    assert re.search(r"\nbest strategy +— +— *\n", out)  # neither the paper's bound nor a worst case
    # each column of the table keeps one number style (2-way errors run from 10^5 to 10^7: all scientific)
    errors = [line.split("(+/-")[0].split()[-1] for line in out.splitlines() if "in 95% of releases" in line]
    assert len(errors) == 5 and all(re.fullmatch(r"\d\.\d{4}e\+\d\d", e) for e in errors), errors


def test_release_with_the_best_sa_is_shifted_to_the_public_total(capsys, tmp_path):
    out_file = tmp_path / "r.npz"
    code, out, _ = call(capsys, "release", "--demo", "--sa", "best", "--workload", "marginals:2", "--out", str(out_file),
                        "--seed", "1", "-q")
    assert code == 0 and "shifted to the public number of rows" in out
    release = load_release(out_file)
    assert release.sa == best_sa(ReleaseSpec(release.schema, 1.0), marginals(release.schema, (2,))).sa
    assert release.noisy.sum() == pytest.approx(30162, abs=1e-6)  # the sample's public number of rows
    raw_file = tmp_path / "raw.npz"
    assert call(capsys, "release", "--demo", "--raw", "--out", str(raw_file), "--seed", "1", "-q", "--yes")[0] == 0
    assert load_release_metadata(raw_file)["post_processing"]["public_total"] is False
    code, _, err = call(capsys, "release", "--demo", "--sa", "auto", "--workload", "marginals:2", "--out",
                        str(tmp_path / "x.npz"))
    assert code == 2 and "--sa best" in err and "--mechanism best" in err


def test_export_counts_option(capsys, tmp_path):
    release_file = tmp_path / "r.npz"
    assert call(capsys, "release", "--demo", "--out", str(release_file), "--seed", "2", "-q")[0] == 0
    code, out, _ = call(capsys, "export", str(release_file), "--out", str(tmp_path / "c.csv.gz"), "--counts", "nonnegative",
                        "--allow-seeded")
    assert code == 0 and "nonnegative counts" in out
    import pandas as pd

    frame = pd.read_csv(tmp_path / "c.csv.gz", comment="#")  # a seeded (test) release's export says so first
    assert (frame["noisy_count_nonnegative"] >= 0).all()
    assert frame["noisy_count_nonnegative"].sum() == pytest.approx(30162, rel=1e-9)


def test_advise_prints_multipliers_and_writes_the_chosen_schema(capsys, tmp_path):
    args = ["advise", "--schema", SCHEMA, "--workload", "marginals:1,2:age/5,sex,education", "--rows", "30162"]
    code, out, _ = call(capsys, *args)
    assert code == 0
    assert "a count of about" in out and "off by +/-" in out
    # the best strategy by default, as `privelet release` makes it; Privelet+ when asked for
    # (weighted marginals, for this workload of marginals: dropping an attribute they do not hold gains nothing)
    assert "best strategy (weighted marginals age x sex" in out and "drop occupation" not in out
    assert "1. age in bins of 5 values" in out and re.search(r"age +x\d+\.\d\d \(weighted marginals\)", out)
    code, out, _ = call(capsys, *args, "--mechanism", "privelet")
    assert code == 0 and "drop occupation" in out and "x9.00" in out
    code, _, err = call(capsys, *args, "--mechanism", "best", "--sa", "sex")
    assert code == 2 and "--mechanism privelet" in err
    code, out, _ = call(capsys, *args, "--json")
    result = json.loads(out)
    number = next(i for i, s in enumerate(result["suggestions"], 1) if s["description"].startswith("age in bins of 5"))
    assert result["suggestions"][number - 1]["exact_share"] == 1.0
    target = tmp_path / "coarser.json"
    code, out, _ = call(capsys, *args, "--apply", str(number), "--out", str(target))
    assert code == 0 and target.exists()
    assert load_schema(target)["age"].size == 15
    code, _, err = call(capsys, "advise", "--schema", SCHEMA, "--apply", "1")
    assert code == 2 and "go together" in err
    code, _, err = call(capsys, "advise", "--schema", SCHEMA, "--neighbours", "add-remove", "--raw")
    assert code == 2 and "replace-one neighbours only" in err


def test_advise_takes_the_s_a_rules_by_their_names(capsys):
    from privelet_gui.engine import recommend_sa

    args = ["advise", "--schema", SCHEMA, "--workload", "marginals:1,2:age/5,sex,education", "--json"]
    results = {word: json.loads(call(capsys, *args, "--sa", word)[1]) for word in ("recommended", "auto", "sex")}
    assert results["recommended"] == results["auto"]  # 'auto', the earlier name, still works
    assert tuple(results["recommended"]["sa"]) == recommend_sa(load_schema(SCHEMA))
    assert results["sex"]["sa"] == ["sex"]
    # the recommended S_A of each changed schema, and a given S_A less a dropped attribute
    assert any(s["sa"] != results["recommended"]["sa"] for s in results["recommended"]["suggestions"])
    assert all(s["sa"] in (["sex"], []) for s in results["sex"]["suggestions"])


def test_evaluate_refuses_the_best_s_a(capsys, tmp_path):
    from privelet_gui.io import sample_table_path

    code, _, err = call(capsys, "evaluate", str(sample_table_path()), "--schema", SCHEMA, "--epsilons", "1",
                        "--sa", "best", "--out", str(tmp_path / "out"))
    assert code == 2 and "--sa best chooses S_A for a workload" in err


def test_a_level_schema_counts_the_finest_values(tmp_path):
    from privelet_gui.engine import NominalAttribute, Schema
    from privelet_gui.io import count_table, sample_table_path, save_schema

    schema = load_schema(SCHEMA)
    coarse = Schema([a if a.name != "native-country" else NominalAttribute(a.name, a.hierarchy, level=2) for a in schema])
    save_schema(coarse, tmp_path / "s.json")
    again = load_schema(tmp_path / "s.json")
    assert again == coarse and again["native-country"].size == 5
    fine, _ = count_table(sample_table_path(), schema)
    counted, _ = count_table(sample_table_path(), again)
    lay = schema["native-country"].hierarchy.layout
    by_continent = [fine[..., lay.lo[n] : lay.hi[n]].sum(axis=-1) for n in range(1, 6)]
    np.testing.assert_array_equal(counted, np.stack(by_continent, axis=-1))
