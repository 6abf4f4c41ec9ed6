"""Benchmark: frame decoder throughput against the 115200 baud line rate.

Run: .venv/bin/python -m bench.decoder [--repeat N]
Feeds a stream of card_drawn frames (the shoe's busiest message) in 64-byte reads, as a
serial port delivers them, and one byte at a time (the worst case); also through the
whole Endpoint (decoder + link + message decode). Prints medians; writes
bench/results/decoder.json.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from bench.figures import save
from firmware_protocols import shoe
from firmware_protocols.endpoint import Endpoint
from firmware_protocols.framing import Decoder, Frame, Kind
from firmware_protocols.link import Link

LINE_BYTES_PER_S = 115200 / 10  # 8N1: ten bits on the wire per byte
FRAMES = 20_000


def _stream(version: int = 1) -> tuple[bytes, int]:
    out = bytearray()
    for i in range(FRAMES):
        msg = shoe.CardDrawn(i % 65536, "TD", 99, 0xC0FFEE, False, False)
        out += Frame(Kind.DATA, i % 256, 0, msg.MSG_ID, msg.to_bytes(), version,
                     0x5A if version >= 2 else 0).to_bytes()
    return bytes(out), FRAMES


def _decode(stream: bytes, chunk: int) -> float:
    d = Decoder()
    t0 = time.perf_counter()
    for i in range(0, len(stream), chunk):
        d.feed(stream[i:i + chunk], 0.0)
    elapsed = time.perf_counter() - t0
    assert d.frames == FRAMES
    return elapsed


def _endpoint(stream: bytes, version: int = 1) -> float:
    ep = Endpoint(shoe.CATALOGUE, Link(1))
    ep.link.peer_boot, ep.link.state = 2, ep.link.state.ESTABLISHED  # skip the handshake
    ep.link.session_version = version
    ep.link._sess = 0x5A if version >= 2 else 0
    t0 = time.perf_counter()
    n = 0
    for i in range(0, len(stream), 64):
        n += len(ep.feed(stream[i:i + 64], 0.0))
        ep.take_output()
    elapsed = time.perf_counter() - t0
    assert n == FRAMES, n
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    stream, frames = _stream()
    stream2, _ = _stream(2)
    rows = []
    cases: list[tuple[str, Callable[[], float]]] = [
        ("v1 decoder, 64-byte reads", lambda: _decode(stream, 64)),
        ("v1 decoder, byte by byte", lambda: _decode(stream, 1)),
        ("v1 endpoint (decode+link+message), 64-byte reads", lambda: _endpoint(stream)),
        ("v2 decoder, 64-byte reads", lambda: _decode(stream2, 64)),
        ("v2 decoder, byte by byte", lambda: _decode(stream2, 1)),
        ("v2 endpoint (decode+link+message), 64-byte reads", lambda: _endpoint(stream2, 2)),
    ]
    for name, run in cases:
        med = statistics.median(run() for _ in range(args.repeat))
        size = len(stream2) if name.startswith("v2") else len(stream)
        fps, bps = frames / med, size / med
        rows.append({"case": name, "frames": frames, "bytes": size,
                     "median_s": round(med, 4), "frames_per_s": round(fps),
                     "bytes_per_s": round(bps),
                     "ratio_to_115200_baud": round(bps / LINE_BYTES_PER_S, 1)})
        print(f"{name:<51} {fps:>10,.0f} frames/s {bps:>12,.0f} B/s "
              f"= {bps / LINE_BYTES_PER_S:6.1f} x line rate (median of {args.repeat})")
    save("decoder", rows)


if __name__ == "__main__":
    main()
