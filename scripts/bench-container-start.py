#!/usr/bin/env python3
"""Time from bind to the first line of a job's log, bare and in a container.

Runs 'allot up' (in-process agents, virtual GPUs) with podman as the
container runtime, builds the demo image with 'allot demo image build', then
submits the same one-GPU job N times bare and N times with the image,
alternating, one at a time. For each it takes the bind time from the API
(the attempt's 'placed') and the moment the first line lands in the agent's
own log file of the attempt (DATA/agents/NODE/logs/JOB/attempt-1.log, polled
every 2 ms), which leaves out the log shipping interval. The image is in the
host's store after the first container job (cached); each container job
still reads the OCI layout's manifest (podman pull of a local layout).

usage: scripts/bench-container-start.py ALLOT_BINARY [N] [OCI_RUNTIME]
"""
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime


def main():
    allot = os.path.abspath(sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    oci = sys.argv[3] if len(sys.argv) > 3 else "runc"
    work = tempfile.mkdtemp(prefix="allot-bench-start-")
    images = os.path.join(work, "images")
    image = subprocess.run([allot, "demo", "image", "build", "--dir", images], check=True,
                           capture_output=True, text=True).stdout.strip()
    data = os.path.join(work, "data")
    port = "18491"
    up = subprocess.Popen([allot, "up", "--data", data, "--listen", "127.0.0.1:" + port, "--gateway-listen", "",
                           "--runtime", oci, "--image-dir", images, "--log-level", "warn"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    env = dict(os.environ, ALLOT_SERVER="http://127.0.0.1:" + port)
    try:
        for _ in range(200):
            if os.path.exists(os.path.join(data, "admin-token")):
                break
            time.sleep(0.05)
        time.sleep(1)
        env["ALLOT_TOKEN"] = open(os.path.join(data, "admin-token")).read().strip()
        results = {"bare": [], "image": []}
        for i in range(2 * n):
            kind = "bare" if i % 2 == 0 else "image"
            args = [allot, "job", "run", "--tenant", "research", "--gpus", "1", "--gpu-model", "H100", "-o", "json"]
            if kind == "image":
                args += ["--image", image]
            args += ["--", "allot", "demo", "train", "--steps", "1", "--step-time", "10ms"]
            out = subprocess.run(args, env=env, check=True, capture_output=True, text=True).stdout
            job = json.loads(out)["id"]
            first = None
            deadline = time.time() + 60
            while time.time() < deadline:
                logs = glob.glob(os.path.join(data, "agents", "*", "logs", job, "attempt-1.log"))
                if logs and os.path.getsize(logs[0]) > 0:
                    first = time.time()
                    break
                time.sleep(0.002)
            for _ in range(300):
                req = urllib.request.Request(env["ALLOT_SERVER"] + "/v1/jobs/" + job,
                                             headers={"Authorization": "Bearer " + env["ALLOT_TOKEN"]})
                show = json.load(urllib.request.urlopen(req))
                if show.get("state") in ("Succeeded", "Failed"):
                    break
                time.sleep(0.1)
            placed = show["attempt_history"][0]["placed"]
            bound = datetime.fromisoformat(placed.replace("Z", "+00:00")).timestamp()
            if first is None or show["state"] != "Succeeded":
                print(f"{kind} {job}: {show['state']} {show.get('detail')}", file=sys.stderr)
                continue
            results[kind].append((first - bound) * 1000)
        for kind, ms in results.items():
            if ms:
                print(f"{kind:5}  n={len(ms):2}  median {statistics.median(ms):6.0f} ms  min {min(ms):6.0f}  max {max(ms):6.0f}")
    finally:
        up.terminate()
        up.wait(timeout=60)
        # podman named the image it read after the layout's path.
        subprocess.run(["podman", "rmi", "--force", "localhost" + images], capture_output=True)


if __name__ == "__main__":
    main()
