"""The Markdown specs beside each codec, generated from the message definitions.

A firmware author or rig builder reads shoe.md, shuffler.md or tumbler.md; each is
complete on its own. The hex examples are encoded by the codec itself.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import math
from collections import Counter
from dataclasses import fields
from enum import IntEnum

from firmware_protocols import common, shoe, shuffler, tumbler, vectors_v3
from firmware_protocols.commands import host_commands
from firmware_protocols.examples import EXAMPLES, device_of
from firmware_protocols.framing import (
    BYTE_TIME_115200,
    CRC_SIZES,
    MAX_FRAME,
    MAX_PAYLOAD,
    STALL_MARGIN,
    VERSIONS,
    Frame,
    Kind,
    crc16,
    crc32,
)
from firmware_protocols.link import RTO_INITIAL, Stamp, min_rto
from firmware_protocols.wire import Message

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

def _hex(frame: Frame) -> str:
    return frame.to_bytes().hex(" ")


SESS_EXAMPLE = 0x5A  # the session number in version 2 examples


def _framing() -> str:
    rto = min_rto(BYTE_TIME_115200)
    ack1 = Frame(Kind.ACK, ack=6)
    ack2 = Frame(Kind.ACK, ack=6, version=2, sess=0x90)
    nak2 = Frame(Kind.NAK, ack=4, version=2, sess=0x90)
    data1 = Frame(Kind.DATA, 5, 3, common.Heartbeat.MSG_ID,
                  common.Heartbeat(123456, 0, 0).to_bytes())
    data2 = Frame(Kind.DATA, 5, 3, common.Heartbeat.MSG_ID,
                  common.Heartbeat(123456, 0, 0).to_bytes(), 2, 0x90)
    rst_v1 = Frame(Kind.RST, payload=bytes.fromhex("a1b2c3d4"))
    rst = Frame(Kind.RST, payload=bytes.fromhex("11223344 02".replace(" ", "")))
    rstack = Frame(Kind.RSTACK, payload=bytes.fromhex("11223344a1b2c3d402"))
    rst_resume = Frame(Kind.RST, ack=42, payload=bytes.fromhex(
        "55667788" "02" "11223344" "a1b2c3d4"))
    rstack_resume = Frame(Kind.RSTACK, ack=17, payload=bytes.fromhex(
        "55667788" "a1b2c3d4" "02" "a1b2c3d4" "11223344"))
    figures = _error_figures()
    return f"""## Framing

Every frame, in both directions. Bytes 0-7 are the same in every version; versions 2 and
3 add SESS and a longer CRC (a version 3 frame is laid out as a version 2 frame):

| offset | size | field | meaning |
|---|---|---|---|
| 0 | 1 | SOF | start of frame, always `0x7E` |
| 1 | 1 | VER | protocol version of this frame: 1, 2 or 3 |
| 2 | 1 | KIND | 0 DATA, 1 ACK, 2 NAK, 3 RST, 4 RSTACK; other values: the frame is dropped |
| 3 | 1 | SEQ | DATA: sequence number 0-255, wrapping; other kinds: 0 |
| 4 | 1 | ACK | DATA, ACK: the next SEQ expected from the peer (cumulative). NAK: the SEQ to resend from. RST, RSTACK: see *Resuming* |
| 5 | 1 | MSG | DATA: message id (below); other kinds: 0 |
| 6 | 1 | LEN | payload length, 0-{MAX_PAYLOAD} |
| 7 | 1 | HCHK | low byte of CRC-16/CCITT-FALSE over bytes 1-6 (in every version) |
| 8 | 1 | SESS | versions 2 and 3 only: the session number (see *Session*) |
| 8 (v1), 9 (v2, v3) | LEN | PAYLOAD | RST/RSTACK fields, or the message's fields (in version 3 DATA: the stamp, then the fields) |
| after PAYLOAD | 2 (v1), 4 (v2, v3) | CRC | v1: CRC-16/CCITT-FALSE; v2, v3: CRC-32/ISO-HDLC; over every byte from VER to the end of PAYLOAD (HCHK and SESS included), big-endian |

- **CRC-16/CCITT-FALSE**: polynomial 0x1021, initial value 0xFFFF, no reflection, no final
  XOR; check value: CRC of ASCII `123456789` = `0x29B1`.
- **CRC-32/ISO-HDLC** (zlib's, Ethernet's): polynomial 0x04C11DB7 reflected (0xEDB88320),
  initial value 0xFFFFFFFF, input and output reflected, final XOR 0xFFFFFFFF; check value
  `0xCBF43926`. Sent big-endian.
- Sizes: a version 1 frame is 10 + LEN bytes (at most {10 + MAX_PAYLOAD}); a version 2 or 3
  frame 13 + LEN (at most {MAX_FRAME}).

### Receiving

