#!/usr/bin/env python3
"""Converts dlib's face descriptor, `dlib_face_recognition_resnet_model_v1.dat` (PyPI
`face_recognition_models==0.3.0`, CC0), to ONNX for mediadex (models/dlib-face-resnet-v1.onnx),
and checks the conversion against dlib itself. Run once, offline, in a venv with
`face_recognition_models==0.3.0 dlib-bin==20.0.1.post1 onnx numpy onnxruntime pillow`:

    python3 scripts/convert-dlib-face.py convert            # writes the .onnx
    python3 scripts/convert-dlib-face.py check PNG...       # dlib vs onnxruntime on chips
    python3 scripts/convert-dlib-face.py chips OUT IMG...   # dlib's own 150x150 chips
    python3 scripts/convert-dlib-face.py fixtures CAMERA    # tests/fixtures/faces/

`fixtures` writes the reference chips of the Rust test (tests/fixtures/faces/): dlib's own
chips of tests/fixtures/astronaut.png (upright, mirrored, turned 25 degrees and shrunk), the
HOG detector's false face on her mission patch, and a plain crop of the cameraman of
scikit-image 0.26.0's `skimage/data/camera.png` (CC0; pass its path), each with dlib's vector.

The .dat is dlib's serialized `anet_type` of dlib/examples/dnn_face_recognition_ex.cpp:
loss_metric <- fc_no_bias 128 <- avg_pool_everything <- 14 residual blocks (two 3x3 convs
with affine, i.e. frozen batch-norm, each) <- max_pool 3x3/2 <- relu <- affine <- con 7x7/2
<- input_rgb_image_sized<150>. dlib serializes a net outermost layer first: each wrapper
writes its version, then its sub-network, then (after the sub-network) its own details, so
the versions of all layers come first and the details follow in forward order. The reader
below walks that layout from the type list; it is written from dlib's serialize/deserialize
functions (dlib/serialize.h, dlib/dnn/core.h, layers.h, input.h, loss.h, cuda/tensor.h).

Numbers worth knowing, as dlib computes them:
- input: (pixel - avg) / 256 per channel, RGB planes, avg read from the file;
- pooling and convolution with stride 2 have no padding (dlib's default), stride 1 pads n/2;
- a residual add of two tensors of different sizes pads the smaller with zeros (tt::add),
  which happens in the down-sampling blocks: 8x8 -> conv 3x3/2 gives 3x3 while the 2x2/2
  average pool of the skip gives 4x4, and the skip has fewer channels;
- a bn_con stored in the file becomes an affine: gamma/sqrt(var+eps), beta - mean*that.
"""

import struct
import sys
from pathlib import Path

import numpy as np

MODEL_OUT = Path(__file__).resolve().parent.parent / "models" / "dlib-face-resnet-v1.onnx"


def dat_path():
    import face_recognition_models

    return face_recognition_models.face_recognition_model_location()


class Reader:
    """dlib's serialization primitives."""

    def __init__(self, data):
        self.d = data
        self.i = 0

    def byte(self):
        b = self.d[self.i]
        self.i += 1
        return b

    def int(self):
        ctrl = self.byte()
        size, neg = ctrl & 0x0F, ctrl & 0x80
        if size == 0 or size > 8:
            raise ValueError(f"bad integer control byte {ctrl:#x} at {self.i - 1}")
        v = int.from_bytes(self.d[self.i : self.i + size], "little")
        self.i += size
        return -v if neg else v

    def float(self):
        if self.d[self.i] & 0x70:
            raise ValueError(f"old ASCII float at {self.i}")
        mantissa, exponent = self.int(), self.int()
        return float(np.ldexp(np.float64(mantissa), exponent))

    def bool(self):
        c = self.byte()
        if c not in (ord("0"), ord("1")):
            raise ValueError(f"bad bool {c} at {self.i - 1}")
        return c == ord("1")

    def string(self):
        n = self.int()
        s = self.d[self.i : self.i + n].decode()
        self.i += n
        return s

    def tensor(self):
        if self.int() != 2:
            raise ValueError("resizable_tensor version")
        shape = tuple(self.int() for _ in range(4))
        n = int(np.prod(shape))
        a = np.frombuffer(self.d, dtype="<f4", count=n, offset=self.i).copy()
        self.i += 4 * n
        return a.reshape(shape)

    def alias(self):
        if self.int() != 1:
            raise ValueError("alias_tensor version")
        return tuple(self.int() for _ in range(4))


