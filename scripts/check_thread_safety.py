#!/usr/bin/python3
"""Checks the absl thread-safety annotations (ABSL_GUARDED_BY, ...) with
clang's -Wthread-safety, as errors, on every source of the build that does
not include LibTorch: clang parses each file of compile_commands.json
(-fsyntax-only: no code is generated, so it costs a fraction of a build).

Usage: scripts/check_thread_safety.py [--build_dir=build] [--jobs=N]
                                      [--clang=clang++] [FILE...]
With FILEs, only those sources are checked. Exit status 1 on any finding,
2 on a usage error.
"""
import argparse
import concurrent.futures
import json
import os
import shlex
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Syntax only, lock-annotation findings as errors; warning flags clang does
# not know (the compile commands are GCC's) are ignored.
FLAGS = ["-fsyntax-only", "-Wthread-safety", "-Werror=thread-safety",
         "-Wno-unknown-warning-option"]


def clang_command(entry, clang):
    """The entry's compile command for clang, syntax only."""
    args = (entry["arguments"] if "arguments" in entry
            else shlex.split(entry["command"]))
    out = [clang]
    skip = False
    for a in args[1:]:
        if skip:
            skip = False
            continue
        if a in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
            continue
        if a in ("-c", "-MD", "-MMD"):
            continue
        out.append(a)
    return out + FLAGS


def uses_torch(path):
    with open(path, errors="replace") as f:
        return any(line.startswith("#include <torch/") or
                   line.startswith('#include "torch/') for line in f)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build_dir", default=os.path.join(ROOT, "build"))
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--clang", default="clang++")
    parser.add_argument("files", nargs="*")
    args = parser.parse_args()
    if shutil.which(args.clang) is None:
        print(f"check_thread_safety: {args.clang} not found "
              "(apt-get install clang)", file=sys.stderr)
        return 2
    db = os.path.join(args.build_dir, "compile_commands.json")
    try:
        entries = json.load(open(db))
    except OSError as e:
        print(f"check_thread_safety: {e} (configure the build first)",
              file=sys.stderr)
        return 2
    wanted = {os.path.abspath(f) for f in args.files}
    sources = []
    for e in entries:
        path = os.path.abspath(os.path.join(e["directory"], e["file"]))
        if not path.startswith(ROOT + os.sep) or \
                path.startswith(os.path.abspath(args.build_dir) + os.sep):
            continue  # generated sources (protobuf) carry no annotations
        if wanted and path not in wanted:
            continue
        if uses_torch(path):
            continue
        sources.append((path, e))
    if wanted and len(sources) != len(wanted):
        print("check_thread_safety: not in the build (or uses LibTorch): " +
              ", ".join(sorted(wanted - {p for p, _ in sources})),
              file=sys.stderr)
        return 2

    def check(item):
        path, entry = item
        r = subprocess.run(clang_command(entry, args.clang),
                           cwd=entry["directory"], capture_output=True,
                           text=True)
        return path, r.returncode, r.stderr

    failed = 0
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for path, rc, err in pool.map(check, sources):
            if rc != 0:
                failed += 1
                sys.stderr.write(err)
    print(f"check_thread_safety: {len(sources)} sources, {failed} with "
          "findings")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
