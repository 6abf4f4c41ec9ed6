"""The tabled command line and its tools."""