A receiver accepts a frame only if HCHK, LEN (at most {MAX_PAYLOAD}) and CRC all hold.
Otherwise it drops one byte and searches for the next `0x7E`. A candidate whose header
holds but whose bytes have not all arrived is waited for as long as those bytes take on
the line, plus {STALL_MARGIN * 1000:.0f} ms (at 115200 baud 8N1 a byte takes 86.8 µs: a
{MAX_FRAME}-byte frame {MAX_FRAME * BYTE_TIME_115200 * 1000:.1f} ms). Only when that time has
passed, and a complete valid frame starts later in the buffered bytes, is the candidate
garbage: skip to that frame. (Giving up sooner would let a frame carried inside another
frame's payload replace it while the outer frame is still arriving.) A receiver needs a
buffer of one largest frame ({MAX_FRAME} bytes) plus what arrives while it waits.

A frame whose header holds but whose VER the receiver does not speak is reported
("unsupported protocol version N") and otherwise ignored, like any other garbage; it
never ends a session. A DATA, ACK or NAK frame of a version it speaks but not the
session's is ignored (RST and RSTACK are version 1 frames in every session).

### Undetected errors

An error pattern goes undetected when it leaves HCHK and CRC consistent. Counted exactly
by `firmware_protocols/spec.py` (linear syndromes over every bit from VER to the CRC,
HCHK included, LEN excluded since a changed length shifts the CRC) for a `card_drawn`
frame as each version sends it (version 3 with its 12-byte stamp), and turned into the
chance that a frame with random bit errors (bit error rate p) is accepted wrong: the sum
of N(w) p^w (1-p)^(n-w), with patterns of higher weight taken to pass with chance 2^-16
(v1) or 2^-32 (v2, v3):

| version | frame bytes | bits n | undetected of weight 2 / 3 / 4 | weight 5 / 6 | per frame at p = 1e-4 | 1e-3 | 1e-2 | wrong frames a day at 1e-2 and 10 frames/s |
|---|---|---|---|---|---|---|---|---|
{figures}

A wrong frame can turn one valid card into another, so build version 2 or 3 (CRC-32),
not version 1. Version 3's stamp makes the frame longer, and at that length some 6-bit
patterns leave CRC-32 consistent (counted above); every pattern of 5 bits or fewer is
still caught.

### Frame examples

| frame | bytes |
|---|---|
| v1 ACK, ACK = 6 | `{_hex(ack1)}` |
| v2 ACK, ACK = 6, SESS 0x90 | `{_hex(ack2)}` |
| v2 NAK, resend from SEQ 4, SESS 0x90 | `{_hex(nak2)}` |
| v1 DATA `heartbeat`, SEQ 5, ACK 3 | `{_hex(data1)}` |
| v2 DATA `heartbeat`, SEQ 5, ACK 3, SESS 0x90 | `{_hex(data2)}` |
| RST from a version 1 device, boot id 0xA1B2C3D4 | `{_hex(rst_v1)}` |
| RST, boot id 0x11223344, offers version 2, no session before | `{_hex(rst)}` |
| RSTACK to it: accepts 0x11223344, own boot id 0xA1B2C3D4, version 2 | `{_hex(rstack)}` |
| RST after a failed session (0x11223344 with 0xA1B2C3D4), new boot id 0x55667788, had received up to SEQ 41 (ACK = 42) | `{_hex(rst_resume)}` |
| RSTACK to it from 0xA1B2C3D4, which had received up to SEQ 16 (ACK = 17) | `{_hex(rstack_resume)}` |

## Link layer

- **Session.** Either end starts a session with RST; the other answers RSTACK. RST and
  RSTACK are always framed as version 1 (VER = 1, CRC-16), so that every device can read
  them. Their payloads:

  | frame | offset | size | field |
  |---|---|---|---|
  | RST | 0 | 4 | the sender's boot id: u32, random, chosen anew at power-up and after a link failure |
  | RST | 4 | 1 | the newest protocol version the sender speaks (absent: 1) |
  | RST | 5 | 8 | the session that ended before this one, if any: the sender's boot id in it, then its peer's (u32 each) |
  | RSTACK | 0 | 4 | the boot id it accepts (from the RST) |
  | RSTACK | 4 | 4 | its own boot id |
  | RSTACK | 8 | 1 | the session's version: the lower of the RST's offer and the newest it speaks (absent: 1) |
  | RSTACK | 9 | 8 | the session that ended before, as in RST |

  A version 1 implementation sends only the first field(s); a receiver ignores bytes
  after the fields it knows. An RSTACK naming a boot id that is not the receiver's own,
  or a version it did not offer, is ignored. Both ends then restart SEQ at 0 and expect
  SEQ 0. A RST carrying a new boot id while a session is up means the peer started a new
  session (it rebooted, or its link failed). A RST with the boot id already accepted is
  a duplicate: answer RSTACK again, change nothing. Resend RST until RSTACK arrives (after
  the RTO, doubling, at most every 250 ms: on a noisy line few exchanges get through).
  If both ends send RST at once, each answers the other's; both
  pick the same version.
- **Version.** The host speaks versions 1, 2 and 3 and offers 3. The session's version is
  in the RSTACK; DATA, ACK and NAK frames of the session carry it in VER. A device that
  speaks only version 1 or 2 keeps working unchanged. A version 3 frame is laid out as a
  version 2 frame (SESS, CRC-32); what version 3 adds is the stamp (*Event identity*).
- **Session number** (versions 2 and 3). SESS = the low byte of (RST sender's boot id XOR RSTACK
  sender's boot id), e.g. 0x44 XOR 0xD4 = 0x90 for boot ids 0x11223344 and 0xA1B2C3D4. A
  DATA, ACK or NAK frame whose SESS is not the session's is from another session: ignore
  it (in version 1, nothing tells them apart).
- **Before the session.** A DATA, ACK or NAK frame that arrives before the session is up
  (after RST was sent, before RSTACK) is ignored; its sender sends it again. Messages to
  send may be queued meanwhile and go out, in order, once the session is up.
- **Data.** At most 8 DATA frames may be unacknowledged. SEQ arithmetic is modulo 256.
  Deliver a DATA frame only if SEQ is the one expected (E); then send ACK with ACK =
  E + 1. Otherwise let d = (E - SEQ) mod 256: d in 1-127 means an old frame (a duplicate):
  send ACK again (ACK = E), deliver nothing; d in 128-255 means a frame ahead of E (one
  was lost): send a NAK with ACK = E, and no other NAK until E has been delivered or the
  minimum RTO (below) has passed since the last one. A receiver may keep frames ahead of
  E that are within the window ((SEQ - E) mod 256 below 8) and deliver them, in order,
  right after E arrives, with one ACK for all; or drop them (the sender resends them).
  Every DATA frame also carries a cumulative ACK for the other direction.
- **Acknowledgement.** An ACK (or the ACK field of DATA or NAK) with value A acknowledges
  every unacknowledged frame whose SEQ precedes A (those with (A - SEQ) mod 256 in 1 to
  the number unacknowledged); any other value acknowledges nothing.
- **NAK.** A NAK with ACK = A first acknowledges, as above, every frame before A; then,
  if the frame with SEQ A is unacknowledged, the sender resends it and every frame after
  it, oldest first, at once (without waiting for the RTO). A NAK naming no unacknowledged
  frame changes nothing more.
- **Retransmission.** When the oldest unacknowledged frame has waited RTO since its last
  byte went out, resend it and every later unacknowledged frame, oldest first, and double
  the RTO, up to four times the estimate (and 2 s); an acknowledgement that makes progress
  ends the doubling (the RTO returns to the estimate). The estimate is SRTT + 4 RTTVAR,
  or the minimum RTO before the first sample; the RTO starts at 200 ms. Samples follow
  RFC 6298 (SRTT, RTTVAR; Karn's rule: no samples from resent frames). The RTO is never
  below the **minimum RTO** = twice the time of a largest frame on the line
  plus 10 ms, and never below 20 ms: {rto * 1000:.1f} ms at 115200 baud. (A largest frame
  alone takes {MAX_FRAME * BYTE_TIME_115200 * 1000:.1f} ms at 115200; a fixed 20 ms resent
  frames on a clean line.) Round trips are timed from when a frame's last byte leaves,
  not from when it was queued behind others.
- **Rounding.** Times in this text are rounded for reading; compute with the exact
  values and round only what you show. The minimum RTO at 115200 baud is exactly
  2 x {MAX_FRAME} x 10 / 115200 s + 10 ms = {rto * 1000:.3f} ms (a microsecond clock may
  round it to {round(rto * 1e6)} µs), so four times it is {4 * rto * 1000:.1f} ms, not
  4 x {rto * 1000:.1f} = {4 * round(rto * 1000, 1):.1f}; the `rto` vector rounds each
  exact value to 0.1 ms.
- **A new session starts the RTO afresh.** An end that starts a session with RST (at
  power-up, after its link failed, or on a new connection) sets the RTO to the initial
  {RTO_INITIAL * 1000:.0f} ms (never below the minimum RTO), resends its RST from there as
  above, and sends the session's first DATA with it, whatever estimate an earlier
  session left: that estimate timed another session, and the peer may have restarted.
  It may keep SRTT and RTTVAR or start them again (the host starts them again; the
  reference device keeps them): they only cap the doubling until the session's first
  sample. An end that answers a RST with RSTACK keeps its RTO and estimate.
- **Failure.** Timeouts count in a row while the peer is silent: any valid frame of the
  session from the peer resets the count. A timeout fails the link when it is the 8th in
  a row or later and nothing has come from the peer for 5 s or more (on a dead line: at
  the first timeout after 5 s). The end whose link failed starts a new session with a
  new boot id.
- **Resuming: nothing received is lost, nothing is sent twice.** A RST or RSTACK names
  a session that ended before (both boot ids) and puts in its ACK field the next SEQ
  its sender had expected in that session. The receiver, if it was the other end of
  that session, knows its unacknowledged messages with SEQ before that value arrived.
  The session named is the **last one in which the sender received a DATA frame**, not
  merely the last one: a session in which nothing arrived may be one the peer never
  established (its RSTACK was lost), and naming it would tell the peer nothing. (E.g.
  with the host-to-device direction dead, the device's link fails and its RST reaches
  the host, whose RSTACK is lost; the host's next RST names the session before, whose
  messages the device still holds.) If no session carried anything, name none.
  A **device re-sends, in order at the start of the new session, every message of its
  last session that the peer is not known to have received** (all of them if the RST or
  RSTACK names another session or none, e.g. after the host restarted). A device that
  reboots keeps nothing, and sends what it still holds as new events. The **host drops
  what it has already seen**: a card's `draw_no` within its shoe, and the like, tell a
  repeated event. The host does not carry its commands into a new session: a command
  whose answer was lost is followed by `status` once the device answers again (below).
- **A full queue.** A device holds at most a fixed number of messages it has accepted
  from its own firmware and the host has not acknowledged, in flight or queued (the
  reference device: 24, the 8 in flight included). When it holds that many, it refuses
  a new one at once and says so to its caller, which keeps it (its sensor waits) and
  tries again once there is room. A message accepted is never dropped: the room of the
  8 in flight stays reserved, so the re-sending above always fits.
- **Commands and replies.** Host commands carry a `tag` (u8) that the device echoes in its
  reply or in `command_result`. `request_order` is answered by `order_chunk` messages,
  which carry no tag: the first chunk of that shuffle answers it (a refusal comes as a
  tagged `command_result`). Events are unsolicited.
- **Liveness.** Devices send `heartbeat` every second while the link is up. The host
  treats three missed heartbeats as a lost device.

## Event identity (version 3)

The link's resume is an optimisation; this is the guarantee (the end-to-end argument). In
a version 3 session the PAYLOAD of every DATA frame, in both directions, starts with a
12-byte **stamp**, then the message's fields:

| offset | size | field | meaning |
|---|---|---|---|
| 0 | 4 | ORIGIN | a device: its boot id at power-up: random, u32; unlike the link's boot id it stays the same after a link failure, and changes only when the firmware restarts. The host: its boot id in the RST or RSTACK of this session (see *The host's stamp*) |
| 4 | 4 | NUM | a device: the **event number** (below); the host: the **command number**, 1 for its first command under its ORIGIN and one more for each |
| 8 | 4 | RE | in an answer (`identify_reply`, `status_reply`, `command_result`, `inventory_reply`, `order_chunk`): the NUM of the command it answers; otherwise 0 |

- **Event number.** A device numbers its events 1, 2, 3, ... within a boot (ORIGIN), in
  the order it accepts them for sending; every DATA message is an event except
  `heartbeat` and the four direct answers (`identify_reply`, `status_reply`,
  `command_result`, `inventory_reply`), which carry the number of the last event accepted
  before them (0 if none) and take no number of their own. A number is given once: a
  message re-sent in a later session keeps its stamp. So NUM never goes back within a
  boot, and a heartbeat says how many events were sent before it.
- **The host drops what it has already seen.** It keeps, per device, the last (ORIGIN,
  NUM) it acted on, written in the same transaction as what the event produced, and
  drops an event of that ORIGIN at or below it, across its own restarts. An event past
  the next number, or a heartbeat or answer whose NUM is past the last taken, means the
  events between never arrived: they are **lost**, reported, and a round that may depend
  on them waits for the Pit. A new ORIGIN starts again at 1; a device the host never
  saw is taken as it is.
- **Answers.** A device echoes the command's NUM in RE; the host takes an answer only
  for the command it names (a tag, u8, is reused after 255 commands).
- **The host's stamp.** The host's ORIGIN is the boot id it chose when it began to drive
  the device (one per device): it stays the same, and the host goes on numbering its
  commands, across link sessions, whether the device starts one (its RST, answered by
  RSTACK) or the host does (a new connection: a new boot id on the link, the same
  ORIGIN); it changes, and the numbering starts again at 1, only when the host restarts.
  Answers a device re-sends from an earlier session come first in the new one, before
  the answer to any command of it.
- **A command whose answer was lost.** The host keeps its ORIGIN and goes on numbering
  its commands across link sessions. When a command's answer is lost (a timeout, or the
  session ended), the host asks `status` once the device answers again; every message
  the device sent before its `status_reply` has arrived by then. A command whose work
  the device shows by an event (`start_shuffle`: `shuffle_started`) is sent again only
  if none came and the device is ready (state 0), once, **with its stamp unchanged**
  (the same ORIGIN and NUM; a new tag). A device keeps the (ORIGIN, NUM) of the last 16
  commands it carried out (answered with result 0) until it reboots, and answers one of
  them received again with `command_result` 0, without carrying it out twice (the
  reference device prints `repeat NAME`).
- The largest message is 238 bytes in every version (250 less the stamp).

## Questions the earlier text left open

Each rule has a vector in `firmware_protocols/vectors_v3.txt` (record named in brackets).

- **Resume across a chain of sessions** [`resume_chain`]: RST and RSTACK name the last
  session in which the sender *received* a DATA frame, however many empty sessions came
  after it, with the next SEQ it expected there.
- **A full queue** [`full_queue`]: a device that holds as many accepted, unacknowledged
  messages as it can refuses the next at once and tells its caller, which keeps it; it
  never evicts one it accepted, and a new session re-sends them all without eviction.
- **Repeated chunks** [`repeat`]: an `order_chunk` (or any event) received again, with
  the stamp of one already taken, is dropped; without a stamp (versions 1 and 2) the
  host places each card by position, so a repeat changes nothing.
- **Unreadable card codes** [`card`]: a `card` field carries any two bytes 0x21-0x7E
  (the Types table); a byte outside makes the message invalid. In `card_drawn`, a code
  other than a card or `??` is a read the controller cannot trust: the message is
  reported out of range and the card counts as unread (its round waits for the Pit).
- **RST resend** [`rst_times`]: the first RST is resent after the initial RTO, then at
  twice the last interval, but never more than 250 ms apart: 250 ms is a cap, not a floor.
- **RST after a failure** [`rst_after_failure`]: a session started with RST begins at the
  initial RTO whatever estimate the session before left (see *A new session starts the
  RTO afresh*): its RSTs keep the times of `rst_times`.
- **RTO** [`rto`]: the initial RTO is 200 ms (never below the minimum RTO). On each
  timeout it doubles, but never beyond four times the current estimate, nor 2 s; before
  any sample the estimate is the minimum RTO, so on a line that never answered the RTO
  goes from 200 ms to four times the minimum RTO and stays there ({4 * rto * 1000:.1f} ms at 115200
  baud, from the unrounded minimum: see *Rounding*), not to 2 s. Progress returns it to
  the estimate.
- **RST/RSTACK framing** [`frame`]: RST and RSTACK are version 1 frames (VER 1, CRC-16,
  no SESS, no stamp) in every version, whatever the session's version.
- **Frames inside a frame of KIND above 4** [`stream`]: a frame whose header and CRC hold
  but whose KIND is above 4 is dropped whole: the receiver does not search inside it.
- **A version it did not offer** [`rstack_version`]: an RSTACK whose version is 0 or
  newer than the one its receiver offered in its last RST is ignored; the receiver keeps
  sending RST.
- **`str` over 64 bytes** [`invalid`]: a length byte above 64 makes the message invalid,
  as do a `card[]` count above 100 and a `card` byte outside 0x21-0x7E; the receiver
  reports and drops the message.
- **SESS after 256 sessions** [`sess`]: SESS is one byte, so sessions far apart share
  it; it only tells a frame of this session from one of the session just before. Boot ids
  (RST/RSTACK) tell sessions apart, and in version 3 the stamp tells events apart.
- **Which command gets result 1** [`answer`]: another device's command (one of the table
  in *Commands a device does not carry out*) gets `command_result` 1 with its tag; a MSG
  in no spec, a device's message and a payload that does not decode get no answer.
