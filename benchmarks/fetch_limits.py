"""How soon a download from a hostile mirror stops, with drocli.data.fetch's default limits
(issue 43: the probe's mirror sending a byte every 20 s still ran after 75 s).

Local servers on 127.0.0.1, all at once (one thread each): a trickle of one byte every 20 s
and one every 3 s (a 100-byte file: never stalled, far too slow), silence after the headers,
silence before them, and an endless body of unknown length (no declared size: cut at
MAX_BYTES). Prints each one's seconds until drocli stopped it and the first words of why.

    python benchmarks/fetch_limits.py
"""

from __future__ import annotations

import os
import socket
import tempfile
import threading
import time
from pathlib import Path

from drocli.data import fetch
from drocli.errors import DrocliError

HEAD = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\nConnection: close\r\n\r\n"


def trickle(every_s: float):
    def respond(c):
        c.sendall(HEAD)
        for _ in range(100):
            c.sendall(b"x")
            time.sleep(every_s)
    return respond


def endless(c):
    c.sendall(b"HTTP/1.0 200 OK\r\n\r\n")
    while True:
        c.sendall(b"\0" * (1 << 20))


SERVERS = {"trickle 1 B / 20 s": trickle(20.0), "trickle 1 B / 3 s": trickle(3.0),
           "silent after headers": lambda c: (c.sendall(HEAD), c.recv(1)),
           "silent before headers": lambda c: c.recv(1),
           "endless, no length": endless}


def serve(respond) -> str:
    srv = socket.create_server(("127.0.0.1", 0))

    def run():
        conn, _ = srv.accept()
        with conn:
            conn.recv(65536)
            try:
                respond(conn)
            except OSError:
                pass
    threading.Thread(target=run, daemon=True).start()
    return f"http://127.0.0.1:{srv.getsockname()[1]}/f.bin"


def main() -> None:
    results: dict[str, tuple[float, str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        def one(name, respond, folder):
            url, t0 = serve(respond), time.monotonic()
            try:
                fetch.download(url, folder / "f.bin", quiet=True)
                why = "completed (!)"
            except DrocliError as e:
                why = e.detail.split(", after")[0].removeprefix("download stopped: ")
            results[name] = (time.monotonic() - t0, why)

        threads = []
        for i, (name, respond) in enumerate(SERVERS.items()):
            folder = Path(tmp) / str(i)
            folder.mkdir()
            threads.append(threading.Thread(target=one, args=(name, respond, folder)))
            threads[-1].start()
        for t in threads:
            t.join()
        left = [p.name for p in Path(tmp).rglob("*") if p.is_file()]
    print(f"load {os.getloadavg()[0]:.2f}; STALL_S {fetch.STALL_S:g}, GRACE_S "
          f"{fetch.GRACE_S:g}, MIN_RATE {fetch.MIN_RATE} B/s, MAX_BYTES "
          f"{fetch.MAX_BYTES >> 20} MiB; files left behind: {left or 'none'}")
    for name, (s, why) in results.items():
        print(f"{name:<24} stopped after {s:5.1f} s: {why}")


if __name__ == "__main__":
    main()
