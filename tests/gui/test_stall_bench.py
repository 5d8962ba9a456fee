"""The GUI stall benchmark runs from start to end (it is a benchmark: its figures are not checked)."""

import os
import subprocess
import sys


def test_the_stall_bench_releases_a_small_table_and_prints_the_gaps(tmp_path):
    # 2 ages: a matrix of 2 x 2 x 512 x 1001 cells instead of the Brazil census's 101 x ...
    result = subprocess.run(
        [sys.executable, "-m", "privelet_gui.gui.stall_bench", "--rows", "3000", "--ages", "2", "--data", str(tmp_path)],
        capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "QT_QPA_PLATFORM": "offscreen", "TMPDIR": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr
    assert "release of 3,000 rows into 2,050,048 cells" in result.stdout, result.stdout
    assert "GUI thread gaps: longest" in result.stdout
    assert [path.name for path in tmp_path.glob("brazil-*")] == ["brazil-3000-2-ages.csv"]  # the whole table, no part left
