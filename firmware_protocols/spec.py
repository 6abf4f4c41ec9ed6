"""The Markdown specs beside each codec, generated from the message definitions.

A firmware author or rig builder reads shoe.md, shuffler.md or tumbler.md; each is
complete on its own. The hex examples are encoded by the codec itself.
"""

from __future__ import annotations

from dataclasses import fields
from enum import IntEnum

from firmware_protocols import common, shoe, shuffler, tumbler
from firmware_protocols.framing import MAX_PAYLOAD, PROTOCOL_VERSION, Frame, Kind
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

DEVICES = {
    "shoe": ("Card-reading dealing shoe", "RS-232 or USB-CDC serial, 115200 baud 8N1, no "
             "flow control.", shoe.SHOE_MESSAGES, shoe.ShoeFault),
    "shuffler": ("Electronic card shuffler", f"USB 2.0 full speed, vendor class, interface 0 "
                 f"with bulk OUT 0x{shuffler.EP_OUT:02X} and bulk IN 0x{shuffler.EP_IN:02X}; "
                 f"the byte stream is the same framing as on serial. Default ids "
                 f"{shuffler.USB_VID:04x}:{shuffler.USB_PID:04x} (configurable).",
                 shuffler.SHUFFLER_MESSAGES, shuffler.ShufflerFault),
    "tumbler": ("Dice tumbler", "RS-232 serial, 115200 baud 8N1, no flow control.",
                tumbler.TUMBLER_MESSAGES, tumbler.TumblerFault),
}

FRAMING = f"""## Framing

Every frame, in both directions:

| offset | size | field | meaning |
|---|---|---|---|
| 0 | 1 | SOF | start of frame, always `0x7E` |
| 1 | 1 | VER | protocol version, `{PROTOCOL_VERSION}` |
| 2 | 1 | KIND | 0 DATA, 1 ACK, 2 NAK, 3 RST, 4 RSTACK |
| 3 | 1 | SEQ | DATA: sequence number 0-255, wrapping; else 0 |
| 4 | 1 | ACK | the next SEQ expected from the peer (cumulative acknowledgement) |
| 5 | 1 | MSG | DATA: message id (below); else 0 |
| 6 | 1 | LEN | payload length, 0-{MAX_PAYLOAD} |
| 7 | 1 | HCHK | low byte of CRC-16/CCITT-FALSE over bytes 1-6 |
| 8 | LEN | PAYLOAD | the message fields, big-endian |
| 8+LEN | 2 | CRC | CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF) over bytes 1..7+LEN, big-endian |

A receiver accepts a frame only if HCHK, LEN and CRC all hold. Otherwise it drops one
byte and searches for the next `0x7E`. If a candidate frame is incomplete but a complete
valid frame starts later in the buffered bytes, the candidate is garbage. A frame with a
different VER is reported as "unsupported protocol version" and otherwise ignored.

## Link layer

- **Session.** Either end starts with RST, payload a random u32 boot id. The peer answers
  RSTACK with payload (the boot id it accepts, u32; its own boot id, u32), and both
  restart SEQ at 0. A RST carrying a new boot id means the peer restarted. A RST with the
  boot id already accepted is a duplicate: answer RSTACK again, change nothing. Resend
  RST until RSTACK arrives (200 ms, doubling to 2 s).
- **Data.** At most 8 DATA frames may be unacknowledged. Deliver a DATA frame only if its
  SEQ is the one expected; then send ACK with ACK = SEQ+1. For an old SEQ (a duplicate),
  send ACK again. For a SEQ ahead of the expected one, send one NAK with ACK = the
  expected SEQ, and no more until the gap closes.
- **Retransmission.** The sender resends every unacknowledged frame, oldest first, when
  the oldest is unacknowledged for RTO, or at once on NAK. RTO starts at 200 ms, is
  estimated from round trips like TCP (RFC 6298, Karn's rule), and doubles on each
  timeout up to 2 s. After 8 timeouts in a row the link has failed; start a new session
  with a new boot id.
- **Commands and replies.** Host commands carry a `tag` (u8) that the device echoes in
  its reply or in `command_result`. Events are unsolicited.
- **Liveness.** Devices send `heartbeat` every second while the link is up. The host
  treats three missed heartbeats as a lost device.
"""


def _field_table(cls: type[Message]) -> list[str]:
    out = ["| field | type | size | meaning |", "|---|---|---|---|"]
    for f in fields(cls):
        wt = f.metadata["wire"]
        out.append(f"| `{f.name}` | {wt.name} | {wt.size} | {f.metadata['doc']} |")
    return out


def _message(cls: type[Message]) -> list[str]:
    example = EXAMPLES[cls]
    frame = Frame(Kind.DATA, 0, 0, cls.MSG_ID, example.to_bytes()).to_bytes()
    return [f"### 0x{cls.MSG_ID:02X} `{cls.NAME}` ({cls.SENDER} to "
            f"{'device' if cls.SENDER == 'host' else 'host'})", "", cls.DOC, "",
            *_field_table(cls), "", f"Example: `{example!r}`", "", "```",
            frame.hex(" "), "```", ""]


def _faults(enum: type[IntEnum]) -> list[str]:
    out = ["| code | fault |", "|---|---|"]
    for e in (*common.CommonFault, *enum):
        out.append(f"| 0x{int(e):04X} | {e.name.lower()} |")
    return out


def render(device: str) -> str:
    title, transport, messages, faults = DEVICES[device]
    out = [f"# {title}: wire protocol, version {PROTOCOL_VERSION}", "",
           "Generated from `firmware_protocols/` by `tabled protocols docs`; do not edit.", "",
           f"Transport: {transport}", "", FRAMING,
           "## Types", "",
           "u8/u16/u32/u64: unsigned big-endian. bool: one byte, 0 or 1. str: u8 length then "
           "UTF-8, at most 64 bytes. card: two ASCII characters, rank (A 2-9 T J Q K) then "
           "suit (S H D C).", "",
           "## Messages every device speaks", ""]
    for cls in common.COMMON:
        out += _message(cls)
    out += [f"## {title} messages", ""]
    for cls in messages:
        out += _message(cls)
    out += ["## Fault codes", "", *_faults(faults), ""]
    return "\n".join(out)
