#!/usr/bin/env python3
"""Builds the HEIF metadata fixtures of issue 26 (findings 1, 2, 3) in tests/fixtures from
astronaut_half.heic (libheif 1.15's heif-enc output, already there), by rewriting its `meta`
box: new items in `iinf`/`iloc`/`iref`, their bytes in `idat` or in a second `mdat` after the
original one, whose items' offsets are moved by what `meta` grew. Deterministic: run it
again and the files are byte for byte the same (their sha256 are in tests/fixtures/README.md).

    python3 scripts/heif-fixtures.py            # writes the three files
    python3 scripts/heif-fixtures.py --check    # fails if a committed file differs

heif_xmp.heic is not built here: exiftool writes it (see tests/fixtures/README.md)."""

import hashlib
import struct
import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures"
BASE = FIXTURES / "astronaut_half.heic"


def box(kind, body):
    return struct.pack(">I", 8 + len(body)) + kind + body


def full(kind, version, flags, body):
    return box(kind, bytes([version]) + flags.to_bytes(3, "big") + body)


def children(data):
    out, pos = [], 0
    while pos + 8 <= len(data):
        size, kind = struct.unpack(">I4s", data[pos : pos + 8])
        out.append((kind, data[pos + 8 : pos + size]))
        pos += size
    return out


# --- TIFF (big-endian), the payload of an Exif item ----------------------------------------

ASCII, SHORT, LONG, RATIONAL, UNDEFINED = 2, 3, 4, 5, 7


def ascii(text):
    raw = text.encode() + b"\0"
    return (ASCII, len(raw), raw)


def rationals(*pairs):
    return (RATIONAL, len(pairs), b"".join(struct.pack(">II", n, d) for n, d in pairs))


def ifd(entries, at, next_ifd=0):
    """One IFD at offset `at` with its out-of-line values after it."""
    entries = sorted(entries.items())
    data_at = at + 2 + 12 * len(entries) + 4
    head, data = struct.pack(">H", len(entries)), b""
    for tag, (kind, count, raw) in entries:
        if len(raw) <= 4:
            head += struct.pack(">HHI", tag, kind, count) + raw.ljust(4, b"\0")
        else:
            head += struct.pack(">HHII", tag, kind, count, data_at + len(data))
            data += raw + (b"\0" if len(raw) % 2 else b"")
    return head + struct.pack(">I", next_ifd) + data


def tiff(ifd0, exif, gps):
    """IFD0, then its Exif IFD and GPS IFD, pointers filled in."""
    pointer = lambda at: (LONG, 1, struct.pack(">I", at))
    ifd0 = {**ifd0, 0x8769: pointer(0), 0x8825: pointer(0)}
    exif_at = 8 + len(ifd(ifd0, 8))
    gps_at = exif_at + len(ifd(exif, exif_at))
    ifd0[0x8769], ifd0[0x8825] = pointer(exif_at), pointer(gps_at)
    return b"MM\0*" + struct.pack(">I", 8) + ifd(ifd0, 8) + ifd(exif, exif_at) + ifd(gps, gps_at)


def exif_item(make, model, taken, offset, lat, lon, maker_note=b""):
    """`lat` and `lon` are (degrees, "N"/"S") and (degrees, "E"/"W")."""
    """An Exif item's bytes: the 4-byte offset to the TIFF header, `Exif\\0\\0`, the TIFF."""
    dms = lambda v: ((int(v), 1), (int(v * 60) % 60, 1), (round(v * 360000) % 6000, 100))
    ifd0 = {0x010F: ascii(make), 0x0110: ascii(model), 0x0112: (SHORT, 1, b"\0\1")}
    exif = {0x9003: ascii(taken), 0x9011: ascii(offset)}
    if maker_note:
        exif[0x927C] = (UNDEFINED, len(maker_note), maker_note)
    gps = {
        0x0001: ascii(lat[1]),
        0x0002: rationals(*dms(lat[0])),
        0x0003: ascii(lon[1]),
        0x0004: rationals(*dms(lon[0])),
    }
    return struct.pack(">I", 6) + b"Exif\0\0" + tiff(ifd0, exif, gps)


