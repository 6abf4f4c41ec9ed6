"""Issue #24: an integrator's codec written from the Markdown alone (v3_decoder.py) checked
against every record of firmware_protocols/vectors.txt and vectors_v3.txt. A record kind
this file has no check for fails the test: nothing is skipped."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.outsider import v3_decoder as v3

VECTORS = Path(__file__).resolve().parents[2] / "firmware_protocols"


def records(name: str) -> list[list[str]]:
    lines = (VECTORS / name).read_text().splitlines()
    return [line.split(" ") for line in lines if line and not line.startswith("#")]


def hexb(token: str) -> bytes:
    return b"" if token == "-" else bytes.fromhex(token)


def parse_value(token: str) -> tuple[str, v3.Value]:
    """A msg record's <type:value> (vectors.txt header)."""
    t, _, raw = token.partition(":")
    if t in ("u8", "u16", "u32", "u64"):
        return t, int(raw)
    if t == "bool":
        return t, raw == "1"
    if t == "str":
        return t, hexb(raw).decode("utf-8")
    if t == "card":
        return t, raw
    if t == "card[]":
        return t, () if raw == "-" else tuple(raw[i : i + 2] for i in range(0, len(raw), 2))
    if t.startswith("bytes["):
        return t, hexb(raw)
    if t.startswith("u8["):
        return t, tuple(hexb(raw))
    if t.startswith("u16["):
        return t, tuple(int(x) for x in raw.split(","))
    raise AssertionError(f"type {t} not in the Types table")


# The example payload of each message, from vectors.txt's msg records: msg3 reuses them.
EXAMPLES: dict[int, bytes] = {}


def check_crc(r: list[str]) -> None:
    _, which, data, value = r
    fn = {"crc16": v3.crc16, "crc32": v3.crc32}[which]
    assert fn(hexb(data)) == int(value, 16)


def check_frame(r: list[str]) -> None:
    ver, kind, seq, ack, msg, sess = (int(x) for x in r[1:7])
    payload, wire = hexb(r[7]), hexb(r[8])
    f = v3.Frame(ver, kind, seq, ack, msg, None if ver == 1 else sess, payload)
    assert v3.encode_frame(f) == wire
    assert v3.decode_stream(wire) == [f]
    if kind in (v3.RST, v3.RSTACK):
        assert ver == 1, "RST/RSTACK are version 1 frames"


def check_msg(r: list[str]) -> None:
    _, device, id_hex, name = r[:4]
    eq = r.index("=")
    typed = [parse_value(t) for t in r[4:eq]]
    payload, v1, v2 = hexb(r[eq + 1]), hexb(r[eq + 2]), hexb(r[eq + 3])
    m = v3.BY_ID[int(id_hex, 16)]
    assert (m.name, m.device) == (name, device)
    assert [f.type for f in m.fields] == [t for t, _ in typed], "fields as the spec's table"
    values = {f.name: v for f, (_, v) in zip(m.fields, typed, strict=True)}
    assert v3.encode_message(m, values) == payload
    assert v3.data_frame(1, m, values) == v1
    assert v3.data_frame(2, m, values, sess=0x5A) == v2
    for wire in (v1, v2):
        [f] = v3.decode_stream(wire)
        _, d = v3.decode_data(f)
        assert d.values == values and d.out_of_range == ()
    EXAMPLES[m.id] = payload


def check_stream(r: list[str]) -> None:
    want = [] if r[2] == "-" else [hexb(x) for x in r[2].split(",")]
    data = hexb(r[1])
    got = v3.decode_stream(data)
    assert [v3.encode_frame(f) for f in got] == want
    # Incrementally, byte by byte at line speed, then silence: the same frames.
    rx = v3.Receiver()
    out: list[v3.Frame] = []
    for i, b in enumerate(data):
        out += rx.feed(bytes([b]), i * v3.BYTE_MS)
    out += rx.feed(b"", len(data) * v3.BYTE_MS + 1000)
    assert out == got


def check_commit(r: list[str]) -> None:
    _, sid, nonce, cards, digest = r
    assert v3.commitment(int(sid), hexb(nonce), cards.split(",")).hex() == digest


