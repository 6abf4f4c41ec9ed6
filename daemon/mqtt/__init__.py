"""MQTT: aiomqtt 2.x behind a small adapter that publishes only from the journal's outbox."""
