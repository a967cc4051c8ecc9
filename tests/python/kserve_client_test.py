#!/usr/bin/python3
"""KServe v2 protocol compatibility: a Python gRPC client generated from
proto/grpc_service.proto (Debian's python3-grpcio) talks to a real Tessera
cluster (frontend + backend + proxies on loopback, ports chosen at run time)
and checks the answers against torch run in this process.

Usage: kserve_client_test.py --bin-dir build/bin --models models \
           --stubs build/python
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

from test_util import wait_for_port_file

ARGS = None


class Cluster:
    """Backend + frontend serving lenet and bert_tiny."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="tessera_py_")
        repo = os.path.join(self.dir, "models")
        os.makedirs(repo)
        # Model folders of its own (the server refuses folders that resolve
        # outside its repository); the version folders are linked.
        # mobilenet_v3_small's config is in Triton's format.
        for m in ("lenet", "bert_tiny", "mobilenet_v3_small"):
            source = os.path.abspath(os.path.join(ARGS.models, m))
            os.makedirs(os.path.join(repo, m))
            for entry in os.listdir(source):
                path = os.path.join(source, entry)
                if os.path.isdir(path):
                    os.symlink(path, os.path.join(repo, m, entry))
                else:
                    shutil.copy(path, os.path.join(repo, m, entry))
        # A Triton config with a field Tessera neither serves nor ignores.
        os.makedirs(os.path.join(repo, "bad_triton", "1"))
        with open(os.path.join(repo, "bad_triton", "config.pbtxt"), "w") as f:
            f.write('platform: "pytorch_libtorch"\nmax_batch_size: 2\n'
                    'sequence_batching { }\n')
        self.repo = repo
        self.procs = []
        bport_file = os.path.join(self.dir, "backend.port")
        self.procs.append(subprocess.Popen([
            os.path.join(ARGS.bin_dir, "tessera_backend"),
            "--listen=127.0.0.1:0", f"--port_file={bport_file}",
            "--id=backend0", f"--model_repository={repo}"]))
        bport = wait_for_port_file(bport_file, self.procs[-1])
        config = os.path.join(self.dir, "frontend.pbtxt")
        with open(config, "w") as f:
            f.write(f'''
backends {{ id: "backend0" address: "127.0.0.1:{bport}" }}
policy: "static"
static_plan {{ devices {{ backend_id: "backend0" device_id: "cpu0"
  gpulets {{ gpulet_id: "g" share_percent: 50
    models {{ model: "lenet" batch_size: 8 }}
    models {{ model: "bert_tiny" batch_size: 8 }}
    models {{ model: "mobilenet_v3_small" batch_size: 2 }} }} }} }}
''')
        fport_file = os.path.join(self.dir, "frontend.port")
        hport_file = os.path.join(self.dir, "frontend.http")
        # The repository load/unload calls need the admin token.
        self.admin_token = "t" * 16 + str(os.getpid())
        token_file = os.path.join(self.dir, "admin_token")
        with open(token_file, "w") as f:
            f.write(self.admin_token + "\n")
        self.procs.append(subprocess.Popen([
            os.path.join(ARGS.bin_dir, "tessera_frontend"),
            "--listen=127.0.0.1:0", f"--port_file={fport_file}",
            "--http_port=0", f"--http_port_file={hport_file}",
            "--admin_listen=127.0.0.1:0", f"--admin_token_file={token_file}",
            # Small enough for a test to exceed (413); a mobilenet batch
            # of 2 (1.2 MB) still fits.
            "--max_message_mb=2",
            f"--config={config}", f"--model_repository={repo}"]))
        self.address = f"127.0.0.1:{wait_for_port_file(fport_file, self.procs[-1])}"
        self.http = f"http://127.0.0.1:{wait_for_port_file(hport_file, self.procs[-1])}"

    def stop(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


CLUSTER = None


def setUpModule():
    """One cluster for every test; ready before the first test runs."""
    global CLUSTER
    import grpc
    import grpc_service_pb2 as pb
    import grpc_service_pb2_grpc as pb_grpc
    CLUSTER = Cluster()
    channel = grpc.insecure_channel(CLUSTER.address)
    stub = pb_grpc.GRPCInferenceServiceStub(channel)
    deadline = time.time() + 180
    try:
        while time.time() < deadline:
            try:
                if stub.ServerReady(pb.ServerReadyRequest(), timeout=5).ready:
                    return
            except grpc.RpcError:
                pass
            time.sleep(0.1)
    finally:
        channel.close()
    # tearDownModule does not run when setUpModule fails: stop the
    # processes here, or they outlive the test (and hold its output).
    CLUSTER.stop()
    raise TimeoutError("cluster not ready")


def tearDownModule():
    CLUSTER.stop()


class KServeClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import grpc
        import grpc_service_pb2 as pb
        import grpc_service_pb2_grpc as pb_grpc
        cls.grpc, cls.pb = grpc, pb
        cls.cluster = CLUSTER
        cls.channel = grpc.insecure_channel(cls.cluster.address)
        cls.stub = pb_grpc.GRPCInferenceServiceStub(cls.channel)

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()

    def test_wire_field_numbers_match_kserve_v2(self):
        # Field numbers of the upstream KServe v2 grpc_service.proto.
        expected = {
            "ModelInferRequest": {"model_name": 1, "model_version": 2,
                                  "id": 3, "parameters": 4, "inputs": 5,
                                  "outputs": 6, "raw_input_contents": 7},
            "ModelInferResponse": {"model_name": 1, "model_version": 2,
                                   "id": 3, "parameters": 4, "outputs": 5,
                                   "raw_output_contents": 6},
            "InferTensorContents": {"bool_contents": 1, "int_contents": 2,
                                    "int64_contents": 3, "uint_contents": 4,
                                    "uint64_contents": 5, "fp32_contents": 6,
                                    "fp64_contents": 7, "bytes_contents": 8},
            "ModelMetadataResponse": {"name": 1, "versions": 2,
                                      "platform": 3, "inputs": 4,
                                      "outputs": 5},
            "ServerMetadataResponse": {"name": 1, "version": 2,
                                       "extensions": 3},
            "ModelStreamInferResponse": {"error_message": 1,
                                         "infer_response": 2},
            # Triton's model_config.proto and its statistics messages.
            "ModelConfig": {"name": 1, "platform": 2, "backend": 17,
                            "max_batch_size": 4, "input": 5, "output": 6,
                            "dynamic_batching": 11, "parameters": 14},
            "ModelInput": {"name": 1, "data_type": 2, "dims": 4},
            "ModelOutput": {"name": 1, "data_type": 2, "dims": 3},
            "ModelDynamicBatching": {"preferred_batch_size": 1,
                                     "max_queue_delay_microseconds": 2},
            "ModelConfigRequest": {"name": 1, "version": 2},
            "ModelConfigResponse": {"config": 1},
            "ModelStatisticsRequest": {"name": 1, "version": 2},
            "ModelStatisticsResponse": {"model_stats": 1},
            "ModelStatistics": {"name": 1, "version": 2,
                                "last_inference": 3, "inference_count": 4,
                                "execution_count": 5, "inference_stats": 6,
                                "batch_stats": 7},
            "InferStatistics": {"success": 1, "fail": 2, "queue": 3,
                                "compute_input": 4, "compute_infer": 5,
                                "compute_output": 6},
            "InferBatchStatistics": {"batch_size": 1, "compute_input": 2,
                                     "compute_infer": 3, "compute_output": 4},
            "StatisticDuration": {"count": 1, "ns": 2},
        }
        for message, fields in expected.items():
            desc = getattr(self.pb, message).DESCRIPTOR
            for name, number in fields.items():
                self.assertEqual(desc.fields_by_name[name].number, number,
                                 f"{message}.{name}")
        svc = self.pb.DESCRIPTOR.services_by_name["GRPCInferenceService"]
        self.assertEqual(svc.full_name, "inference.GRPCInferenceService")
        for rpc in ("ServerLive", "ServerReady", "ModelReady",
                    "ServerMetadata", "ModelMetadata", "ModelInfer",
                    "ModelConfig", "ModelStatistics", "ModelStreamInfer"):
            self.assertIn(rpc, svc.methods_by_name)
        self.assertEqual(self.pb.DataType.Value("TYPE_FP32"), 11)
        self.assertEqual(self.pb.DataType.Value("TYPE_INT64"), 9)

    def test_triton_model_config_and_statistics(self):
        import numpy as np
        pb = self.pb
        config = self.stub.ModelConfig(
            pb.ModelConfigRequest(name="lenet")).config
        self.assertEqual(config.name, "lenet")
        self.assertEqual(config.platform, "pytorch_libtorch")
        self.assertGreater(config.max_batch_size, 0)
        # Triton's dims leave the batch dimension out.
        self.assertEqual(list(config.input[0].dims), [1, 28, 28])
        self.assertEqual(config.input[0].data_type, pb.TYPE_FP32)
        self.assertTrue(config.HasField("dynamic_batching"))
        self.assertIn("slo_ms", config.parameters)
        bert = self.stub.ModelConfig(
            pb.ModelConfigRequest(name="bert_tiny")).config
        self.assertEqual(bert.input[0].data_type, pb.TYPE_INT64)
        with self.assertRaises(self.grpc.RpcError) as ctx:
            self.stub.ModelConfig(pb.ModelConfigRequest(name="nope"))
        self.assertEqual(ctx.exception.code(), self.grpc.StatusCode.NOT_FOUND)

        def lenet_stats():
            r = self.stub.ModelStatistics(
                pb.ModelStatisticsRequest(name="lenet"))
            return r.model_stats[0] if r.model_stats else pb.ModelStatistics()
        before = lenet_stats()
        x = np.random.default_rng(5).standard_normal(
            (3, 1, 28, 28)).astype(np.float32)
        req = pb.ModelInferRequest(model_name="lenet")
        t = req.inputs.add()
        t.name, t.datatype = "input", "FP32"
        t.shape.extend(x.shape)
        req.raw_input_contents.append(x.tobytes())
        for _ in range(2):
            self.stub.ModelInfer(req, timeout=60)
        after = lenet_stats()
        self.assertEqual(after.name, "lenet")
        self.assertEqual(after.version, "1")
        s0, s1 = before.inference_stats, after.inference_stats
        self.assertEqual(s1.success.count - s0.success.count, 2)
        self.assertEqual(after.inference_count - before.inference_count, 6)
        self.assertGreater(s1.success.ns, s1.compute_infer.ns)
        self.assertEqual(s1.queue.count, s1.success.count)
        self.assertGreaterEqual(after.execution_count - before.execution_count,
                                1)
        self.assertGreater(after.last_inference, 0)
        self.assertTrue(after.batch_stats)
        self.assertEqual(
            sum(b.compute_infer.count for b in after.batch_stats),
            after.execution_count)

    def test_triton_format_config_loads_and_serves(self):
        import numpy as np
        pb = self.pb
        config = self.stub.ModelConfig(
            pb.ModelConfigRequest(name="mobilenet_v3_small")).config
        self.assertEqual(config.platform, "pytorch_libtorch")
        self.assertEqual(list(config.input[0].dims), [3, 224, 224])
        self.assertEqual(config.parameters["slo_ms"].string_value, "200")
        # `dynamic_batching { }`: no queue delay bound (Tessera's deadline
        # rule decides), reported as Triton's 0.
        self.assertTrue(config.HasField("dynamic_batching"))
        self.assertEqual(
            config.dynamic_batching.max_queue_delay_microseconds, 0)
        x = np.random.default_rng(3).standard_normal(
            (1, 3, 224, 224)).astype(np.float32)
        req = pb.ModelInferRequest(model_name="mobilenet_v3_small")
        req.inputs.add(name="input", datatype="FP32", shape=[1, 3, 224, 224])
        req.raw_input_contents.append(x.tobytes())
        resp = self.stub.ModelInfer(req, timeout=60)
        self.assertEqual(list(resp.outputs[0].shape), [1, 1000])
        # The config with an unknown field is refused, naming it.
        index = self.stub.RepositoryIndex(pb.RepositoryIndexRequest())
        bad = [m for m in index.models if m.name == "bad_triton"]
        self.assertEqual(len(bad), 1)
        self.assertEqual(bad[0].state, "UNAVAILABLE")
        self.assertIn('field "sequence_batching" is neither supported',
                      bad[0].reason)

    def test_health_and_metadata(self):
        pb = self.pb
        self.assertTrue(self.stub.ServerLive(pb.ServerLiveRequest()).live)
        meta = self.stub.ServerMetadata(pb.ServerMetadataRequest())
        self.assertEqual(meta.name, "tessera")
        m = self.stub.ModelMetadata(pb.ModelMetadataRequest(name="lenet"))
        self.assertEqual(m.inputs[0].datatype, "FP32")
        self.assertEqual(list(m.inputs[0].shape), [-1, 1, 28, 28])
        self.assertTrue(self.stub.ModelReady(
            pb.ModelReadyRequest(name="bert_tiny")).ready)

    def test_grpc_health_and_reflection(self):
        # The standard services, called with hand-encoded messages (their
        # Python packages are not in Debian): grpc.health.v1.Health/Check
        # with an empty HealthCheckRequest answers status SERVING (field 1
        # = 1) once the frontend is ready; a service it does not have is
        # NOT_FOUND.
        check = self.channel.unary_unary("/grpc.health.v1.Health/Check")
        self.assertEqual(check(b"", timeout=10), b"\x08\x01")
        name = b"no.such.Service"
        with self.assertRaises(self.grpc.RpcError) as ctx:
            check(b"\x0a" + bytes([len(name)]) + name, timeout=10)
        self.assertEqual(ctx.exception.code(), self.grpc.StatusCode.NOT_FOUND)
        # Server reflection lists the KServe service: a
        # ServerReflectionRequest with list_services (field 7) = "".
        info = self.channel.stream_stream(
            "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo")
        answers = list(info(iter([b"\x3a\x00"]), timeout=10))
        self.assertEqual(len(answers), 1)
        self.assertIn(b"inference.GRPCInferenceService", answers[0])
        self.assertIn(b"grpc.health.v1.Health", answers[0])

    def test_stream_answers_in_order_with_errors_inline(self):
        import numpy as np
        pb = self.pb
        rng = np.random.default_rng(11)
        xs = [rng.standard_normal((1 + i % 3, 1, 28, 28)).astype(np.float32)
              for i in range(6)]
        reqs = []
        for i, x in enumerate(xs):
            req = pb.ModelInferRequest(model_name="lenet", id=f"s{i}")
            req.inputs.add(name="input", datatype="FP32", shape=list(x.shape))
            # Request s2 is short of bytes, s4 names no model we have.
            req.raw_input_contents.append(x.tobytes()[:12] if i == 2
                                          else x.tobytes())
            if i == 4:
                req.model_name = "nope"
            reqs.append(req)

        def stats():
            r = self.stub.ModelStatistics(
                pb.ModelStatisticsRequest(name="lenet"))
            return r.model_stats[0].inference_stats.success.count
        before = stats()
        answers = list(self.stub.ModelStreamInfer(iter(reqs), timeout=60))
        self.assertEqual([a.infer_response.id for a in answers],
                         [f"s{i}" for i in range(6)])
        for i, a in enumerate(answers):
            if i == 2:
                self.assertIn("has 12 bytes of raw data", a.error_message)
            elif i == 4:
                self.assertIn("nope", a.error_message)
            else:
                self.assertEqual(a.error_message, "")
                got = np.frombuffer(a.infer_response.raw_output_contents[0],
                                    dtype=np.float32)
                unary = self.stub.ModelInfer(reqs[i], timeout=60)
                want = np.frombuffer(unary.raw_output_contents[0],
                                     dtype=np.float32)
                assert_same_answer(got, want)
        # Four answered from the stream, four more by the unary checks.
        self.assertEqual(stats() - before, 8)
        # A stream with nothing on it ends OK with no answers.
        self.assertEqual(list(self.stub.ModelStreamInfer(iter([]),
                                                         timeout=30)), [])

    def test_lenet_raw_fp32_matches_torch(self):
        import numpy as np
        import torch
        pb = self.pb
        x = np.random.default_rng(0).standard_normal(
            (3, 1, 28, 28)).astype(np.float32)
        req = pb.ModelInferRequest(model_name="lenet", id="req-1")
        t = req.inputs.add(name="input", datatype="FP32", shape=[3, 1, 28, 28])
        req.raw_input_contents.append(x.tobytes())
        resp = self.stub.ModelInfer(req, timeout=30)
        self.assertEqual(resp.id, "req-1")
        self.assertEqual(resp.outputs[0].name, "logits")
        self.assertEqual(list(resp.outputs[0].shape), [3, 10])
        got = np.frombuffer(resp.raw_output_contents[0], dtype=np.float32)
        model = torch.jit.load(os.path.join(self.cluster.repo,
                                            "lenet/1/model.pt"))
        with torch.no_grad():
            ref = model(torch.from_numpy(x)).numpy().ravel()
        self.assertGreater(np.ptp(ref), 0)
        self.assertLessEqual(np.abs(got - ref).max(),
                             1e-4 * np.abs(ref).max())

    def test_bert_typed_int64_int32_matches_torch(self):
        import numpy as np
        import torch
        pb = self.pb
        rng = np.random.default_rng(1)
        ids = rng.integers(0, 1000, (2, 64), dtype=np.int64)
        mask = np.ones((2, 64), dtype=np.int32)
        mask[1, 40:] = 0
        req = pb.ModelInferRequest(model_name="bert_tiny")
        a = req.inputs.add(name="input_ids", datatype="INT64", shape=[2, 64])
        a.contents.int64_contents.extend(ids.ravel().tolist())
        b = req.inputs.add(name="attention_mask", datatype="INT32",
                           shape=[2, 64])
        b.contents.int_contents.extend(mask.ravel().tolist())
        resp = self.stub.ModelInfer(req, timeout=30)
        names = [o.name for o in resp.outputs]
        self.assertEqual(names, ["logits", "pooled"])
        model = torch.jit.load(os.path.join(self.cluster.repo,
                                            "bert_tiny/1/model.pt"))
        with torch.no_grad():
            refs = model(torch.from_numpy(ids), torch.from_numpy(mask))
        for raw, ref in zip(resp.raw_output_contents, refs):
            got = np.frombuffer(raw, dtype=np.float32)
            ref = ref.numpy().ravel()
            self.assertLessEqual(np.abs(got - ref).max(),
                                 1e-4 * np.abs(ref).max())

    def test_errors_carry_status_codes(self):
        pb, grpc = self.pb, self.grpc
        with self.assertRaises(grpc.RpcError) as ctx:
            self.stub.ModelInfer(pb.ModelInferRequest(model_name="nope"))
        self.assertEqual(ctx.exception.code(), grpc.StatusCode.NOT_FOUND)
        req = pb.ModelInferRequest(model_name="lenet")
        req.inputs.add(name="input", datatype="FP32", shape=[1, 1, 28, 28])
        req.raw_input_contents.append(b"\0" * 12)
        with self.assertRaises(grpc.RpcError) as ctx:
            self.stub.ModelInfer(req)
        self.assertEqual(ctx.exception.code(),
                         grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("needs 3136", ctx.exception.details())


def assert_same_answer(got, want):
    """Equal up to float rounding: LibTorch on CPU may sum in another order
    when the same rows run in a batch of another size."""
    import numpy as np
    np.testing.assert_allclose(got, want, rtol=0,
                               atol=1e-5 * max(1.0, np.abs(want).max()))


def rest(method, path, body=None, headers=None, timeout=60):
    """(status, headers, body bytes) of one call to the frontend's REST
    port; error statuses are answers too."""
    import urllib.error
    import urllib.request
    if isinstance(body, (dict, list)):
        body = json.dumps(body).encode()
    req = urllib.request.Request(CLUSTER.http + path, data=body,
                                 method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


class KServeRestTest(unittest.TestCase):
    """KServe v2 REST on the HTTP port, called with urllib, its answers
    checked against the gRPC ones for the same input."""

    @classmethod
    def setUpClass(cls):
        import grpc
        import grpc_service_pb2 as pb
        import grpc_service_pb2_grpc as pb_grpc
        cls.grpc, cls.pb = grpc, pb
        cls.channel = grpc.insecure_channel(CLUSTER.address)
        cls.stub = pb_grpc.GRPCInferenceServiceStub(cls.channel)

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()

    def grpc_lenet(self, x):
        import numpy as np
        req = self.pb.ModelInferRequest(model_name="lenet")
        req.inputs.add(name="input", datatype="FP32", shape=list(x.shape))
        req.raw_input_contents.append(x.tobytes())
        resp = self.stub.ModelInfer(req, timeout=60)
        return np.frombuffer(resp.raw_output_contents[0], dtype=np.float32)

    def test_server_and_model_metadata(self):
        status, _, body = rest("GET", "/v2")
        self.assertEqual(status, 200)
        self.assertEqual(json.loads(body)["name"], "tessera")
        status, _, body = rest("GET", "/v2/models/lenet")
        self.assertEqual(status, 200)
        meta = json.loads(body)
        self.assertEqual(meta["name"], "lenet")
        self.assertEqual(meta["versions"], ["1"])
        self.assertEqual(meta["inputs"],
                         [{"name": "input", "datatype": "FP32",
                           "shape": [-1, 1, 28, 28]}])
        self.assertEqual(rest("GET", "/v2/models/lenet/ready")[0], 200)
        self.assertEqual(rest("GET", "/v2/models/lenet/versions/1/ready")[0],
                         200)
        status, _, body = rest("GET", "/v2/models/nope")
        self.assertEqual(status, 404)
        self.assertIn("nope", json.loads(body)["error"])
        self.assertEqual(rest("GET", "/v2/models/nope/ready")[0], 404)
        status, _, body = rest("GET", "/v2/models/lenet/config")
        self.assertEqual(status, 200)
        config = json.loads(body)
        self.assertEqual(config["platform"], "pytorch_libtorch")
        self.assertEqual(config["input"][0]["dims"], [1, 28, 28])
        self.assertEqual(config["input"][0]["data_type"], "TYPE_FP32")
        status, _, body = rest("POST", "/v2/repository/index", {})
        self.assertEqual(status, 200)
        self.assertEqual(sorted(m["name"] for m in json.loads(body)),
                         ["bad_triton", "bert_tiny", "lenet",
                          "mobilenet_v3_small"])

    def test_json_infer_equals_grpc(self):
        import numpy as np
        x = np.random.default_rng(7).standard_normal(
            (2, 1, 28, 28)).astype(np.float32)
        want = self.grpc_lenet(x)
        status, headers, body = rest("POST", "/v2/models/lenet/infer", {
            "id": "rest-1",
            "inputs": [{"name": "input", "datatype": "FP32",
                        "shape": [2, 1, 28, 28], "data": x.tolist()}]})
        self.assertEqual(status, 200, body)
        self.assertEqual(headers["Content-Type"], "application/json")
        answer = json.loads(body)
        self.assertEqual(answer["id"], "rest-1")
        self.assertEqual(answer["model_name"], "lenet")
        out = answer["outputs"][0]
        self.assertEqual((out["name"], out["datatype"], out["shape"]),
                         ("logits", "FP32", [2, 10]))
        got = np.array(out["data"], dtype=np.float32)
        self.assertGreater(np.ptp(want), 0)
        assert_same_answer(got, want)

    def test_binary_infer_equals_grpc(self):
        import numpy as np
        x = np.random.default_rng(8).standard_normal(
            (3, 1, 28, 28)).astype(np.float32)
        want = self.grpc_lenet(x)
        header = json.dumps({
            "inputs": [{"name": "input", "datatype": "FP32",
                        "shape": [3, 1, 28, 28],
                        "parameters": {"binary_data_size": x.nbytes}}],
            "outputs": [{"name": "logits",
                         "parameters": {"binary_data": True}}]}).encode()
        status, headers, body = rest(
            "POST", "/v2/models/lenet/infer", header + x.tobytes(),
            {"Inference-Header-Content-Length": str(len(header)),
             "Content-Type": "application/octet-stream"})
        self.assertEqual(status, 200, body)
        n = int(headers["Inference-Header-Content-Length"])
        answer = json.loads(body[:n])
        out = answer["outputs"][0]
        self.assertEqual(out["parameters"]["binary_data_size"], 3 * 10 * 4)
        self.assertNotIn("data", out)
        got = np.frombuffer(body[n:], dtype=np.float32)
        assert_same_answer(got, want)

    def test_typed_json_infer_equals_grpc(self):
        import numpy as np
        rng = np.random.default_rng(9)
        ids = rng.integers(0, 1000, (1, 64), dtype=np.int64)
        mask = np.ones((1, 64), dtype=np.int32)
        req = self.pb.ModelInferRequest(model_name="bert_tiny")
        req.inputs.add(name="input_ids", datatype="INT64", shape=[1, 64])
        req.inputs.add(name="attention_mask", datatype="INT32", shape=[1, 64])
        req.raw_input_contents.extend([ids.tobytes(), mask.tobytes()])
        want = self.stub.ModelInfer(req, timeout=60)
        status, _, body = rest("POST", "/v2/models/bert_tiny/infer", {
            "inputs": [
                {"name": "input_ids", "datatype": "INT64", "shape": [1, 64],
                 "data": ids.ravel().tolist()},
                {"name": "attention_mask", "datatype": "INT32",
                 "shape": [1, 64], "data": mask.tolist()}],
            "outputs": [{"name": "pooled"}]})
        self.assertEqual(status, 200, body)
        outs = json.loads(body)["outputs"]
        self.assertEqual([o["name"] for o in outs], ["pooled"])
        ref = np.frombuffer(want.raw_output_contents[1], dtype=np.float32)
        assert_same_answer(
            np.array(outs[0]["data"], dtype=np.float32), ref)

    def test_errors_as_http_status_and_json(self):
        def error(method, path, body=None, headers=None):
            status, _, raw = rest(method, path, body, headers)
            return status, json.loads(raw)["error"]
        lenet = "/v2/models/lenet/infer"
        status, why = error("POST", lenet, {"inputs": [
            {"name": "input", "datatype": "FP32", "shape": [1, 1, 28, 28],
             "data": [0.0] * 3}]})
        self.assertEqual(status, 400)
        self.assertIn("needs 3136", why)
        status, why = error("POST", lenet, b"{not json")
        self.assertEqual(status, 400)
        self.assertIn("not a JSON object", why)
        status, why = error("POST", lenet, {"inputs": [
            {"name": "input", "datatype": "FP32", "shape": [1, 1, 28, 28],
             "data": ["a"] * 784}]})
        self.assertEqual(status, 400)
        self.assertIn("input 'input'", why)
        status, why = error("POST", "/v2/models/nope/infer", {"inputs": []})
        self.assertEqual(status, 404)
        self.assertIn("nope", why)
        status, why = error("GET", lenet)
        self.assertEqual(status, 405)
        status, why = error("POST", lenet, {"inputs": [
            {"name": "input", "datatype": "FP32", "shape": [1, 1, 28, 28],
             "parameters": {"shared_memory_region": "r"}}]})
        self.assertEqual(status, 501)
        self.assertIn("shared_memory_region", why)
        header = b'{"inputs": []}'
        status, why = error("POST", lenet, header,
                            {"Inference-Header-Content-Length": "999"})
        self.assertEqual(status, 400)
        self.assertIn("Inference-Header-Content-Length", why)
        status, why = error("POST", "/v2/repository/models/lenet/unload")
        self.assertEqual(status, 401)
        self.assertIn("token", why)
        status, why = error("POST", "/v2/repository/models/lenet/unload",
                            headers={"Authorization": "Bearer " + "x" * 24})
        self.assertEqual(status, 403)
        # Over --max_message_mb (2 MiB): 413, and the body is not kept.
        status, why = error("POST", lenet, b" " * (3 << 20),
                            {"Content-Type": "application/json"})
        self.assertEqual(status, 413, why)
        status, why = error("POST", lenet, b"--b\r\n\r\n--b--",
                            {"Content-Type": "multipart/form-data; boundary=b"})
        self.assertEqual(status, 415)

    def test_unload_and_load_round_trip_with_the_admin_token(self):
        import numpy as np
        # Under the static policy (the frontend of this test): the unload
        # completes at once, the model is not ready and its calls get 503
        # saying it is unloaded, its neighbour serves, a load restores it.
        auth = {"Authorization": "Bearer " + CLUSTER.admin_token}
        ready = "/v2/models/bert_tiny/ready"
        x = {"inputs": [
            {"name": "input_ids", "datatype": "INT64", "shape": [1, 64],
             "data": [7] * 64},
            {"name": "attention_mask", "datatype": "INT32", "shape": [1, 64],
             "data": [1] * 64}]}
        self.assertEqual(rest("POST", "/v2/models/bert_tiny/infer", x)[0], 200)
        self.assertEqual(rest("GET", ready)[0], 200)
        start = time.monotonic()
        status, _, body = rest(
            "POST", "/v2/repository/models/bert_tiny/unload", b"", auth)
        took = time.monotonic() - start
        self.assertEqual(status, 200, body)
        print(f"[ report ] REST unload: {took * 1000:.0f} ms")
        self.assertLess(took, 5)
        try:
            self.assertEqual(rest("GET", ready)[0], 400)
            status, headers, body = rest(
                "POST", "/v2/models/bert_tiny/infer", x)
            self.assertEqual(status, 503)
            self.assertIn("unloaded", json.loads(body)["error"])
            self.assertEqual(headers.get("Retry-After"), "1")
            self.assertFalse(self.stub.ModelReady(
                self.pb.ModelReadyRequest(name="bert_tiny"), timeout=10).ready)
            status, _, body = rest("POST", "/v2/repository/index", {})
            state = {m["name"]: m for m in json.loads(body)}
            self.assertEqual(state["bert_tiny"]["state"], "UNAVAILABLE")
            self.assertEqual(state["lenet"]["state"], "READY")
            # The model beside it keeps serving.
            lenet = np.zeros((1, 1, 28, 28), dtype=np.float32)
            self.assertEqual(len(self.grpc_lenet(lenet)), 10)
        finally:
            status, _, body = rest(
                "POST", "/v2/repository/models/bert_tiny/load", b"", auth)
        self.assertEqual(status, 200, body)
        self.assertEqual(rest("GET", ready)[0], 200)
        self.assertEqual(rest("POST", "/v2/models/bert_tiny/infer", x)[0], 200)

    def test_statistics_move_by_what_was_sent(self):
        def stats():
            status, _, body = rest("GET", "/v2/models/lenet/stats")
            self.assertEqual(status, 200)
            m = json.loads(body)["model_stats"][0]
            return m["inference_stats"]["success"]["count"], \
                m["inference_count"]
        before = stats()
        x = [[[[0.5] * 28] * 28]]
        for _ in range(3):
            status, _, body = rest("POST", "/v2/models/lenet/infer", {
                "inputs": [{"name": "input", "datatype": "FP32",
                            "shape": [1, 1, 28, 28], "data": x}]})
            self.assertEqual(status, 200, body)
        after = stats()
        self.assertEqual(after[0] - before[0], 3)
        self.assertEqual(after[1] - before[1], 3)
        status, _, body = rest("GET", "/v2/models/stats")
        self.assertEqual(status, 200)
        self.assertEqual(sorted(m["name"] for m in
                                json.loads(body)["model_stats"]),
                         ["bert_tiny", "lenet", "mobilenet_v3_small"])


def main():
    global ARGS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--models", required=True)
    parser.add_argument("--stubs", required=True)
    ARGS, rest = parser.parse_known_args()
    sys.path.insert(0, ARGS.stubs)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
