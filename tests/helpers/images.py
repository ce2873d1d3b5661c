"""Image files of the kinds the demos must read right or refuse in one line."""
import struct
import zlib
from pathlib import Path

import numpy as np
from PIL import Image


def blank_png(path: Path, width: int, height: int) -> Path:
    """A black 1-bit PNG of any size, written row by row (a 20000x20000 one is 50 KB, never held whole):
    a decompression bomb past PIL's limits."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack('>I', len(data)) + kind + data + struct.pack('>I', zlib.crc32(kind + data))
    compressor, row = zlib.compressobj(9), bytes(1 + -(-width // 8))  # filter byte, then the bits
    pixels = b''.join(compressor.compress(row) for _ in range(height)) + compressor.flush()
    header = struct.pack('>IIBBBBB', width, height, 1, 0, 0, 0, 0)
    path.write_bytes(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', header) + chunk(b'IDAT', pixels) + chunk(b'IEND', b''))
    return path


def grey16_png(path: Path, width: int = 96, height: int = 64) -> Path:
    """A 16-bit greyscale PNG: left half mid-grey (32768, 128 in 8 bits), right half 65535 (255)."""
    values = np.full((height, width), 32768, dtype=np.uint16)
    values[:, width // 2:] = 65535
    Image.fromarray(values).save(path)
    assert Image.open(path).mode == 'I;16'
    return path
