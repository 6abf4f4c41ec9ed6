"""`tabled display`: a live page for the pit, surveillance and the screen beside the table.

A consumer of the MQTT contract (docs/mqtt.md) and nothing else: it needs only what an
upstream integrator has. ``roads`` and ``dice`` derive what the page shows (pure),
``view`` keeps each table's verified state on it, on the fold every reader of the
payloads shares (``daemon/consumers/fold.py``, ``tabled watch``'s too), ``server`` is
the only part doing I/O.
"""
