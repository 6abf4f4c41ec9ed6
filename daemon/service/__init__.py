"""The table service, one part per concern; a card goes device -> board -> table ->
effects -> journal -> publisher:

- ``table.TableService``: makes the parts and wires them; the publisher's upstream.
- ``state.ServiceState``: what every part reads (config, journal, table, devices, whether
  the journal can be written) and the tasks they start.
- ``journal_identity``: which journal this is, against the identity file and the broker.
- ``devices.DeviceBoard``: the drivers' listener: events judged and handed to the
  table; device states shown, debounced.
- ``effects.Effects``: what the table decides, journalled first (group commit), then
  devices told; records turned into published payloads.
- ``storage.StorageWatch``: a journal that cannot be written, and the way back.
- ``commands.CommandDesk``: commands authenticated, carried out and answered; reload.
- ``snapshot.Snapshot``: the retained snapshot, folded as messages are stored.
- ``retention.Retention``: table checkpoints, and pruning.
- ``topics``: the devices and topics a config gives the table.
"""

from daemon.service.devices import DEVICE_DEBOUNCE
from daemon.service.table import TableService
from daemon.service.topics import DEVICES, TOPICS, table_topics

__all__ = ["DEVICES", "DEVICE_DEBOUNCE", "TOPICS", "TableService", "table_topics"]
