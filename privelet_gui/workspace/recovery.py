"""When the workspace's unsaved work is copied to the recovery folder, and when the copy goes.

The rule: whenever closing would ask about unsaved changes
(:attr:`~privelet_gui.workspace.Workspace.has_unsaved_work`), the recovery slot holds the
project as it is now (:meth:`RecoveryKeeper.update`, which the app calls a moment after each
change); once the project is saved, or its changes are discarded, there is no copy. The
slot itself is :class:`~privelet_gui.io.recovery.RecoverySlot`.
"""

from __future__ import annotations

from ..io.recovery import RecoverySlot, RecoveryStore
from .model import Workspace

__all__ = ["RecoveryKeeper"]


class RecoveryKeeper:
    """Keeps ``workspace``'s unsaved work in a slot of ``store``."""

    def __init__(self, workspace: Workspace, store: RecoveryStore):
        self.workspace = workspace
        self.store = store
        self.slot: RecoverySlot = store.slot()

    def update(self) -> str | None:
        """Write the copy, or remove it when nothing is unsaved; what went wrong, or None.

        A failure (a full disk, a folder without write access) is returned, not raised: the
        work in the window is untouched, and the next change tries again.
        """
        try:
            if self.workspace.has_unsaved_work:
                self.slot.write(self.workspace.to_project(), self.workspace.project_path)
            else:
                self.slot.discard()
        except OSError as exc:
            return f"cannot keep a copy of the unsaved work in {self.store.folder}: {exc.strerror or exc}"
        return None

    def close(self) -> None:
        """The app closes with its work saved or discarded: no copy is left."""
        self.slot.discard()
