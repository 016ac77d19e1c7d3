"""TFRecord files without TensorFlow: read and write records with their masked CRC-32C.

Each record is ``uint64 length``, ``uint32 masked_crc(length)``, ``data``,
``uint32 masked_crc(data)``, little-endian (the format TF Serving reads warmup requests in).
"""

from __future__ import annotations

import functools
import os
import struct
from collections.abc import Iterable, Iterator
from typing import IO, BinaryIO

import crc32c as _crc32c
import numpy as np
from numpy.typing import NDArray

from tfship._files import atomic_write
from tfship.errors import InputError


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli) of ``data``, computed in C by the ``crc32c`` package.

    Example:
        >>> hex(crc32c(b"123456789"))
        '0xe3069283'
    """
    return int(_crc32c.crc32c(data))


def masked_crc(data: bytes) -> int:
    """The masked CRC TFRecord stores (rotated and offset, so CRCs of CRCs stay strong)."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def write_tfrecords(stream: IO[bytes], records: Iterable[bytes]) -> int:
    """Write records to a binary stream; return how many were written."""
    count = 0
    for data in records:
        header = struct.pack("<Q", len(data))
        stream.write(header + struct.pack("<I", masked_crc(header)))
        stream.write(data + struct.pack("<I", masked_crc(data)))
        count += 1
    return count


#: bytes read from the stream at once: records are cut from a buffer, not read one by one.
_BLOCK_BYTES = 1 << 20
#: the most read at once for a long record: a length is a number in the file, and a record
#: claiming a terabyte must end at the end of the file, not in a terabyte's allocation.
_MAX_READ = 1 << 26
_HEADER = struct.Struct("<QI")
_FOOTER = struct.Struct("<I")


def read_tfrecords(stream: BinaryIO, *, where: str = "TFRecord file") -> Iterator[bytes]:
    """Yield the records of a TFRecord stream, checking lengths and CRCs.

    Raises:
        InputError: the stream is truncated or a CRC does not match (names the record).

    Example:
        >>> import io
        >>> buffer = io.BytesIO()
        >>> write_tfrecords(buffer, [b"a", b"bc"])
        2
        >>> list(read_tfrecords(io.BytesIO(buffer.getvalue())))
        [b'a', b'bc']
    """
    for records in read_tfrecord_runs(stream, where=where):
        yield from records


def read_tfrecord_runs(stream: BinaryIO, *, where: str = "TFRecord file") -> Iterator[list[bytes]]:
    """The records of a TFRecord stream as :func:`read_tfrecords` reads them, a run of
    consecutive records at a time (those whole in one read of the stream), for callers that
    batch them: no Python step per record between the framing and the caller.

    Raises:
        InputError: as :func:`read_tfrecords`, after every record before the bad one.
    """
    buffer, pos, index = b"", 0, 0
    while True:
        whole, pos = _whole_records(buffer, pos)
        if whole:
            yield whole
        index += len(whole)
        # the next record is not whole in the buffer, or not sound: one at a time, from here
        if len(buffer) - pos < 12:
            buffer, pos = _fill(stream, buffer[pos:], 12), 0
            if not buffer:
                return
            if len(buffer) < 12:
                raise InputError(f"{where}: record {index} is truncated (header of {len(buffer)} bytes)")
        length, crc = _HEADER.unpack_from(buffer, pos)
        if crc != masked_crc(buffer[pos : pos + 8]):
            raise InputError(
                f"{where}: record {index} has a corrupt length (CRC mismatch); expected a TFRecord file"
            )
        end = pos + 12 + length + 4
        if end > len(buffer):
            buffer, end, pos = _fill(stream, buffer[pos:], end - pos), end - pos, 0
            if len(buffer) < end:
                raise InputError(f"{where}: record {index} is truncated: expected {length} bytes")
        data = buffer[pos + 12 : end - 4]
        if _FOOTER.unpack_from(buffer, end - 4)[0] != masked_crc(data):
            raise InputError(f"{where}: record {index} is corrupt (data CRC mismatch)")
        yield [data]
        pos = end
        index += 1


