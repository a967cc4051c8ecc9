#!/usr/bin/python3
"""Generates the shipped TorchScript models with fixed-seed random weights.

Run with Debian's /usr/bin/python3 (python3-torch, python3-torchvision); no
downloads. Writes <repo>/<model>/1/model.pt for every model below, skipping
files that exist unless --force. Each traced model is checked against its
config.pbtxt (input/output count, dtypes and shapes).

Beside it, <repo>/<model>/1/segments.pt: the same weights split into the
segments operator-group scheduling (Abacus) runs by range: ResNet's stem,
each residual block and the head; MobileNet's feature blocks and head;
BERT's embedding, each encoder layer and the head; LeNet's layers. A
scripted module whose run_range(state, start, end) runs segments
[start, end) on a list of tensors (the model's inputs before segment 0, its
outputs after the last) and whose segment_count() says how many there are;
the config's segment_count must agree, and running the segments in pieces
must give model.pt's outputs.

With --a100 DIR it instead writes the seven A100 services of the Abacus
artifact (resnet50/101/152, inception_v3, vgg16/19, bert-base) as emulated
models: DIR/<service>/config.pbtxt (input, output, operator count) and
DIR/<service>/operators.txt (each operator's output shapes at batch 4, BERT
at 64 tokens), from one forward pass of the torchvision definitions with
random weights, segmented as the artifact counts operators (ResNet: stem,
blocks, head; VGG: each conv with its ReLU, each pool, the head; Inception
v3: two stem stages, the eleven mixed modules, the head; BERT: its twelve
layers, the embedding in the first and the pooler in the last). No weights
are written: the emulated A100 runs none (configs/emulated-a100/models).

Usage: /usr/bin/python3 models/generate_models.py [--repo models] [--force]
       /usr/bin/python3 models/generate_models.py --a100 configs/emulated-a100/models
"""
import argparse
import os
import re
import sys
import time

from typing import List

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


class EncoderLayer(nn.Module):
    """Post-norm transformer encoder layer written out op by op, so tracing
    never takes PyTorch's fused fast path."""

    def __init__(self, hidden, heads, ffn):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.out = nn.Linear(hidden, hidden)
        self.norm1 = nn.LayerNorm(hidden)
        self.ff1 = nn.Linear(hidden, ffn)
        self.ff2 = nn.Linear(ffn, hidden)
        self.norm2 = nn.LayerNorm(hidden)

    def forward(self, x, mask_bias):
        b, t, h = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        d = h // self.heads

        def split(z):
            return z.reshape(b, t, self.heads, d).transpose(1, 2)

        q, k, v = split(q), split(k), split(v)
        scores = q @ k.transpose(-1, -2) / (d ** 0.5) + mask_bias
        ctx = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, h)
        x = self.norm1(x + self.out(ctx))
        return self.norm2(x + self.ff2(F.gelu(self.ff1(x))))


class BertTiny(nn.Module):
    def __init__(self, vocab=1000, seq=64, hidden=128, heads=2, layers=2):
        super().__init__()
        self.tok = nn.Embedding(vocab, hidden)
        self.pos = nn.Parameter(torch.randn(1, seq, hidden) * 0.02)
        self.layers = nn.ModuleList(
            [EncoderLayer(hidden, heads, 4 * hidden) for _ in range(layers)])
        self.pool = nn.Linear(hidden, hidden)
        self.cls = nn.Linear(hidden, 2)

    def forward(self, input_ids, attention_mask):
        x = self.tok(input_ids) + self.pos
        # Masked keys get a large negative bias: [b, 1, 1, t].
        bias = (1.0 - attention_mask.to(torch.float32))[:, None, None, :] * -1e4
        for layer in self.layers:
            x = layer(x, bias)
        pooled = torch.tanh(self.pool(x[:, 0]))
        return self.cls(pooled), pooled


class Seg(nn.Module):
    """One segment of an image model: state [x] -> [module(x)]."""

    def __init__(self, *modules):
        super().__init__()
        self.body = nn.Sequential(*modules)

    def forward(self, state: List[torch.Tensor]) -> List[torch.Tensor]:
        return [self.body(state[0])]


class FlattenHead(nn.Module):
    """pool -> flatten -> classifier, as torchvision's forward does."""

    def __init__(self, pool, classifier):
        super().__init__()
        self.pool = pool
        self.classifier = classifier

    def forward(self, state: List[torch.Tensor]) -> List[torch.Tensor]:
        return [self.classifier(torch.flatten(self.pool(state[0]), 1))]


