"""The built-in user guide and the About text."""

from __future__ import annotations

import platform

from .. import __version__
from ..workspace.model import EPSILON_FORMAT_TEXT

__all__ = ["GUIDE_HTML", "about_html"]

GUIDE_HTML = """
<h2>Privelet Studio: user guide</h2>
<p>Privelet Studio publishes a <b>frequency table</b> (how many records have each combination of values) under
<b>differential privacy</b>, with the Privelet and Privelet+ mechanisms of Xiao, Wang and Gehrke (ICDE 2010).
Every range-count query on the released table (for example "women aged 30 to 39 in sales occupations") is
answered with noise whose size is known in advance.</p>

<h3>1. Data</h3>
<p>Open a CSV, TSV, gzip-compressed CSV or Parquet file (<i>File &gt; Open table</i>, or drop it on the window).
Check the preview: the delimiter, encoding and header row are detected and can be changed. The table is read on
this computer only. The summary lists each column's distinct values and a suggested type.</p>

<h3>2. Attributes</h3>
<p>Include the columns to release and give each a <b>public domain</b>: the values it can take, known without
looking at the data. <b>Ordinal</b> attributes have ordered values: an integer range, numeric bins (start, stop
and width, or edges such as 0, 1, 10000, 50000; an open first or last bin holds every number below or above them;
values outside can stop the release, be clamped into the first or last value, whose label then says so, or be
dropped) or an explicit list. <b>Nominal</b>
attributes have a hierarchy of groups. A domain taken from the data is marked <i>not private</i>: the presence
of a rare value can reveal a person. Replace it with a public code list, or confirm that it is public.</p>
<p>The table shows |A| (domain size), h (hierarchy height), and the factors P(A) and H(A) of the noise bound.</p>

<h3>3. Hierarchies</h3>
<p>Edit the hierarchy of each nominal attribute. Drag values and groups to move them (several at once with
Ctrl or Shift), <i>Group</i> the selection (Ctrl+G), rename a group in place (F2: its code, which is yours to
choose), label a value or a group (Ctrl+L; F2 on a value edits its label, since its code is what the data holds),
delete a group (its children move up), move items up or down (Alt+Up, Alt+Down), and filter by text. Beside
the attribute: import and export ARX CSV (<tt>value;group;...;*</tt>) or JSON hierarchies (replacing a tree you
have grouped or edited asks first), <i>Import labels</i> from a data dictionary, and <i>Build</i> a flat
hierarchy, group codes by prefix (SOC <tt>11-1011</tt> &rarr; <tt>11-1</tt> &rarr; <tt>11</tt>) or group
consecutive values into ranges. The
order of the values is the order of the released table: the editor never reorders values unless you move them.
The problems list shows data values missing from the hierarchy, empty groups and duplicate labels; the step is
complete when none remain. Every edit can be undone (Ctrl+Z) and redone (Ctrl+Shift+Z).</p>

<h3>4. Privacy</h3>
<p>Choose epsilon with the slider (logarithmic, 0.01 to 10) or type it: """ + EPSILON_FORMAT_TEXT + """. A number
the field cannot take is refused with the reason, never changed into another. Smaller is more private and noisier.
Choose what neighbouring tables differ by: <i>replace one record</i> (the paper's notion) or <i>add or remove
one record</i>. Choose S_A, the attributes released without a transform; the recommended set never makes the
bound worse. The table compares Basic, Privelet and Privelet+: the paper's bound and the exact worst-case noise
variance of a range-count query, and the error you can expect on the worst query 95% of the time.
<i>Target accuracy</i> finds the smallest epsilon that achieves an error you choose.</p>

<h3>5. Release</h3>
<p><i>Run release</i> counts the table and adds the noise in the background; you can keep working or cancel.
The summary shows epsilon, S_A, the sensitivity rho, the noise scale lambda, the bounds and the time taken.
Export the release as a release file (.npz, with its settings), or as CSV or Parquet in long format (one row
per cell). Only noisy counts are ever written. The error preview's views computed from the true data (measured
errors, true marginals) ask before they are exported: their noisy side alone, or everything, marked in the file
itself as true data for your machine only. Each release spends its epsilon: releasing the same table twice
with epsilon 1 costs epsilon 2.</p>

<h3>Projects</h3>
<p><i>File &gt; Save project</i> stores the table's location and reading options, the attributes with their
domains and hierarchies, and the privacy settings, as JSON (<tt>.privelet</tt>). It never stores data.</p>
"""


def about_html() -> str:
    from PySide6 import __version__ as pyside_version
    from PySide6.QtCore import qVersion

    return f"""
<h3>Privelet Studio {__version__}</h3>
<p>Differentially private frequency tables with Privelet and Privelet+<br>
(X. Xiao, G. Wang, J. Gehrke: <i>Differential Privacy via Wavelet Transforms</i>, ICDE 2010).</p>
<p>Python {platform.python_version()}, Qt {qVersion()}, PySide6 {pyside_version}</p>
<p><b>Licences</b><br>
Privelet Studio: MIT licence.<br>
Qt and PySide6: LGPL v3. pyqtgraph: MIT. NumPy and pandas: BSD 3-clause. Apache Arrow (pyarrow): Apache 2.0.<br>
Bundled sample: UCI Adult data set (Kohavi and Becker), CC BY 4.0; ARX generalization hierarchies,
Apache 2.0 (ARX Data Anonymization Tool).</p>
"""
