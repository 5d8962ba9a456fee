"""Per-axis strategies: how each attribute's axis is measured and reconstructed (docs/math.md, "Strategies")."""
