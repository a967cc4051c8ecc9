#!/usr/bin/python3
"""Writes the fuzz targets' seed corpora (tests/fuzz/corpus/<target>/):
real KServe requests and backend batches of the shipped models, and the
repository's own config, profile, frontend-config and plan files, each
prefixed with the byte that selects its loader in config_loader_fuzzer.

Usage: tests/fuzz/make_corpus.py   (needs protoc and Debian's python3-protobuf)
"""
import glob
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fuzz", "corpus")


def main():
    stubs = tempfile.mkdtemp()
    subprocess.run(["protoc", "-I", os.path.join(ROOT, "proto"),
                    "--python_out=" + stubs] +
                   glob.glob(os.path.join(ROOT, "proto", "*.proto")), check=True)
    sys.path.insert(0, stubs)
    import backend_pb2 as bpb
    import grpc_service_pb2 as pb
    import model_config_pb2 as mc

    def write(target, name, data):
        os.makedirs(os.path.join(OUT, target), exist_ok=True)
        with open(os.path.join(OUT, target, name), "wb") as f:
            f.write(data)

    rng = np.random.default_rng(1)
    # KServe requests, as clients send them.
    r = pb.ModelInferRequest(model_name="lenet")
    r.inputs.add(name="input", datatype="FP32", shape=[1, 1, 28, 28])
    r.raw_input_contents.append(
        rng.random((1, 1, 28, 28), dtype=np.float32).tobytes())
    write("request_codec", "lenet_raw", r.SerializeToString())
    r = pb.ModelInferRequest(model_name="lenet")
    t = r.inputs.add(name="input", datatype="FP32", shape=[2, 1, 28, 28])
    t.contents.fp32_contents.extend([0.5] * (2 * 28 * 28))
    r.outputs.add(name="logits")
    write("request_codec", "lenet_typed", r.SerializeToString())
    r = pb.ModelInferRequest(model_name="bert_tiny")
    r.inputs.add(name="input_ids", datatype="INT64", shape=[1, 64])
    r.inputs.add(name="attention_mask", datatype="INT32", shape=[1, 64])
    r.raw_input_contents.append(
        rng.integers(0, 1000, (1, 64), dtype=np.int64).tobytes())
    r.raw_input_contents.append(np.ones((1, 64), dtype=np.int32).tobytes())
    write("request_codec", "bert_raw", r.SerializeToString())
    r = pb.ModelInferRequest(model_name="bert_tiny")
    r.inputs.add(name="input_ids", datatype="INT64",
                 shape=[1, 64]).contents.int64_contents.extend(range(64))
    r.inputs.add(name="attention_mask", datatype="INT32",
                 shape=[1, 64]).contents.int_contents.extend([1] * 64)
    r.outputs.add(name="pooled")
    write("request_codec", "bert_typed", r.SerializeToString())
    r = pb.ModelInferRequest(model_name="mobilenet_v3_small")
    r.inputs.add(name="input", datatype="FP32", shape=[1, 3, 224, 224])
    r.parameters["tessera.shape_only"].bool_param = True
    write("request_codec", "mobilenet_shape_only", r.SerializeToString())

    # REST bodies: a first byte of 0 (all JSON) or the JSON header's
    # length, then the body.
    import json
    lenet = {"id": "r", "inputs": [{"name": "input", "datatype": "FP32",
                                    "shape": [1, 1, 28, 28],
                                    "data": [[[[0.5] * 28] * 28]]}],
             "outputs": [{"name": "logits",
                          "parameters": {"binary_data": True}}]}
    write("rest_codec", "lenet_json", b"\x00" + json.dumps(lenet).encode())
    bert = {"inputs": [{"name": "input_ids", "datatype": "INT64",
                        "shape": [1, 64],
                        "parameters": {"binary_data_size": 512}},
                       {"name": "attention_mask", "datatype": "INT32",
                        "shape": [1, 64],
                        "parameters": {"binary_data_size": 256}}],
            "parameters": {"binary_data_output": True}}
    header = json.dumps(bert, separators=(",", ":")).encode()
    assert len(header) < 256
    write("rest_codec", "bert_binary",
          bytes([len(header)]) + header + b"\x07" + b"\x00" * 511
          + b"\x01\x00\x00\x00" * 64)

    # Batches, as the frontend sends them on the Execute stream.
    b = bpb.BatchRequest(gpulet_id="g", model="lenet", batch_id=1)
    b.inputs.add(name="input", data_type=mc.TYPE_FP32, shape=[2, 1, 28, 28],
                 data=bytes(2 * 28 * 28 * 4))
    write("batch_layout", "lenet", b.SerializeToString())
    b = bpb.BatchRequest(gpulet_id="g", model="bert_tiny", batch_id=2)
    b.inputs.add(name="input_ids", data_type=mc.TYPE_INT64, shape=[1, 64],
                 data=bytes(64 * 8))
    b.inputs.add(name="attention_mask", data_type=mc.TYPE_INT32,
                 shape=[1, 64], data=bytes(64 * 4))
    write("batch_layout", "bert", b.SerializeToString())
    b = bpb.BatchRequest(gpulet_id="g", model="resnet50", batch_id=3,
                         shape_only=True)
    b.inputs.add(name="input", data_type=mc.TYPE_FP32, shape=[4, 3, 224, 224])
    write("batch_layout", "shape_only", b.SerializeToString())

    # The loaders' own files: 0 model config, 1 profile, 2 frontend config,
    # 3 plan.
    def read(path):
        with open(os.path.join(ROOT, path), "rb") as f:
            return f.read()
    for p in sorted(glob.glob(os.path.join(ROOT, "models/*/config.pbtxt"))):
        write("config_loader", "model_" + p.split("/")[-2],
              b"\x00" + read(p))
    for p in sorted(glob.glob(os.path.join(ROOT, "profiles/emulated/*.pbtxt"))):
        if "interference" not in p:
            write("config_loader", "profile_" + os.path.basename(p)[:-6],
                  b"\x01" + read(p))
    for p in ("configs/local_cpu.pbtxt", "configs/emulated_cluster.pbtxt"):
        write("config_loader", "frontend_" + os.path.basename(p)[:-6],
              b"\x02" + read(p))
    plan = b'''epoch: 3
devices { backend_id: "backend0" device_id: "gpu0"
  gpulets { gpulet_id: "a" share_percent: 60
    models { model: "resnet50" batch_size: 8 rate_rps: 40 duty_cycle_ms: 200 } }
  gpulets { gpulet_id: "b" share_percent: 40 standby_share_percent: 100
    models { model: "lenet" batch_size: 4 rate_rps: 100 }
    models { model: "googlenet" batch_size: 2 rate_rps: 10 } } }
devices { backend_id: "backend0" device_id: "gpu1"
  gpulets { gpulet_id: "c" share_percent: 100
    models { model: "vgg16" batch_size: 4 rate_rps: 10 } } }
'''
    write("config_loader", "plan_two_gpus", b"\x03" + plan)
    print("seed corpora written under", OUT)


if __name__ == "__main__":
    main()
