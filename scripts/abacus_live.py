#!/usr/bin/env python3
"""Abacus through the real serving path, on an emulated A100.

For each co-location set (by default the 21 pairs of the seven A100
services, the four triplets and the quadruplet of {resnet101, resnet152,
vgg19, bert}) this starts a backend with one emulated A100
(tessera_backend --a100_ground_truth_dir) and a frontend serving only the
set's models, then for each backend scheduler (abacus, and the baselines
fcfs, sjf, edf: policies abacus-*) and each load drives it with
tessera_loadgen: Poisson arrivals split evenly over the set's models,
batch 4, BERT at 64 tokens, each request's gRPC deadline the set's QoS
target (the Abacus artifact's, the same table as docs/abacus.md). The
predictor the backend plans with is Tessera's, learned by
tessera_group_profiler --device=emulated-a100 from groups sampled on the
same emulated device.

Writes one CSV row per (set, scheduler, load): sent, answered within the
target, dropped (DEADLINE_EXCEEDED), the violation ratio (1 - within target /
sent, drops counted) and the p99 latency over the answered queries divided
by the target. Prints the averages against FCFS, SJF and EDF.

With --device=cpu the same runs go to a backend whose cpu device runs the
shipped segmentable models' groups with real LibTorch, one core per
member (pairs of --cpu_models), with Tessera's predictor profiled on this
machine's cores (tessera_group_profiler --device=cpu). There is no
authors' table for them: each model's time alone (batch 1, the median of
a closed-loop run under abacus-fcfs) is measured first, a set's QoS target
is twice the longest of its models' (the paper's rule), and --loads are
fractions of the set's sequential capacity (1000 / the mean time alone).

With --peak the loads are multiples of each set's sequential capacity
(1000 / the mean time alone of its models, measured first through the
same path: batch 4, closed loop, abacus-fcfs), and a scheduler's peak
throughput is its highest goodput (queries answered within the target,
per second) among them, as in the simulator's peak runs.

Usage: scripts/abacus_live.py [--sets=pairs|groups|all|a+b,c+d] [--loads=50,100]
         [--duration_s=10] [--schedulers=abacus,fcfs,sjf,edf]
         [--out=build/abacus-live.csv]
       scripts/abacus_live.py --peak --sets=pairs --loads=1.25,2
       scripts/abacus_live.py --device=cpu [--loads=0.5,0.9]
         [--cpu_models=resnet18,mobilenet_v3_small,bert_tiny]
"""

import argparse
import csv
import itertools
import json
import os
import pathlib
import secrets
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
SERVICES = ["resnet50", "resnet101", "resnet152", "inception_v3", "vgg16",
            "vgg19", "bert"]
# The Abacus artifact's QoS targets (ms) per set, by service ids in the
# order above (overlap/service_catalog.cc, AbacusA100QosMs).
QOS_MS = {
    (0, 1): 100, (0, 2): 150, (0, 3): 100, (0, 4): 50, (0, 5): 50,
    (0, 6): 75, (1, 2): 160, (1, 3): 150, (1, 4): 90, (1, 5): 80,
    (1, 6): 130, (2, 3): 150, (2, 4): 150, (2, 5): 150, (2, 6): 150,
    (3, 4): 80, (3, 5): 80, (3, 6): 80, (4, 5): 30, (4, 6): 60,
    (5, 6): 60, (1, 2, 5): 100, (1, 2, 6): 150, (1, 5, 6): 80,
    (2, 5, 6): 80, (1, 2, 5, 6): 100,
}


# The artifact's peak-throughput scripts give vgg16+vgg19 40 ms.
PEAK_QOS_MS = {(4, 5): 40}


def parse_sets(spec):
    pairs = [c for c in itertools.combinations(range(7), 2)]
    groups = [c for c in QOS_MS if len(c) > 2]
    if spec == "pairs":
        return pairs
    if spec == "groups":
        return groups
    if spec == "all":
        return pairs + groups
    sets = []
    for text in spec.split(","):
        ids = tuple(sorted(SERVICES.index(n) for n in text.split("+")))
        if ids not in QOS_MS:
            sys.exit(f"abacus_live: no QoS target for set {text}")
        sets.append(ids)
    return sets


def wait_for_file(path, proc, timeout_s=30):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if path.exists() and path.read_text().strip():
            return int(path.read_text().strip())
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[0]} exited during start-up")
        time.sleep(0.05)
    raise RuntimeError(f"no port file {path} after {timeout_s} s")


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, capture_output=True,
                          **kw)


