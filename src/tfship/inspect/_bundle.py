"""A SavedModel's variables (a TensorFlow tensor bundle) checked without loading them.

``variables/variables.index`` is a TensorFlow table file (the SSTable format): data blocks of
prefix-compressed key/value entries, an index block of handles to them, and a 48-byte footer
ending in a magic number. Every block is followed by a compression byte and the masked CRC-32C
of the block and that byte. The entry under the empty key is a ``BundleHeaderProto`` (how many
shards); every other entry is a ``BundleEntryProto``: the tensor's shard, offset, size and the
masked CRC-32C of its bytes in ``variables.data-<shard>-of-<count>``.

A string tensor's bytes are its lengths as varints, the masked CRC-32C of those lengths, then
the strings; its recorded CRC covers the lengths as 4-byte little-endian integers (8 bytes for
a string of 4 GiB or more), that checksum and the strings.
"""

from __future__ import annotations

import itertools
import pathlib
import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from tfship._wire import BundleEntryProto, BundleHeaderProto, TensorShapeProto, masked_crc, protos
from tfship.inspect._tensorinfo import element_count

INDEX_FILE = "variables.index"
_MAGIC = 0xDB4775248B80FB57
_FOOTER = 48
_TRAILER = 5
_DT_STRING = 7
_DT_VARIANT = 21  # written element by element with a per-element layout: only its length is checked


class BundleError(Exception):
    """The index file cannot be read as a table (what is wrong, in words)."""


@dataclass(frozen=True)
class BundleTensor:
    """One tensor of the bundle as its index entry describes it."""

    name: str
    shard: int
    offset: int
    size: int
    crc: int
    sliced: bool
    dtype: int = 0
    elements: int = 0


def data_file_name(shard: int, shards: int) -> str:
    """``variables.data-00000-of-00001`` for shard 0 of 1."""
    return f"variables.data-{shard:05d}-of-{shards:05d}"


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while pos < len(data) and shift < 64:
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos += 1
        if not byte & 0x80:
            return value, pos
        shift += 7
    raise BundleError("a length or offset is cut short")


def _handle(data: bytes, pos: int) -> tuple[int, int, int]:
    offset, pos = _varint(data, pos)
    size, pos = _varint(data, pos)
    return offset, size, pos


def _block(table: bytes, offset: int, size: int, what: str) -> bytes:
    end = offset + size + _TRAILER
    if end > len(table) - _FOOTER:
        raise BundleError(f"its {what} lies past the end of the file (truncated?)")
    contents, kind = table[offset : offset + size], table[offset + size]
    (stored,) = struct.unpack_from("<I", table, offset + size + 1)
    if stored != masked_crc(table[offset : offset + size + 1]):
        raise BundleError(f"its {what} fails its checksum (the bytes changed)")
    if kind != 0:  # 1 is snappy: tensor bundles are written uncompressed
        raise BundleError(f"its {what} is compressed (type {kind}), which tensor bundles never are")
    return contents


def _entries(block: bytes, what: str) -> Iterator[tuple[bytes, bytes]]:
    if len(block) < 4:
        raise BundleError(f"its {what} is too short")
    (restarts,) = struct.unpack_from("<I", block, len(block) - 4)
    limit = len(block) - 4 - 4 * restarts
    if limit < 0:
        raise BundleError(f"its {what} has a corrupt restart array")
    pos, key = 0, b""
    while pos < limit:
        shared, pos = _varint(block, pos)
        unshared, pos = _varint(block, pos)
        length, pos = _varint(block, pos)
        if shared > len(key) or pos + unshared + length > limit:
            raise BundleError(f"its {what} has a corrupt entry")
        key = key[:shared] + block[pos : pos + unshared]
        pos += unshared
        yield key, block[pos : pos + length]
        pos += length


