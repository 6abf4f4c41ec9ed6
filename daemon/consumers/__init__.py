"""The consumer side: what every reader of a table's topics does."""
