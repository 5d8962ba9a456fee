"""Readers and writers: tables, schema and hierarchy files, release files and exports.

No Qt here: the command line and the desktop app both call these functions. Every
error is a :class:`~privelet_gui.engine.PriveletError` (a ``ValueError``) whose message
says what is wrong, where, and how to fix it.

>>> from privelet_gui.io import count_table, load_schema, sample_schema_path, sample_table_path
>>> schema = load_schema(sample_schema_path())
>>> matrix, report = count_table(sample_table_path(), schema)
>>> matrix.shape, report.rows_counted
((74, 2, 5, 16, 14, 41), 30162)
"""

from .atomic import atomic_write, check_writable
from .errors import NotATextTableError, OutputExistsError, ReleaseFileError, TableError, UnverifiedReleaseWarning
from .hierarchies import (
    ARX_DELIMITERS,
    HierarchyLabelWarning,
    hierarchy_from_arx_rows,
    hierarchy_summary,
    hierarchy_to_arx_rows,
    label_dictionary_entries,
    read_arx_hierarchy,
    read_display_labels,
    read_hierarchy,
    read_json_hierarchy,
    write_arx_hierarchy,
    write_hierarchy,
    write_json_hierarchy,
)
from .inference import infer_attribute, infer_schema, infer_table_schema
from .releases import (
    QueryAnswer,
    answer_query,
    export_metadata,
    export_metadata_path,
    export_release,
    load_release,
    load_release_metadata,
    parse_where,
    release_frame,
    release_metadata,
    save_release,
    write_export,
)
from .samples import sample_hierarchy_paths, sample_schema_path, sample_table_path
from .schema import (
    INFERRED_DOMAIN_WARNING,
    SCHEMA_VERSION,
    dumps_schema,
    load_schema,
    save_schema,
    schema_from_json,
    schema_to_json,
)
from .summary import ColumnSummary, TableSummary, suggest_missing_values, summarize_frame, summarize_table
from .tables import (
    DELIMITERS,
    TableOptions,
    count_table,
    iter_table_chunks,
    parse_missing_values,
    preview_table,
    read_table,
    sniff_delimiter,
    sniff_table,
    table_columns,
)
from .workloads import read_workload, workload_from_description, workloads_from_descriptions

__all__ = [
    "ARX_DELIMITERS",
    "DELIMITERS",
    "INFERRED_DOMAIN_WARNING",
    "SCHEMA_VERSION",
    "ColumnSummary",
    "HierarchyLabelWarning",
    "NotATextTableError",
    "OutputExistsError",
    "QueryAnswer",
    "ReleaseFileError",
    "TableError",
    "TableOptions",
    "TableSummary",
    "UnverifiedReleaseWarning",
    "answer_query",
    "atomic_write",
    "check_writable",
    "count_table",
    "dumps_schema",
    "export_metadata",
    "export_metadata_path",
    "export_release",
    "hierarchy_from_arx_rows",
    "hierarchy_summary",
    "hierarchy_to_arx_rows",
    "infer_attribute",
    "infer_schema",
    "infer_table_schema",
    "iter_table_chunks",
    "label_dictionary_entries",
    "load_release",
    "load_release_metadata",
    "load_schema",
    "parse_missing_values",
    "parse_where",
    "preview_table",
    "read_arx_hierarchy",
    "read_display_labels",
    "read_hierarchy",
    "read_json_hierarchy",
    "read_table",
    "read_workload",
    "release_frame",
    "release_metadata",
    "sample_hierarchy_paths",
    "sample_schema_path",
    "sample_table_path",
    "save_release",
    "save_schema",
    "schema_from_json",
    "schema_to_json",
    "sniff_delimiter",
    "sniff_table",
    "suggest_missing_values",
    "summarize_frame",
    "summarize_table",
    "table_columns",
    "workload_from_description",
    "workloads_from_descriptions",
    "write_arx_hierarchy",
    "write_export",
    "write_hierarchy",
    "write_json_hierarchy",
]
