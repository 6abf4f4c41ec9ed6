"""Who may command a table, and the signatures on everything it publishes."""
