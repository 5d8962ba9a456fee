"""When the workspace's unsaved work is copied to the recovery folder, and when the copy goes.

The rule: whenever closing would ask about something, the recovery slot holds it as it is now
(:meth:`RecoveryKeeper.update`, which the app calls a moment after each change): the project
while it has unsaved changes (:attr:`~privelet_gui.workspace.Workspace.has_unsaved_work`),
the release while no file holds it (:meth:`~privelet_gui.workspace.Workspace.release_at_risk`).
Once both are saved, or discarded, there is no copy. The
slot itself is :class:`~privelet_gui.io.recovery.RecoverySlot`.
"""

from __future__ import annotations

from pathlib import Path

from ..engine.errors import PriveletError
from ..io.project import Project
from ..io.recovery import KeptRelease, RecoverySlot, RecoveryStore
from .jobs import extra_metadata
from .model import Workspace

__all__ = ["RecoveryKeeper", "Snapshot"]

#: What a copy holds: the project (None: saved) and the file it was last saved to, the
#: release no file holds (None: there is none); or None for no copy at all.
Snapshot = tuple[Project | None, Path | None, KeptRelease | None] | None


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
        """What the copy should hold now (see the module docstring), or None (no copy)."""
        workspace = self.workspace
        project = workspace.to_project() if workspace.has_unsaved_work else None
        outcome = workspace.outcome if workspace.release_at_risk() else None
        if project is None and outcome is None:
            return None
        release = None if outcome is None else KeptRelease(outcome.release, extra_metadata(outcome), outcome.ledger_entry)
        return project, workspace.project_path, release

    def keep(self, snapshot: Snapshot) -> str | None:
        """Write ``snapshot`` (remove the copy for None); what went wrong, or None.

        A failure (a full disk, a folder without write access, a damaged signing key for the
        release's file) is returned, not raised: the work in the window is untouched, and the
        next change tries again.
        """
        try:
            if snapshot is None:
                self.slot.discard()
            else:
                self.slot.write(*snapshot)
        except OSError as exc:
            return f"cannot keep a copy of the unsaved work in {self.store.folder}: {exc.strerror or exc}"
        except PriveletError as exc:
            return f"cannot keep a copy of the unsaved work in {self.store.folder}: {exc}"
        return None

    def update(self) -> str | None:
        """:meth:`keep` the :meth:`snapshot` of now."""
        return self.keep(self.snapshot())

    def close(self) -> None:
        """The app closes with its work saved or discarded: no copy is left."""
        self.slot.discard()
