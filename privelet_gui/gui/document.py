"""The open document: the Qt-free :class:`~privelet_gui.workspace.Workspace`, with Qt signals
and its history on a ``QUndoStack``.

Every rule (attribute settings, step completeness, staleness, the release spec) is the
workspace's; this adapter only forwards the workspace's events as Qt signals, keeps the
undo stack the Edit menu and the undo view use, and gives each hierarchy tree its Qt item
model (:meth:`Document.hierarchy_model`).
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QUndoStack

from ..workspace import AttributeConfig, StepStatus, Workspace
from ..workspace.steps import STEPS
from .models.hierarchy_model import HierarchyModel
from .undo import UndoStackHistory

__all__ = ["STEPS", "AttributeConfig", "Document", "StepStatus"]


class Document(QObject, Workspace):
    """The workspace of the window, announcing its changes as Qt signals."""

    tableChanged = Signal()
    attributesChanged = Signal()
    privacyChanged = Signal()
    releaseChanged = Signal()
    stateChanged = Signal()  # after any of the above: step statuses may differ
    modifiedChanged = Signal(bool)
    projectPathChanged = Signal()

    def __init__(self, parent: QObject | None = None):
        stack = QUndoStack()
        # QObject.__init__ passes the keyword on to Workspace.__init__ (cooperative inheritance).
        super().__init__(parent, history=UndoStackHistory(stack))  # type: ignore[call-arg]  # not in the stubs
        stack.setParent(self)
        self.undo_stack = stack
        self._models: dict[int, HierarchyModel] = {}
        events = self.events
        events.table_changed.connect(self.tableChanged.emit)
        events.attributes_changed.connect(self.attributesChanged.emit)
        events.privacy_changed.connect(self.privacyChanged.emit)
        events.release_changed.connect(self.releaseChanged.emit)
        events.state_changed.connect(self.stateChanged.emit)
        events.modified_changed.connect(self.modifiedChanged.emit)
        events.project_path_changed.connect(self.projectPathChanged.emit)

    def hierarchy_model(self, config: AttributeConfig) -> HierarchyModel | None:
        """The Qt item model that shows (and edits) ``config``'s hierarchy tree.

        Models live as long as the document (a view may still show one whose attribute
        changed), one per tree.
        """
        tree = config.hierarchy
        if tree is None:
            return None
        model = self._models.get(id(tree))
        if model is None or model.tree is not tree:
            model = self._models[id(tree)] = HierarchyModel(tree, parent=self)
        return model
