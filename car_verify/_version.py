"""The package's version, in one place (the packaging metadata carries the same)."""

__version__ = "0.1.0"
