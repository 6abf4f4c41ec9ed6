"""tabled: the table-side controller."""

__version__ = "0.1.0"
