"""A small PNG reader (standard library only): the header and, for 8-bit RGB(A)
non-interlaced images (what Chromium writes), the pixels."""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import List, Tuple

SIGNATURE = b"\x89PNG\r\n\x1a\n"


@dataclass
class Png:
    width: int
    height: int
    bit_depth: int
    color_type: int
    interlace: int
    idat: bytes

    def pixel(self, x: int, y: int) -> Tuple[int, ...]:
        """The (R, G, B[, A]) of a pixel."""
        rows = self.rows()
        channels = {2: 3, 6: 4}[self.color_type]
        row = rows[y]
        return tuple(row[x * channels : (x + 1) * channels])


    def rows(self) -> List[bytes]:
        if self.bit_depth != 8 or self.color_type not in (2, 6) or self.interlace != 0:
            raise ValueError(f"only 8-bit RGB/RGBA non-interlaced PNGs are read (got depth {self.bit_depth}, type {self.color_type})")
        bpp = {2: 3, 6: 4}[self.color_type]
        stride = self.width * bpp
        raw = zlib.decompress(self.idat)
        assert len(raw) == (stride + 1) * self.height, "PNG data has the wrong length"
        out: List[bytes] = []
        prev = bytearray(stride)
        for y in range(self.height):
            f = raw[y * (stride + 1)]
            line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = prev[i]
                c = prev[i - bpp] if i >= bpp else 0
                if f == 1:
                    line[i] = (line[i] + a) & 0xFF
                elif f == 2:
                    line[i] = (line[i] + b) & 0xFF
                elif f == 3:
                    line[i] = (line[i] + (a + b) // 2) & 0xFF
                elif f == 4:
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                    line[i] = (line[i] + pred) & 0xFF
                elif f != 0:
                    raise ValueError(f"bad PNG filter {f}")
            out.append(bytes(line))
            prev = line
        return out


def read_png(data: bytes) -> Png:
    """Parse a PNG, checking its signature, chunk CRCs and that it ends with IEND."""
    if not data.startswith(SIGNATURE):
        raise ValueError(f"not a PNG: starts {data[:8]!r}")
    pos = len(SIGNATURE)
    header = None
    idat = bytearray()
    ended = False
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
        if zlib.crc32(kind + body) & 0xFFFFFFFF != crc:
            raise ValueError(f"bad CRC in chunk {kind!r}")
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            ended = True
            break
        pos += 12 + length
    if header is None or not ended:
        raise ValueError("PNG without IHDR or IEND")
    width, height, depth, ctype, _compression, _filter, interlace = header
    return Png(width, height, depth, ctype, interlace, bytes(idat))