class BertEmbed(nn.Module):
    def __init__(self, bert):
        super().__init__()
        self.tok = bert.tok
        self.pos = bert.pos

    def forward(self, state: List[torch.Tensor]) -> List[torch.Tensor]:
        ids, mask = state[0], state[1]
        bias = (1.0 - mask.to(torch.float32))[:, None, None, :] * -1e4
        return [self.tok(ids) + self.pos, bias]


class BertLayer(nn.Module):
    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, state: List[torch.Tensor]) -> List[torch.Tensor]:
        return [self.layer(state[0], state[1]), state[1]]


class BertHead(nn.Module):
    def __init__(self, bert):
        super().__init__()
        self.pool = bert.pool
        self.cls = bert.cls

    def forward(self, state: List[torch.Tensor]) -> List[torch.Tensor]:
        pooled = torch.tanh(self.pool(state[0][:, 0]))
        return [self.cls(pooled), pooled]


def resnet_segments(m):
    blocks = [b for layer in (m.layer1, m.layer2, m.layer3, m.layer4)
              for b in layer]
    return ([Seg(m.conv1, m.bn1, m.relu, m.maxpool)] +
            [Seg(b) for b in blocks] + [FlattenHead(m.avgpool, m.fc)])


def mobilenet_segments(m):
    return [Seg(f) for f in m.features] + [FlattenHead(m.avgpool,
                                                       m.classifier)]


def lenet_segments(m):
    return [Seg(m.conv1, nn.ReLU(), nn.MaxPool2d(2)),
            Seg(m.conv2, nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(1),
                m.fc1, nn.ReLU()),
            Seg(m.fc2, nn.ReLU()), Seg(m.fc3)]


def bert_segments(m):
    return [BertEmbed(m)] + [BertLayer(l) for l in m.layers] + [BertHead(m)]


class Segmented(nn.Module):
    """The segments, each traced, under a scripted range runner."""

    def __init__(self, segments):
        super().__init__()
        self.segs = nn.ModuleList(segments)
        self.count = len(segments)

    @torch.jit.export
    def segment_count(self) -> int:
        return self.count

    @torch.jit.export
    def run_range(self, state: List[torch.Tensor], start: int,
                  end: int) -> List[torch.Tensor]:
        i = 0
        for seg in self.segs:
            if i >= start and i < end:
                state = seg(state)
            i += 1
        return state

    def forward(self, state: List[torch.Tensor]) -> List[torch.Tensor]:
        return self.run_range(state, 0, self.count)


def image_input(batch):
    return (torch.randn(batch, 3, 224, 224),)


MODELS = {
    "lenet": (LeNet, lambda b: (torch.randn(b, 1, 28, 28),)),
    "resnet18": (lambda: torchvision.models.resnet18(weights=None),
                 image_input),
    "mobilenet_v3_small": (
        lambda: torchvision.models.mobilenet_v3_small(weights=None),
        image_input),
    "bert_tiny": (BertTiny, lambda b: (
        torch.randint(0, 1000, (b, 64), dtype=torch.int64),
        torch.ones(b, 64, dtype=torch.int32))),
}

SEGMENTS = {"lenet": lenet_segments, "resnet18": resnet_segments,
            "mobilenet_v3_small": mobilenet_segments,
            "bert_tiny": bert_segments}

DTYPES = {"TYPE_FP32": torch.float32, "TYPE_INT64": torch.int64,
          "TYPE_INT32": torch.int32}


def read_config(path):
    """Minimal reader for the tensor entries (and segment_count) of our
    config.pbtxt files, in Tessera's format or Triton's (dims without the
    batch dimension, segment_count as a parameter)."""
    text = open(path).read()
    triton = "pytorch_libtorch" in text
    tensors = {"input": [], "output": []}
    count = re.search(r"\bsegment_count:\s*(\d+)", text) or re.search(
        r'"segment_count"\s*value\s*\{\s*string_value:\s*"(\d+)"', text)
    tensors["segment_count"] = int(count.group(1)) if count else 0
    for kind, body in re.findall(r"\b(input|output)\s*\[?\s*\{([^}]*)\}",
                                 text):
        dtype = re.search(r"data_type:\s*(\w+)", body).group(1)
        dims = [int(d) for d in
                re.search(r"dims:\s*\[([^\]]*)\]", body).group(1).split(",")]
        tensors[kind].append((dtype, [-1] + dims if triton else dims))
    return tensors


