#!/usr/bin/env python3
"""Measures the shipped models' GPU profiles under NVIDIA MPS shares.

Run on a GPU node with a CUDA PyTorch (the python3 that has it); writes
profiles/cuda/<model>.pbtxt (tessera.ModelProfile, device_kind "cuda", the
profile key of a DEVICE_KIND_CUDA backend device) and profiles/cuda/pairs.csv
(co-located pairs, the columns of profiles/cpu/pairs.csv).

Method (docs/profiling.md):
  * An MPS control daemon is started with its own pipe and log folders
    (--no_mps: none; every share then runs the whole GPU).
  * Solo: one worker process per share p, started with
    CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=p (as the backend starts a gpulet's
    proxy), loads every model with torch.jit.load on cuda:0 and times, per
    model and batch, `--runs` batches after `--warmup` ones. A batch's time
    is what the proxy's execution time covers: the host inputs copied to the
    GPU, the forward pass under inference mode, the outputs copied back,
    synchronized. Recorded: the median and p99, the throughput (batch x
    1000 / median) and the model's peak allocated device memory over its
    cells (weights and activations; the CUDA context is not counted).
  * Pairs: two workers at shares (p, 100 - p) for each --pair_shares p run
    two models (a model with itself too), each at its smallest and largest
    profiled batch, back to back over the same --pair_seconds window; each
    side's median latency is one row for each order.

Usage (on the GPU node, from the repository root, models generated):
  python3 scripts/profile_mps.py [--out profiles] [--shares 10,20,...]
"""
import argparse
import csv
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = ["bert_tiny", "lenet", "mobilenet_v3_small", "resnet18"]


def percentile(values, q):
    values = sorted(values)
    index = min(len(values) - 1, max(0, int(round(q / 100 * len(values))) - 1))
    return values[index]


# --------------------------------------------------------------- worker side
def worker(args):
    """Serves commands (JSON lines on stdin) at this process's MPS share."""
    import torch
    sys.path.insert(0, os.path.join(ROOT, "models"))
    from generate_models import MODELS as MAKERS  # the models' inputs

    cuda = args.torch_device == "cuda"
    if cuda:
        torch.cuda.set_device(0)
    device = torch.device(args.torch_device)
    models = {}
    for name in args.models.split(","):
        path = os.path.join(args.model_repository, name, "1", "model.pt")
        models[name] = torch.jit.load(path, map_location=device).eval()

    def run_once(name, inputs):
        start = time.perf_counter()
        with torch.inference_mode():
            out = models[name](*[t.to(device) for t in inputs])
            outs = out if isinstance(out, (tuple, list)) else (out,)
            [o.cpu() for o in outs]
        if cuda:
            torch.cuda.synchronize()
        return (time.perf_counter() - start) * 1e3

    def reply(obj):
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()

    reply({"ready": True})
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["op"] == "quit":
            return
        name, batch = cmd["model"], cmd["batch"]
        inputs = MAKERS[name][1](batch)
        if cmd["op"] == "solo":
            if cuda:
                torch.cuda.reset_peak_memory_stats()
            for _ in range(cmd["warmup"]):
                run_once(name, inputs)
            times = [run_once(name, inputs) for _ in range(cmd["runs"])]
            reply({"median": statistics.median(times),
                   "p99": percentile(times, 99),
                   "memory": torch.cuda.max_memory_allocated() if cuda else 0})
        elif cmd["op"] == "loop":
            for _ in range(3):
                run_once(name, inputs)
            while time.time() < cmd["start"]:
                time.sleep(0.0005)
            times = []
            while time.time() < cmd["end"]:
                times.append(run_once(name, inputs))
            reply({"median": statistics.median(times), "count": len(times)})


