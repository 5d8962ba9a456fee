"""Accuracy before and after a release: queries, workloads, exact variances, bounds, the advisor."""
