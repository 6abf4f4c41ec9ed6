"""Durable state: the journal of everything that happened, and the outbox of what to publish."""
