"""Step 3, Hierarchies: a tree editor for the hierarchy of each nominal attribute.

The view is a QTreeView over a recursive-filtering proxy over
:class:`~privelet_gui.gui.models.hierarchy_model.HierarchyModel`. Every edit (drag and
drop included) is a command on the document's undo stack.

Each node shows its code and its display label. "Rename" (F2) renames a group (its code is
the custodian's to choose) and labels a value (its code is what the data holds, which a label
never changes); "Label" labels either; "Import labels..." reads them from a data dictionary,
a code,label CSV or a labelled twin of the hierarchy (:func:`~privelet_gui.io.read_display_labels`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QItemSelectionModel, QModelIndex, QPersistentModelIndex, QSortFilterProxyModel, Qt, Signal
from PySide6.QtGui import QAction, QKeySequence, QPainter, QPalette
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QPushButton,
    QSplitter,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QToolBar,
    QToolButton,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from ... import io as pio
from ...engine import Hierarchy, HierarchyError, InternalError, PriveletError
from ...engine.model.builders import flat, group_by_prefix, group_into_ranges, parse_numbers
from ...formatting import counted
from ...qt import icons
from ...qt.widgets import StepHeader, section_label
from ..document import AttributeConfig, Document
from ..models.hierarchy_model import HierarchyModel, TreeNode

if TYPE_CHECKING:
    from ..dialogs import Dialogs

__all__ = ["HierarchyFilterModel", "HierarchyPanel"]


def _best_entry(path: Path, hierarchy: Hierarchy, entries: Sequence[str]) -> str | None:
    """The data dictionary's entry that labels the most codes of ``hierarchy`` (the first on a
    tie), offered first when the custodian picks one; None when none labels any."""
    best, most = None, 0
    for entry in entries:
        try:
            found = len(pio.read_display_labels(path, hierarchy, entry=entry).labels)
        except PriveletError:
            continue
        if found > most:
            best, most = entry, found
    return best


class HierarchyFilterModel(QSortFilterProxyModel):
    """Recursive, case-insensitive filtering of codes and labels that never sorts (leaf order
    is axis order)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setFilterKeyColumn(-1)  # a code or a label may match
        self.setRecursiveFilteringEnabled(True)
        self.setAutoAcceptChildRows(True)
        self.setFilterCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.setDynamicSortFilter(True)


class HierarchyDelegate(QStyledItemDelegate):
    """Draws, right-aligned and muted, how many values a group holds or a value's axis position."""

    def __init__(self, panel: HierarchyPanel):
        super().__init__(panel)
        self._panel = panel

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex) -> None:
        super().paint(painter, option, index)
        model = self._panel.model
        if model is None or not index.isValid() or index.column() != HierarchyModel.CODE:
            return
        node = model.node(self._panel.proxy.mapToSource(index))
        lo, hi = model.leaf_position(node)
        if node.is_group:
            text = f"{hi - lo:,} value{'s' if hi - lo != 1 else ''}" if hi > lo else "empty"
        else:
            text = f"#{lo + 1:,}"
        painter.save()
        selected = bool(option.state & QStyle.StateFlag.State_Selected)
        role = QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.PlaceholderText
        painter.setPen(option.palette.color(role))
        rect = option.rect.adjusted(0, 0, -8, 0)
        painter.drawText(rect, int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter), text)
        painter.restore()


