"""The engine's values: attributes, schemas and hierarchies (no numerics)."""