def read_table(path: pathlib.Path) -> list[tuple[bytes, bytes]]:
    """Every key/value entry of a TensorFlow table file, in key order.

    Raises:
        BundleError: the file is not a table or a block is corrupt.
    """
    table = path.read_bytes()
    if len(table) < _FOOTER:
        raise BundleError(f"it has {len(table)} bytes, fewer than a table's {_FOOTER}-byte footer")
    (magic,) = struct.unpack_from("<Q", table, len(table) - 8)
    if magic != _MAGIC:
        raise BundleError("it does not end with a table's magic number (truncated or not an index)")
    _, _, pos = _handle(table, len(table) - _FOOTER)  # the metaindex block, empty in bundles
    index_offset, index_size, _ = _handle(table, pos)
    entries: list[tuple[bytes, bytes]] = []
    for _, handle in _entries(_block(table, index_offset, index_size, "index block"), "index block"):
        offset, size, _ = _handle(handle, 0)
        entries.extend(_entries(_block(table, offset, size, "data block"), "data block"))
    return entries


def read_bundle(index: pathlib.Path) -> tuple[int, list[BundleTensor]]:
    """The shard count and the tensors a bundle's index file lists.

    Raises:
        BundleError: the index is not a table, or has no header, or an entry is not a proto.
    """
    pb2 = protos().tensor_bundle_pb2
    shards: int | None = None
    tensors: list[BundleTensor] = []
    for key, value in read_table(index):
        proto: BundleHeaderProto | BundleEntryProto = (
            pb2.BundleHeaderProto() if key == b"" else pb2.BundleEntryProto()
        )
        try:
            proto.ParseFromString(value)
        except Exception as exc:  # protobuf's DecodeError
            raise BundleError(f"the entry {key.decode(errors='replace')!r} is not readable") from exc
        if key == b"":
            shards = proto.num_shards
            continue
        tensors.append(
            BundleTensor(
                key.decode(errors="replace"),
                proto.shard_id,
                proto.offset,
                proto.size,
                proto.crc32c,
                bool(proto.slices),
                proto.dtype,
                _elements(proto.shape),
            )
        )
    if shards is None:
        raise BundleError("it has no bundle header (the entry under the empty key)")
    return shards, tensors


def _elements(shape: TensorShapeProto) -> int:
    return element_count(dim.size for dim in shape.dim)


def _read(stream: BinaryIO, offset: int, size: int) -> bytes:
    stream.seek(offset)
    return stream.read(size)


def _string_crc_input(data: bytes, elements: int) -> bytes:
    """The bytes a string tensor's CRC covers: each length as a fixed-width integer, then the rest."""
    pos, lengths = 0, bytearray()
    for _ in range(elements):
        length, pos = _varint(data, pos)
        lengths += struct.pack("<I", length) if length <= 0xFFFFFFFF else struct.pack("<Q", length)
    return bytes(lengths) + data[pos:]


def _crc_matches(stream: BinaryIO, tensor: BundleTensor) -> bool:
    if tensor.dtype == _DT_VARIANT:
        return True
    data = _read(stream, tensor.offset, tensor.size)
    if tensor.dtype == _DT_STRING:
        try:
            data = _string_crc_input(data, tensor.elements)
        except BundleError:
            return False
    return masked_crc(data) == tensor.crc


def bundle_problems(directory: pathlib.Path) -> list[str]:
    """What is wrong with the tensor bundle in ``directory`` (``variables/``), or ``[]``.

    Each problem names the file and, for a tensor's bytes, the tensor: a missing or unreadable
    index, a missing data shard, a shard shorter than the index says, bytes whose CRC-32C
    differs from the one the index recorded.
    """
    index = directory / INDEX_FILE
    if not index.is_file():
        return [f"{index} is missing"]
    try:
        shards, tensors = read_bundle(index)
    except BundleError as exc:
        return [f"{index} is corrupt: {exc}"]
    problems: list[str] = []
    by_shard: dict[int, list[BundleTensor]] = {}
    for tensor in tensors:
        if not tensor.sliced:
            by_shard.setdefault(tensor.shard, []).append(tensor)
    # The shard count is a number in the index: only the shards that hold a tensor or whose file
    # is present are looked at one by one; the others are counted.
    known = {s for s in by_shard if 0 <= s < shards} | _present_shards(directory, shards)
    for shard in sorted(known):
        problems.extend(_shard_problems(directory / data_file_name(shard, shards), by_shard.get(shard, [])))
    problems.extend(_absent_shards(index, shards, known))
    for shard in sorted(s for s in by_shard if not 0 <= s < shards):
        names = ", ".join(t.name for t in by_shard[shard])
        problems.append(f"{index} places {names} in shard {shard} of a bundle of {shards} shards")
    return problems


