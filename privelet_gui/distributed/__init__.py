"""Beyond one machine: count and release on a Dask cluster (the optional ``privelet-gui[dask]``).

A table given as many files (a folder or a glob of Parquet or CSV files) or as a Dask
DataFrame is counted on the cluster's workers (:func:`count_dataset`), and its matrix,
chunked along whole S_A blocks, is released there into a Zarr release folder
(:func:`release_to_zarr`), which queries and exports then read without loading it whole
(:func:`~privelet_gui.io.load_release` opens it lazily). The same code runs on one laptop:
:func:`dask_client` without an address starts a cluster of local processes.

The rules are the engine's (one :class:`~privelet_gui.engine.ReleaseSpec`): the same
encoding and out-of-domain report as :func:`~privelet_gui.io.count_table`, the same noise
calibration, and the same noise streams as :meth:`~privelet_gui.engine.ReleaseSpec.run`, so
that a release depends on its seed only, never on the number of workers. Dask, distributed
and zarr are imported when they are used, not with this package.

Examples
--------
::

    from privelet_gui.distributed import count_dataset, dask_client, release_layout, release_to_zarr
    from privelet_gui.engine import ReleaseSpec
    from privelet_gui.io import load_schema

    spec = ReleaseSpec(load_schema("schema.json"), epsilon=1.0, sa=("Age", "Gender"))
    with dask_client("tcp://scheduler:8786") as client:   # or dask_client() on this machine
        counts = count_dataset(client, "census/*.parquet", spec.schema, release_layout(spec).chunks)
        release, metadata = release_to_zarr(client, counts.matrix, spec, "census.zarr", rows=counts.rows)
"""

from .cluster import dask_client, require_dask
from .counting import DistributedCounts, count_dataset, dataset_files
from .layout import TASK_CELLS, ReleaseLayout, release_layout
from .release import release_to_zarr

__all__ = [
    "TASK_CELLS",
    "DistributedCounts",
    "ReleaseLayout",
    "count_dataset",
    "dask_client",
    "dataset_files",
    "release_layout",
    "release_to_zarr",
    "require_dask",
]