def _whole_records(buffer: bytes, pos: int) -> tuple[list[bytes], int]:
    """The records whole in ``buffer`` from ``pos`` on, up to the first one that is not whole or
    whose CRCs do not match, and where that one starts.

    Only the walk from length to length, which cuts the records, and their data's CRCs (in C,
    by ``map``) are a step per record. The stored CRCs are read by numpy at once (a view of the
    buffer as a uint32 at every byte), the lengths' CRCs computed from tables (the CRC of 8
    bytes is an XOR of one table entry per byte, and a zero byte adds nothing), and all CRCs
    masked and compared at once.
    """
    unpack = _LENGTH.unpack_from
    size = len(buffer)
    starts: list[int] = []
    records: list[bytes] = []
    start, cut = starts.append, records.append
    while pos + 12 <= size:
        end = pos + 16 + unpack(buffer, pos)[0]
        if end > size:
            break
        start(pos)
        cut(buffer[pos + 12 : end - 4])
        pos = end
    if not starts:
        return [], pos
    data_crcs = np.fromiter(map(_crc32c.crc32c, records), dtype=np.uint32, count=len(records))
    at = np.asarray(starts, dtype=np.int64)
    lengths = np.fromiter(map(len, records), dtype=np.int64, count=len(records))
    words: NDArray[np.uint32] = np.ndarray(
        (size - 3,), dtype="<u4", buffer=buffer, strides=(1,)
    )  # unaligned reads
    tables, zero = _length_crc_tables()
    length_crcs = np.full(len(at), zero, dtype=np.uint32)
    for byte in range(int(lengths.max()).bit_length() // 8 + 1):  # the bytes not zero in any
        length_crcs ^= tables[byte][(lengths >> (8 * byte)) & 0xFF]
    bad = (_masked(length_crcs) != words[at + 8]) | (_masked(data_crcs) != words[at + lengths + 12])
    first = np.flatnonzero(bad)
    if first.size:  # its length or its data: whatever follows is not to be trusted
        return records[: int(first[0])], starts[int(first[0])]
    return records, pos


_LENGTH = struct.Struct("<Q")


def _masked(crcs: NDArray[np.uint32]) -> NDArray[np.uint32]:
    """:func:`masked_crc` of CRCs already computed, all at once."""
    return ((crcs >> np.uint32(15)) | (crcs << np.uint32(17))) + np.uint32(0xA282EAD8)


@functools.cache
def _length_crc_tables() -> tuple[NDArray[np.uint32], np.uint32]:
    """CRC-32C of 8 bytes by tables. For input of a fixed size a CRC is affine over GF(2): the
    CRC of ``b`` is ``zero ^ tables[0][b[0]] ^ ... ^ tables[7][b[7]]``, with ``zero`` the CRC
    of 8 zero bytes and ``tables[i][v]`` how byte ``i`` being ``v`` changes it."""
    zero = crc32c(bytes(8))
    tables = np.empty((8, 256), dtype=np.uint32)
    for i in range(8):
        for value in range(256):
            tables[i, value] = crc32c(bytes(i) + bytes([value]) + bytes(7 - i)) ^ zero
    return tables, np.uint32(zero)


def _fill(stream: BinaryIO, buffer: bytes, need: int) -> bytes:
    """``buffer`` and what follows it in ``stream``: at least ``need`` bytes unless it ends."""
    parts = [buffer]
    size = len(buffer)
    while size < need:
        more = stream.read(max(_BLOCK_BYTES, min(need - size, _MAX_READ)))
        if not more:
            break
        parts.append(more)
        size += len(more)
    return b"".join(parts)


def write_tfrecord_file(path: str | os.PathLike[str], records: Iterable[bytes]) -> int:
    """Write a TFRecord file atomically (a reader never sees half of it); return the count.

    Example:
        >>> write_tfrecord_file("requests.tfrecord", [b"a", b"b"])
        2
        >>> os.path.getsize("requests.tfrecord")  # each record framed by 16 bytes
        34
    """
    with atomic_write(path, "wb") as stream:
        return write_tfrecords(stream, records)


def read_tfrecord_file(path: str | os.PathLike[str]) -> list[bytes]:
    """The records of a TFRecord file; ``InputError`` names the file and the bad record."""
    with open(path, "rb") as stream:
        return list(read_tfrecords(stream, where=os.fspath(path)))
