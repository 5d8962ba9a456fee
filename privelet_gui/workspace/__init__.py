"""The app's state and rules without Qt: what the custodian has set up, step by step.

- :mod:`~privelet_gui.workspace.model`: :class:`Workspace` (table summary, attribute
  settings, privacy settings, the last release; building the :class:`~privelet_gui.engine.ReleaseSpec`).
- :mod:`~privelet_gui.workspace.steps`: when each step is complete, and
  :func:`~privelet_gui.workspace.steps.release_blockers`, what makes the release startable.
- :mod:`~privelet_gui.workspace.tree`: editable hierarchy trees with undoable edits.
- :mod:`~privelet_gui.workspace.history`: undoable changes and a plain undo history.
- :mod:`~privelet_gui.workspace.jobs`: the long-running work (release, export), as plain functions.
- :mod:`~privelet_gui.workspace.recovery`: :class:`RecoveryKeeper`, the copy of unsaved work kept against a crash.

The desktop app (:mod:`privelet_gui.gui`) adapts these to Qt; nothing here imports Qt.
"""

from .events import Event
from .history import Change, FieldChange, History, UndoHistory
from .jobs import ReleaseJob, ReleaseOutcome, classify_file, export_release_file, run_release
from .model import MAX_CELLS, AttributeConfig, Workspace, config_from_attribute, infer_config
from .recovery import RecoveryKeeper
from .steps import STEPS, StepIssue, StepStatus, release_blockers, step_status
from .tree import HierarchyTree, Problem, TreeNode, tree_from_hierarchy, tree_from_json, tree_to_json

__all__ = [
    "MAX_CELLS",
    "STEPS",
    "AttributeConfig",
    "Change",
    "Event",
    "FieldChange",
    "HierarchyTree",
    "History",
    "Problem",
    "RecoveryKeeper",
    "ReleaseJob",
    "ReleaseOutcome",
    "StepIssue",
    "StepStatus",
    "TreeNode",
    "UndoHistory",
    "Workspace",
    "classify_file",
    "config_from_attribute",
    "export_release_file",
    "infer_config",
    "release_blockers",
    "run_release",
    "step_status",
    "tree_from_hierarchy",
    "tree_from_json",
    "tree_to_json",
]