- **A command's values** [`answer`]: a host command has a values column as a device
  message has; a value outside it (e.g. `start_shuffle` of 0 or 11 decks) gets result 2,
  checked first.
- **A chunk past its total** [`past_total`]: an `order_chunk` whose cards run past its
  `total` decodes and is a contradiction: the shoe fails its check.
"""  # noqa: E501 - Markdown table rows are one line each


@functools.cache
def _error_figures() -> str:
    rows = []
    for version in VERSIONS:
        n, counts = _undetected(version)
        crc_bits = 8 * CRC_SIZES[version]
        known = max(counts)
        cells = []
        for p in (1e-4, 1e-3, 1e-2):
            prob = sum(c * p ** w * (1 - p) ** (n - w) for w, c in counts.items())
            beyond = sum(math.comb(n, w) * p ** w * (1 - p) ** (n - w)
                         for w in range(known + 1, n + 1))
            cells.append(prob + beyond * 2.0 ** -crc_bits)
        frame = _card_drawn_frame(version)
        low = " / ".join(str(counts[w]) for w in (2, 3, 4))
        high = " / ".join(str(counts[w]) for w in (5, 6) if w in counts) or "not counted"
        rows.append(f"| {version} | {len(frame)} | {n} | {low} | {high} | {cells[0]:.1e} | "
                    f"{cells[1]:.1e} | {cells[2]:.1e} | {cells[2] * 864_000:.1g} |")
    return "\n".join(rows)


def _card_drawn_frame(version: int) -> bytes:
    """The frame each version sends: in version 3 with its stamp, 12 bytes more to
    protect (the counts depend on the length, not on the values)."""
    m = shoe.CardDrawn(1, "TD", 99, 0x00C0FFEE, False, False)
    stamp = Stamp(0xD0C0FFEE, 1).to_bytes() if version >= 3 else b""
    return Frame(Kind.DATA, 0, 0, m.MSG_ID, stamp + m.to_bytes(), version,
                 SESS_EXAMPLE if version >= 2 else 0).to_bytes()


def _undetected(version: int) -> tuple[int, dict[int, int]]:
    """(bits, {weight: undetected patterns}) for a card_drawn frame of this version."""
    raw = _card_drawn_frame(version)
    crc_size = CRC_SIZES[version]
    body = raw[1:-crc_size]
    check = crc16 if version == 1 else crc32
    zero, zero_head = check(bytes(len(body))), crc16(bytes(6)) & 0xFF
    syndromes = []
    for bit in range(len(body) * 8):
        if bit // 8 == 5:  # LEN
            continue
        e = bytearray(len(body))
        e[bit // 8] = 0x80 >> (bit % 8)
        head = 0
        if bit < 48:
            head = (crc16(bytes(e[:6])) & 0xFF) ^ zero_head
        elif bit < 56:
            head = 0x80 >> (bit % 8)
        syndromes.append((check(bytes(e)) ^ zero) | head << 32)
    syndromes += [1 << j for j in range(8 * crc_size)]
    singles = Counter(syndromes)
    pairs = Counter(a ^ b for a, b in itertools.combinations(syndromes, 2))
    counts = {2: sum(c * (c - 1) // 2 for c in singles.values()),
              3: sum(c * singles.get(x, 0) for x, c in pairs.items()) // 3,
              4: sum(c * (c - 1) // 2 for c in pairs.values()) // 3}
    if version >= 2:  # weights 5 and 6 are exact only while 2-4 are all zero
        triples = Counter(a ^ b ^ c for a, b, c in itertools.combinations(syndromes, 3))
        counts[5] = sum(c * pairs.get(x, 0) for x, c in triples.items()) // 10
        counts[6] = sum(c * (c - 1) // 2 for c in triples.values()) // 10
    return len(syndromes), counts


TYPES = """## Types

