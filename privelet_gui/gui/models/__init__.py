"""Qt item models over engine objects."""