def anet_forward():
    """anet_type in forward order: ('con', n, k, stride), ('affine',), ('relu',),
    ('max_pool', k, s), ('avg_pool', k, s), ('avg_all',), ('fc', n), ('tag', i), ('skip', i),
    ('add_prev', i). Residual blocks of dnn_face_recognition_ex.cpp."""
    net = [("con", 32, 7, 2), ("affine",), ("relu",), ("max_pool", 3, 2)]

    def block(n, stride):
        return [("con", n, 3, stride), ("affine",), ("relu",), ("con", n, 3, 1), ("affine",)]

    def ares(n):
        return [("tag", 1)] + block(n, 1) + [("add_prev", 1), ("relu",)]

    def ares_down(n):
        return (
            [("tag", 1)]
            + block(n, 2)
            + [("tag", 2), ("skip", 1), ("avg_pool", 2, 2), ("add_prev", 2), ("relu",)]
        )

    for n, down, plain in [(32, 0, 3), (64, 1, 3), (128, 1, 2), (256, 1, 2), (256, 1, 0)]:
        net += (ares_down(n) if down else []) + sum((ares(n) for _ in range(plain)), [])
    return net + [("avg_all",), ("fc", 128)]


def read_details(r, kind):
    """One layer's details; returns the numbers the graph needs."""
    name = r.string()
    if kind == "con":
        params = r.tensor()
        nf, nr, nc, sy, sx, py, px = (r.int() for _ in range(7))
        fshape, bshape = r.alias(), r.alias()
        [r.float() for _ in range(4)]
        use_bias = r.bool() if name in ("con_5", "con_6") else True
        if name == "con_6":
            r.bool()
        flat = params.reshape(-1)
        w = flat[: int(np.prod(fshape))].reshape(fshape)
        b = flat[int(np.prod(fshape)) :] if use_bias else np.zeros(nf, np.float32)
        return dict(name=name, w=w, b=b.reshape(nf), k=(nr, nc), s=(sy, sx), p=(py, px))
    if kind == "affine":
        if name == "bn_con2":
            params = r.tensor().reshape(-1)
            g, _ = r.alias(), r.alias()
            [r.tensor() for _ in range(2)]
            rmean, rvar = r.tensor().reshape(-1), r.tensor().reshape(-1)
            r.int(), r.int()
            [r.float() for _ in range(4)]
            eps = np.float32(r.float())
            n = int(np.prod(g))
            gamma = params[:n] / np.sqrt(rvar + eps)
            return dict(name=name, gamma=gamma, beta=params[n:] - gamma * rmean)
        if name not in ("affine_", "affine_2"):
            raise ValueError(f"unexpected affine {name}")
        params = r.tensor().reshape(-1)
        g, _ = r.alias(), r.alias()
        r.int()
        if name == "affine_2":
            r.bool()
        n = int(np.prod(g))
        return dict(name=name, gamma=params[:n], beta=params[n:])
    if kind == "relu":
        if name == "relu_2":
            r.bool()
        return dict(name=name)
    if kind in ("max_pool", "avg_pool", "avg_all"):
        nr, nc, sy, sx, py, px = (r.int() for _ in range(6))
        return dict(name=name, k=(nr, nc), s=(sy, sx), p=(py, px))
    if kind == "add_prev":
        return dict(name=name)
    if kind == "fc":
        n_out, n_in = r.int(), r.int()
        params = r.tensor()
        r.alias(), r.alias()
        mode = r.int()
        [r.float() for _ in range(4)]
        if name == "fc_3":
            r.bool()
        w = params.reshape(-1)[: n_in * n_out].reshape(n_in, n_out)
        return dict(name=name, w=w, mode=mode)
    raise ValueError(kind)


