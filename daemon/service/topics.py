"""The table's devices and topics, as its config names them: what it subscribes to and
publishes on (docs/mqtt.md)."""

from __future__ import annotations

from daemon.config import TableConfig
from firmware_protocols import shoe, shuffler, tumbler
from firmware_protocols.common import DeviceKind
from firmware_protocols.wire import Catalogue

DEVICES: dict[str, tuple[Catalogue, DeviceKind]] = {
    "shoe": (shoe.CATALOGUE, DeviceKind.SHOE),
    "shuffler": (shuffler.CATALOGUE, DeviceKind.SHUFFLER),
    "tumbler": (tumbler.CATALOGUE, DeviceKind.TUMBLER),
}

# The table's own topics under {prefix}/{table_id}/ (docs/mqtt.md); devices/NAME and
# replay/to/NAME besides.
TOPICS = ("status", "events", "results", "alerts", "replies", "snapshot")
# What it reads: its commands (and its status, read back by the publisher to see a late
# will); and, in the replay process under the same broker user, replay requests.
SUBSCRIBED = ("cmd/+",)
REPLAY_REQUESTS = "replay/request"


def table_topics(cfg: TableConfig) -> tuple[list[str], list[str]]:
    """What the table subscribes to and what it publishes on, for the broker's ACL
    (tabled doctor checks each): one device topic per configured device, and one reply
    topic standing for every requester's."""
    base = f"{cfg.topic_prefix}/{cfg.table_id}"
    subscribed = [f"{base}/{t}" for t in (*SUBSCRIBED, REPLAY_REQUESTS, "status")]
    published = [f"{base}/{t}" for t in TOPICS]
    published += [f"{base}/devices/{name}" for name in cfg.devices if name in DEVICES]
    published.append(f"{base}/replay/to/tabled-doctor")
    return subscribed, published
