"""TFRecord files without TensorFlow: read and write records with their masked CRC32C.

Each record is ``uint64 length``, ``uint32 masked_crc(length)``, ``data``,
``uint32 masked_crc(data)``, little-endian (the format TF Serving reads warmup requests in).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from typing import BinaryIO

from tfship.errors import InputError

_POLY = 0x82F63B78  # CRC-32C (Castagnoli), reflected


def _table() -> list[int]:
    table = []
    for i in range(256):
        crc = i
        for _ in range(8):
            crc = (crc >> 1) ^ _POLY if crc & 1 else crc >> 1
        table.append(crc)
    return table


_TABLE = _table()


def crc32c(data: bytes) -> int:
    """CRC-32C of ``data``.

    Example:
        >>> hex(crc32c(b"123456789"))
        '0xe3069283'
    """
    crc = 0xFFFFFFFF
    table = _TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc(data: bytes) -> int:
    """The masked CRC TFRecord stores (rotated and offset, so CRCs of CRCs stay strong)."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def write_records(stream: BinaryIO, records: Iterable[bytes]) -> int:
    """Write records to a binary stream; return how many were written."""
    count = 0
    for data in records:
        header = struct.pack("<Q", len(data))
        stream.write(header + struct.pack("<I", masked_crc(header)))
        stream.write(data + struct.pack("<I", masked_crc(data)))
        count += 1
    return count


def read_records(stream: BinaryIO, *, where: str = "TFRecord file") -> Iterator[bytes]:
    """Yield the records of a TFRecord stream, checking lengths and CRCs.

    Raises:
        InputError: the stream is truncated or a CRC does not match (names the record).
    """
    index = 0
    while True:
        header = stream.read(12)
        if not header:
            return
        if len(header) < 12:
            raise InputError(f"{where}: record {index} is truncated (header of {len(header)} bytes)")
        (length,) = struct.unpack("<Q", header[:8])
        if struct.unpack("<I", header[8:])[0] != masked_crc(header[:8]):
            raise InputError(
                f"{where}: record {index} has a corrupt length (CRC mismatch); expected a TFRecord file"
            )
        body = stream.read(length + 4)
        if len(body) < length + 4:
            raise InputError(f"{where}: record {index} is truncated: expected {length} bytes")
        data = body[:length]
        if struct.unpack("<I", body[length:])[0] != masked_crc(data):
            raise InputError(f"{where}: record {index} is corrupt (data CRC mismatch)")
        yield data
        index += 1
