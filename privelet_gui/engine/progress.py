"""Progress reporting and cooperative cancellation for long engine calls.

Long calls take ``progress(fraction, stage)`` and ``should_cancel()`` callables.
They report a fraction of their own work in 0..1 with a stage label and, between
chunks or axes, raise :class:`~privelet_gui.engine.errors.Cancelled` once
``should_cancel()`` returns True.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .errors import Cancelled

__all__ = ["CancelCallback", "Progress", "ProgressCallback"]

ProgressCallback = Callable[[float, str], None]
CancelCallback = Callable[[], bool]


@dataclass(frozen=True)
class Progress:
    """A slice ``[start, end]`` of a caller's progress bar, plus its cancel check.

    Parameters
    ----------
    callback : callable ``(fraction, stage)``, optional
        The caller's progress callback: a fraction of its whole bar (0..1) and a stage label.
        None: nothing is reported.
    should_cancel : callable ``() -> bool``, optional
        The caller's cancel check. None: never cancelled.
    start, end : float, default 0.0 and 1.0
        This slice of the caller's bar, as fractions of it (``0 <= start <= end <= 1``).
    """

    callback: ProgressCallback | None = None
    should_cancel: CancelCallback | None = None
    start: float = 0.0
    end: float = 1.0

    def report(self, fraction: float, stage: str) -> None:
        """Report ``fraction`` (0..1) of this slice, then honour a cancel request.

        Parameters
        ----------
        fraction : float
            How much of this slice is done; clipped to 0..1.
        stage : str
            A label for people ("counting", "block 3 of 8").

        Raises
        ------
        Cancelled
            ``should_cancel()`` returned True.
        """
        if self.callback is not None:
            f = min(max(fraction, 0.0), 1.0)
            self.callback(self.start + f * (self.end - self.start), stage)
        self.check()

    def check(self) -> None:
        if self.should_cancel is not None and self.should_cancel():
            raise Cancelled("cancelled by the user")

    def slice(self, start: float, end: float) -> Progress:
        """The sub-range ``[start, end]`` (fractions of this slice) for a sub-step.

        Parameters
        ----------
        start, end : float
            The sub-step's range as fractions of this slice (0..1, ``start <= end``).

        Returns
        -------
        Progress
            A slice with the same callback and cancel check.
        """
        span = self.end - self.start
        return Progress(self.callback, self.should_cancel, self.start + start * span, self.start + end * span)
