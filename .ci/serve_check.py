"""`make package`: start `hopgraph serve` on an index, time its first answer to a search, stop it.

python .ci/serve_check.py HOPGRAPH_BINARY INDEX_DIR
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request


def main() -> None:
    binary, index = sys.argv[1], sys.argv[2]
    with socket.socket() as s:  # a free port
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    start = time.perf_counter()
    server = subprocess.Popen([binary, "serve", index, "--port", str(port)])
    body = json.dumps({"query": "Who founded the shipyard that built SS Orrendale?", "k": 3})
    try:
        while True:
            if server.poll() is not None:
                sys.exit(f"hopgraph serve exited with {server.returncode}")
            if time.perf_counter() - start > 120:
                sys.exit("hopgraph serve gave no answer within 120 s")
            try:
                req = urllib.request.Request(
                    f"http://127.0.0.1:{port}/search",
                    data=body.encode(),
                    headers={"content-type": "application/json"},
                )
                with urllib.request.urlopen(req, timeout=5) as r:
                    hits = json.loads(r.read())["hits"]
                break
            except OSError:
                time.sleep(0.05)
    finally:
        server.terminate()
        server.wait(30)
    print(
        f"hopgraph serve: first answer {time.perf_counter() - start:.2f} s after start; "
        f"{len(hits)} hits"
    )
    titles = [h.get("title") or h["id"] for h in hits]
    if not any("grennick" in t.lower() for t in titles):
        sys.exit(f"the founder's page is not among the hits: {titles}")


if __name__ == "__main__":
    main()