# --------------------------------------------------------------- parent side
class Worker:
    def __init__(self, args, share, env):
        env = dict(env)
        if not args.no_mps:
            env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = f"{share:g}"
        self.proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--worker",
             "--models", ",".join(args.models),
             "--torch_device", args.torch_device,
             "--model_repository", args.model_repository],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True)
        self.read()  # ready

    def send(self, **cmd):
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()

    def read(self):
        line = self.proc.stdout.readline()
        if not line:
            sys.exit(f"profile_mps: a worker exited (rc {self.proc.wait()})")
        return json.loads(line)

    def close(self):
        self.send(op="quit")
        self.proc.wait(timeout=60)


def start_mps(env, folder):
    """Starts an MPS control daemon on its own pipe and log folders."""
    control = shutil.which("nvidia-cuda-mps-control")
    if control is None:
        sys.exit("profile_mps: nvidia-cuda-mps-control is not on PATH "
                 "(--no_mps profiles without MPS)")
    env["CUDA_MPS_PIPE_DIRECTORY"] = os.path.join(folder, "pipe")
    env["CUDA_MPS_LOG_DIRECTORY"] = os.path.join(folder, "log")
    for key in ("CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_LOG_DIRECTORY"):
        os.makedirs(env[key], exist_ok=True)
    subprocess.run([control, "-d"], env=env, check=True)
    return control


def stop_mps(control, env):
    subprocess.run([control], input="quit\n", env=env, text=True, check=False)


def profile_solo(args, env, log, control):
    cells = []  # (model, batch, share, median, p99)
    memory = {m: 0 for m in args.models}
    for share in args.shares:
        w = Worker(args, share, env)
        if control and share == args.shares[0]:
            servers = subprocess.run([control], input="get_server_list\n",
                                     env=env, text=True, capture_output=True)
            log(f"MPS servers: {servers.stdout.split() or 'none'}")
        for model in args.models:
            for batch in args.batches:
                w.send(op="solo", model=model, batch=batch,
                       warmup=args.warmup, runs=args.runs)
                r = w.read()
                cells.append((model, batch, share, r["median"], r["p99"]))
                memory[model] = max(memory[model], r["memory"])
                log(f"solo {model} b{batch} {share:g}%: {r['median']:.3f} ms")
        w.close()
    return cells, memory


def profile_pairs(args, env, log):
    rows = []
    items = [(m, b) for m in args.models
             for b in sorted({args.batches[0], args.batches[-1]})]
    for share in args.pair_shares:
        a, b = Worker(args, share, env), Worker(args, 100 - share, env)
        for i, (ma, ba) in enumerate(items):
            for mb, bb in items[i:] if share == 50 else items:
                start = time.time() + 0.5
                end = start + args.pair_seconds
                a.send(op="loop", model=ma, batch=ba, start=start, end=end)
                b.send(op="loop", model=mb, batch=bb, start=start, end=end)
                ra, rb = a.read(), b.read()
                rows.append((ma, ba, share, mb, bb, 100 - share,
                             ra["median"], rb["median"]))
                rows.append((mb, bb, 100 - share, ma, ba, share,
                             rb["median"], ra["median"]))
                log(f"pair {ma} b{ba} {share:g}% + {mb} b{bb}: "
                    f"{ra['median']:.3f} / {rb['median']:.3f} ms")
        a.close()
        b.close()
    return rows


def write_profiles(args, cells, memory, source):
    folder = os.path.join(args.out, args.device_kind)
    os.makedirs(folder, exist_ok=True)
    for model in args.models:
        lines = [f'model: "{model}"', f'device_kind: "{args.device_kind}"']
        for m, batch, share, median, p99 in sorted(
                cells, key=lambda c: (c[2], c[1])):
            if m != model:
                continue
            lines += ["latency {", f"  batch_size: {batch}",
                      f"  share_percent: {share:g}",
                      f"  latency_ms: {median:.4f}",
                      f"  latency_p99_ms: {p99:.4f}",
                      f"  throughput_rps: {batch * 1e3 / median:.1f}", "}"]
        lines += [f"memory_bytes: {memory[model]}",
                  "source: " + json.dumps(source)]
        with open(os.path.join(folder, model + ".pbtxt"), "w") as f:
            f.write("\n".join(lines) + "\n")


