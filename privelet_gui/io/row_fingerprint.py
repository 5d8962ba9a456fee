"""A table known by its rows: a keyed hash of the multiset of its parsed rows.

The privacy ledger must know a table again when its file changes but its rows do not:
another row order, line ends, quoting, a trailing newline, or CSV saved as Parquet. So
:class:`RowFingerprint` hashes the rows as they are parsed, chunk by chunk while the
table is counted, into a value that depends on the multiset of rows alone:

* each cell's text (:func:`~privelet_gui.engine.schema.cell_text`: the text a CSV file
  holds, so that Parquet's 20 and CSV's ``"20"`` agree; an empty cell is missing) is
  hashed with SipHash-2-4 keyed by the ledger's salt and the column's name (pandas'
  ``hash_array``, which hashes each distinct value of a chunk once);
* a row's hash mixes its cells' hashes, in the order of the column names (so the order
  of the columns in the file does not matter, and which value sits in which column does);
* the fingerprint is the pair (sum of the rows' hashes, sum of their squares), each
  modulo 2**64: 128 bits, the same whatever the order of the rows or of the chunks.

Cells are hashed as parsed, before any schema's binning, missing-value mapping or domain
check: the same table released under two schemas is the same table. What is hashed is the
columns a release reads (the schema's); the file's own fingerprint covers a release of
other columns of the same file, and a named dataset anything else.
"""

from __future__ import annotations

import hashlib
import hmac
import threading

import numpy as np
import pandas as pd

from ..engine.schema import cell_text

__all__ = ["RowFingerprint"]

#: Rows mixed per step: the step's few arrays stay in the CPU's cache.
_BLOCK = 1 << 16
_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)  # odd: multiplying by it is a bijection modulo 2**64
_MIX_1 = np.uint64(0xBF58476D1CE4E5B9)  # splitmix64's finaliser
_MIX_2 = np.uint64(0x94D049BB133111EB)
_SHIFTS = (np.uint64(30), np.uint64(27), np.uint64(31))
#: What a missing cell is hashed as: no text a cell can hold (a parsed cell has no NUL).
_MISSING = "\x00missing"


class RowFingerprint:
    """The multiset hash of a table's parsed rows, keyed (see the module docstring).

    :meth:`add` each chunk of the table (any order, from any thread), then read
    :meth:`hexdigest`. The ledger makes one keyed with its salt
    (:meth:`~privelet_gui.io.ledger.Ledger.row_fingerprint`) for
    :func:`~privelet_gui.io.count_table` to fill while it counts.

    Examples
    --------
    >>> one, two = RowFingerprint(b"k" * 32), RowFingerprint(b"k" * 32)
    >>> one.add(pd.DataFrame({"age": ["1", "2"], "sex": ["F", "M"]}))
    >>> two.add(pd.DataFrame({"sex": ["M", "F"], "age": [2, 1]}))  # other order, typed
    >>> one.hexdigest() == two.hexdigest()
    True
    """

    def __init__(self, key: bytes):
        self._key = key
        self._lock = threading.Lock()
        self._sums = (0, 0)
        self._column_keys: dict[str, str] = {}

    def reset(self) -> None:
        """Forget the rows added so far (counting starts the table again)."""
        with self._lock:
            self._sums = (0, 0)

    def add(self, chunk: pd.DataFrame) -> None:
        """Add the rows of one chunk of the table."""
        rows = len(chunk)
        names = sorted(str(name) for name in chunk.columns)
        columns = [self._cell_hashes(chunk[name], name) for name in names]
        total = square = np.uint64(0)
        mixed = np.empty(min(rows, _BLOCK), dtype=np.uint64)
        scratch = np.empty_like(mixed)
        indices = np.empty(len(mixed), dtype=np.intp)  # take() is fastest with intp indices
        mixed.fill(0)  # rows of no column (the mixing below overwrites it)
        with np.errstate(over="ignore"):
            for start in range(0, rows, _BLOCK):
                stop = min(start + _BLOCK, rows)
                row, spare, index = mixed[: stop - start], scratch[: stop - start], indices[: stop - start]
                for number, (table, codes) in enumerate(columns):
                    np.copyto(index, codes[start:stop], casting="unsafe")
                    # code -1 (missing) is the table's last entry
                    np.take(table, index, out=spare if number else row, mode="wrap")
                    if number:
                        np.bitwise_xor(row, spare, out=row)
                    np.multiply(row, _MULTIPLIER, out=row)
                _finalise(row, spare)
                total += np.add.reduce(row, dtype=np.uint64)
                np.multiply(row, row, out=row)
                square += np.add.reduce(row, dtype=np.uint64)
        with self._lock:
            self._sums = ((self._sums[0] + int(total)) % 2**64, (self._sums[1] + int(square)) % 2**64)

    def hexdigest(self) -> str:
        """The fingerprint of the rows added so far: 32 hexadecimal digits."""
        with self._lock:
            return "".join(f"{part:016x}" for part in self._sums)

    def _cell_hashes(self, column: pd.Series, name: str) -> tuple[np.ndarray, np.ndarray]:
        """``(table, codes)``: each row's cell hash is ``table[codes]``, the table's last entry
        being the hash of a missing cell (code -1)."""
        if isinstance(column.dtype, pd.CategoricalDtype):  # a CSV file's chunk: each distinct text once
            codes, values = column.cat.codes.to_numpy(), column.cat.categories
        else:
            codes, values = pd.factorize(column, use_na_sentinel=True)
        if pd.api.types.is_string_dtype(values.dtype) and not pd.api.types.is_object_dtype(values.dtype):
            text = np.asarray(values, dtype=object)  # text already, never missing (factorize and categories drop it)
        else:
            texts = cell_text(pd.Series(values))  # numbers as a CSV file holds them
            text = texts.to_numpy(dtype=object, na_value=_MISSING)
        key = self._column_key(name)
        table = np.empty(len(text) + 1, dtype=np.uint64)
        table[:-1] = pd.util.hash_array(text, hash_key=key, categorize=False)
        table[-1] = pd.util.hash_array(np.array([_MISSING], dtype=object), hash_key=key, categorize=False)[0]
        return table, np.asarray(codes)

    def _column_key(self, name: str) -> str:
        """A column's SipHash key: 16 characters of 7 bits (pandas takes 16 UTF-8 bytes)."""
        key = self._column_keys.get(name)
        if key is None:
            digest = hmac.new(self._key, b"column\x00" + name.encode("utf-8"), hashlib.sha256).digest()
            key = "".join(chr(byte & 0x7F) for byte in digest[:16])
            self._column_keys[name] = key
        return key


def _finalise(values: np.ndarray, scratch: np.ndarray) -> None:
    """splitmix64's finaliser, in place: every bit of a row's hash depends on every bit of
    its cells' (so the sums below mix whole rows, not columns)."""
    first, second, third = _SHIFTS
    np.right_shift(values, first, out=scratch)
    np.bitwise_xor(values, scratch, out=values)
    np.multiply(values, _MIX_1, out=values)
    np.right_shift(values, second, out=scratch)
    np.bitwise_xor(values, scratch, out=values)
    np.multiply(values, _MIX_2, out=values)
    np.right_shift(values, third, out=scratch)
    np.bitwise_xor(values, scratch, out=values)
