"""Fuzzing every decoder a device or a client can reach, and every parser of outside
input, with hypothesis. Each must either accept its input or raise its own documented
error, never anything else, and never hang.

CI runs a bounded count (300 examples each). The long run:

    TABLED_FUZZ_EXAMPLES=100000 .venv/bin/pytest tests/fuzz -q
"""

from __future__ import annotations

import contextlib
import json
import os
import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from daemon.config import ConfigError, parse_config
from daemon.drivers.device_url import DeviceUrlError, parse_device_url
from daemon.security.commands import CommandError, parse_command
from daemon.security.signing import SignatureError
from firmware_protocols import shoe, shuffler, tumbler
from firmware_protocols.endpoint import BadMessage, Endpoint, Numbered, decode_frame_bytes
from firmware_protocols.examples import EXAMPLES as MESSAGE_EXAMPLES
from firmware_protocols.framing import DecodeError, Decoder, Frame
from firmware_protocols.link import Link, LinkFailed, LinkState
from firmware_protocols.wire import Catalogue, Message, MessageError
from hil.scenario import ScenarioError, parse_scenario
from tests.keys import TABLE_KEYRING

EXAMPLES = int(os.environ.get("TABLED_FUZZ_EXAMPLES", "300"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
CATALOGUES = [shoe.CATALOGUE, shuffler.CATALOGUE, tumbler.CATALOGUE]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=10), inner,
                                                                 max_size=5),
    max_leaves=20)


@FUZZ
@given(st.binary(max_size=4000), st.integers(1, 64))
def test_frame_decoder(data: bytes, chunk: int) -> None:
    d = Decoder()
    for i in range(0, len(data), chunk):
        for out in d.feed(data[i:i + chunk]):
            assert isinstance(out, Frame | DecodeError)


@FUZZ
@given(st.sampled_from(CATALOGUES), st.binary(max_size=300))
def test_message_decoder(catalogue: Any, data: bytes) -> None:
    with contextlib.suppress(MessageError, DecodeError):
        assert isinstance(decode_frame_bytes(catalogue, data), Message)


@FUZZ
@given(st.sampled_from(CATALOGUES), st.lists(st.binary(max_size=200), max_size=20),
       st.integers(0, 2**32 - 1))
def test_endpoint_stack(catalogue: Any, chunks: list[bytes], seed: int) -> None:
    """The whole host-side stack (framing, link, messages) on arbitrary line input."""
    e = Endpoint(catalogue, Link(seed))
    e.connect(0.0)
    now = 0.0
    for c in chunks:
        now += 0.01
        for ev in e.feed(c, now) + e.poll(now):
            # Garbage is reported as events, never raised.
            assert not isinstance(ev, Exception) or isinstance(ev, DecodeError)
        e.take_output()


def _handshake(a: Endpoint, b: Endpoint, now: float) -> float:
    """A real RST/RSTACK exchange on a clean line; the time when both are up."""
    a.connect(now)
    b.connect(now)
    for _ in range(50):
        now += 0.01
        b.feed(a.take_output(), now)
        a.feed(b.take_output(), now)
        if a.link.state is b.link.state is LinkState.ESTABLISHED:
            return now
    raise AssertionError("no session on a clean line")


def _delivered(events: list[Any]) -> list[Message]:
    return [e.message if isinstance(e, Numbered) else e for e in events
            if isinstance(e, Message | Numbered)]


@FUZZ
@given(st.sampled_from(CATALOGUES), st.sampled_from([2, 3]),
       st.sampled_from([0.0, 1e-3, 1e-2, 3e-2]), st.integers(0, 2**32 - 1))
def test_every_message_in_data_frames_with_flipped_bits(catalogue: Catalogue, version: int,
                                                        rate: float, seed: int) -> None:
    """Every message of the catalogue, with valid example values, sent as DATA frames in a
    session after a real handshake, with bits flipped on the way at ``rate`` per byte: the
    receiver never raises, and every message it delivers is one that was sent, unaltered,
    in order and once (a frame whose check failed is never delivered). On a clean line
    every message arrives."""
    rng = random.Random(seed)
    sender = Endpoint(catalogue, Link(rng.getrandbits(32), version=version))
    receiver = Endpoint(catalogue, Link(rng.getrandbits(32), version=version))
    now = _handshake(sender, receiver, 0.0)
    sent = [MESSAGE_EXAMPLES[cls] for cls in catalogue.by_id.values()]
    rng.shuffle(sent)
    queue, got, events = list(sent), [], []
    for _ in range(2000):
        while queue and sender.send(queue[0], now):
            queue.pop(0)
        wire = bytearray(sender.take_output())
        for i in range(len(wire)):
            if rng.random() < rate:
                wire[i] ^= 1 << rng.randrange(8)
        now += 0.02
        events += receiver.feed(bytes(wire), now) + receiver.poll(now)
        sender.feed(receiver.take_output(), now)  # the acknowledgements, on a clean line
        events += sender.poll(now)
        got = _delivered(events)
        if len(got) == len(sent) or any(isinstance(e, LinkFailed) for e in events):
            break
    assert not [e for e in events if isinstance(e, BadMessage)], "a corrupted frame passed"
    assert got == sent[:len(got)], "a message delivered that was not sent, or out of order"
    if rate == 0.0:
        assert got == sent


@FUZZ
@given(st.text(max_size=30), st.binary(max_size=5000) | json_values.map(
    lambda v: json.dumps(v).encode()))
def test_command_parser(name: str, payload: bytes) -> None:
    try:
        parse_command(name, payload)
    except CommandError as exc:
        assert exc.code in ("bad_payload", "unknown_command", "bad_argument") and str(exc)


@FUZZ
@given(st.dictionaries(st.text(max_size=8), json_values, max_size=8))
def test_signature_check(body: dict[str, Any]) -> None:
    try:
        TABLE_KEYRING.verify(body)
    except SignatureError:
        return
    raise AssertionError("an arbitrary payload verified")


@FUZZ
@given(st.dictionaries(st.sampled_from(["table", "devices", "broker", "journal", "mqtt",
                                        "signing", "commands", "extra"]),
                       st.dictionaries(st.text(max_size=10), json_values, max_size=5),
                       max_size=7))
def test_config_parser(data: dict[str, Any]) -> None:
    try:
        parse_config(data)
    except ConfigError as exc:
        assert exc.problems


@FUZZ
@given(st.text(max_size=80))
def test_device_url_parser(url: str) -> None:
    try:
        parse_device_url(url)
    except DeviceUrlError as exc:
        assert str(exc)


@FUZZ
@given(json_values)
def test_scenario_parser(data: Any) -> None:
    try:
        parse_scenario(data)
    except ScenarioError as exc:
        assert exc.problems
