#!/usr/bin/env python3
"""Bulk files for the tortures (scripts/torture.sh, scripts/hosts-torture.sh): N copies of
one small JPEG, each made unique by 8 trailing bytes (a JPEG ends at its EOI; what follows
changes the checksum, not the picture), 1000 to a folder.
Usage: bulk-jpegs.py BASE_JPEG OUT_DIR N"""
import os
import sys

base, out, n = open(sys.argv[1], "rb").read(), sys.argv[2], int(sys.argv[3])
for i in range(n):
    d = os.path.join(out, f"{i // 1000:03d}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"IMG_{i:06d}.jpg"), "wb") as f:
        f.write(base + i.to_bytes(8, "little"))