All integers are unsigned and big-endian. A payload is its fields in the order listed,
with nothing between them.

| type | size | encoding |
|---|---|---|
| u8, u16, u32, u64 | 1, 2, 4, 8 | unsigned integer, big-endian |
| bool | 1 | 0 = false, 1 = true; any other value makes the message invalid |
| str | 1+n | u8 length n (0-64), then n bytes of UTF-8; invalid UTF-8 makes the message invalid |
| card | 2 | two ASCII bytes: rank `A 2 3 4 5 6 7 8 9 T J Q K`, then suit `S H D C` (e.g. `TD` = 54 44); `??` = unreadable. Any printable ASCII (0x21-0x7E) is carried; the controller judges it |
| card[] | 1+2n | u8 count n (0-100), then n cards |
| u8[N] | N | N u8 values, no count (e.g. u8[3], u8[52]) |
| u16[N] | 2N | N u16 values, no count (e.g. u16[3]) |
| bytes[N] | N | exactly N raw bytes, no count (e.g. bytes[16], bytes[32]) |

**Forward compatibility.** A message is decoded field by field; bytes after the last
field the receiver knows are ignored (a newer version may append fields; never insert or
change them). A payload shorter than its fields, or a field out of its encoding (a bool
of 2, bad UTF-8), makes the message invalid: the receiver reports it and drops it (the
link has already acknowledged it). An unknown MSG is reported and dropped likewise
(see *Commands a device does not carry out*).
"""  # noqa: E501 - Markdown table rows are one line each

# What the field tables cannot say: units, limits, orders, layouts, test vectors.
NOTES: dict[type[Message], str] = {
    shoe.CardDrawn: "`draw_no` counts from 1 after each `shoe_loaded` and never repeats "
                    "within a shoe: the host uses it to drop a re-sent draw. A card the "
                    "reader cannot read is sent as `??` with its confidence; the "
                    "controller decides.",
    tumbler.Settled: f"Dice are in the order of the tumbler's positions 1-3; a value is "
                     f"1-6, or 0 if that die could not be read. `tilt` is in **tenths of a "
                     f"degree** from flat (0-900; 125 = 12.5°). A die is flat when its tilt "
                     f"is at most {tumbler.FLAT_TILT_LIMIT_DECIDEG} "
                     f"({tumbler.FLAT_TILT_LIMIT_DECIDEG / 10:.1f}°); the firmware sets "
                     f"`flat` by that limit and the controller checks the tilt again (a "
                     f"firmware reporting whole degrees would pass a die tilted 12° as "
                     f"flat).",
    shuffler.ShuffleComplete: "The **inventory** has 52 counts in this order (suit-major: "
                              "spades, hearts, diamonds, clubs; within a suit A 2 3 4 5 6 7 8 "
                              "9 T J Q K); index = 13 x suit + rank, both from 0: "
                              + ", ".join(f"{i} {c}" for i, c in
                                          enumerate(shuffler.INVENTORY_ORDER)
                                          if i % 13 in (0, 12)) + "."
                              " The **commitment** (version 3) is SHA-256 over, with "
                              "nothing between: shuffle_id (u32, big-endian, 4 bytes), "
                              "`decks` (u8, as in this message), the total (u16, big-endian: "
                              "the cards in the order, `decks` x 52 for a whole shoe), the "
                              "16-byte nonce (revealed later in `order_chunk`), then every "
                              "card of the shuffled order as its two ASCII bytes, first card "
                              "first. Test vector: {commitment_v3} It binds the shuffler to "
                              "the shoe it certifies: the decks, how many cards, which ones "
                              "and in what order. In a session of version 1 or 2 the "
                              "commitment leaves out `decks` and the total: SHA-256 over "
                              "shuffle_id, the nonce and the order. Test vector: "
                              "{commitment} A device uses the one of its session's version "
                              "(agreed in RST/RSTACK) when the shuffle completes, and the "
                              "host checks the reveal against that one. **What the host "
                              "binds itself**, whichever the version: a reveal whose `total` "
                              "is not `decks` x 52 of this message, or whose order is not "
                              "`decks` of each of the 52 cards, fails the shoe before "
                              "anything is compared (a version 2 shuffler could otherwise "
                              "commit to 4 cards and report a full inventory); an order that "
                              "does not match the commitment, or a reveal cut short, is "
                              "never verified.",
    shuffler.OrderChunk: "Chunks of one reveal are sent in order, `offset` 0 first, each "
                         "continuing where the last ended, until `total` cards are sent; "
                         "every chunk repeats the nonce and the total, which is the "
                         "certified shoe's `decks` x 52. **Repeats.** The host places each "
                         "card at its position (`offset` plus its index in the chunk): a "
                         "chunk received twice, or a whole reveal sent again (the host asks "
                         "again after a reconnection or its own restart, since it does not "
                         "keep chunks), changes nothing; another card at a position already "
                         "revealed, another nonce or another total is a contradiction, and "
                         "the shoe fails its check. **Past the total.** A chunk with a card "
                         "at a position at or past `total` (`offset` plus its count above "
                         "`total`) is a contradiction too, not an invalid message: each "
                         "field is in its values, so it decodes, and the shoe fails its "
                         "check (vector `past_total`). The host checks the revealed order "
                         "against the commitment and the cards dealt, and counts as checked "
                         "only the draws it compared with a read.",
    shuffler.RequestOrder: "Answered by the `order_chunk`s of that shuffle (no tag), or a "
                           "tagged `command_result` refusal. **Which shuffle.** A shuffler "
                           "cannot tell when a shoe it shuffled has ended; the host can, and "
                           "asks for a shuffle's order only once the shoe loaded from it has "
                           "ended, never for the shoe being dealt or a shuffle certified for "
                           "the next one. A device reveals only the shuffle named by "
                           "`shuffle_id`, never \"the current\" or \"the last\" one, and "
                           "never unasked. It refuses with result 3 (wrong state), sending "
                           "no chunk, a shuffle it does not know, one still being shuffled, "
                           "and one still in use as far as it can tell: its cards are still "
                           "in the shuffler (shuffled ahead for the next shoe, not yet taken "
                           "out). A shuffler that shuffled the next shoe ahead thus reveals "
                           "the ended shoe when asked, and never the one being dealt. The "
                           "host treats an `order_chunk` of a shuffle in play as a "
                           "disclosure (alert `shuffle_order_disclosed`) and never uses it "
                           "to verify.",
    common.IdentifyReply: "`protocol_version` is the newest version the firmware speaks; "
                          "the session's version is the one agreed in RST/RSTACK.",
    common.CommandResult: "Which result a command gets: results 1 (another device's "
                          "command) and 2 (a value outside the command's **values**) "
                          "follow *Commands a device does not carry out*; 3, 4 and 5 are "
                          "each command's own. A message that is no command gets no "
                          "`command_result`.",
    shuffler.StartShuffle: "**Decks.** 1 to 10 (the values column) is what a shuffler "
                           "shuffles; while it shuffles, another `start_shuffle` gets "
                           "result 5 (busy). How many decks a game deals (e.g. 4 to 10) "
                           "is the table's configuration, which the host checks before it "
                           "asks: the shuffler does not know the game.",
}


def _commitment_vector() -> str:
    order = ("AS", "KD", "7C")
    nonce = bytes(range(16))
    data = (1001).to_bytes(4, "big") + nonce + "".join(order).encode("ascii")
    digest = shuffler.commitment(1001, nonce, order)
    return (f"shuffle_id 1001, nonce `{nonce.hex()}`, order AS KD 7C: the bytes hashed are "
            f"`{data.hex(' ')}`, and the commitment is `{digest.hex()}`.")


def _commitment_v3_vector() -> str:
    order = ("AS", "KD", "7C")
    nonce = bytes(range(16))
    data = ((1001).to_bytes(4, "big") + (1).to_bytes(1, "big") + len(order).to_bytes(2, "big")
            + nonce + "".join(order).encode("ascii"))
    digest = shuffler.commitment_v3(1001, 1, nonce, order)
    return (f"shuffle_id 1001, decks 1, nonce `{nonce.hex()}`, order AS KD 7C (a total of 3, "
            f"which the host would refuse as a shoe; the bytes are what matter here): the "
            f"bytes hashed are `{data.hex(' ')}`, and the commitment is `{digest.hex()}`.")


def _values(limit: common.Limit) -> str:
    if limit.codes == common.CARD_CODES:
        return "a card (A 2-9 T J Q K, then S H D C) or `??`"
    if limit.free:
        return "any"
    return limit.describe().replace("-", " to ", 1) if not limit.codes else limit.describe()


def _field_table(cls: type[Message]) -> list[str]:
    limits = common.LIMITS.get(cls)
    head = ["| field | type | size | values | meaning |", "|---|---|---|---|---|"]
    out = head if limits else ["| field | type | size | meaning |", "|---|---|---|---|"]
    for f in fields(cls):
        wt = f.metadata["wire"]
        doc = f.metadata["doc"]
        if wt.name.endswith("]") and wt.doc not in doc:  # an array: its elements' meaning
            doc = f"{doc}: {wt.doc}"
        values = f" {_values(limits[f.name])} |" if limits else ""
        out.append(f"| `{f.name}` | {wt.name} | {wt.size} |{values} {doc} |")
    if cls.SENDER == "host" and limits and not all(v.free for v in limits.values()):
        out += ["", "A command with a value outside **values** is refused with "
                    "`command_result` result 2 (bad argument), before anything else is "
                    "checked, and not carried out."]
    elif limits:
        out += ["", "A value outside **values** (each element, for an array) is a firmware "
                    "fault: the host drops the message and raises an alert with the raw "
                    "frame; the session stays up."]
    return out


def _message(cls: type[Message]) -> list[str]:
    example = EXAMPLES[cls]
    v1 = Frame(Kind.DATA, 0, 0, cls.MSG_ID, example.to_bytes())
    v2 = Frame(Kind.DATA, 0, 0, cls.MSG_ID, example.to_bytes(), 2, SESS_EXAMPLE)
    stamp = vectors_v3.example_stamp(cls)
    v3 = vectors_v3.stamped(example, stamp)
    note = NOTES.get(cls, "").replace("{commitment}", _commitment_vector()) \
        .replace("{commitment_v3}", _commitment_v3_vector())
    return [f"### 0x{cls.MSG_ID:02X} `{cls.NAME}` ({cls.SENDER} to "
            f"{'device' if cls.SENDER == 'host' else 'host'})", "", cls.DOC, "",
            *_field_table(cls), "", *([note, ""] if note else []),
            f"Example: `{example!r}`; payload `{example.to_bytes().hex(' ') or '(none)'}`."
            f" As the first DATA frame of a session (SEQ 0, ACK 0): version 1; version 2"
            f" with SESS 0x{SESS_EXAMPLE:02X}; version 3 with SESS 0x{vectors_v3.SESS:02X}"
            f" and the stamp ORIGIN 0x{stamp.origin:08X}, NUM {stamp.number}, RE"
            f" {stamp.reply_to}{' (an answer)' if stamp.reply_to else ''}:", "", "```",
            _hex(v1), _hex(v2), _hex(v3), "```", ""]


def _faults(enum: type[IntEnum]) -> list[str]:
    out = ["| code | fault |", "|---|---|"]
    for e in (*common.CommonFault, *enum):
        out.append(f"| 0x{int(e):04X} | {e.name.lower()} |")
    return out


def _commands() -> str:
    rows = "\n".join(f"| 0x{c.MSG_ID:02X} | `{c.NAME}` | "
                     f"{'every device' if device_of(c) == 'common' else device_of(c)} |"
                     for c in host_commands())
    return f"""## Commands a device does not carry out

