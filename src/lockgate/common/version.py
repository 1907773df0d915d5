"""lockgate's version, the one the package is built with (pyproject reads it here)."""

__version__ = "0.1.0"