# --- the HEIF rewrite -------------------------------------------------------------------------


class Heif:
    def __init__(self, data):
        top = children(data)
        assert [k for k, _ in top] == [b"ftyp", b"meta", b"mdat"], "heif-enc's layout"
        self.ftyp, meta, self.mdat = (b for _, b in top)
        self.old_mdat_body = len(data) - len(self.mdat)
        self.meta = dict(children(meta[4:]))
        self.items = self.parse_iloc(self.meta[b"iloc"])
        iinf = self.meta[b"iinf"]
        self.infe = [box(k, b) for k, b in children(iinf[6:])]
        self.irefs = [box(k, b) for k, b in children(self.meta[b"iref"][4:])]
        ipco, ipma = (b for _, b in children(self.meta[b"iprp"]))
        self.properties = [box(k, b) for k, b in children(ipco)]
        self.assoc = self.parse_ipma(ipma)
        self.idat = self.meta[b"idat"]
        self.extra = b""  # the second mdat's body

    @staticmethod
    def parse_iloc(body):
        assert body[0] == 1 and body[4:6] == b"\x44\x40", "iloc v1, 4-byte fields"
        count, pos, items = struct.unpack(">H", body[6:8])[0], 8, []
        for _ in range(count):
            item, method, dref, base, n = struct.unpack(">HHHIH", body[pos : pos + 12])
            pos += 12
            extents = [struct.unpack(">II", body[pos + 8 * i : pos + 8 * i + 8]) for i in range(n)]
            pos += 8 * n
            items.append([item, method & 0xF, base, extents, False])
        return items

    @staticmethod
    def parse_ipma(body):
        assert body[0] == 0 and body[3] & 1 == 0, "ipma v0, 1-byte indexes"
        count, pos, out = struct.unpack(">I", body[4:8])[0], 8, []
        for _ in range(count):
            item, n = struct.unpack(">HB", body[pos : pos + 3])
            out.append((item, list(body[pos + 3 : pos + 3 + n])))
            pos += 3 + n
        return out

    def add_item(self, item, kind, data, *, idat=False, extents=1, content_type=None, describes=None):
        """A new item holding `data` (in idat, or in the second mdat in `extents` pieces)."""
        name = b"\0" + (content_type.encode() + b"\0" if content_type else b"")
        self.infe.append(full(b"infe", 2, 0, struct.pack(">HH", item, 0) + kind + name))
        if describes is not None:
            self.irefs.append(box(b"cdsc", struct.pack(">HHH", item, 1, describes)))
        store = "idat" if idat else "extra"
        start, step = len(getattr(self, store)), -(-len(data) // extents)
        pieces = [(start + i, len(data[i : i + step])) for i in range(0, len(data), step)]
        setattr(self, store, getattr(self, store) + data)
        self.items.append([item, 1 if idat else 0, 0, pieces, not idat])

    def copy_image(self, item, source):
        """A second image item: `source`'s data and properties under a new id."""
        infe = next(i for i in self.infe if struct.unpack(">H", i[12:14])[0] == source)
        self.infe.append(infe[:12] + struct.pack(">H", item) + infe[14:])
        old = next(i for i in self.items if i[0] == source)
        self.items.append([item, old[1], old[2], list(old[3]), False])
        self.assoc.append((item, list(dict(self.assoc)[source])))

    def iloc(self, shift, extra_at):
        body = struct.pack(">BBBBBBH", 1, 0, 0, 0, 0x44, 0x40, len(self.items))
        for item, method, base, extents, in_extra in self.items:
            # heif-enc's items point into mdat by their base offset, ours by their extents.
            base += shift if method == 0 and not in_extra else 0
            body += struct.pack(">HHHIH", item, method, 0, base, len(extents))
            for off, length in extents:
                body += struct.pack(">II", off + (extra_at if in_extra else 0), length)
        return body

    def build(self):
        def meta(shift, extra_at):
            ipma = struct.pack(">I", len(self.assoc)) + b"".join(
                struct.pack(">HB", i, len(a)) + bytes(a) for i, a in self.assoc
            )
            iprp = box(b"iprp", box(b"ipco", b"".join(self.properties)) + full(b"ipma", 0, 0, ipma))
            parts = [
                box(b"hdlr", self.meta[b"hdlr"]),
                box(b"pitm", self.meta[b"pitm"]),
                box(b"iloc", self.iloc(shift, extra_at)),
                full(b"iinf", 0, 0, struct.pack(">H", len(self.infe)) + b"".join(self.infe)),
                iprp,
                full(b"iref", 0, 0, b"".join(self.irefs)),
                box(b"idat", self.idat),
            ]
            return full(b"meta", 0, 0, b"".join(parts))

        head = box(b"ftyp", self.ftyp)
        size = len(meta(0, 0))  # offsets are fixed-width: the size does not depend on them
        mdat_body = len(head) + size + 8
        shift = mdat_body - self.old_mdat_body
        extra_at = mdat_body + len(self.mdat) + 8
        out = head + meta(shift, extra_at) + box(b"mdat", self.mdat)
        return out + (box(b"mdat", self.extra) if self.extra else b"")


def big_exif():
    """Finding 1: an Exif item of 135,000+ bytes (a MakerNote as big as a phone's), in two
    extents, over kamadak-exif 0.6.2's 131,070."""
    h = Heif(BASE.read_bytes())
    note = b"mediadex padding: a maker note as big as a phone's".ljust(135_000, b"\0")
    exif = exif_item("Xiaomi", "Big Exif", "2023:07:14 18:22:05", "+02:00", (48.858222, "N"), (2.2945, "E"), note)
    h.add_item(20, b"Exif", exif, extents=2, describes=2)
    return h.build()


def two_exif():
    """Finding 2: the primary item's Exif (in idat) listed before a second image's Exif (in
    mdat), whose date is 2 s later and whose place is elsewhere."""
    h = Heif(BASE.read_bytes())
    h.copy_image(3, source=1)
    primary = exif_item("Apple", "Primary", "2019:06:01 12:00:00", "-07:00", (37.3349, "N"), (122.009, "W"))
    other = exif_item("Apple", "Other", "2019:06:01 12:00:02", "-07:00", (40.6892, "N"), (74.0445, "W"))
    h.add_item(20, b"Exif", primary, idat=True, describes=2)
    h.add_item(21, b"Exif", other, describes=3)
    return h.build()


def irot_first():
    """Finding 3: the primary item's `irot` (a quarter turn) associated before its `pixi` and
    `ispe`, as a Sony ILCE-7M4 portrait HIF does."""
    h = Heif(BASE.read_bytes())
    h.properties.append(box(b"irot", b"\1"))
    irot = 0x80 | len(h.properties)
    kinds = {i + 1: p[4:8] for i, p in enumerate(h.properties)}
    h.assoc = [
        (item, [irot] + sorted(a, key=lambda i: kinds[i & 0x7F] != b"pixi") if item == 2 else a)
        for item, a in h.assoc
    ]
    return h.build()


FILES = {
    "heif_big_exif.heic": big_exif,
    "heif_two_exif.heic": two_exif,
    "heif_irot_first.heic": irot_first,
}


def main():
    check = "--check" in sys.argv
    bad = 0
    for name, make in FILES.items():
        data, path = make(), FIXTURES / name
        if check:
            same = path.exists() and path.read_bytes() == data
            bad += not same
            print(f"{name}: {'same' if same else 'DIFFERS'}")
        else:
            path.write_bytes(data)
            print(f"{name}: {len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
