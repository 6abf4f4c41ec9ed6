"""System glue: systemd notification, logs, health and metrics."""