def check(name, traced, example, config):
    outs = traced(*example)
    outs = outs if isinstance(outs, tuple) else (outs,)
    if len(outs) != len(config["output"]):
        sys.exit(f"{name}: {len(outs)} outputs, config has "
                 f"{len(config['output'])}")
    for out, (dtype, dims) in zip(outs, config["output"]):
        want = [example[0].shape[0]] + dims[1:]
        if list(out.shape) != want or out.dtype != DTYPES[dtype]:
            sys.exit(f"{name}: output {tuple(out.shape)} {out.dtype}, config "
                     f"says {want} {dtype}")


def export_segments(name, model, make_input, config, path):
    """Traces each segment, scripts the range runner, and checks that the
    segments run in two pieces give the whole model's outputs."""
    segments = SEGMENTS[name](model)
    state = list(make_input(2))
    traced = []
    with torch.no_grad():
        for seg in segments:
            traced.append(torch.jit.trace(seg, (state,), check_trace=False))
            state = seg(state)
    scripted = torch.jit.script(Segmented(traced))
    if config["segment_count"] != len(segments):
        sys.exit(f"{name}: {len(segments)} segments, config says "
                 f"segment_count: {config['segment_count']}")
    example = make_input(3)
    with torch.no_grad():
        whole = model(*example)
        whole = whole if isinstance(whole, tuple) else (whole,)
        cut = len(segments) // 2
        state = scripted.run_range(list(example), 0, cut)
        state = scripted.run_range(state, cut, len(segments))
    for a, b in zip(whole, state):
        if not torch.allclose(a, b, rtol=1e-4, atol=1e-5):
            sys.exit(f"{name}: segments differ from the whole model")
    scripted.save(path + ".tmp")
    os.replace(path + ".tmp", path)


def vgg_segments(m):
    ops, current = [], []
    for layer in m.features:
        current.append(layer)
        if isinstance(layer, (nn.ReLU, nn.MaxPool2d)):
            ops.append(Seg(*current))
            current = []
    return ops + [FlattenHead(m.avgpool, m.classifier)]


def inception_segments(m):
    mixed = [m.Mixed_5b, m.Mixed_5c, m.Mixed_5d, m.Mixed_6a, m.Mixed_6b,
             m.Mixed_6c, m.Mixed_6d, m.Mixed_6e, m.Mixed_7a, m.Mixed_7b,
             m.Mixed_7c]
    return ([Seg(m.Conv2d_1a_3x3, m.Conv2d_2a_3x3, m.Conv2d_2b_3x3,
                 m.maxpool1),
             Seg(m.Conv2d_3b_1x1, m.Conv2d_4a_3x3, m.maxpool2)] +
            [Seg(x) for x in mixed] + [FlattenHead(m.avgpool, m.fc)])


class BertIdsOnly(nn.Module):
    """BERT's embedding from token ids alone (every token attended)."""

    def __init__(self, bert):
        super().__init__()
        self.embed = BertEmbed(bert)

    def forward(self, state: List[torch.Tensor]) -> List[torch.Tensor]:
        return self.embed([state[0], torch.ones_like(state[0])])


class Chain(nn.Module):
    """Segments run one after the other as one: state -> state."""

    def __init__(self, *segments):
        super().__init__()
        self.segments = nn.ModuleList(segments)

    def forward(self, state: List[torch.Tensor]) -> List[torch.Tensor]:
        for segment in self.segments:
            state = segment(state)
        return state


def bert_base_segments(m):
    layers = [BertLayer(l) for l in m.layers]
    return ([Chain(BertIdsOnly(m), layers[0])] + layers[1:-1] +
            [Chain(layers[-1], BertHead(m))])


# name: (constructor, input config (dtype, dims), segments, artifact count)
A100_SERVICES = {
    "resnet50": (lambda: torchvision.models.resnet50(weights=None),
                 ("TYPE_FP32", [3, 224, 224]), resnet_segments, 18),
    "resnet101": (lambda: torchvision.models.resnet101(weights=None),
                  ("TYPE_FP32", [3, 224, 224]), resnet_segments, 35),
    "resnet152": (lambda: torchvision.models.resnet152(weights=None),
                  ("TYPE_FP32", [3, 224, 224]), resnet_segments, 52),
    "inception_v3": (lambda: torchvision.models.inception_v3(
        weights=None, aux_logits=False, init_weights=False),
        ("TYPE_FP32", [3, 299, 299]), inception_segments, 14),
    "vgg16": (lambda: torchvision.models.vgg16(weights=None),
              ("TYPE_FP32", [3, 224, 224]), vgg_segments, 19),
    "vgg19": (lambda: torchvision.models.vgg19(weights=None),
              ("TYPE_FP32", [3, 224, 224]), vgg_segments, 22),
    "bert": (lambda: BertTiny(vocab=30522, seq=64, hidden=768, heads=12,
                              layers=12),
             ("TYPE_INT64", [64]), bert_base_segments, 12),
}

