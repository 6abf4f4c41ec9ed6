"""One message of every kind in the catalogue, with valid example values, and the device
that speaks each. The specs' hex examples, the shared test vectors and the tests encode
these; a module of its own so that the vectors need not import the specs that embed them."""

from __future__ import annotations

from firmware_protocols import common, shoe, shuffler, tumbler
from firmware_protocols.wire import Message

EXAMPLES: dict[type[Message], Message] = {
    common.Identify: common.Identify(tag=1),
    common.IdentifyReply: common.IdentifyReply(1, 1, "TS-2000", "2.4.1", 1, "SH0012345"),
    common.Heartbeat: common.Heartbeat(uptime_ms=123456, state=0, fault=0),
    common.Status: common.Status(tag=2),
    common.StatusReply: common.StatusReply(2, 0, 0, "ok"),
    common.Fault: common.Fault(0x0102, "card jam at gate"),
    common.FaultCleared: common.FaultCleared(0x0102),
    common.CommandResult: common.CommandResult(3, 0, ""),
    common.Door: common.Door(open=True),
    shoe.CardDrawn: shoe.CardDrawn(1, "TD", 99, 0x00C0FFEE, False, False),
    shoe.ShoeLoaded: shoe.ShoeLoaded(416, 0x00C0FFEE),
    shoe.CutCard: shoe.CutCard(346),
    shoe.ShoeEmpty: shoe.ShoeEmpty(416),
    shoe.DealerButton: shoe.DealerButton(1),
    shoe.Tamper: shoe.Tamper(1),
    shoe.Gate: shoe.Gate(locked=False),
    shoe.LockGate: shoe.LockGate(tag=4, locked=False),
    shoe.SetClock: shoe.SetClock(tag=5, unix_ms=1_764_000_000_000),
    shuffler.ShuffleStarted: shuffler.ShuffleStarted(1001, 8),
    shuffler.ShuffleComplete: shuffler.ShuffleComplete(
        1001, 8, (8,) * 52, 0, True, bytes.fromhex("9f" * 32)),
    shuffler.OrderChunk: shuffler.OrderChunk(1001, 0, 416, bytes(range(16)), ("AS", "KD", "7C")),
    shuffler.InventoryReply: shuffler.InventoryReply(6, (8,) * 52, 0),
    shuffler.StartShuffle: shuffler.StartShuffle(tag=7, decks=8),
    shuffler.Inventory: shuffler.Inventory(tag=6),
    shuffler.RequestOrder: shuffler.RequestOrder(tag=8, shuffle_id=1001),
    tumbler.Activated: tumbler.Activated(source=2, armed=True),
    tumbler.Tumble: tumbler.Tumble(count=3),
    tumbler.Settled: tumbler.Settled((3, 3, 5), (4, 12, 0), (1, 1, 1), 98),
    tumbler.Arm: tumbler.Arm(tag=9, armed=True),
    tumbler.TumbleNow: tumbler.TumbleNow(tag=10),
}

DEVICE_MESSAGES = {"shoe": shoe.SHOE_MESSAGES, "shuffler": shuffler.SHUFFLER_MESSAGES,
                   "tumbler": tumbler.TUMBLER_MESSAGES}


def device_of(cls: type[Message]) -> str:
    """The device whose catalogue has the message; ``common`` for the shared ones."""
    for name, messages in DEVICE_MESSAGES.items():
        if cls in messages:
            return name
    return "common"
