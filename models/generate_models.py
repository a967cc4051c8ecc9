#!/usr/bin/python3
"""Generates the shipped TorchScript models with fixed-seed random weights.

Run with Debian's /usr/bin/python3 (python3-torch, python3-torchvision); no
downloads. Writes <repo>/<model>/1/model.pt for every model below, skipping
files that exist unless --force. Each traced model is checked against its
config.pbtxt (input/output count, dtypes and shapes).

Usage: /usr/bin/python3 models/generate_models.py [--repo models] [--force]
"""
import argparse
import os
import re
import sys
import time

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

DTYPES = {"TYPE_FP32": torch.float32, "TYPE_INT64": torch.int64,
          "TYPE_INT32": torch.int32}


def read_config(path):
    """Minimal reader for the tensor entries of our config.pbtxt files."""
    text = open(path).read()
    tensors = {"input": [], "output": []}
    for kind, body in re.findall(r"\b(input|output)\s*\{([^}]*)\}", text):
        dtype = re.search(r"data_type:\s*(\w+)", body).group(1)
        dims = [int(d) for d in
                re.search(r"dims:\s*\[([^\]]*)\]", body).group(1).split(",")]
        tensors[kind].append((dtype, dims))
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", default=os.path.dirname(
        os.path.abspath(__file__)), help="model repository root")
    parser.add_argument("--force", action="store_true",
                        help="regenerate existing files")
    parser.add_argument("--only", nargs="*", help="model names to generate")
    args = parser.parse_args()
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    for name, (ctor, make_input) in MODELS.items():
        if args.only and name not in args.only:
            continue
        out_dir = os.path.join(args.repo, name, "1")
        path = os.path.join(out_dir, "model.pt")
        if os.path.exists(path) and not args.force:
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
        print(f"{name}: wrote {path} ({os.path.getsize(path) / 1e6:.1f} MB, "
              f"{time.time() - start:.1f} s)")


if __name__ == "__main__":
    main()