A100_CONFIG = """\
# Generated by models/generate_models.py --a100; do not edit.
# One of the seven A100 services of the Abacus artifact, served on an
# emulated A100 (tessera_backend --a100_ground_truth_dir): no weights, and
# its operators ("segments": ResNet/VGG blocks, Inception modules, BERT
# layers) counted as the artifact counts them (operators.txt: each one's
# output shapes). Batch 4 is the batch the authors' group latencies were
# measured at.{bert_note}
# slo_ms is a ceiling: the Abacus QoS target is per co-located set
# (docs/abacus.md), which clients give as their gRPC deadline.
name: "{name}"
platform: "emulated"
max_batch_size: 4
slo_ms: 200
segment_count: {count}
input {{
  name: "INPUT__0"
  data_type: {dtype}
  dims: [{dims}]
}}
output {{
  name: "OUTPUT__0"
  data_type: TYPE_FP32
  dims: [-1, {classes}]
}}
"""


def export_a100(out_root):
    """Writes the A100 services' configs and operator shapes."""
    for name, (ctor, (dtype, dims), segment, count) in A100_SERVICES.items():
        start = time.time()
        torch.manual_seed(0)
        model = ctor().eval()
        ops = segment(model)
        if len(ops) != count:
            sys.exit(f"{name}: {len(ops)} operators; the artifact has {count}")
        if dtype == "TYPE_INT64":
            state = [torch.randint(0, 30522, [1] + dims, dtype=torch.int64)]
        else:
            state = [torch.randn([1] + dims)]
        lines = []
        with torch.no_grad():
            for i, op in enumerate(ops):
                state = op(state)
                shapes = " ".join(
                    "x".join(str(d) for d in [4] + list(t.shape[1:]))
                    for t in state)
                lines.append(f"{i} {type(op).__name__} {shapes}")
        classes = state[0].shape[-1]  # BERT: its logits, then pooled
        out_dir = os.path.join(out_root, name)
        os.makedirs(out_dir, exist_ok=True)
        with open(os.path.join(out_dir, "config.pbtxt"), "w") as f:
            f.write(A100_CONFIG.format(
                name=name, count=count, dtype=dtype,
                dims=", ".join(str(d) for d in [-1] + dims), classes=classes,
                bert_note=("\n# Token ids at the longest sequence of the "
                           "data (64).") if dtype == "TYPE_INT64" else ""))
        with open(os.path.join(out_dir, "operators.txt"), "w") as f:
            f.write("# operator, its module, its output shapes at batch 4\n")
            f.write("\n".join(lines) + "\n")
        print(f"{name}: {count} operators ({time.time() - start:.1f} s)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", default=os.path.dirname(
        os.path.abspath(__file__)), help="model repository root")
    parser.add_argument("--force", action="store_true",
                        help="regenerate existing files")
    parser.add_argument("--only", nargs="*", help="model names to generate")
    parser.add_argument("--a100", metavar="DIR",
                        help="write the A100 services' configs and operator "
                        "shapes under DIR instead (no weights)")
    args = parser.parse_args()
    if args.a100:
        torch.set_num_threads(max(1, os.cpu_count() or 1))
        export_a100(args.a100)
        return
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    for name, (ctor, make_input) in MODELS.items():
        if args.only and name not in args.only:
            continue
        out_dir = os.path.join(args.repo, name, "1")
        path = os.path.join(out_dir, "model.pt")
        segments_path = os.path.join(out_dir, "segments.pt")
        if (os.path.exists(path) and os.path.exists(segments_path) and
                not args.force):
            print(f"{name}: {path} exists, skipped")
            continue
        start = time.time()
        torch.manual_seed(0)
        model = ctor().eval()
        example = make_input(2)
        with torch.no_grad():
            traced = torch.jit.trace(model, example)
        config = read_config(os.path.join(args.repo, name, "config.pbtxt"))
        check(name, traced, make_input(3), config)
        os.makedirs(out_dir, exist_ok=True)
        traced.save(path + ".tmp")
        os.replace(path + ".tmp", path)
        export_segments(name, model, make_input, config, segments_path)
        print(f"{name}: wrote {path} and segments.pt "
              f"({os.path.getsize(path) / 1e6:.1f} MB, "
              f"{time.time() - start:.1f} s)")


if __name__ == "__main__":
    main()