def write_pairs(args, rows):
    path = os.path.join(args.out, args.device_kind, "pairs.csv")
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["model", "batch", "share", "other", "other_batch",
                      "other_share", "latency_ms", "other_latency_ms"])
        for r in rows:
            out.writerow([r[0], r[1], f"{r[2]:g}", r[3], r[4], f"{r[5]:g}",
                          f"{r[6]:.4f}", f"{r[7]:.4f}"])


def describe(args):
    import torch  # not initialized: the parent holds no CUDA context
    smi = shutil.which("nvidia-smi")
    gpu = subprocess.run(
        [smi, "--query-gpu=name,driver_version", "--format=csv,noheader",
         "-i", "0"], capture_output=True, text=True).stdout.strip() \
        if smi else "no GPU"
    mps = "no MPS (whole GPU)" if args.no_mps else \
        "MPS, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE = share"
    return (f"scripts/profile_mps.py on {gpu} (name, driver; PyTorch "
            f"{torch.__version__}, {platform.node()}), "
            f"{time.strftime('%Y-%m-%d')}; {mps}; median/p99 of {args.runs} "
            f"runs after {args.warmup} warm-up, host->GPU->host copies "
            f"included; memory = peak allocated by the model's cells")


def parse_list(text, kind):
    return [kind(x) for x in text.split(",") if x]


def main():
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--model_repository", default=os.path.join(ROOT, "models"))
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--out", default=os.path.join(ROOT, "profiles"))
    p.add_argument("--device_kind", default="cuda",
                   help="profile key and subfolder (default cuda)")
    p.add_argument("--shares", default="10,20,30,40,50,60,70,80,90,100")
    p.add_argument("--batches", default="1,2,4,8,16,32")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--runs", type=int, default=30)
    p.add_argument("--pair_shares", default="50",
                   help="shares p of the pairs (p, 100 - p); empty: none")
    p.add_argument("--pair_seconds", type=float, default=1.0)
    p.add_argument("--no_mps", action="store_true",
                   help="no MPS daemon: shares are not enforced")
    p.add_argument("--torch_device", default="cuda", choices=["cuda", "cpu"],
                   help="cpu: a dry run of the method (implies --no_mps)")
    args = p.parse_args()
    if args.worker:
        return worker(args)
    args.models = parse_list(args.models, str)
    args.shares = parse_list(args.shares, float)
    args.batches = sorted(parse_list(args.batches, int))
    args.pair_shares = parse_list(args.pair_shares, float)
    for share in args.shares + args.pair_shares:
        if not 0 < share <= 100:
            p.error(f"share {share:g} is not in (0, 100]")
    for model in args.models:
        path = os.path.join(args.model_repository, model, "1", "model.pt")
        if not os.path.exists(path):
            p.error(f"{path} is missing (models/generate_models.py)")
    args.no_mps = args.no_mps or args.torch_device == "cpu"
    if args.no_mps:
        args.shares = [100.0]  # pairs then share the whole GPU

    def log(text):
        print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)

    env = dict(os.environ)
    control = None
    folder = tempfile.mkdtemp(prefix="tessera-profile-mps-")
    if not args.no_mps:
        control = start_mps(env, folder)
    try:
        cells, memory = profile_solo(args, env, log, control)
        write_profiles(args, cells, memory, describe(args))
        log(f"wrote {len(cells)} cells to {args.out}/{args.device_kind}/")
        rows = profile_pairs(args, env, log) if args.pair_shares else []
        write_pairs(args, rows)
        log(f"wrote {len(rows)} pair rows")
    finally:
        if control:
            stop_mps(control, env)


if __name__ == "__main__":
    main()