class Cluster:
    """A backend with one emulated A100 and a frontend serving `models`."""

    def __init__(self, bin_dir, work, models, predictor, ground_truth,
                 device="emulated-a100"):
        self.bin = bin_dir
        repo = work / "models"
        shutil.rmtree(repo, ignore_errors=True)
        repo.mkdir(parents=True)
        source = ROOT / ("models" if device == "cpu" else
                         "configs/emulated-a100/models")
        # The repository refuses model folders that resolve outside it:
        # each model gets a folder of its own, its config copied and its
        # version folders (the model files) linked.
        for m in models:
            (repo / m).mkdir()
            for entry in (source / m).iterdir():
                if entry.is_dir():
                    (repo / m / entry.name).symlink_to(entry)
                else:
                    shutil.copy(entry, repo / m / entry.name)
        device_flags = [] if device == "cpu" else [
            "--emulated_gpus=1", "--time_scale=1",
            f"--a100_ground_truth_dir={ground_truth}"]
        for f in ("backend.port", "frontend.port", "admin.port"):
            (work / f).unlink(missing_ok=True)
        self.log = open(work / "cluster.log", "a")
        # The admin calls need the frontend's token.
        self.token = work / "admin_token"
        self.token.write_text(secrets.token_hex(32) + "\n")
        self.token.chmod(0o600)
        self.backend = subprocess.Popen(
            [f"{bin_dir}/tessera_backend", "--listen=127.0.0.1:0",
             f"--port_file={work}/backend.port", f"--model_repository={repo}",
             f"--group_predictor={predictor}"] + device_flags,
            stdout=self.log, stderr=self.log)
        port = wait_for_file(work / "backend.port", self.backend)
        config = work / "frontend.pbtxt"
        config.write_text(
            f'backends {{ id: "backend0" address: "127.0.0.1:{port}" }}\n'
            'policy: "abacus"\ntime_scale: 1\nreplan_period_s: 3600\n')
        self.frontend = subprocess.Popen(
            [f"{bin_dir}/tessera_frontend", "--listen=127.0.0.1:0",
             f"--port_file={work}/frontend.port", f"--config={config}",
             "--admin_listen=127.0.0.1:0",
             f"--admin_port_file={work}/admin.port",
             f"--admin_token_file={self.token}",
             f"--model_repository={repo}"],
            stdout=self.log, stderr=self.log)
        self.address = "127.0.0.1:%d" % wait_for_file(
            work / "frontend.port", self.frontend)
        self.admin = "127.0.0.1:%d" % wait_for_file(work / "admin.port",
                                                    self.frontend)
        self.wait_ready()

    def wait_ready(self, timeout_s=60):
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            out = subprocess.run(
                [f"{self.bin}/tessera_client", f"--server={self.address}"],
                text=True, capture_output=True).stdout
            if "server ready: yes" in out:
                return
            time.sleep(0.2)
        raise RuntimeError("the cluster did not become ready")

    def set_policy(self, policy, scheduler):
        run([f"{self.bin}/tessera_admin", f"--server={self.admin}",
             f"--token_file={self.token}", "set-policy", policy])
        # A new scheduler is a new gpulet (a new proxy process); wait until
        # the plan in force is the new policy's (its reason names the
        # backend scheduler).
        marker = "GPULET_SCHEDULER_" + scheduler.upper()
        deadline = time.time() + 60
        while True:
            status = run([f"{self.bin}/tessera_admin",
                          f"--server={self.admin}",
                          f"--token_file={self.token}", "status"]).stdout
            if marker in status:
                break
            if time.time() > deadline:
                raise RuntimeError(f"plan of {policy} not installed:\n"
                                   f"{status}")
            time.sleep(0.2)
        self.wait_ready()

    def use(self, scheduler):
        """Switches the backend's scheduler through its policy."""
        self.set_policy("abacus" if scheduler == "abacus" else
                        f"abacus-{scheduler}", scheduler)

    def close(self):
        for p in (self.frontend, self.backend):
            p.terminate()
        for p in (self.frontend, self.backend):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
        self.log.close()


