"""A table known by its rows: a keyed hash of the multiset of its parsed rows.

The privacy ledger must know a table again when its file changes but its rows do not:
another row order, line ends, quoting, a trailing newline, or CSV saved as Parquet. So
:class:`RowFingerprint` hashes the rows as they are parsed, chunk by chunk while the
table is counted, into a value that depends on the multiset of rows alone:

* each cell's text (:func:`~privelet_gui.engine.model.schema.cell_text`: the text a CSV file
  holds, so that Parquet's 20 and CSV's ``"20"`` agree; an empty cell is missing) is
  hashed with SipHash-2-4 keyed by the ledger's salt and the column's name (pandas'
  ``hash_array``; each distinct value of a chunk once, and remembered for the next chunks);
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
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..engine.model.schema import cell_text

__all__ = ["RowFingerprint"]

#: Rows mixed per step: the step's few arrays stay in the CPU's cache.
_BLOCK = 1 << 16
_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)  # odd: multiplying by it is a bijection modulo 2**64
_HALF = np.uint64(32)
#: Distinct values of a column whose hashes are remembered (a few MB at most).
_MEMO_VALUES = 1 << 16
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
        self._memos: dict[tuple[str, str], dict[object, int]] = {}  # (column, dtype) -> value -> hash
        self._missing: dict[str, int] = {}  # column -> the hash of a missing cell

    def reset(self) -> None:
        """Forget the rows added so far (counting starts the table again)."""
        with self._lock:
            self._sums = (0, 0)

    def add(self, chunk: pd.DataFrame) -> None:
        """Add the rows of one chunk of the table."""
        rows = len(chunk)
        columns = [self._cell_hashes(chunk[name], str(name)) for name in sorted(chunk.columns, key=str)]
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
        cells = column.array
        if isinstance(cells, pd.Categorical):  # a CSV file's chunk: each distinct value once
            codes, values = cells.codes, cells.categories
        else:
            codes, uniques = pd.factorize(cells, use_na_sentinel=True)  # missing cells: -1
            values = pd.Index(uniques)
        table = np.empty(len(values) + 1, dtype=np.uint64)
        table[:-1] = self._value_hashes(values, name)
        table[-1] = self._missing_hash(name)
        return table, np.asarray(codes)

    def _missing_hash(self, name: str) -> int:
        known = self._missing.get(name)
        if known is None:
            known = self._missing[name] = int(self._texts_hashes([_MISSING], name)[0])
        return known

    def _value_hashes(self, values: pd.Index, name: str) -> np.ndarray:
        """The hash of each value's cell text, remembered per column (a chunk's distinct
        values are mostly those of the chunks before) up to :data:`_MEMO_VALUES` of them."""
        if values.dtype == object:  # values of any type: each by its own text
            return self._texts_hashes(_texts(values), name)
        memo = self._memos.setdefault((name, str(values.dtype)), {})
        items = values.tolist()
        hashes = [memo.get(item) for item in items]
        new = [i for i, known in enumerate(hashes) if known is None]
        if new:
            fresh = self._texts_hashes(_texts(values[new]), name)
            for i, value in zip(new, fresh.tolist(), strict=True):
                hashes[i] = value
                if len(memo) < _MEMO_VALUES:
                    memo[items[i]] = value
        return np.array(hashes, dtype=np.uint64)

    def _texts_hashes(self, texts: Sequence[str], name: str) -> np.ndarray:
        """SipHash-2-4 of each text, keyed by the salt and the column's name."""
        return pd.util.hash_array(np.asarray(texts, dtype=object), hash_key=self._column_key(name), categorize=False)

    def _column_key(self, name: str) -> str:
        """A column's SipHash key: 16 characters of 7 bits (pandas takes 16 UTF-8 bytes)."""
        key = self._column_keys.get(name)
        if key is None:
            digest = hmac.new(self._key, b"column\x00" + name.encode("utf-8"), hashlib.sha256).digest()
            key = "".join(chr(byte & 0x7F) for byte in digest[:16])
            self._column_keys[name] = key
        return key

def _texts(values: pd.Index) -> list[str]:
    """Each (present) value's text as a CSV file holds it (:func:`cell_text`)."""
    return cell_text(pd.Series(values)).tolist()


def _finalise(values: np.ndarray, scratch: np.ndarray) -> None:
    """Fold a row's hash onto itself, in place: the products above carry low bits up only,
    so the high half is brought down (every bit of the sums then depends on whole rows)."""
    np.right_shift(values, _HALF, out=scratch)
    np.bitwise_xor(values, scratch, out=values)
