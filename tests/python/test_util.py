"""Helpers shared by the Python integration tests."""
import os
import time


def wait_for_port_file(path, proc, timeout_s=30):
    """The port a server wrote to `path` (--port_file) once serving."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if os.path.exists(path):
            with open(path) as f:
                text = f.read().strip()
            if text:
                return int(text)
        if proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode}")
        time.sleep(0.02)
    raise TimeoutError(f"no port in {path}")
