"""TFRecord framing: every record back, and every damage refused with the record it is in."""

from __future__ import annotations

import io
import random
import struct

import pytest

from tfship._wire import masked_crc, read_tfrecords, write_tfrecords
from tfship.errors import InputError


def _framed(records: list[bytes]) -> bytes:
    stream = io.BytesIO()
    write_tfrecords(stream, records)
    return stream.getvalue()


class _Trickle(io.RawIOBase):
    """A stream that gives at most ``step`` bytes per read, as pipes and gzip do."""

    def __init__(self, data: bytes, step: int) -> None:
        self.data, self.pos, self.step = data, 0, step

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        size = self.step if size < 0 else min(size, self.step)
        out = self.data[self.pos : self.pos + size]
        self.pos += len(out)
        return out


def _records(count: int, seed: int = 7) -> list[bytes]:
    rng = random.Random(seed)
    sizes = [0, 1, 3, 4, 11, 12, 100, 5000, 300_000]
    return [rng.randbytes(rng.choice(sizes)) for _ in range(count)]


@pytest.mark.parametrize("step", [None, 1, 7, 4096])
def test_every_record_comes_back_whatever_the_reads(step: int | None) -> None:
    records = _records(400 if step != 1 else 40)
    data = _framed(records)
    stream = io.BytesIO(data) if step is None else _Trickle(data, step)
    assert list(read_tfrecords(stream)) == records  # type: ignore[arg-type]


def test_many_small_records_across_blocks() -> None:
    records = [struct.pack("<I", i) * (i % 9) for i in range(200_000)]
    assert list(read_tfrecords(io.BytesIO(_framed(records)))) == records


def _damaged(records: list[bytes], index: int, offset: int) -> bytes:
    """The framed records with one byte flipped at ``offset`` in record ``index``'s frame."""
    data = bytearray(_framed(records))
    data[sum(16 + len(r) for r in records[:index]) + offset] ^= 0x40
    return bytes(data)


@pytest.mark.parametrize("index", [0, 1, 1500, 2999])
@pytest.mark.parametrize(
    ("where", "message"),
    [
        (0, "has a corrupt length (CRC mismatch); expected a TFRecord file"),  # the length
        (9, "has a corrupt length (CRC mismatch); expected a TFRecord file"),  # the length's CRC
        (12, r"is corrupt (data CRC mismatch)"),  # the data
        (-1, r"is corrupt (data CRC mismatch)"),  # the data's CRC
    ],
)
def test_a_damaged_record_is_named_and_those_before_it_are_read(index: int, where: int, message: str) -> None:
    records = [b"%d:" % i + b"x" * (i % 40) for i in range(3000)]
    offset = where if where >= 0 else 16 + len(records[index]) + where
    read: list[bytes] = []
    with pytest.raises(InputError) as caught:
        read.extend(read_tfrecords(io.BytesIO(_damaged(records, index, offset)), where="f.tfrecord"))
    assert str(caught.value) == f"f.tfrecord: record {index} {message}"
    assert read == records[:index]


@pytest.mark.parametrize("where", [0, 1, 2, 8, 11])
def test_the_length_of_a_long_record_is_checked_in_each_of_its_bytes(where: int) -> None:
    # lengths of one, two and three bytes: a damaged byte or CRC is found whichever it is
    records = [b"a" * 100, b"b" * 70_000, b"c" * 300, b"d" * 300_000, b"e"]
    for index in range(len(records)):
        read: list[bytes] = []
        with pytest.raises(InputError, match=rf"^f: record {index} has a corrupt length"):
            read.extend(read_tfrecords(io.BytesIO(_damaged(records, index, where)), where="f"))
        assert read == records[:index]


@pytest.mark.parametrize(
    ("cut", "message"), [(5, "is truncated (header of 5 bytes)"), (20, "is truncated: expected 9 bytes")]
)
def test_a_truncated_file_names_its_last_record(cut: int, message: str) -> None:
    records = [b"a" * 9] * 1000
    data = _framed(records)[: 999 * 25 + cut]
    with pytest.raises(
        InputError, match=rf"^x: record 999 {message}$".replace("(", r"\(").replace(")", r"\)")
    ):
        list(read_tfrecords(io.BytesIO(data), where="x"))


def test_a_hostile_length_reads_no_more_than_the_file() -> None:
    header = struct.pack("<Q", 1 << 60)
    data = _framed([b"ok"]) + header + struct.pack("<I", masked_crc(header)) + b"short"
    stream = io.BytesIO(data)
    sizes: list[int] = []
    read = stream.read

    def recording(size: int | None = -1) -> bytes:
        sizes.append(-1 if size is None else size)
        return read(size)

    stream.read = recording  # type: ignore[method-assign]
    with pytest.raises(InputError, match=r"^x: record 1 is truncated: expected 1152921504606846976 bytes$"):
        list(read_tfrecords(stream, where="x"))
    assert max(sizes) <= 1 << 26
