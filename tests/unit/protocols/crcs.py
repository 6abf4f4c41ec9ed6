"""Bit-by-bit CRCs, written from their definitions, against which the table-driven ones are
checked."""

from __future__ import annotations


def bitwise_crc(data: bytes) -> int:
    """CRC-16/CCITT-FALSE written out bit by bit, independent of binascii."""
    c = 0xFFFF
    for b in data:
        c ^= b << 8
        for _ in range(8):
            c = ((c << 1) ^ 0x1021) & 0xFFFF if c & 0x8000 else (c << 1) & 0xFFFF
    return c


def bitwise_crc32(data: bytes) -> int:
    """CRC-32/ISO-HDLC written out bit by bit (reflected, poly 0xEDB88320), independent of zlib."""
    c = 0xFFFFFFFF
    for b in data:
        c ^= b
        for _ in range(8):
            c = (c >> 1) ^ 0xEDB88320 if c & 1 else c >> 1
    return c ^ 0xFFFFFFFF
