"""Snappy block compression, as Prometheus remote write wants its bodies (Content-Encoding: snappy).

The block format (not the framed stream) of google/snappy's format_description.txt (last revised
2020-10-13, read 2026-11-25): the uncompressed length as a little-endian varint, then literals and
copies. This compressor finds earlier 4-byte matches through a dictionary of their last positions
and emits them as copies with 1-byte offsets (lengths 4-11, offsets under 2048) or 2-byte offsets
(lengths up to 64, offsets under 65536), as the reference compressor does within its 64 KiB
window. Exposition text repeats its label sets on every line, so copies carry most of a request.
Only the standard library is used: this runs on the node.
"""

from __future__ import annotations

MAX_OFFSET = 65535
MIN_MATCH = 4
MAX_COPY_LENGTH = 64


def varint(value: int) -> bytes:
    """Little-endian base-128, the high bit set on every byte but the last (also protobuf's)."""
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def compress(data: bytes) -> bytes:
    out = bytearray(varint(len(data)))
    last_seen: dict[bytes, int] = {}
    position = literal_start = 0
    end = len(data)
    while position + MIN_MATCH <= end:
        key = data[position:position + MIN_MATCH]
        candidate = last_seen.get(key)
        last_seen[key] = position
        if candidate is None or position - candidate > MAX_OFFSET:
            position += 1
            continue
        length = _match_length(data, candidate, position)
        _literal(out, data[literal_start:position])
        _copy(out, position - candidate, length)
        for skipped in range(position + 1, min(position + length, end - MIN_MATCH + 1), 8):
            last_seen[data[skipped:skipped + MIN_MATCH]] = skipped
        position += length
        literal_start = position
    _literal(out, data[literal_start:])
    return bytes(out)


def _match_length(data: bytes, earlier: int, later: int) -> int:
    """How far data[earlier:] and data[later:] agree, compared in 32-byte steps then byte by byte."""
    length = MIN_MATCH
    end = len(data)
    while later + length + 32 <= end and data[earlier + length:earlier + length + 32] == data[later + length:later + length + 32]:
        length += 32
    while later + length < end and data[earlier + length] == data[later + length]:
        length += 1
    return length


def _literal(out: bytearray, chunk: bytes) -> None:
    if not chunk:
        return
    size = len(chunk) - 1
    if size < 60:
        out.append(size << 2)
    else:
        width = (size.bit_length() + 7) // 8
        out.append((59 + width) << 2)
        out += size.to_bytes(width, "little")
    out += chunk


def _copy(out: bytearray, offset: int, length: int) -> None:
    while length > MAX_COPY_LENGTH:
        _copy_piece(out, offset, MAX_COPY_LENGTH)
        length -= MAX_COPY_LENGTH
    _copy_piece(out, offset, length)


def _copy_piece(out: bytearray, offset: int, length: int) -> None:
    if 4 <= length <= 11 and offset < 2048:
        out.append(0b01 | ((length - 4) << 2) | ((offset >> 8) << 5))
        out.append(offset & 0xFF)
    else:
        out.append(0b10 | ((length - 1) << 2))
        out += offset.to_bytes(2, "little")
