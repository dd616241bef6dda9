#!/usr/bin/env python3
"""Builds tests/fixtures/raw/: small RAW-shaped files and unsupported or broken files for
issue 26 (RAW sizes, TIFF told from RAW, no silent skips), from tests/fixtures/rocket.jpg.

Needs ffmpeg (to shrink rocket.jpg and to get its pixels) and exiftool (to write the EXIF
of the embedded JPEGs). The layouts follow exiftool's readers (PanasonicRaw.pm, Canon.pm,
FujiFilm.pm ProcessRAF, Exif.pm); run `exiftool -s -ImageSize -MIMEType` on the output to
see what the tests expect. Run from the repository root: python3 scripts/make-raw-fixtures.py
"""

import os
import struct
import subprocess
import tempfile

SRC = "tests/fixtures/rocket.jpg"
OUT = "tests/fixtures/raw"
BITEXACT = ["-fflags", "+bitexact", "-flags:v", "+bitexact", "-loglevel", "error", "-y"]


def ffmpeg(args):
    subprocess.run(["ffmpeg", "-i", SRC] + BITEXACT + args, check=True)


def small_jpeg(width, tags):
    """rocket.jpg shrunk to `width` px wide, with the EXIF `tags` written by exiftool."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "small.jpg")
        ffmpeg(["-vf", f"scale={width}:-2", "-q:v", "6", path])
        if tags:
            args = [f"-{k}={v}" for k, v in tags]
            subprocess.run(["exiftool", "-q", "-overwrite_original"] + args + [path], check=True)
        with open(path, "rb") as f:
            return f.read()


def rgb_pixels(width, height):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "pixels.rgb")
        ffmpeg(["-vf", f"scale={width}:{height}", "-f", "rawvideo", "-pix_fmt", "rgb24", path])
        with open(path, "rb") as f:
            return f.read()


class Tiff:
    """A little-endian TIFF written front to back: IFDs and their values appended."""

    SIZES = {1: 1, 2: 1, 3: 2, 4: 4, 7: 1}

    def __init__(self, head):
        self.b = bytearray(head)

    def blob(self, data):
        if len(self.b) % 2:
            self.b += b"\0"
        at = len(self.b)
        self.b += data
        return at

    def ifd(self, entries, next_ifd=0, at=None):
        """`entries`: (tag, type, values) with values a list of ints, bytes or str. The
        table goes at `at` when given (space the caller reserved), else at the end."""
        entries = sorted(entries)
        if at is None:
            if len(self.b) % 2:
                self.b += b"\0"
            at = len(self.b)
            self.b += b"\0" * (2 + 12 * len(entries) + 4)
        rows = []
        for tag, typ, values in entries:
            if isinstance(values, str):
                values = values.encode() + b"\0"
            if isinstance(values, tuple):  # (offset, count): a value placed by the caller
                rows.append(struct.pack("<HHII", tag, typ, values[1], values[0]))
                continue
            if isinstance(values, (bytes, bytearray)):
                data, count = bytes(values), len(values)
            else:
                fmt = {1: "B", 3: "H", 4: "I"}[typ]
                data, count = struct.pack("<%d%s" % (len(values), fmt), *values), len(values)
            if len(data) <= 4:
                field = data.ljust(4, b"\0")
            else:
                field = struct.pack("<I", self.blob(data))
            rows.append(struct.pack("<HHI", tag, typ, count) + field)
        table = struct.pack("<H", len(rows)) + b"".join(rows) + struct.pack("<I", next_ifd)
        self.b[at:at + len(table)] = table
        return at

    def link(self, ifd_at, n_entries, next_ifd):
        pos = ifd_at + 2 + 12 * n_entries
        self.b[pos:pos + 4] = struct.pack("<I", next_ifd)

    def first(self, at):
        self.b[4:8] = struct.pack("<I", at)


def rw2():
    """A Panasonic DC-G9 RW2 in small: IFD0 with the sensor size (0x02, 0x03) and borders
    (0x04-0x07) but no ImageWidth, the Exif IFD, and JpgFromRaw (0x2E)."""
    jpeg = small_jpeg(64, [("Make", "Panasonic"), ("Model", "DC-G9")])
    # The RW2 signature exiftool tells RW2 from Panasonic's older RAW by, at 8.
    t = Tiff(b"IIU\0\x18\0\0\0" + bytes.fromhex("88e774d8f8251d4d947a6e77822b5d6a"))
    exif = t.ifd([(0x9003, 2, "2021:07:08 09:10:11")])
    ifd0 = t.ifd([
        (0x01, 7, b"0470"),
        (0x02, 3, [5248]), (0x03, 3, [3920]),
        (0x04, 3, [16]), (0x05, 3, [8]), (0x06, 3, [3904]), (0x07, 3, [5192]),
        (0x2E, 7, jpeg),
        (0x10F, 2, "Panasonic"), (0x110, 2, "DC-G9"), (0x112, 3, [1]),
        (0x8769, 4, [exif]),
    ])
    t.first(ifd0)
    return bytes(t.b)


def cr2(exif_size=True):
    """A 350D-era CR2: IFD0 a 1536x1024 JPEG preview, IFD1 a thumbnail, IFD3's raw IFD with
    no size, the Exif IFD saying ExifImageWidth x ExifImageHeight 3456x2304 (`exif_size`),
    else only its Canon MakerNote's SensorInfo (0xE0: sensor 3516x2328, borders left 42, top
    14, right 3497, bottom 2317, inclusive: a 3456x2304 crop)."""
    preview = small_jpeg(96, [])
    thumb = small_jpeg(32, [])
    t = Tiff(b"II*\0\x10\0\0\0CR\x02\0\0\0\0\0")
    if exif_size:
        size = [(0xA002, 3, [3456]), (0xA003, 3, [2304])]
    else:
        sensor = [34, 3516, 2328, 1, 1, 42, 14, 3497, 2317] + [0] * 8
        note = t.ifd([(0xE0, 3, sensor)])
        size = [(0x927C, 7, (note, 2 + 12 + 4))]
    exif = t.ifd([(0x9003, 2, "2005:06:07 08:09:10")] + size)
    preview_at = t.blob(preview)
    thumb_at = t.blob(thumb)
    slices_at = t.blob(b"\xff\xd8\xff\xc3\0\0")
    raw = t.ifd([(0x103, 3, [6]), (0x111, 4, [slices_at]), (0x117, 4, [6])])
    ifd1 = t.ifd([(0x103, 3, [6]), (0x201, 4, [thumb_at]), (0x202, 4, [len(thumb)])], raw)
    ifd0_entries = [
        (0x100, 3, [1536]), (0x101, 3, [1024]), (0x102, 3, [8, 8, 8]), (0x103, 3, [6]),
        (0x10F, 2, "Canon"), (0x110, 2, "Canon EOS 350D DIGITAL"),
        (0x111, 4, [preview_at]), (0x112, 3, [1]), (0x117, 4, [len(preview)]),
        (0x8769, 4, [exif]),
    ]
    ifd0 = t.ifd(ifd0_entries, ifd1)
    t.first(ifd0)
    return bytes(t.b)


def raf(magic=b"FUJIFILMCCD-RAW "):
    """A Fujifilm X-T3 RAF: header, the RAF directory (RawImageFullSize 6384x4182,
    RawImageCroppedSize 6240x4160, stored height first) and the embedded JPEG with EXIF."""
    jpeg = small_jpeg(64, [
        ("Make", "FUJIFILM"), ("Model", "X-T3"),
        ("DateTimeOriginal", "2023:03:04 05:06:07"),
        ("ExifImageWidth", "6240"), ("ExifImageHeight", "4160"),
    ])
    head = bytearray(magic + b"0201" + b"FF383501")
    head += b"X-T3".ljust(32, b"\0") + b"0100" + b"\0" * 20
    assert len(head) == 84
    entries = [(0x100, struct.pack(">HH", 4182, 6384)), (0x111, struct.pack(">HH", 4160, 6240))]
    directory = struct.pack(">I", len(entries))
    directory += b"".join(struct.pack(">HH", tag, len(v)) + v for tag, v in entries)
    # The header's pointers end at 0xA0 (exiftool also looks at 0x64, 0x78 and 0x80).
    dir_at = 0xA0
    jpeg_at = dir_at + len(directory)
    head += struct.pack(">IIII", jpeg_at, len(jpeg), dir_at, len(directory))
    head = head.ljust(dir_at, b"\0")
    return bytes(head + directory + jpeg)


def gimp_nikon_tiff():
    """An RGB TIFF as GIMP exports a Nikon photo: Make and Model kept, uncompressed pixels,
    and a SubIFD thumbnail (NewSubfileType 1), IFD0 first in the file."""
    w, h, tw, th = 64, 42, 32, 21
    pixels, thumb = rgb_pixels(w, h), rgb_pixels(tw, th)
    common = [(0x102, 3, [8, 8, 8]), (0x103, 3, [1]), (0x106, 3, [2]), (0x115, 3, [3]),
              (0x11C, 3, [1])]
    n0 = 10 + len(common)
    t = Tiff(b"II*\0\x08\0\0\0")
    t.b += b"\0" * (2 + 12 * n0 + 4)  # IFD0's table, written once its values are placed
    # Its texts right after it, as libtiff places them, within the first 8 KiB.
    texts = {}
    for tag, text in [(0x10F, "NIKON CORPORATION"), (0x110, "NIKON D750"),
                      (0x131, "GIMP 2.10.34")]:
        data = text.encode() + b"\0"
        texts[tag] = (t.blob(data), len(data))
    thumb_at = t.blob(thumb)
    sub = t.ifd([(0xFE, 4, [1]), (0x100, 3, [tw]), (0x101, 3, [th]), (0x111, 4, [thumb_at]),
                 (0x116, 3, [th]), (0x117, 4, [len(thumb)])] + common)
    pixels_at = t.blob(pixels)
    entries = [(0xFE, 4, [0]), (0x100, 3, [w]), (0x101, 3, [h]),
               (0x10F, 2, texts[0x10F]), (0x110, 2, texts[0x110]),
               (0x111, 4, [pixels_at]), (0x116, 3, [h]), (0x117, 4, [len(pixels)]),
               (0x131, 2, texts[0x131]), (0x14A, 4, [sub])] + common
    assert len(entries) == n0
    t.ifd(entries, at=8)
    return bytes(t.b)


def main():
    os.makedirs(OUT, exist_ok=True)
    small = small_jpeg(64, [])
    files = {
        "P1000001.RW2": rw2(),
        "IMG_0350.CR2": cr2(),
        "IMG_0351.CR2": cr2(exif_size=False),
        "DSCF0001.RAF": raf(),
        "gimp_nikon.tif": gimp_nikon_tiff(),
        # Formats mediadex names but does not read: their magic and a little padding.
        "CRW_0001.CRW": b"II\x1a\0\0\0HEAPCCDR\x01\0\x02\0" + b"\0" * 48,
        "PICT0001.MRW": b"\0MRM\0\0\0\x28\0PRD\0\0\0\x18" + b"\0" * 48,
        "IMG00001.X3F": b"FOVb\0\0\x04\0" + b"\0" * 56,
        "bigtiff.tif": b"II+\0\x08\0\0\0\x10\0\0\0\0\0\0\0" + b"\0" * 48,
        # Broken: a JPEG whose FF D8 is not followed by a marker, a RAF whose header is
        # Fujifilm's with another format word (exiftool reads any FUJIFILM header as a RAF),
        # one of other bytes, and HEICs that are empty or text.
        "no_marker.jpg": small[:2] + b"\0" + small[3:],
        "DSCF0002.RAF": raf(b"FUJIFILMCCD-RAX "),
        "DSCF0003.RAF": b"NOTAFUJI" + small,
        "empty.heic": b"",
        "garbage.heic": b"this file was never a HEIC picture\n" * 4,
    }
    for name, data in files.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
        print(f"{name}: {len(data)} bytes")


if __name__ == "__main__":
    main()
