"""The engine (and everything below the GUI) must import and run with Qt unavailable."""

import subprocess
import sys
import textwrap

BLOCKER = textwrap.dedent(
    """
    import importlib.abc, sys

    class BlockQt(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in {"PySide6", "shiboken6", "pyqtgraph", "PyQt5", "PyQt6"}:
                raise ImportError(f"{name} is blocked: the engine must not import Qt")
            return None

    sys.meta_path.insert(0, BlockQt())
    """
)


def run_blocked(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", BLOCKER + textwrap.dedent(code)], capture_output=True, text=True)


def test_engine_imports_and_releases_without_qt():
    result = run_blocked(
        """
        import numpy as np
        import privelet_gui.engine as engine
        schema = engine.Schema([engine.OrdinalAttribute.integer_range("a", 0, 7)])
        release = engine.privelet_plus(np.ones(8), schema, 1.0)
        assert release.noisy.shape == (8,)
        assert not [m for m in sys.modules if m.startswith(("PySide6", "pyqtgraph", "shiboken6"))]
        print("ok")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_the_blocker_really_blocks():
    result = run_blocked("import PySide6.QtCore")
    assert result.returncode != 0 and "blocked" in result.stderr


def test_importing_the_engine_loads_neither_pandas_nor_pyarrow():
    """Every command line call imports the engine: tables' libraries load only to read tables."""
    result = run_blocked(
        """
        import privelet_gui.engine
        print(sorted(m for m in ("pandas", "pyarrow") if m in sys.modules))
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_the_command_lines_help_loads_no_numpy():
    """``privelet --help`` and ``--version`` start at once: nothing heavy is imported to parse."""
    result = run_blocked(
        """
        import contextlib, io
        from privelet_gui.cli import main
        with contextlib.redirect_stdout(io.StringIO()):
            codes = [main(["--help"]), main(["--version"]), main(["release", "--help"])]
        print(codes, sorted(m for m in ("numpy", "pandas", "pyarrow") if m in sys.modules))
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[0, 0, 0] []"
