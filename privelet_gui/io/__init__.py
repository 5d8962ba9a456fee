"""Readers and writers: tables, schema and hierarchy files, release files and exports.

No Qt here: the command line and the desktop app both call these functions.
"""
