#!/usr/bin/python3
"""Prometheus metrics and health over HTTP, on a real emulated cluster
(frontend + 2 backends with 2 emulated GPUs each, ports chosen at run
time): /metrics parses with the Prometheus client's own parser, counters
move as requests are sent, and /v2/health/ready flips to 503 while a
backend is down.

Usage: metrics_test.py --bin-dir build/bin --source-dir .
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from test_util import wait_for_port_file

ARGS = None


def http_status(port, path):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}",
                                    timeout=5) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def scrape(port):
    """{(name, frozenset(labels.items())): value} of every sample."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                timeout=5) as r:
        text = r.read().decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            samples[(s.name, frozenset(s.labels.items()))] = s.value
    return samples


def value(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())), 0.0)


def total(samples, name, **labels):
    """Sum over the series of `name` whose labels include `labels`."""
    want = set(labels.items())
    return sum(v for (n, l), v in samples.items()
               if n == name and want <= set(l))


class Cluster:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="tessera_metrics_")
        models = os.path.join(ARGS.source_dir, "configs/emulated/models")
        profiles = os.path.join(ARGS.source_dir, "profiles")
        self.procs = {}
        self.http = {}
        backends = ""
        for i in range(2):
            name = f"backend{i}"
            pf = os.path.join(self.dir, name + ".port")
            hf = os.path.join(self.dir, name + ".http")
            p = subprocess.Popen([
                os.path.join(ARGS.bin_dir, "tessera_backend"),
                "--listen=127.0.0.1:0", f"--port_file={pf}",
                "--http_port=0", f"--http_port_file={hf}", f"--id={name}",
                "--emulated_gpus=2", "--time_scale=10",
                f"--model_repository={models}", f"--profile_dir={profiles}"])
            self.procs[name] = p
            port = wait_for_port_file(pf, p)
            self.http[name] = wait_for_port_file(hf, p)
            backends += (f'backends {{ id: "{name}" '
                         f'address: "127.0.0.1:{port}" }}\n')
        config = os.path.join(self.dir, "frontend.pbtxt")
        with open(config, "w") as f:
            f.write(backends + f'''
policy: "gpulet"
profile_dir: "{profiles}"
interference_profile: "{profiles}/emulated/interference.pbtxt"
time_scale: 10
replan_period_s: 1
rate_window_s: 2
heartbeat_interval_s: 0.3
heartbeat_misses: 2
''')
        pf = os.path.join(self.dir, "frontend.port")
        hf = os.path.join(self.dir, "frontend.http")
        p = subprocess.Popen([
            os.path.join(ARGS.bin_dir, "tessera_frontend"),
            "--listen=127.0.0.1:0", f"--port_file={pf}", "--http_port=0",
            "--admin_listen=127.0.0.1:0",
            f"--http_port_file={hf}", f"--config={config}",
            f"--model_repository={models}"])
        self.procs["frontend"] = p
        self.address = f"127.0.0.1:{wait_for_port_file(pf, p)}"
        self.http["frontend"] = wait_for_port_file(hf, p)
        deadline = time.time() + 60
        while http_status(self.http["frontend"], "/v2/health/ready") != 200:
            if time.time() > deadline:
                raise TimeoutError("frontend never became ready")
            time.sleep(0.1)

    def client(self, *args):
        return subprocess.run(
            [os.path.join(ARGS.bin_dir, "tessera_client"),
             f"--server={self.address}", *args],
            capture_output=True, text=True, timeout=120)

    def stop(self):
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs.values():
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


