"""Privelet Studio: differentially private release of frequency tables (Privelet, Privelet+)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("privelet-gui")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+unknown"
