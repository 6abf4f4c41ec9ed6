"""`tabled display`: a live page for the pit, surveillance and the screen beside the table.

A consumer of the MQTT contract (docs/mqtt.md) and nothing else: it needs only what an
upstream integrator has. ``roads`` and ``dice`` derive what the page shows (pure),
``fold`` folds the facts every reader of the payloads shares (``tabled watch`` too),
``view`` keeps each table's verified state on it, ``server`` is the only part doing I/O.
"""