class HierarchyPanel(QWidget):
    """Edit the hierarchies of the included nominal attributes."""

    problemsChanged = Signal()

    def __init__(self, document: Document, dialogs: Callable[[], Dialogs], parent: QWidget | None = None):
        super().__init__(parent)
        self._doc = document
        self._dialogs = dialogs
        self._config: AttributeConfig | None = None
        self.model: HierarchyModel | None = None
        # The groups open when filtering started (their model, their uids): reopened when it ends.
        self._open_before_filter: tuple[HierarchyModel, list[int]] | None = None

        layout = QVBoxLayout(self)
        layout.setSpacing(8)
        layout.addWidget(
            StepHeader(
                3,
                "Hierarchies",
                "Group the values of each nominal attribute. Drag values and groups to move them; the order of "
                "the values is the order of the released table. Every edit can be undone (Ctrl+Z).",
            )
        )
        top = QHBoxLayout()
        top.addWidget(QLabel("Attribute:"))
        self.attribute = QComboBox()
        self.attribute.setAccessibleName("Attribute")
        self.attribute.setMinimumContentsLength(16)
        self.attribute.currentIndexChanged.connect(self._attribute_chosen)
        top.addWidget(self.attribute)
        self.info = QLabel()  # the hierarchy's size and height, over its problems
        self.info.setWordWrap(True)
        # The actions on the whole hierarchy (build, import, export) sit beside the attribute they
        # act on: in the editing toolbar, the last of them fell off its end in a 1280-pixel window.
        self.file_toolbar = QToolBar()
        self.file_toolbar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        top.addWidget(self.file_toolbar)
        top.addStretch(1)
        self.filter = QLineEdit()
        self.filter.setPlaceholderText("Filter values and groups")
        self.filter.setClearButtonEnabled(True)
        self.filter.setAccessibleName("Filter")
        self.filter.setMinimumWidth(self.fontMetrics().horizontalAdvance("M") * 16)
        self.filter.textChanged.connect(self._filter_changed)
        top.addWidget(self.filter)
        layout.addLayout(top)

        self.toolbar = QToolBar()
        self.toolbar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        layout.addWidget(self.toolbar)
        self.act_group = self._action("Group", "Put the selected items into a new group", "Ctrl+G", self.group_selection)
        self.act_new = self._action("New group", "Add an empty group inside the selected group", "Ctrl+Shift+G", self.new_group)
        self.act_rename = self._action(
            "Rename", "Rename the selected group, or label the selected value (its code is what the data holds)",
            QKeySequence(Qt.Key.Key_F2), self.rename_current,
        )
        self.act_label = self._action(
            "Label", "Give the selected value or group a label to show (its code, and what it counts, stay)",
            "Ctrl+L", self.label_current,
        )
        self.act_delete = self._action(
            "Delete group", "Delete the selected group; its children move up", QKeySequence.StandardKey.Delete, self.delete_selection
        )
        self.act_remove = self._action("Remove values", "Remove the selected values from the domain", "Shift+Del", self.remove_values)
        self.toolbar.addSeparator()
        self.act_up = self._action("Move up", "Move the selection up among its siblings", "Alt+Up", self.move_up)
        self.act_down = self._action("Move down", "Move the selection down among its siblings", "Alt+Down", self.move_down)
        self.toolbar.addSeparator()
        self.act_expand = self._action("Expand all", "Show every level", "Ctrl+E", lambda: self.view.expandAll())
        self.act_collapse = self._action("Collapse all", "Show the top level only", "Ctrl+Shift+E", self.collapse_all)
        build = QToolButton()
        build.setText("Build")
        build.setToolTip("Replace the hierarchy with one built from the current values")
        build.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QMenu(build)
        self.act_flat = menu.addAction("Flat (every value under the root)", self.build_flat)
        self.act_prefix = menu.addAction("Group by code prefix...", self.build_prefix)
        self.act_ranges = menu.addAction("Group consecutive values into ranges...", self.build_ranges)
        build.setMenu(menu)
        self.file_toolbar.addWidget(build)
        self.act_import = self._action("Import hierarchy...", "Read a hierarchy from an ARX CSV or JSON file", None,
                                       self.import_hierarchy, self.file_toolbar)
        self.act_import_labels = self._action(
            "Import labels...",
            "Read labels for the codes from a data dictionary (JSON), a code,label CSV or a labelled twin of this "
            "hierarchy (an ARX file with labels in place of the codes)",
            None, self.import_labels, self.file_toolbar,
        )
        self.act_export = self._action("Export...", "Write the hierarchy as ARX CSV or JSON", None, self.export_hierarchy,
                                       self.file_toolbar)

        splitter = QSplitter(Qt.Orientation.Horizontal)
        self.proxy = HierarchyFilterModel(self)
        self.view = QTreeView()
        self.view.setModel(self.proxy)
        self.view.setItemDelegate(HierarchyDelegate(self))
        self.view.setHeaderHidden(False)
        self.view.setUniformRowHeights(True)  # fluid with hundreds of leaves
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setAllColumnsShowFocus(True)
        self.view.header().setStretchLastSection(True)
        self.view.header().setMinimumSectionSize(self.fontMetrics().horizontalAdvance("M") * 8)
        self.view.setDragDropMode(QAbstractItemView.DragDropMode.InternalMove)
        self.view.setDefaultDropAction(Qt.DropAction.MoveAction)
        self.view.setDragEnabled(True)
        self.view.setAcceptDrops(True)
        self.view.setDropIndicatorShown(True)
        self.view.setEditTriggers(QAbstractItemView.EditTrigger.EditKeyPressed | QAbstractItemView.EditTrigger.SelectedClicked)
        self.view.setContextMenuPolicy(Qt.ContextMenuPolicy.ActionsContextMenu)
        for action in (self.act_group, self.act_new, self.act_rename, self.act_label, self.act_delete, self.act_remove,
                       self.act_up, self.act_down):
            self.view.addAction(action)
        self.view.setAccessibleName("Hierarchy tree")
        self.view.selectionModel().selectionChanged.connect(self._update_actions)
        splitter.addWidget(self.view)

        side = QWidget()
        side_layout = QVBoxLayout(side)
        side_layout.setContentsMargins(6, 0, 0, 0)
        side_layout.addWidget(self.info)
        side_layout.addWidget(section_label("Problems"))
        self.problems = QListWidget()
        self.problems.setWordWrap(True)
        self.problems.setAccessibleName("Problems")
        self.problems.itemActivated.connect(self._problem_activated)
        self.problems.itemClicked.connect(self._problem_activated)
        side_layout.addWidget(self.problems, 1)
        self.add_missing = QPushButton("Add the missing values")
        self.add_missing.setToolTip("Append the data values that are not in the hierarchy under the root")
        self.add_missing.clicked.connect(self.add_missing_values)
        side_layout.addWidget(self.add_missing)
        self.add_missing_grouped = QPushButton("Add each in a group of its own")
        self.add_missing_grouped.setToolTip(
            "Put each missing value in a group of its own, at the depth of the other values: it then answers "
            "the same level queries (a lone child costs no privacy)"
        )
        self.add_missing_grouped.clicked.connect(lambda: self.add_missing_values(grouped=True))
        side_layout.addWidget(self.add_missing_grouped)
        self.labels_note = QLabel()
        self.labels_note.setWordWrap(True)
        side_layout.addWidget(self.labels_note)
        self.ordinal_note = QLabel()
        self.ordinal_note.setWordWrap(True)
        side_layout.addWidget(self.ordinal_note)
        splitter.addWidget(side)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 2)
        layout.addWidget(splitter, 1)

        document.attributesChanged.connect(self._document_changed)
        document.tableChanged.connect(self._document_changed)
        self._document_changed()

    def _action(
        self, text: str, tip: str, shortcut: str | QKeySequence | QKeySequence.StandardKey | None,
        slot: Callable[[], object], toolbar: QToolBar | None = None,
    ) -> QAction:
        action = QAction(text, self)
        if shortcut is not None:
            keys = QKeySequence(shortcut)
            action.setToolTip(f"{tip} ({keys.toString(QKeySequence.SequenceFormat.NativeText)})")
            action.setShortcut(keys)
            action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        else:
            action.setToolTip(tip)
        action.triggered.connect(lambda _=False: slot())
        (toolbar or self.toolbar).addAction(action)
        self.addAction(action)
        return action

    # -- attribute selection -------------------------------------------------------------------
    def nominal_configs(self) -> list[AttributeConfig]:
        return [c for c in self._doc.included() if c.kind == "nominal" and c.hierarchy is not None]

    def _document_changed(self) -> None:
        configs = self.nominal_configs()
        wanted = [c.column for c in configs]
        current = [self.attribute.itemData(i) for i in range(self.attribute.count())]
        if wanted != current:
            selected = self._config.column if self._config is not None else None
            self.attribute.blockSignals(True)
            self.attribute.clear()
            for config in configs:
                self.attribute.addItem(config.name, config.column)
            index = self.attribute.findData(selected) if selected in wanted else 0
            self.attribute.setCurrentIndex(index if configs else -1)
            self.attribute.blockSignals(False)
            self._attribute_chosen()
        elif self._config is not None and self._doc.hierarchy_model(self._config) is not self.model:
            self._attribute_chosen()  # the attribute's hierarchy model was replaced
        else:
            self._refresh_side()
        self._refresh_combo_icons()

    def _refresh_combo_icons(self) -> None:
        for i in range(self.attribute.count()):
            try:
                config = self._doc.config(self.attribute.itemData(i))
            except KeyError:
                continue
            bad = bool(self._doc.hierarchy_problems(config))
            self.attribute.setItemIcon(i, icons.icon("warning" if bad else "done"))

    def set_attribute(self, column: str) -> bool:
        """Show the hierarchy of ``column`` (a nominal attribute); False if it is not one."""
        index = self.attribute.findData(column)
        if index < 0:
            return False
        self.attribute.setCurrentIndex(index)
        return True

    def _attribute_chosen(self) -> None:
        column = self.attribute.currentData()
        config = None
        if column is not None:
            try:
                config = self._doc.config(column)
            except KeyError:
                config = None
        self._config = config
        self.labels_note.clear()
        self.model = self._doc.hierarchy_model(config) if config is not None else None
        self.proxy.setSourceModel(self.model)  # type: ignore[arg-type]  # None (no attribute): an empty tree
        if self.model is not None:
            self.view.expandToDepth(0)
            # Codes are short: their column fits the widest in sight, labels take the rest.
            self.view.resizeColumnToContents(HierarchyModel.CODE)
            self.view.setColumnWidth(HierarchyModel.CODE, min(self.view.columnWidth(HierarchyModel.CODE) + 80, 420))
        self._refresh_side()

    # -- side panel --------------------------------------------------------------------------------
    def _refresh_side(self) -> None:
        config, model = self._config, self.model
        self.problems.clear()
        ordinal = [c.name for c in self._doc.included() if c.kind == "ordinal"]
        self.ordinal_note.setText(
            f"Ordinal attributes ({', '.join(ordinal)}) use the Haar wavelet and need no hierarchy." if ordinal else ""
        )
        if config is None or model is None:
            self.info.setText("No nominal attribute is included." if self._doc.configs else "Open a table first.")
            self.add_missing.hide()
            self.add_missing_grouped.hide()
            self._update_actions()
            return
        try:
            h = model.to_hierarchy()
            self.info.setText(f"{h.size:,} values, height h = {h.height}, h* = {h.rho}")
        except HierarchyError:
            self.info.setText(f"{len(model.leaves()):,} values (fix the problems to use it)")
        problems = self._doc.hierarchy_problems(config)
        for problem in problems:
            item = QListWidgetItem(icons.icon("error" if problem.kind != "missing" else "warning"), problem.message)
            item.setData(Qt.ItemDataRole.UserRole, problem.uid)
            item.setData(Qt.ItemDataRole.UserRole + 1, problem.value)
            self.problems.addItem(item)
        if not problems:
            item = QListWidgetItem(icons.icon("done"), "No problems: this hierarchy is ready.")
            item.setFlags(Qt.ItemFlag.ItemIsEnabled)
            self.problems.addItem(item)
        missing = self._doc.values_missing_from_hierarchy(config)
        self.add_missing.setVisible(bool(missing))
        self.add_missing.setText(f"Add the {counted(len(missing), 'missing value')} under the root")
        self.add_missing_grouped.setVisible(bool(missing) and model.tree.leaf_depth() > 2)
        self._update_actions()
        self.problemsChanged.emit()

    def _problem_activated(self, item: QListWidgetItem) -> None:
        uid = item.data(Qt.ItemDataRole.UserRole)
        if uid is None or self.model is None:
            return
        try:
            node = self.model.node_by_uid(int(uid))
        except KeyError:
            return
        self.select_nodes([node])

    # -- selection helpers --------------------------------------------------------------------------
    def selected_nodes(self) -> list[TreeNode]:
        """The selected nodes, each once, in the order of the selection."""
        if self.model is None:
            return []
        nodes: dict[int, TreeNode] = {}
        for index in self.view.selectionModel().selectedIndexes():
            node = self.model.node(self.proxy.mapToSource(index))
            nodes.setdefault(node.uid, node)
        return list(nodes.values())

    def current_node(self) -> TreeNode | None:
        if self.model is None:
            return None
        index = self.view.currentIndex()
        return self.model.node(self.proxy.mapToSource(index)) if index.isValid() else None

    def proxy_index(self, node: TreeNode) -> QModelIndex:
        if self.model is None:
            raise InternalError("the hierarchy editor has no tree to show a node of")
        return self.proxy.mapFromSource(self.model.index_of(node))

    def select_nodes(self, nodes: list[TreeNode]) -> None:
        if self.model is None or not nodes:
            return
        if any(not self.proxy_index(n).isValid() for n in nodes):
            self.filter.clear()
        selection = self.view.selectionModel()
        selection.clearSelection()
        for node in nodes:
            index = self.proxy_index(node)
            parent = index.parent()
            while parent.isValid():
                self.view.expand(parent)
                parent = parent.parent()
            selection.select(index, QItemSelectionModel.SelectionFlag.Select | QItemSelectionModel.SelectionFlag.Rows)
        first = self.proxy_index(nodes[0])
        selection.setCurrentIndex(first, QItemSelectionModel.SelectionFlag.NoUpdate)
        self.view.scrollTo(first)

    def _update_actions(self) -> None:
        nodes = self.selected_nodes()
        has_model = self.model is not None
        root = self.model.root if self.model is not None else None
        movable = [n for n in nodes if n is not root]
        for action in (self.act_expand, self.act_collapse, self.act_import, self.act_export, self.act_flat,
                       self.act_prefix, self.act_ranges, self.act_import_labels):
            action.setEnabled(has_model)
        self.act_group.setEnabled(bool(movable))
        self.act_rename.setEnabled(len(nodes) == 1)
        self.act_label.setEnabled(len(nodes) == 1)
        self.act_delete.setEnabled(any(n.is_group and n is not root for n in nodes))
        self.act_remove.setEnabled(any(not n.is_group for n in nodes))
        self.act_new.setEnabled(has_model)
        self.act_up.setEnabled(bool(movable))
        self.act_down.setEnabled(bool(movable))

    # -- edits ---------------------------------------------------------------------------------------
    def group_selection(self) -> None:
        if self.model is None:
            return
        nodes = [n for n in self.selected_nodes() if n is not self.model.root]
        group = self.model.add_group(nodes)
        if group is not None:
            self.select_nodes([group])
            self.view.expand(self.proxy_index(group))
            self.view.edit(self.proxy_index(group))

    def new_group(self) -> None:
        if self.model is None:
            return
        current = self.current_node()
        parent = current if current is not None and current.is_group else (current.parent if current else None)
        group = self.model.add_empty_group(parent or self.model.root)
        if group is not None:
            self.select_nodes([group])
            self.view.edit(self.proxy_index(group))

    def rename_current(self) -> None:
        """Edit the current group's code, or the current value's label (a value keeps its code)."""
        node = self.current_node()
        if node is not None:
            self._edit(node, HierarchyModel.CODE if node.is_group else HierarchyModel.LABEL)

    def label_current(self) -> None:
        """Edit the current node's display label."""
        node = self.current_node()
        if node is not None:
            self._edit(node, HierarchyModel.LABEL)

    def _edit(self, node: TreeNode, column: int) -> None:
        index = self.proxy_index(node).siblingAtColumn(column)
        self.view.setCurrentIndex(index)
        self.view.edit(index)

    def delete_selection(self) -> None:
        if self.model is None:
            return
        groups = [n for n in self.selected_nodes() if n.is_group and n is not self.model.root]
        if len(groups) > 1:
            self._doc.undo_stack.beginMacro(f"Delete {len(groups)} groups")
        for group in reversed(groups):
            self.model.delete_group(group)
        if len(groups) > 1:
            self._doc.undo_stack.endMacro()

    def remove_values(self) -> None:
        if self.model is None:
            return
        leaves = [n for n in self.selected_nodes() if not n.is_group]
        self.model.delete_leaves(leaves)

    def move_up(self) -> None:
        if self.model is not None:
            nodes = self.selected_nodes()
            if self.model.move_up(nodes):
                self.select_nodes(nodes)

    def move_down(self) -> None:
        if self.model is not None:
            nodes = self.selected_nodes()
            if self.model.move_down(nodes):
                self.select_nodes(nodes)

    def collapse_all(self) -> None:
        self.view.collapseAll()
        self.view.expandToDepth(0)

    def add_missing_values(self, *, grouped: bool = False) -> None:
        """Add the values missing from the hierarchy (the data's, and the one missing cells count
        as) under the root: as leaves there, or (``grouped``) each in a group of its own at the
        depth of the other leaves."""
        if self.model is None or self._config is None:
            return
        missing = self._doc.values_missing_from_hierarchy(self._config)
        if missing and grouped:
            self.model.tree.add_leaves_at_depth(missing)
        elif missing:
            self.model.add_leaves(missing)

    def _filter_changed(self, text: str) -> None:
        if text and self._open_before_filter is None and self.model is not None:
            self._open_before_filter = (self.model, self._open_groups())
        self.proxy.setFilterFixedString(text)
        if text:
            self.view.expandAll()  # every match in sight
        else:
            self._reopen_groups()

    def _open_groups(self) -> list[int]:
        """Uids of the expanded groups (only open groups are walked: a big closed tree costs nothing)."""
        if self.model is None:
            raise InternalError("the hierarchy editor has no tree whose groups could be open")
        uids: list[int] = []
        stack = [self.proxy.index(row, 0) for row in range(self.proxy.rowCount())]
        while stack:
            index = stack.pop()
            if self.view.isExpanded(index):
                uids.append(self.model.node(self.proxy.mapToSource(index)).uid)
                stack.extend(self.proxy.index(row, 0, index) for row in range(self.proxy.rowCount(index)))
        return uids

    def _reopen_groups(self) -> None:
        """After filtering: the groups open before it, plus the way to what was selected meanwhile."""
        saved, self._open_before_filter = self._open_before_filter, None
        self.view.collapseAll()
        if saved is None or saved[0] is not self.model or self.model is None:  # another attribute meanwhile
            self.view.expandToDepth(0)
            return
        for uid in saved[1]:
            try:
                node = self.model.node_by_uid(uid)
            except KeyError:  # deleted while filtering
                continue
            self.view.expand(self.proxy_index(node))
        for index in self.view.selectionModel().selectedRows():
            parent = index.parent()
            while parent.isValid():
                self.view.expand(parent)
                parent = parent.parent()
        if self.view.currentIndex().isValid():
            self.view.scrollTo(self.view.currentIndex())

    # -- builders, import and export -----------------------------------------------------------------------
    def _replace(self, hierarchy: object, text: str, *, public: bool = False) -> bool:
        """Replace the tree with ``hierarchy`` (one undoable change); an edited tree only once
        the custodian says so (True: replaced)."""
        if self.model is None or self._config is None:
            raise InternalError("the hierarchy editor replaced a tree while editing none")
        if self.model.tree.is_edited() and not self._dialogs().confirm(
            "Replace the hierarchy?",
            f"The hierarchy of {self._config.name!r} has groups or edits of yours, which this replaces "
            f"({text}). Edit > Undo brings them back. Replace it?",
        ):
            return False
        stack = self._doc.undo_stack
        stack.beginMacro(text)
        self.model.replace(hierarchy, text)  # type: ignore[arg-type]
        if public and self._config.domain_from_data:
            self._doc.confirm_domain_public(self._config.column, "Domain from a public hierarchy")
        stack.endMacro()
        return True

    def _leaves(self) -> list[str]:
        if self.model is None:
            raise InternalError("the hierarchy editor has no tree to take the leaves of")
        return list(self.model.leaves())

    def build_flat(self) -> None:
        if self.model is None:
            return
        try:
            self._replace(flat(self._leaves(), root=self.model.root.label), "Flat hierarchy")
        except HierarchyError as exc:
            self._dialogs().error("Cannot build a flat hierarchy", exc)

    def build_prefix(self, lengths: str | None = None) -> None:
        if self.model is None:
            return
        if lengths is None:
            lengths = self._dialogs().get_text(
                "Group by code prefix",
                "Prefix lengths in characters, e.g. 4, 2 groups 11-1011 under 11-1, and 11-1 under 11:",
                "4, 2",
            )
            if lengths is None:
                return
        try:
            hierarchy, moved = group_by_prefix(self._leaves(), parse_numbers(lengths), root=self.model.root.label)
        except HierarchyError as exc:
            self._dialogs().error("Cannot group by prefix", exc)
            return
        if moved and not self._dialogs().confirm(
            "Reorder values?",
            "Some codes with the same prefix are not next to each other, so grouping them changes the order of "
            "the values (the order of the released table). Continue?",
        ):
            return
        self._replace(hierarchy, f"Group by prefixes {lengths}")

    def build_ranges(self, widths: str | None = None) -> None:
        if self.model is None:
            return
        if widths is None:
            widths = self._dialogs().get_text(
                "Group into ranges",
                "Range widths in values, e.g. 5, 10, 20 groups 5 consecutive values, then 10, then 20:",
                "5",
            )
            if widths is None:
                return
        try:
            hierarchy = group_into_ranges(self._leaves(), parse_numbers(widths), root=self.model.root.label)
        except HierarchyError as exc:
            self._dialogs().error("Cannot group into ranges", exc)
            return
        self._replace(hierarchy, f"Group into ranges of {widths}")

    def import_hierarchy(self, path: Path | None = None) -> bool:
        """Replace the current attribute's hierarchy with one read from a file (undoable)."""
        if self.model is None:
            self._dialogs().error("Cannot import a hierarchy", "choose a nominal attribute first (Attributes step)")
            return False
        if path is None:
            path = self._dialogs().open_path("hierarchy", "Import hierarchy")
            if path is None:
                return False
        try:
            hierarchy = pio.read_hierarchy(path)
        except (PriveletError, OSError) as exc:
            self._dialogs().error(f"Cannot read the hierarchy {Path(path).name}", exc)
            return False
        return self._replace(hierarchy, f"Import {Path(path).name}", public=True)

    def import_labels(self, path: Path | None = None, entry: str | None = None) -> int | None:
        """Label the current attribute's codes from a labels file (undoable, one edit); the
        number of nodes labelled, or None when nothing was read. A data dictionary's entry is
        the attribute's column unless ``entry`` names another; the custodian is asked for one
        when that entry has no code labels."""
        if self.model is None or self._config is None:
            self._dialogs().error("Cannot import labels", "choose a nominal attribute first (Attributes step)")
            return None
        if path is None:
            path = self._dialogs().open_path("labels", "Import labels")
            if path is None:
                return None
        try:
            hierarchy = self.model.to_hierarchy()
        except HierarchyError as exc:
            self._dialogs().error("Fix the hierarchy before labelling it", exc)
            return None
        try:
            entries = pio.label_dictionary_entries(path) if Path(path).suffix.lower() == ".json" else ()
            if entries and entry is None:
                entry = self._config.column if self._config.column in entries else self._dialogs().choose_item(
                    "labels-entry", "Which entry?",
                    f"{Path(path).name} is a data dictionary with no code labels for {self._config.column!r}; "
                    "the labels of which entry?",
                    list(entries), _best_entry(path, hierarchy, entries),
                )
                if entry is None:
                    return None
            found = pio.read_display_labels(path, hierarchy, entry=entry)
        except (PriveletError, OSError) as exc:
            self._dialogs().error(f"Cannot read labels from {Path(path).name}", exc)
            return None
        if not found.labels:
            self._dialogs().error(
                f"No labels for this hierarchy in {Path(path).name}",
                f"none of its {len(found.unknown):,} codes is a value or group of {self._config.name!r}",
            )
            return None
        changed = self.model.tree.set_display_labels(found.labels, f"Import labels from {Path(path).name}")
        skipped = f"; {counted(len(found.unknown), 'code')} of the file {'is' if len(found.unknown) == 1 else 'are'} not in the hierarchy" if found.unknown else ""
        self.labels_note.setText(f"Labelled {counted(changed, 'code')} from {Path(path).name} ({found.source}){skipped}.")
        return changed

    def export_hierarchy(self, path: Path | None = None) -> bool:
        if self.model is None:
            return False
        try:
            hierarchy = self.model.to_hierarchy()
        except HierarchyError as exc:
            self._dialogs().error("Fix the hierarchy before exporting it", exc)
            return False
        force = path is None
        if path is None:
            name = self._config.name if self._config is not None else "hierarchy"
            path = self._dialogs().save_path("hierarchy", "Export hierarchy", f"hierarchy_{name}.csv")
            if path is None:
                return False
        try:
            pio.write_hierarchy(hierarchy, path, force=force)
        except (PriveletError, OSError) as exc:
            self._dialogs().error(f"Cannot write {Path(path).name}", exc)
            return False
        return True