The host commands of every device's spec (each payload starts with the command's `tag`):

| MSG | command | device |
|---|---|---|
{rows}

- **Result 1 (unknown command)** answers a command of this table that is not the
  device's (another kind of device's): `command_result` with the command's tag and, in
  version 3, its NUM in RE. The device decodes it by that command's fields, as any
  message (a payload it cannot decode is invalid: reported and dropped, no answer).
- **No answer.** A MSG in no spec, and a message a device sends (received by a device),
  are not commands: reported and dropped, with no `command_result` (nothing says where
  a tag would be). The host waits for its answer as for any lost one.
- **Result 2 (bad argument)** answers a command with a value outside its **values**
  column, checked before anything else (busy or not); the device does nothing else.
- Results 3 (wrong state), 4 (device fault) and 5 (busy) are each command's own (its
  section says which apply). Each rule has `answer` vectors in `vectors_v3.txt`.
"""


def render(device: str) -> str:
    title, transport, messages, faults = DEVICES[device]
    out = [f"# {title}: wire protocol, versions 1, 2 and 3", "",
           "Generated from `firmware_protocols/` by `tabled protocols docs`; do not edit. "
           "Complete on its own: a firmware author needs nothing else. The byte vectors, "
           "for tests, are in two files: `firmware_protocols/vectors.txt` (versions 1 and "
           "2: CRCs, frames, every example message, the receiver's streams, the "
           "commitments) and `firmware_protocols/vectors_v3.txt` (version 3: the stamp, "
           "every example message as a version 3 frame, and a record for each rule of "
           "*Questions the earlier text left open*). A version 2 device needs only the "
           "first.", "",
           f"Transport: {transport}", "", _framing(), TYPES, _commands(),
           "## Messages every device speaks", ""]
    for cls in common.COMMON:
        out += _message(cls)
    out += [f"## {title} messages", ""]
    for cls in messages:
        out += _message(cls)
    out += ["## Fault codes", "", *_faults(faults), ""]
    return "\n".join(out)


# -- the shared byte vectors (firmware_protocols/vectors.txt) ------------------------------

VECTORS_HEADER = """\
# Byte vectors for tabled's device protocol, generated from the same examples as the
# specs by `tabled protocols docs`; do not edit. Read by the Python tests and by the C
# reference device's tests (device/). One record per line, tokens separated by one space:
#
# crc <crc16|crc32> <data hex> <value hex>
# frame <ver> <kind> <seq> <ack> <msg> <sess> <payload hex or -> <frame hex>
# msg <device> <id hex> <name> <type:value>... = <payload hex or -> <v1 frame hex> <v2 frame hex>
#     values: integers and bools in decimal; str as hex of its UTF-8 (- if empty); card as
#     its two characters; card[] as the codes run together (- if none); u8[N] and bytes[N]
#     as hex; u16[N] as decimals joined by commas. Frames: SEQ 0, ACK 0; v2 with SESS 5a.
# stream <input hex> <frame hex>,<frame hex>... (- if none): fed whole to a decoder that
#     has no more bytes coming, these frames come out, in order
# commit <shuffle_id> <nonce hex> <cards joined by commas> <sha256 hex>   (versions 1, 2)
# commit3 <shuffle_id> <decks> <nonce hex> <cards joined by commas> <sha256 hex>
#     version 3: the total hashed is the number of cards
# sha256 <message hex, or a*N for N bytes 'a'> <sha256 hex>   (FIPS 180-4 examples)
"""


def _value(type_name: str, value: object) -> str:
    if type_name == "str":
        assert isinstance(value, str)
        return value.encode("utf-8").hex() or "-"
    if type_name == "card[]":
        assert isinstance(value, tuple)
        return "".join(value) or "-"
    if type_name.startswith("u16["):
        assert isinstance(value, tuple)
        return ",".join(str(v) for v in value)
    if type_name.startswith("u8["):
        assert isinstance(value, tuple)
        return bytes(value).hex()
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, bool):
        return str(int(value))
    return str(value)


def render_vectors() -> str:
    out = [VECTORS_HEADER.rstrip("\n")]
    for name, fn in (("crc16", crc16), ("crc32", crc32)):
        width = 4 if name == "crc16" else 8
        out.append(f"crc {name} {b'123456789'.hex()} {fn(b'123456789'):0{width}x}")
        out.append(f"crc {name} {bytes(range(40)).hex()} {fn(bytes(range(40))):0{width}x}")
    frames = [Frame(Kind.ACK, ack=6), Frame(Kind.ACK, ack=6, version=2, sess=0x90),
              Frame(Kind.NAK, ack=4, version=2, sess=0x90),
              Frame(Kind.DATA, 5, 3, 0x03, bytes.fromhex("0001e240000000")),
              Frame(Kind.DATA, 255, 254, 0x03, bytes.fromhex("0001e240000000"), 2, 0x90),
              Frame(Kind.RST, payload=bytes.fromhex("a1b2c3d4")),
              Frame(Kind.RST, payload=bytes.fromhex("1122334402")),
              Frame(Kind.RSTACK, payload=bytes.fromhex("11223344a1b2c3d402")),
              Frame(Kind.RST, ack=42, payload=bytes.fromhex("556677880211223344a1b2c3d4")),
              Frame(Kind.DATA, 0, 0, 0x42, bytes(range(250)), 2, 1),
              Frame(Kind.DATA, 0, 0, 0x42, b"", 1)]
    for f in frames:
        out.append(f"frame {f.version} {int(f.kind)} {f.seq} {f.ack} {f.msg} {f.sess} "
                   f"{f.payload.hex() or '-'} {f.to_bytes().hex()}")
    for cls, example in EXAMPLES.items():
        values = " ".join(f"{f.metadata['wire'].name}:"
                          f"{_value(f.metadata['wire'].name, getattr(example, f.name))}"
                          for f in fields(cls))
        v1 = Frame(Kind.DATA, 0, 0, cls.MSG_ID, example.to_bytes())
        v2 = Frame(Kind.DATA, 0, 0, cls.MSG_ID, example.to_bytes(), 2, SESS_EXAMPLE)
        out.append(f"msg {device_of(cls)} {cls.MSG_ID:02x} {cls.NAME} {values} = "
                   f"{example.to_bytes().hex() or '-'} {v1.to_bytes().hex()} "
                   f"{v2.to_bytes().hex()}")
    good = Frame(Kind.DATA, 1, 0, 0x20, b"hello")
    good2 = Frame(Kind.ACK, ack=9, version=2, sess=7)
    bad = bytearray(good.to_bytes())
    bad[10] ^= 0x01
    inner = Frame(Kind.ACK, ack=7)
    outer = Frame(Kind.DATA, 3, 0, 0x20, b"ab" + inner.to_bytes() + b"cd", 2, 3)
    foreign = Frame(Kind.DATA, 0, 0, 0x20, b"x", version=9)
    head = bytes([1, 0, 0, 0, 0, 200])
    false_start = bytes([0x7E]) + head + bytes([crc16(head) & 0xFF])
    streams = [
        (b"\x00\xff\x7ejunk" + good.to_bytes() + good2.to_bytes(), [good, good2]),
        (bytes(bad) + good.to_bytes(), [good]),
        (good.to_bytes()[:9] + good.to_bytes(), [good]),
        (outer.to_bytes(), [outer]),
        (foreign.to_bytes() + good2.to_bytes(), [good2]),
        (false_start + good.to_bytes(), [good]),
        (b"\x7e" * 5 + good2.to_bytes() + b"\x7e\x01", [good2]),
        (bytes(range(256)), []),
    ]
    for data, expect in streams:
        out.append(f"stream {data.hex()} "
                   f"{','.join(f.to_bytes().hex() for f in expect) or '-'}")
    order = ("AS", "KD", "7C")
    nonce = bytes(range(16))
    out.append(f"commit 1001 {nonce.hex()} {','.join(order)} "
               f"{shuffler.commitment(1001, nonce, order).hex()}")
    full = tuple(shuffler.INVENTORY_ORDER) * 8
    for sid, decks, cards in ((1001, 1, order), (4242, 8, full)):
        out.append(f"commit3 {sid} {decks} {nonce.hex()} {','.join(cards)} "
                   f"{shuffler.commitment_v3(sid, decks, nonce, cards).hex()}")
    for text in (b"abc", b"", b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"):
        out.append(f"sha256 {text.hex() or '-'} {hashlib.sha256(text).hexdigest()}")
    out.append(f"sha256 a*1000000 {hashlib.sha256(b'a' * 1000000).hexdigest()}")
    return "\n".join(out) + "\n"


def generated() -> dict[str, str]:
    """Every file `tabled protocols docs` writes into firmware_protocols/, by name."""
    files = {f"{device}.md": render(device) for device in DEVICES}
    files["vectors.txt"] = render_vectors()
    files["vectors_v3.txt"] = vectors_v3.render()
    return files
