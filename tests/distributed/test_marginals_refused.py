"""Weighted marginals are released on one machine: the cluster path refuses them before it starts."""

from __future__ import annotations

import pytest

from privelet_gui.cli import main
from privelet_gui.distributed import release_layout
from privelet_gui.engine import PriveletError, ReleaseSpec
from privelet_gui.io import load_schema, sample_schema_path
from privelet_gui.io.ledger import Ledger


def test_the_layout_of_a_release_of_marginals_is_refused_with_what_to_do():
    spec = ReleaseSpec(load_schema(sample_schema_path()), 1.0, "marginals", marginals=((("age", "sex"), 2),))
    with pytest.raises(PriveletError, match="release the table on one machine"):
        release_layout(spec)


def test_release_dask_refuses_marginals_before_counting_or_spending(capsys, tmp_path):
    code = main(["release", "--demo", "--mechanism", "marginals", "--marginals", "age,sex=2;race", "--dask",
                 "--out", str(tmp_path / "m.zarr")])
    err = capsys.readouterr().err
    assert code == 1 and "not made on a Dask cluster" in err and "(without --dask)" in err, err
    assert "Traceback" not in err and "Dask:" not in err  # no cluster started
    assert not list(tmp_path.iterdir()) and not Ledger().report().tables  # nothing written, nothing spent
