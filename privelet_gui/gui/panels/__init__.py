"""The panels of the main window, one per workflow step."""
