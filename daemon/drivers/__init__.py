"""Device drivers: handshake, heartbeat supervision, reconnect with backoff, frame dumps."""
