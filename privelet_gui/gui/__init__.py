"""The desktop application (PySide6 + pyqtgraph): the only package that imports Qt."""
