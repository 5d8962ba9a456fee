"""Accuracy before and after a release: workloads, exact errors, the best S_A and strategy, the
advisor. Box queries and their variance bounds sit below the release spec, which answers and
bounds with them: :mod:`~privelet_gui.engine.queries`, :mod:`~privelet_gui.engine.bounds`."""
