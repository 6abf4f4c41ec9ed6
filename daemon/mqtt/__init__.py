"""MQTT: aiomqtt 2.x behind a small adapter that publishes the journal's outbox, and directly
only what the journal does not number (docs/architecture.md, "What goes through the outbox")."""