_DATA_FILE = re.compile(r"variables\.data-(\d{5,})-of-(\d{5,})")
#: Missing shards that hold no tensor are named one by one up to this many, then counted.
_NAMED_ABSENT = 5


def _present_shards(directory: pathlib.Path, shards: int) -> set[int]:
    """The shards of a bundle of ``shards`` whose data file is in ``directory``."""
    present = set()
    for entry in directory.iterdir():
        match = _DATA_FILE.fullmatch(entry.name)
        if match and int(match[1]) < shards and entry.name == data_file_name(int(match[1]), shards):
            present.add(int(match[1]))
    return present


def _absent_shards(index: pathlib.Path, shards: int, known: set[int]) -> list[str]:
    """The missing data files of shards that hold no tensor: each, or one line when many."""
    absent = shards - len(known)
    if absent <= 0:
        return []
    first = list(itertools.islice((s for s in range(shards) if s not in known), _NAMED_ABSENT + 1))
    files = [index.parent / data_file_name(s, shards) for s in first]
    if absent <= _NAMED_ABSENT:
        return [f"{file} is missing" for file in files]
    return [
        f"{index} declares {shards} shards, but {absent} of their data files are missing (the "
        f"first: {files[0].name}); {len(known)} of them hold a tensor or are present"
    ]


def _shard_problems(file: pathlib.Path, tensors: list[BundleTensor]) -> list[str]:
    if not file.is_file():
        names = ", ".join(t.name for t in tensors[:5]) + (" ..." if len(tensors) > 5 else "")
        return [f"{file} is missing" + (f" (it holds {names})" if names else "")]
    length = file.stat().st_size
    problems: list[str] = []
    # Tensors are written one after the other: bytes claimed twice are not read twice, so
    # checking a shard reads it at most once, however many entries the index makes up.
    previous: BundleTensor | None = None
    with file.open("rb") as stream:
        for tensor in sorted(tensors, key=lambda t: t.offset):
            end = tensor.offset + tensor.size
            if previous is not None and tensor.offset < previous.offset + previous.size:
                problems.append(
                    f"{file}: tensor {tensor.name!r} (at {tensor.offset}, {tensor.size} bytes) "
                    f"overlaps tensor {previous.name!r} (at {previous.offset}, {previous.size} bytes)"
                )
                continue
            previous = tensor
            if end > length:
                problems.append(
                    f"{file} is {length} bytes, but tensor {tensor.name!r} lies at bytes "
                    f"{tensor.offset}-{end} (truncated)"
                )
            elif not _crc_matches(stream, tensor):
                problems.append(
                    f"{file}: the bytes of tensor {tensor.name!r} (at {tensor.offset}, {tensor.size} "
                    "bytes) do not match their checksum in the index (corrupt)"
                )
    return problems


def variables_problems(path: pathlib.Path, declared: int) -> list[str]:
    """Why the variables of the export at ``path`` cannot be restored, or ``[]``.

    ``declared`` is how many variables the graph declares: with none and no ``variables/``,
    there is nothing to restore.
    """
    directory = path / "variables"
    if not (directory / INDEX_FILE).is_file():
        if declared:
            return [f"the graph declares {declared} variables but variables/{INDEX_FILE} is missing"]
        return []
    return bundle_problems(directory)
