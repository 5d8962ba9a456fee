"""Data files shipped with Privelet Studio (sample table, schema, hierarchies, icons).

This folder is installed as the package ``privelet_gui.resources``; see README.md and
LICENSES.md here for what each file is and under which licence it is redistributed.
"""
