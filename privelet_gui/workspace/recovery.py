"""When the workspace's unsaved work is copied to the recovery folder, and when the copy goes.

The rule: whenever closing would ask about unsaved changes
(:attr:`~privelet_gui.workspace.Workspace.has_unsaved_work`), the recovery slot holds the
project as it is now (:meth:`RecoveryKeeper.update`, which the app calls a moment after each
change); once the project is saved, or its changes are discarded, there is no copy. The
slot itself is :class:`~privelet_gui.io.recovery.RecoverySlot`.
"""

from __future__ import annotations

from pathlib import Path

from ..io.project import Project
from ..io.recovery import RecoverySlot, RecoveryStore
from .model import Workspace

__all__ = ["RecoveryKeeper", "Snapshot"]

#: What a copy holds: the project and the file it was last saved to, or None for no copy.
Snapshot = tuple[Project, Path | None] | None


class RecoveryKeeper:
    """Keeps ``workspace``'s unsaved work in a slot of ``store``.

    :meth:`snapshot` is taken where the workspace lives (the app's GUI thread); :meth:`keep`
    writes it and may run on a worker, one call at a time, so that a slow disk never holds up
    the window.
    """

    def __init__(self, workspace: Workspace, store: RecoveryStore):
        self.workspace = workspace
        self.store = store
        self.slot: RecoverySlot = store.slot()

    def snapshot(self) -> Snapshot:
        """What the copy should hold now: the project and its file, or None (no copy)."""
        if not self.workspace.has_unsaved_work:
            return None
        return self.workspace.to_project(), self.workspace.project_path

    def keep(self, snapshot: Snapshot) -> str | None:
        """Write ``snapshot`` (remove the copy for None); what went wrong, or None.

        A failure (a full disk, a folder without write access) is returned, not raised: the
        work in the window is untouched, and the next change tries again.
        """
        try:
            if snapshot is None:
                self.slot.discard()
            else:
                self.slot.write(*snapshot)
        except OSError as exc:
            return f"cannot keep a copy of the unsaved work in {self.store.folder}: {exc.strerror or exc}"
        return None

    def update(self) -> str | None:
        """:meth:`keep` the :meth:`snapshot` of now."""
        return self.keep(self.snapshot())

    def close(self) -> None:
        """The app closes with its work saved or discarded: no copy is left."""
        self.slot.discard()
