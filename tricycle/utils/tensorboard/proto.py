"""Protocol-buffer wire encoding, by hand: the few field kinds TensorBoard's messages use.

A message is the concatenation of its fields; a field is a key (its number shifted left by
three, or'ed with its wire type) and a payload: a varint (wire type 0: ints, enums, bools),
eight little-endian bytes (1: double), a length and bytes (2: strings, bytes, nested
messages, packed repeated numbers) or four little-endian bytes (5: float). Each builder
returns the bytes of one field; a message is ``b"".join`` of its fields. Fields left at
their default are simply not written, as proto3 does."""

import struct

import numpy as np

VARINT, FIXED64, LENGTH, FIXED32 = 0, 1, 2, 5


def varint(value: int) -> bytes:
    """``value`` as a base-128 varint; a negative int64 as its 64-bit two's complement."""
    value = int(value)
    if value < 0:
        value += 1 << 64
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def key(number: int, wire_type: int) -> bytes:
    return varint(number << 3 | wire_type)


def integer(number: int, value: int) -> bytes:
    """An int32/int64/uint/enum/bool field."""
    return key(number, VARINT) + varint(value)


def double(number: int, value: float) -> bytes:
    return key(number, FIXED64) + struct.pack("<d", float(value))


def single(number: int, value: float) -> bytes:
    """A ``float`` (32-bit) field."""
    return key(number, FIXED32) + struct.pack("<f", float(value))


def data(number: int, payload: bytes | str) -> bytes:
    """A string (UTF-8), bytes or nested-message field."""
    if isinstance(payload, str):
        payload = payload.encode("utf-8")
    return key(number, LENGTH) + varint(len(payload)) + payload


def packed_doubles(number: int, values) -> bytes:
    """A repeated double field, packed (proto3's encoding)."""
    return data(number, np.asarray(values, dtype="<f8").tobytes())


def packed_floats(number: int, values) -> bytes:
    """A repeated float field, packed."""
    return data(number, np.asarray(values, dtype="<f4").tobytes())


__all__ = [
    "data",
    "double",
    "integer",
    "key",
    "packed_doubles",
    "packed_floats",
    "single",
    "varint",
]