def check_commit3(r: list[str]) -> None:
    _, sid, decks, nonce, cards, digest = r
    order = cards.split(",")
    assert v3.commitment(int(sid), hexb(nonce), order, int(decks)).hex() == digest


def check_sha256(r: list[str]) -> None:
    _, message, digest = r
    data = b"a" * int(message[2:]) if message.startswith("a*") else hexb(message)
    assert hashlib.sha256(data).hexdigest() == digest


def check_stamp(r: list[str]) -> None:
    origin, num, re = (int(x) for x in r[1:4])
    s = v3.Stamp(origin, num, re)
    assert s.encode() == hexb(r[4]) and v3.Stamp.decode(hexb(r[4])) == s


def check_msg3(r: list[str]) -> None:
    _, device, id_hex, name = r[:4]
    stamp = v3.Stamp(*(int(x) for x in r[4:7]))
    wire = hexb(r[7])
    m = v3.BY_ID[int(id_hex, 16)]
    assert (m.name, m.device) == (name, device)
    [f] = v3.decode_stream(wire)
    assert (f.ver, f.kind, f.seq, f.ack, f.msg, f.sess) == (3, v3.DATA, 0, 0, m.id, 0x5A)
    got_stamp, d = v3.decode_data(f)
    assert got_stamp == stamp and d.out_of_range == ()
    assert_re_rule(m, stamp)
    assert f.payload[v3.STAMP_LEN :] == EXAMPLES[m.id]
    assert v3.data_frame(3, m, d.values, sess=0x5A, stamp=stamp) == wire


def assert_re_rule(m: v3.Message, stamp: v3.Stamp) -> None:
    """Event identity, RE: 'in an answer (identify_reply, status_reply, command_result,
    inventory_reply, order_chunk): the NUM of the command it answers; otherwise 0'."""
    answer = not m.to_device and m.name in v3.ANSWERS
    assert (stamp.re != 0) == answer, f"{m.name} stamped with RE {stamp.re}"


def check_resume_chain(r: list[str]) -> None:
    own, peer, next_seq = (int(x) for x in r[1:4])
    h = v3.SessionHistory()
    h.session(own, peer)
    h.received(next_seq)
    h.session(0x42, 0x99)  # established, nothing received in it
    assert v3.encode_rst(h.rst(0x42, 3)) == hexb(r[4])
    [f] = v3.decode_stream(hexb(r[4]))
    assert v3.decode_rst(f) == v3.Rst(0x42, 3, (own, peer), next_seq)


def check_full_queue(r: list[str]) -> None:
    capacity, offered, accepted = (int(x) for x in r[1:4])
    q = v3.DeviceQueue(capacity)
    taken = [q.offer(bytes([i])) for i in range(offered)]
    assert taken == [True] * accepted + [False] * (offered - accepted)
    assert q.held == [bytes([i]) for i in range(accepted)]


def check_repeat(r: list[str]) -> None:
    [f] = v3.decode_stream(hexb(r[1]))
    stamp, d = v3.decode_data(f)
    assert stamp is not None
    assert_re_rule(d.message, stamp)
    host = v3.EventFilter()
    assert [host.take("dev", d.message.name, stamp) for _ in range(2)] == [True, False]
    assert host.lost == []


def check_card(r: list[str]) -> None:
    [f] = v3.decode_stream(hexb(r[1]))
    _, d = v3.decode_data(f)
    assert d.message.name == "card_drawn"
    assert d.values["card"] == r[2] and d.out_of_range == ("card",)


def check_rst_times(r: list[str]) -> None:
    want = [float(x) for x in r[1].split(",")]
    assert v3.rst_times(len(want)) == pytest.approx(want)


def check_rst_after_failure(r: list[str]) -> None:
    """"A new session starts the RTO afresh": the first sample (RFC 6298: SRTT = R,
    RTTVAR = R/2) left an estimate of 3 R, above the initial RTO; the RSTs after the
    failure keep the schedule of a link that never had one."""
    rtt, want = float(r[1]), [float(x) for x in r[2].split(",")]
    assert 3 * rtt > v3.INITIAL_RTO_MS
    assert v3.rst_times(len(want)) == pytest.approx(want)


def check_rto(r: list[str]) -> None:
    want = [float(x) for x in r[1].split(",")]
    assert [round(x, 1) for x in v3.rto_after_timeouts(len(want) - 1)] == want