class MetricsTest(unittest.TestCase):
    def setUp(self):
        self.cluster = Cluster()

    def tearDown(self):
        self.cluster.stop()

    def test_counters_move_and_health_flips(self):
        c = self.cluster
        front = c.http["frontend"]
        self.assertEqual(http_status(front, "/v2/health/live"), 200)
        before = scrape(front)
        backends_before = sum(
            total(scrape(c.http[b]), "tessera_backend_batches_total")
            for b in ("backend0", "backend1"))

        r = c.client("--model=resnet50", "--shape_only", "--count=20")
        self.assertEqual(r.returncode, 0, r.stderr)
        # Refused before routing: batch 100 > max batch 32.
        r = c.client("--model=resnet50", "--shape_only", "--batch=100")
        self.assertNotEqual(r.returncode, 0)

        after = scrape(front)
        ok = "tessera_frontend_requests_total"
        self.assertEqual(
            value(after, ok, model="resnet50", code="OK") -
            value(before, ok, model="resnet50", code="OK"), 20)
        self.assertEqual(
            value(after, ok, model="resnet50", code="INVALID_ARGUMENT") -
            value(before, ok, model="resnet50", code="INVALID_ARGUMENT"), 1)
        lat = "tessera_frontend_request_latency_seconds_count"
        self.assertEqual(
            value(after, lat, model="resnet50") -
            value(before, lat, model="resnet50"), 20)
        self.assertGreaterEqual(
            value(after, "tessera_frontend_batch_size_count",
                  model="resnet50"), 1)
        # Triton's families, with Triton's names and labels (the parser
        # adds "_total" to a counter's samples; the exposition has none,
        # as Triton's).
        rv = {"model": "resnet50", "version": "1"}
        for name, moved in (("nv_inference_request_success_total", 20),
                            ("nv_inference_count_total", 20),
                            ("nv_inference_request_failure_total", 1)):
            self.assertEqual(
                value(after, name, **rv) - value(before, name, **rv), moved,
                name)
        self.assertGreaterEqual(
            value(after, "nv_inference_exec_count_total", **rv) -
            value(before, "nv_inference_exec_count_total", **rv), 1)
        for name in ("nv_inference_request_duration_us_total",
                     "nv_inference_queue_duration_us_total",
                     "nv_inference_compute_infer_duration_us_total"):
            self.assertGreater(
                value(after, name, **rv) - value(before, name, **rv), 0, name)
        self.assertGreater(
            value(after, "nv_inference_request_duration_us_total", **rv),
            value(after, "nv_inference_compute_infer_duration_us_total", **rv))
        self.assertGreaterEqual(
            value(after, "tessera_frontend_plans_installed_total"), 1)
        self.assertGreaterEqual(value(after, "tessera_frontend_plan_epoch"), 1)
        self.assertEqual(
            value(after, "tessera_frontend_backend_up", backend="backend1"), 1)
        self.assertGreater(
            total(after, "tessera_frontend_gpulet_share_percent"), 0)

        backends_after = [scrape(c.http[b]) for b in ("backend0", "backend1")]
        self.assertGreaterEqual(
            sum(total(s, "tessera_backend_batches_total")
                for s in backends_after) - backends_before, 1)
        self.assertGreater(
            sum(total(s, "tessera_backend_gpulet_busy_seconds_total")
                for s in backends_after), 0)
        self.assertGreaterEqual(
            max(value(s, "tessera_backend_plan_epoch")
                for s in backends_after), 1)

        # A backend down: the frontend is not ready (but live) until it
        # has planned without it... and stays not ready while it is gone.
        c.procs["backend1"].kill()
        c.procs["backend1"].wait()
        deadline = time.time() + 15
        while http_status(front, "/v2/health/ready") != 503:
            self.assertLess(time.time(), deadline,
                            "ready did not flip to 503")
            time.sleep(0.1)
        self.assertEqual(http_status(front, "/v2/health/live"), 200)
        self.assertEqual(
            value(scrape(front), "tessera_frontend_backend_up",
                  backend="backend1"), 0)
        # Serving continues on backend0.
        deadline = time.time() + 30
        while c.client("--model=resnet50", "--shape_only").returncode != 0:
            self.assertLess(time.time(), deadline, "serving did not resume")
            time.sleep(0.5)


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin-dir", required=True)
    ap.add_argument("--source-dir", required=True)
    ARGS, rest = ap.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