def layer_trailer(r, version):
    """What add_layer writes after its details (flags and training buffers, unused here)."""
    r.bool(), r.bool(), r.bool()
    r.tensor(), r.tensor()
    if version == 2:
        r.tensor()


def parse(data):
    """The layers of the .dat in forward order, each ((kind, ...), details or None), and the
    input's per-channel means."""
    r = Reader(data)
    net = anet_forward()
    if r.int() != 1:
        raise ValueError("add_loss_layer version")
    loss = r.string()
    if loss == "loss_metric_2":
        r.float(), r.float()
    versions = [r.int() for _ in reversed(net)]
    versions.reverse()
    # The innermost add_layer (the first conv, over the input) has its own layout.
    if r.string() != "input_rgb_image_sized":
        raise ValueError("input layer")
    avg = [r.float() for _ in range(3)]
    size = (r.int(), r.int())
    out = []
    for i, (layer, version) in enumerate(zip(net, versions)):
        kind = layer[0]
        if kind in ("tag", "skip"):
            out.append((layer, None))
            continue
        details = read_details(r, kind)
        if i == 0:
            r.bool(), r.bool(), r.bool()
            r.tensor(), r.tensor(), r.tensor()
            if version >= 3:
                r.int()
        else:
            layer_trailer(r, version)
        out.append((layer, details))
    if r.i != len(data):
        raise ValueError(f"{len(data) - r.i} bytes left over")
    return out, avg, size, loss