def check_rstack_version(r: list[str]) -> None:
    offered, wire, verdict = int(r[1]), hexb(r[2]), r[3]
    assert verdict == "ignored"
    [f] = v3.decode_stream(wire)
    ack = v3.decode_rstack(f)
    assert not v3.rstack_taken(ack, ack.accepted, offered)
    assert v3.rstack_taken(v3.RstAck(ack.accepted, ack.boot, offered), ack.accepted, offered)


def check_invalid(r: list[str]) -> None:
    _, device, id_hex, payload = r
    m = v3.BY_ID[int(id_hex, 16)]
    assert m.device == device
    with pytest.raises(v3.InvalidMessageError):
        v3.decode_message(m.id, hexb(payload))


def check_sess(r: list[str]) -> None:
    a, b, c, d = (int(x) for x in r[1:5])
    assert (a, b) != (c, d)
    assert v3.sess_of(a, b) == v3.sess_of(c, d) == int(r[5], 16)


def check_answer(r: list[str]) -> None:
    _, device, id_hex, payload, want = r
    got = v3.device_answer(device, int(id_hex, 16), hexb(payload))
    assert got == (None if want == "-" else int(want))


def check_past_total(r: list[str]) -> None:
    """An order_chunk running past its total decodes, in range, and is a contradiction."""
    [f] = v3.decode_stream(hexb(r[1]))
    _, d = v3.decode_data(f)
    assert d.message.name == "order_chunk" and d.out_of_range == ()
    sid, total = d.values["shuffle_id"], d.values["total"]
    assert isinstance(sid, int) and isinstance(total, int)
    reveal = v3.Reveal(sid, total // 52, bytes(32))
    reveal.chunk(d.values)
    assert reveal.contradiction


CHECKS: dict[str, Callable[[list[str]], None]] = {
    "crc": check_crc,
    "frame": check_frame,
    "msg": check_msg,
    "stream": check_stream,
    "commit": check_commit,
    "commit3": check_commit3,
    "sha256": check_sha256,
    "stamp": check_stamp,
    "msg3": check_msg3,
    "resume_chain": check_resume_chain,
    "full_queue": check_full_queue,
    "repeat": check_repeat,
    "card": check_card,
    "rst_times": check_rst_times,
    "rst_after_failure": check_rst_after_failure,
    "rto": check_rto,
    "rstack_version": check_rstack_version,
    "invalid": check_invalid,
    "sess": check_sess,
    "answer": check_answer,
    "past_total": check_past_total,
}


def test_every_record_of_both_files() -> None:
    """vectors.txt first (msg3 reuses its example payloads); every record is checked,
    and a kind without a check fails."""
    done: dict[str, int] = {}
    for name in ("vectors.txt", "vectors_v3.txt"):
        for r in records(name):
            assert r[0] in CHECKS, f"{name}: record kind {r[0]!r} has no check"
            CHECKS[r[0]](r)
            done[r[0]] = done.get(r[0], 0) + 1
    assert set(done) == set(CHECKS), f"kinds never seen: {set(CHECKS) - set(done)}"
    assert done["msg"] == done["msg3"] == len(v3.CATALOGUE)


def test_error_table_counts_the_frames_each_version_sends() -> None:
    """Undetected errors: the table's 'frame bytes' and 'bits n' (VER to the end of the
    CRC, LEN left out) must be those of the card_drawn frame each version sends; a
    version 3 frame carries the 12-byte stamp."""
    m = v3.BY_NAME["card_drawn"]
    values: dict[str, v3.Value] = {
        "draw_no": 1, "card": "TD", "confidence": 99, "deck_set": 0x00C0FFEE,
        "double_draw": False, "face_up": False,
    }  # fmt: skip
    stamp = v3.Stamp(1, 1, 0)
    for device in ("shoe", "shuffler", "tumbler"):
        text = (VECTORS / f"{device}.md").read_text()
        for ver in v3.VERSIONS:
            frame = v3.data_frame(ver, m, values, sess=None if ver == 1 else 0x5A, stamp=stamp)
            bits = 8 * (len(frame) - 2)  # SOF and LEN are not counted
            row = f"| {ver} | {len(frame)} | {bits} |"
            assert row in text, f"{device}.md: no row starting {row!r}"
