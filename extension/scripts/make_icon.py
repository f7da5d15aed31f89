"""Draw extension/media/icon.png (256x256 RGBA): the report's rank timeline in miniature --
four rank lanes on a dark rounded tile, hollow squares for collateral, and the initiating
rank's ringed red mark. Standard library only (zlib); 4x4 supersampling for smooth edges.
Run from the repository root: python3 extension/scripts/make_icon.py
"""

from __future__ import annotations

import struct
import sys
import zlib

SIZE, SS = 256, 4
BG, LANE, SQUARE, RED = (31, 36, 48), (91, 99, 117), (215, 218, 224), (241, 76, 76)
LANES = (64, 108, 152, 196)
SQUARES = ((162, 64), (182, 152), (142, 196))  # centres
MARK = (84, 108)


def color_at(x: float, y: float) -> tuple[int, int, int, int]:
    # Rounded tile 8..248 with corner radius 40.
    cx, cy = min(max(x, 48), 208), min(max(y, 48), 208)
    if (x - cx) ** 2 + (y - cy) ** 2 > 40**2 or not (8 <= x <= 248 and 8 <= y <= 248):
        return (0, 0, 0, 0)
    d = ((x - MARK[0]) ** 2 + (y - MARK[1]) ** 2) ** 0.5
    if d <= 16 or 22 <= d <= 30:
        return (*RED, 255)
    for sx, sy in SQUARES:
        half, w = 13, 7
        if abs(x - sx) <= half and abs(y - sy) <= half:
            inner = abs(x - sx) <= half - w and abs(y - sy) <= half - w
            return (*(BG if inner else SQUARE), 255)
    if 40 <= x <= 216 and any(abs(y - ly) <= 3 for ly in LANES) and d > 30:
        return (*LANE, 255)
    return (*BG, 255)


def main(out: str) -> None:
    rows = []
    for py in range(SIZE):
        row = bytearray([0])  # filter: none
        for px in range(SIZE):
            acc = [0, 0, 0, 0]
            for sy in range(SS):
                for sx in range(SS):
                    c = color_at(px + (sx + 0.5) / SS, py + (sy + 0.5) / SS)
                    for i in range(3):
                        acc[i] += c[i] * c[3]
                    acc[3] += c[3]
            a = acc[3] / (SS * SS)
            rgb = [round(acc[i] / acc[3]) if acc[3] else 0 for i in range(3)]
            row += bytes((*rgb, round(a)))
        rows.append(bytes(row))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", SIZE, SIZE, 8, 6, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(b"".join(rows), 9)) + chunk(b"IEND", b"")
    with open(out, "wb") as f:
        f.write(png)
    print(f"wrote {out} ({len(png)} bytes)")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "extension/media/icon.png")
