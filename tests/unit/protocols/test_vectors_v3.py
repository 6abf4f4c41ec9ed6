"""vectors_v3.txt read back as a firmware author would (issue 24): the stamp, every
message as a version 3 frame, and a record per rule the spec now answers."""

from __future__ import annotations

import itertools
import struct
from pathlib import Path

from firmware_protocols import common, shoe, shuffler, tumbler
from firmware_protocols.endpoint import Endpoint, Numbered
from firmware_protocols.examples import EXAMPLES
from firmware_protocols.framing import Decoder, Frame, Kind
from firmware_protocols.link import Link, Stamp
from firmware_protocols.wire import Catalogue, MessageError

VECTORS = Path(__file__).parents[3] / "firmware_protocols" / "vectors_v3.txt"
CATALOGUES = {"shoe": shoe.CATALOGUE, "shuffler": shuffler.CATALOGUE,
              "tumbler": tumbler.CATALOGUE, "common": shoe.CATALOGUE}


def records(kind: str) -> list[list[str]]:
    return [line.split()[1:] for line in VECTORS.read_text().splitlines()
            if line.split()[:1] == [kind]]


def v3_endpoint(catalogue: Catalogue) -> Endpoint:
    """A host endpoint in a version 3 session with SESS 0x5A (boot ids 0x5A, 0)."""
    e = Endpoint(catalogue, Link(0x5A))
    e.connect(0.0)
    e.feed(Frame(Kind.RSTACK, payload=struct.pack(">IIB", 0x5A, 0, 3)).to_bytes(), 0.0)
    assert e.link.session_version == 3
    return e


def test_every_example_message_decodes_from_its_v3_frame_with_its_stamp() -> None:
    by_name = {cls.NAME: ex for cls, ex in EXAMPLES.items()}
    rows = records("msg3")
    assert len(rows) == len(EXAMPLES)
    for device, _, name, origin, number, re, raw in rows:
        [event] = v3_endpoint(CATALOGUES[device]).feed(bytes.fromhex(raw), 0.0)
        assert event == Numbered(by_name[name], Stamp(int(origin), int(number), int(re)))


def test_stamp_bytes() -> None:
    for origin, number, re, raw in records("stamp"):
        assert Stamp(int(origin), int(number), int(re)).to_bytes().hex() == raw


def test_a_repeated_event_is_one_event_for_the_host() -> None:
    from daemon.drivers.seen import Seen  # noqa: PLC0415

    [[raw]] = records("repeat")
    seen, acted = Seen(), 0
    for _ in range(2):
        [event] = v3_endpoint(shuffler.CATALOGUE).feed(bytes.fromhex(raw), 0.0)
        assert isinstance(event, Numbered)
        verdict = seen.judge("shuffler", event.stamp.origin, event.stamp.number, True)
        if not verdict.repeat:
            assert verdict.mark is not None
            seen.take("shuffler", verdict.mark)
            acted += 1
    assert acted == 1


def test_a_chunk_past_its_total_decodes_and_the_host_finds_a_contradiction() -> None:
    from daemon.round.reveal import assemble  # noqa: PLC0415

    [[raw]] = records("past_total")
    [event] = v3_endpoint(shuffler.CATALOGUE).feed(bytes.fromhex(raw), 0.0)
    assert isinstance(event, Numbered) and isinstance(event.message, shuffler.OrderChunk)
    assert not common.out_of_range(event.message)
    got = assemble(event.message.shuffle_id, [event.message])
    assert got.order is None and any("past its total" in c for c in got.contradictions)


def test_an_odd_card_code_decodes_and_is_out_of_range() -> None:
    [[raw, code]] = records("card")
    [event] = v3_endpoint(shoe.CATALOGUE).feed(bytes.fromhex(raw), 0.0)
    assert isinstance(event, Numbered) and isinstance(event.message, shoe.CardDrawn)
    assert event.message.card == code and common.out_of_range(event.message)


def test_invalid_payloads_are_invalid() -> None:
    for device, msg_id, payload in records("invalid"):
        try:
            CATALOGUES[device].decode(int(msg_id, 16), bytes.fromhex(payload))
        except MessageError:
            continue
        raise AssertionError(f"{device} {msg_id} {payload} decoded")


def test_a_frame_of_kind_above_4_hides_the_frame_inside_it() -> None:
    [[data, want]] = records("stream")
    assert want == "-"
    assert not [f for f in Decoder().feed(bytes.fromhex(data)) if isinstance(f, Frame)]


def test_rst_resend_is_capped_at_250_ms_and_the_rto_at_four_estimates() -> None:
    [[times]] = records("rst_times")
    steps = list(map(int, times.split(",")))
    gaps = [b - a for a, b in itertools.pairwise(steps)]
    assert gaps[0] == 200 and max(gaps) == 250
    [[rtos]] = records("rto")
    values = list(map(float, rtos.split(",")))
    assert values[0] == 200.0 and max(values) < 2000


def test_sessions_sharing_a_sess_byte() -> None:
    [[a, b, c, d, sess]] = records("sess")
    assert (int(a) ^ int(b)) & 0xFF == (int(c) ^ int(d)) & 0xFF == int(sess, 16)
    assert {int(a), int(b)} != {int(c), int(d)}