def measure(cluster, names, qos, load, duration_s, work, batch=4):
    out = work / "loadgen.json"
    per_model = load / len(names)
    run([f"{cluster.bin}/tessera_loadgen", f"--server={cluster.address}",
         "--load=" + ",".join(f"{n}:{per_model}" for n in names),
         f"--batch={batch}", "--shape_only", f"--duration_s={duration_s}",
         "--warmup_s=1", f"--timeout_s={qos / 1000}",
         "--slos=" + ",".join(f"{n}:{qos}" for n in names),
         f"--json={out}"])
    rows = json.loads(out.read_text())
    sent = sum(r["sent"] for r in rows)
    met = sum(r["slo_attainment"] * r["sent"] for r in rows)
    dropped = 0
    for r in rows:
        for part in (r.get("errors_by_code") or "").split(","):
            if part.startswith("DEADLINE_EXCEEDED:"):
                dropped += int(part.split(":")[1])
    p99 = max((r["p99_ms"] for r in rows if r["ok_rps"] > 0), default=0)
    return {"sent": sent, "in_qos": round(met), "dropped": dropped,
            "violation_ratio": 1 - met / sent if sent else 0,
            "p99_over_qos": p99 / qos,
            # Requests of the first second (--warmup_s=1) are not counted.
            "goodput_qps": round(met / max(duration_s - 1, 1e-9), 2)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build_dir", default=str(ROOT / "build"))
    ap.add_argument("--ground_truth",
                    default=str(ROOT.parent / "shared/data/abacus-a100"))
    ap.add_argument("--sets", default="all")
    ap.add_argument("--loads", default="50,100")
    ap.add_argument("--duration_s", type=float, default=10)
    ap.add_argument("--schedulers", default="abacus,fcfs,sjf,edf")
    ap.add_argument("--out", default=None,
                    help="CSV (default build/abacus-live[-cpu].csv)")
    ap.add_argument("--device", default="emulated-a100",
                    choices=["emulated-a100", "cpu"])
    ap.add_argument("--peak", action="store_true",
                    help="--loads are multiples of each set's sequential "
                    "capacity; report peak goodput")
    ap.add_argument("--cpu_models",
                    default="resnet18,mobilenet_v3_small,bert_tiny")
    args = ap.parse_args()
    if args.out is None:
        args.out = str(ROOT / ("build/abacus-live-cpu.csv"
                               if args.device == "cpu"
                               else "build/abacus-live.csv"))
    bin_dir = pathlib.Path(args.build_dir) / "bin"
    schedulers = args.schedulers.split(",")
    for s in schedulers:
        if s not in ("abacus", "fcfs", "sjf", "edf"):
            sys.exit(f"abacus_live: unknown scheduler {s}")
    loads = [float(x) for x in args.loads.split(",")]
    if args.device == "cpu":
        rows = run_cpu(args, bin_dir, schedulers, loads)
        write_rows(args.out, rows)
        summarize(rows)
        return
    sets = parse_sets(args.sets)
    work = pathlib.Path(tempfile.mkdtemp(prefix="abacus-live-"))
    predictor = work / "a100-predictor.pbtxt"
    print("==> training Tessera's predictor on the emulated A100", flush=True)
    run([f"{bin_dir}/tessera_group_profiler", "--device=emulated-a100",
         f"--a100_ground_truth_dir={args.ground_truth}",
         "--max_group_size=4", "--groups=2000", "--runs=100",
         f"--predictor_out={predictor}"])
    rows = []
    total = len(sets) * len(schedulers) * len(loads)
    started = time.time()
    for set_ids in sets:
        names = [SERVICES[i] for i in set_ids]
        cluster = Cluster(bin_dir, work, names, predictor, args.ground_truth)
        try:
            capacity = 1
            if args.peak:
                cluster.use("fcfs")
                alone = [solo_ms(cluster, m, work, batch=4) for m in names]
                capacity = 1000 / (sum(alone) / len(alone))
                print(f"{'+'.join(names)}: capacity {capacity:.1f} QPS",
                      flush=True)
            for scheduler in schedulers:
                cluster.use(scheduler)
                for load in loads:
                    qps = round(load * capacity, 1)
                    qos = PEAK_QOS_MS.get(set_ids, QOS_MS[set_ids]) \
                        if args.peak else QOS_MS[set_ids]
                    m = measure(cluster, names, qos, qps, args.duration_s,
                                work)
                    rows.append({"set": "+".join(names),
                                 "size": len(set_ids), "qos_ms": qos,
                                 "scheduler": scheduler, "load_qps": qps,
                                 "load": load, **m})
                    done = len(rows)
                    eta = (time.time() - started) / done * (total - done)
                    print(f"[{done}/{total}, eta {eta / 60:.1f} min] "
                          f"{rows[-1]['set']} {scheduler} {qps:g} QPS: "
                          f"violations {100 * m['violation_ratio']:.1f} %, "
                          f"p99/QoS {m['p99_over_qos']:.2f}, goodput "
                          f"{m['goodput_qps']:.1f}", flush=True)
        finally:
            cluster.close()
    write_rows(args.out, rows)
    if args.peak:
        summarize_peak(rows)
    else:
        summarize(rows)
    shutil.rmtree(work, ignore_errors=True)


def write_rows(path, rows):
    pathlib.Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {path}")


def solo_ms(cluster, model, work, batch=1):
    """The model's time alone: median latency of one query at a time."""
    out = work / "solo.json"
    run([f"{cluster.bin}/tessera_loadgen", f"--server={cluster.address}",
         f"--load={model}:1", "--concurrency=1", f"--batch={batch}",
         "--shape_only", "--duration_s=3", "--timeout_s=10",
         f"--json={out}"])
    return json.loads(out.read_text())[0]["p50_ms"]


def run_cpu(args, bin_dir, schedulers, loads):
    models = args.cpu_models.split(",")
    work = pathlib.Path(tempfile.mkdtemp(prefix="abacus-live-cpu-"))
    predictor = work / "cpu-predictor.pbtxt"
    print("==> profiling groups on this machine's cores", flush=True)
    run([f"{bin_dir}/tessera_group_profiler", "--device=cpu",
         f"--model_repository={ROOT / 'models'}", f"--models={args.cpu_models}",
         "--batch=1", "--max_group_size=2", "--groups=200", "--runs=5",
         f"--samples={work}/samples.txt", f"--predictor_out={predictor}"])
    rows = []
    for pair in itertools.combinations(models, 2):
        names = list(pair)
        cluster = Cluster(bin_dir, work, names, predictor, None, device="cpu")
        try:
            cluster.use("fcfs")
            alone = {m: solo_ms(cluster, m, work) for m in names}
            qos = 2 * max(alone.values())
            capacity = 1000 / (sum(alone.values()) / len(alone))
            print(f"{'+'.join(names)}: alone " +
                  ", ".join(f"{m} {v:.1f} ms" for m, v in alone.items()) +
                  f"; QoS {qos:.1f} ms; capacity {capacity:.0f} QPS",
                  flush=True)
            for scheduler in schedulers:
                cluster.use(scheduler)
                for load in loads:
                    m = measure(cluster, names, qos, load * capacity,
                                args.duration_s, work, batch=1)
                    rows.append({"set": "+".join(names), "size": 2,
                                 "qos_ms": round(qos, 2),
                                 "scheduler": scheduler,
                                 "load_qps": round(load * capacity, 1), **m})
                    print(f"  {scheduler} {load:g}x: violations "
                          f"{100 * m['violation_ratio']:.1f} %, p99/QoS "
                          f"{m['p99_over_qos']:.2f}", flush=True)
        finally:
            cluster.close()
    shutil.rmtree(work, ignore_errors=True)
    return rows


def summarize_peak(rows):
    """Each scheduler's peak goodput per set (its best load), and
    Abacus's mean relative gain over each baseline across the sets."""
    peak = {}
    for r in rows:
        key = (r["set"], r["scheduler"])
        peak[key] = max(peak.get(key, 0), r["goodput_qps"])
    sets = sorted({s for s, _ in peak}, key=lambda s: [r["set"] for r in
                                                        rows].index(s))
    print("\nset: peak goodput abacus / fcfs / sjf / edf (QPS)")
    for s in sets:
        print(f"  {s}: " + " / ".join(
            f"{peak.get((s, x), 0):.1f}" for x in ("abacus", "fcfs", "sjf",
                                                   "edf")))
    for base in ("fcfs", "sjf", "edf"):
        gains = [peak[(s, "abacus")] / peak[(s, base)] - 1 for s in sets
                 if (s, "abacus") in peak and peak.get((s, base), 0) > 0]
        if gains:
            print(f"abacus vs {base}: peak throughput "
                  f"{100 * sum(gains) / len(gains):+.1f} % (mean over "
                  f"{len(gains)} sets)")


def summarize(rows):
    """Mean violation ratio per scheduler and group size, and Abacus's
    relative change against each baseline (mean over sets and loads of the
    per-run ratio, as the paper averages)."""
    by = {}
    for r in rows:
        by.setdefault((r["size"], r["scheduler"]), []).append(r)
    for size in sorted({r["size"] for r in rows}):
        print(f"\ngroup size {size}:")
        for (s, sched), rs in sorted(by.items()):
            if s != size:
                continue
            v = sum(r["violation_ratio"] for r in rs) / len(rs)
            p = sum(r["p99_over_qos"] for r in rs) / len(rs)
            print(f"  {sched:7s} violations {100 * v:6.2f} %  "
                  f"p99/QoS {p:.2f}  ({len(rs)} runs)")
        abacus = {(r["set"], r["load_qps"]): r for r in rows
                  if r["size"] == size and r["scheduler"] == "abacus"}
        for base in ("fcfs", "sjf", "edf"):
            pairs = [(abacus[(r["set"], r["load_qps"])], r) for r in rows
                     if r["size"] == size and r["scheduler"] == base and
                     (r["set"], r["load_qps"]) in abacus]
            if not pairs:
                continue
            a = sum(x["violation_ratio"] for x, _ in pairs) / len(pairs)
            b = sum(y["violation_ratio"] for _, y in pairs) / len(pairs)
            change = (a - b) / b if b > 0 else 0
            print(f"  abacus vs {base}: violations {100 * change:+.1f} % "
                  f"(mean {100 * a:.2f} % vs {100 * b:.2f} %)")


if __name__ == "__main__":
    main()