def build_onnx(layers, avg, fp16=False):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes, inits = [], []
    counter = [0]

    def name(prefix):
        counter[0] += 1
        return f"{prefix}{counter[0]}"

    def const(arr, prefix):
        n = name(prefix)
        arr = np.ascontiguousarray(arr, np.float32)
        if fp16 and arr.size > 64:
            inits.append(numpy_helper.from_array(arr.astype(np.float16), n + "_h"))
            nodes.append(helper.make_node("Cast", [n + "_h"], [n], to=TensorProto.FLOAT))
        else:
            inits.append(numpy_helper.from_array(arr, n))
        return n

    def ints(values, prefix):
        n = name(prefix)
        inits.append(numpy_helper.from_array(np.array(values, np.int64), n))
        return n

    def op(kind, inputs, **attrs):
        out = name(kind.lower())
        nodes.append(helper.make_node(kind, inputs, [out], **attrs))
        return out

    # The chip as float RGB 0..255, NCHW; dlib's (pixel - avg) / 256 is part of the graph.
    x = op("Sub", ["chip", const(np.array(avg, np.float32).reshape(1, 3, 1, 1), "avg")])
    x = op("Mul", [x, const(np.array([1 / 256], np.float32), "scale")])
    # (value, channels, side) of each tag, to line up a residual add.
    tags, cur = {}, (x, 3, 150)
    for layer, d in layers:
        kind = layer[0]
        v, ch, side = cur
        if kind == "con":
            (kh, kw), (sh, sw), (ph, pw) = d["k"], d["s"], d["p"]
            y = op("Conv", [v, const(d["w"], "w"), const(d["b"], "b")],
                   kernel_shape=[kh, kw], strides=[sh, sw], pads=[ph, pw, ph, pw])
            cur = (y, d["w"].shape[0], (side + 2 * ph - kh) // sh + 1)
        elif kind == "affine":
            g = const(d["gamma"].reshape(1, -1, 1, 1), "gamma")
            b = const(d["beta"].reshape(1, -1, 1, 1), "beta")
            cur = (op("Add", [op("Mul", [v, g]), b]), ch, side)
        elif kind == "relu":
            cur = (op("Relu", [v]), ch, side)
        elif kind in ("max_pool", "avg_pool"):
            (kh, kw), (sh, sw), (ph, pw) = d["k"], d["s"], d["p"]
            onnx_op = "MaxPool" if kind == "max_pool" else "AveragePool"
            y = op(onnx_op, [v], kernel_shape=[kh, kw], strides=[sh, sw], pads=[ph, pw, ph, pw])
            cur = (y, ch, (side + 2 * ph - kh) // sh + 1)
        elif kind == "avg_all":
            cur = (op("GlobalAveragePool", [v]), ch, 1)
        elif kind == "tag":
            tags[layer[1]] = cur
        elif kind == "skip":
            cur = tags[layer[1]]
        elif kind == "add_prev":
            cur = add_padded(op, ints, cur, tags[layer[1]])
        elif kind == "fc":
            flat = op("Flatten", [v], axis=1)
            cur = (op("MatMul", [flat, const(d["w"], "fc")]), d["w"].shape[1], 1)
    nodes.append(helper.make_node("Identity", [cur[0]], ["descriptor"]))
    graph = helper.make_graph(
        nodes,
        "dlib_face_recognition_resnet_model_v1",
        [helper.make_tensor_value_info("chip", TensorProto.FLOAT, [1, 3, 150, 150])],
        [helper.make_tensor_value_info("descriptor", TensorProto.FLOAT, [1, 128])],
        inits,
    )
    model = helper.make_model(
        graph, producer_name="mediadex scripts/convert-dlib-face.py",
        opset_imports=[helper.make_opsetid("", 13)],
    )
    model.ir_version = 7
    onnx.checker.check_model(model)
    return model


def add_padded(op, ints, a, b):
    """dlib's tt::add: the sum over the larger shape, each input zero-padded to it."""
    ch, side = max(a[1], b[1]), max(a[2], b[2])

    def pad(t):
        v, c, s = t
        if (c, s) == (ch, side):
            return v
        return op("Pad", [v, ints([0, 0, 0, 0, 0, ch - c, side - s, side - s], "pads")])

    return (op("Add", [pad(a), pad(b)]), ch, side)


def convert(fp16=False):
    data = Path(dat_path()).read_bytes()
    layers, avg, size, loss = parse(data)
    kinds = [l[0] for l, _ in layers]
    print(f"parsed {len(data)} bytes: input {size} avg {avg}, {loss}; conv {kinds.count('con')},"
          f" affine {kinds.count('affine')}, add {kinds.count('add_prev')},"
          f" affine from bn {sum(1 for l, d in layers if d and d['name'] == 'bn_con2')}")
    model = build_onnx(layers, avg, fp16)
    out = MODEL_OUT.with_suffix(".fp16.onnx") if fp16 else MODEL_OUT
    out.write_bytes(model.SerializeToString())
    print(f"wrote {out}: {out.stat().st_size} bytes")


def load_chip(path):
    from PIL import Image

    rgb = np.asarray(Image.open(path).convert("RGB"))
    if rgb.shape != (150, 150, 3):
        raise ValueError(f"{path}: a chip is 150x150, not {rgb.shape}")
    return rgb


def check(paths, model=MODEL_OUT):
    """dlib's descriptor vs the ONNX model's on each chip: max abs component error and the
    largest difference of a pairwise distance."""
    import dlib
    import onnxruntime

    rec = dlib.face_recognition_model_v1(dat_path())
    sess = onnxruntime.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    ref, got = [], []
    for p in paths:
        rgb = load_chip(p)
        ref.append(np.array(rec.compute_face_descriptor(rgb), np.float64))
        x = rgb.astype(np.float32).transpose(2, 0, 1)[None]
        got.append(sess.run(None, {"chip": x})[0][0].astype(np.float64))
    ref, got = np.array(ref), np.array(got)
    err = np.abs(ref - got).max()
    dist = lambda v: np.linalg.norm(v[:, None] - v[None], axis=2)
    derr = np.abs(dist(ref) - dist(got)).max()
    print(f"{model.name}: {len(paths)} chips, max abs component error {err:.3g},"
          f" max pairwise distance error {derr:.3g}")
    return ref, got, err


def dlib_chips(rgb):
    """dlib's own pipeline (HOG detector, 5-point shape predictor, get_face_chip with padding
    0.25, as dnn_face_recognition_ex.cpp): a chip and the 5 points per face found."""
    import dlib
    import face_recognition_models as frm

    detector = dlib.get_frontal_face_detector()
    sp = dlib.shape_predictor(frm.pose_predictor_five_point_model_location())
    found = []
    for det in detector(rgb, 1):
        shape = sp(rgb, det)
        parts = [(shape.part(i).x, shape.part(i).y) for i in range(5)]
        found.append((dlib.get_face_chip(rgb, shape, size=150, padding=0.25), det, parts))
    return found


def write_chip(out, stem, chip, rec):
    from PIL import Image

    Image.fromarray(chip).save(out / f"{stem}.png", optimize=True)
    vec = np.array(rec.compute_face_descriptor(chip), np.float64)
    (out / f"{stem}.txt").write_text("".join(f"{v:.9g}\n" for v in vec))


def fixtures(camera):
    import dlib
    from PIL import Image

    root = Path(__file__).resolve().parent.parent / "tests" / "fixtures"
    out = root / "faces"
    out.mkdir(exist_ok=True)
    rec = dlib.face_recognition_model_v1(dat_path())
    img = Image.open(root / "astronaut.png").convert("RGB")
    turned = img.rotate(25, resample=Image.BICUBIC, expand=True, fillcolor=(128, 128, 128))
    turned = turned.resize((turned.width * 7 // 10, turned.height * 7 // 10), Image.BICUBIC)
    variants = [("upright", img), ("mirrored", img.transpose(Image.FLIP_LEFT_RIGHT)),
                ("turned", turned)]
    for name, picture in variants:
        found = dlib_chips(np.asarray(picture))
        for n, (chip, det, parts) in enumerate(found):
            stem = f"astronaut-{name}" if n == 0 else f"astronaut-{name}-patch"
            if n == 0 or name == "upright":
                write_chip(out, stem, chip, rec)
                print(f"{stem}: {det} 5 points {parts}")
    cam = Image.open(camera).convert("RGB").crop((150, 50, 290, 190))
    write_chip(out, "cameraman-crop", np.asarray(cam.resize((150, 150), Image.BILINEAR)), rec)


def chips(out_dir, images):
    """dlib's own pipeline (HOG detector, 5-point shape predictor, get_face_chip with padding
    0.25, as dnn_face_recognition_ex.cpp) on each image: one PNG chip and its dlib
    descriptor (a .txt of 128 numbers) per face."""
    import dlib
    import face_recognition_models as frm
    from PIL import Image

    detector = dlib.get_frontal_face_detector()
    sp = dlib.shape_predictor(frm.pose_predictor_five_point_model_location())
    rec = dlib.face_recognition_model_v1(dat_path())
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for image in images:
        rgb = np.asarray(Image.open(image).convert("RGB"))
        for n, det in enumerate(detector(rgb, 1)):
            shape = sp(rgb, det)
            chip = dlib.get_face_chip(rgb, shape, size=150, padding=0.25)
            stem = f"{Path(image).stem}-{n}"
            Image.fromarray(chip).save(out / f"{stem}.png", optimize=True)
            vec = np.array(rec.compute_face_descriptor(chip), np.float64)
            (out / f"{stem}.txt").write_text("".join(f"{v:.9g}\n" for v in vec))
            parts = [(shape.part(i).x, shape.part(i).y) for i in range(5)]
            print(f"{stem}: box {det} 5 points {parts}")


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "convert":
        convert(fp16="--fp16" in sys.argv)
    elif cmd == "check":
        args = [a for a in sys.argv[2:] if not a.startswith("--")]
        model = MODEL_OUT.with_suffix(".fp16.onnx") if "--fp16" in sys.argv else MODEL_OUT
        check(args, model)
    elif cmd == "fixtures":
        fixtures(sys.argv[2])
    elif cmd == "chips":
        chips(sys.argv[2], sys.argv[3:])
    else:
        sys.exit(__doc__)
