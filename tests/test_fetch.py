"""`drocli data fetch` against a local HTTP server on 127.0.0.1 (no test reaches the
internet): a right file is placed, a wrong checksum is refused and nothing is placed, an
interrupted download resumes with a Range request, first-download checksums are enforced
later, and every paper data set's file list and archive layout fetch into a folder its
loader then finds."""

from __future__ import annotations

import gzip
import hashlib
import http.server
import io
import os
import socketserver
import tarfile
import threading
from pathlib import Path

import pytest

from drocli.errors import DrocliError
from drocli.plugins import registry
from tests.conftest import call


class Server:
    """Serves `files` (name -> bytes) with Range support; names in `cut_once` send half of
    their bytes and drop the connection the first time."""

    def __init__(self):
        self.files: dict[str, bytes] = {}
        self.cut_once: set[str] = set()
        self.ranges: list[str] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):  # noqa: N802 - http.server's name
                name = self.path.rsplit("/", 1)[-1]
                body = outer.files.get(name)
                if body is None:
                    self.send_error(404)
                    return
                start = 0
                rng = self.headers.get("Range")
                if rng:
                    outer.ranges.append(f"{name}:{rng}")
                    start = int(rng.split("=")[1].split("-")[0])
                    if start >= len(body):
                        self.send_error(416)
                        return
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/"
                                                      f"{len(body)}")
                else:
                    self.send_response(200)
                self.send_header("Content-Length", str(len(body) - start))
                self.end_headers()
                if name in outer.cut_once:
                    outer.cut_once.discard(name)
                    self.wfile.write(body[start:start + (len(body) - start) // 2])
                    self.wfile.flush()
                    self.connection.shutdown(2)
                    return
                self.wfile.write(body[start:])

        self.httpd = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = Server()
    yield s
    s.close()


@pytest.fixture
def data_home(tmp_path, monkeypatch):
    home = tmp_path / "data"
    monkeypatch.setenv("DROCLI_DATA", str(home))
    return home


def test_libsvm_placed_then_checked_against_first_download(server, data_home, capsys):
    body = b"+1 1:0.5 3:1\n-1 2:0.25\n" * 50
    server.files["a1a"] = body
    assert call("data", "fetch", "libsvm", "--file", "a1a", "--mirror", server.url, "-q") == 0
    placed = data_home / "libsvm" / "a1a"
    assert placed.read_bytes() == body
    record = (data_home / "libsvm" / "checksums.json").read_text()
    assert hashlib.sha256(body).hexdigest() in record
    assert not list((data_home / "libsvm").glob(".*.part"))
    # the publisher's file changes: a later download is refused and nothing is replaced
    placed.unlink()
    server.files["a1a"] = body + b"+1 1:9\n"
    capsys.readouterr()
    assert call("data", "fetch", "libsvm", "--file", "a1a", "--mirror", server.url, "-q") == 2
    err = capsys.readouterr().err
    assert "differs from its first download" in err and len(err.strip().splitlines()) == 1
    assert not placed.exists() and not list((data_home / "libsvm").glob(".*.part"))


def test_wrong_published_checksum_refused_nothing_placed(server, data_home, capsys):
    from drocli.data import mnist

    for r in mnist.DOWNLOADS.files:
        server.files[r.name] = gzip.compress(b"not the MNIST file")
    assert call("data", "fetch", "mnist", "--mirror", server.url, "-q") == 2
    err = capsys.readouterr().err
    assert "checksum mismatch" in err and "nothing was placed" in err
    folder = data_home / "mnist"
    assert not [p for p in folder.iterdir()] if folder.exists() else True


def test_interrupted_download_resumes(server, data_home, capsys):
    body = bytes(range(256)) * 4000
    server.files["w1a"] = body
    server.cut_once.add("w1a")
    code = call("data", "fetch", "libsvm", "--file", "w1a", "--mirror", server.url, "-q")
    assert code == 2 and "resumes" in capsys.readouterr().err
    part = data_home / "libsvm" / ".w1a.part"
    assert 0 < part.stat().st_size < len(body)
    assert not (data_home / "libsvm" / "w1a").exists()
    assert call("data", "fetch", "libsvm", "--file", "w1a", "--mirror", server.url, "-q") == 0
    assert server.ranges and server.ranges[-1].startswith("w1a:bytes=")
    assert (data_home / "libsvm" / "w1a").read_bytes() == body and not part.exists()


def _idx_gz(shape, code=0x08) -> bytes:
    from drocli.data.idx import idx_header

    n = 1
    for s in shape:
        n *= s
    return gzip.compress(idx_header(shape, code) + bytes(i % 10 for i in range(n)))


def _cifar_tar(members: dict[str, bytes], top: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _fake_files(source: str) -> dict[str, bytes]:
    """Files with the layout each paper data set's release has (tiny contents)."""
    import pickle

    import numpy as np

    if source in ("mnist", "fashion_mnist"):
        return {"train-images-idx3-ubyte.gz": _idx_gz((20, 28, 28)),
                "train-labels-idx1-ubyte.gz": _idx_gz((20,)),
                "t10k-images-idx3-ubyte.gz": _idx_gz((10, 28, 28)),
                "t10k-labels-idx1-ubyte.gz": _idx_gz((10,))}
    if source == "cifar10":
        batch = pickle.dumps({b"data": np.zeros((10, 3072), np.uint8),
                              b"labels": list(range(10))})
        members = {f"data_batch_{i}": batch for i in range(1, 6)} | {"test_batch": batch}
        return {"cifar-10-python.tar.gz": _cifar_tar(members, "cifar-10-batches-py")}
    if source == "cifar100":
        part = pickle.dumps({b"data": np.zeros((100, 3072), np.uint8),
                             b"fine_labels": list(range(100))})
        return {"cifar-100-python.tar.gz": _cifar_tar({"train": part, "test": part},
                                                      "cifar-100-python")}
    return {n: b"+1 1:0.5\n-1 2:1\n" for n in ("a1a", "a1a.t", "a8a", "a8a.t", "w1a",
                                               "w1a.t", "w8a", "w8a.t")}


@pytest.mark.parametrize("source", ["mnist", "fashion_mnist", "cifar10", "cifar100",
                                    "libsvm"])
def test_every_paper_data_set_fetches_where_its_loader_looks(source, server, data_home,
                                                            monkeypatch, capsys):
    """The source's declared files (with their published checksums replaced by those of the
    local fakes) are downloaded, verified, extracted where needed, and found by the loader."""
    from drocli.data import fetch

    entry = registry.get("data", source)
    dl = entry.extra["downloads"]
    fakes = _fake_files(source)
    server.files.update(fakes)
    patched = tuple(fetch.Remote(r.name, md5=hashlib.md5(fakes[r.name]).hexdigest()
                                 if r.md5 else None, extract=r.extract) for r in dl.files)
    monkeypatch.setitem(entry.extra, "downloads",
                        fetch.Downloads(dl.base, patched, dl.homepage, dl.folder))
    assert call("data", "fetch", source, "--mirror", server.url, "-q") == 0
    found = entry.preflight(registry.resolve_params(entry, {"name": "w8a"}
                                                    if source == "libsvm" else {}))
    assert Path(found if not isinstance(found, tuple) else found[0]).exists()
    capsys.readouterr()
    assert call("data", "list") == 0
    out = capsys.readouterr().out.splitlines()
    line = next(ln for ln in out if ln.startswith(source))
    assert "present" in line and f" {dl.folder or source}/ " in line    # in the data folder
    head = out[:next(i for i, ln in enumerate(out) if ln.startswith("source "))]
    assert "".join(ln.strip() for ln in head).endswith(str(data_home))   # named once, above


def test_data_list_fits_the_terminal_under_a_long_data_folder(tmp_path, monkeypatch,
                                                              capsys):
    """`drocli data list` was over 200 characters wide under a long path: the data folder
    is named once (wrapped when longer than the width), the folders in it relative to it,
    others shortened in their middle; 100 columns when stdout is not a terminal."""
    home = tmp_path / ("x" * 150)
    monkeypatch.setenv("DROCLI_DATA", str(home))
    for columns in ("100", "60", "30"):
        monkeypatch.setenv("COLUMNS", columns)
        capsys.readouterr()
        assert call("data", "list") == 0
        out = capsys.readouterr().out.splitlines()
        assert out and all(len(ln) <= int(columns) for ln in out), out
        assert "".join(ln.strip() for ln in out[1:]).startswith(str(home))   # whole
        assert sum(ln.startswith("mnist") for ln in out) == 2      # mnist and mnist5k
    monkeypatch.delenv("COLUMNS")

    def no_terminal(*a):
        raise OSError("not a terminal")

    monkeypatch.setattr(os, "get_terminal_size", no_terminal)     # even under pytest -s
    capsys.readouterr()
    assert call("data", "list") == 0
    assert all(len(ln) <= 100 for ln in capsys.readouterr().out.splitlines())


def test_missing_files_print_the_fetch_command(data_home, tmp_path, capsys):
    spec = Path(__file__).resolve().parents[1] / "experiments" / "as_lsvrg_fig6.yaml"
    code = call("run", spec, "--profile", "smoke", "--out", tmp_path / "res", "-q",
                "--set", "data.name=libsvm", "--set", "data.params={name: w8a}")
    err = capsys.readouterr().err
    assert code == 2 and "drocli data fetch libsvm --file w8a" in err


def test_unknown_or_unfetchable_source(capsys):
    assert call("data", "fetch", "npz") == 2
    assert "no download address" in capsys.readouterr().err
    assert call("data", "fetch", "libsvm", "--file", "w9a") == 2
    assert "w8a" in capsys.readouterr().err


def test_failed_fetch_leaves_no_empty_folder(server, data_home, tmp_path, capsys):
    """`--to DIR` that the fetch made is removed again when nothing could be placed; a
    folder that existed before is left as it was."""
    from drocli.data import mnist

    for r in mnist.DOWNLOADS.files:
        server.files[r.name] = gzip.compress(b"not the MNIST file")
    target = tmp_path / "new" / "mnist"
    assert call("data", "fetch", "mnist", "--mirror", server.url, "--to", target, "-q") == 2
    assert not target.exists()
    kept = tmp_path / "kept"
    kept.mkdir()
    assert call("data", "fetch", "mnist", "--mirror", server.url, "--to", kept, "-q") == 2
    assert kept.is_dir()


def _raw_server(respond):
    """A TCP server on 127.0.0.1 answering each connection with respond(conn)."""
    import socket

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)

    def loop():
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            with conn:
                conn.recv(65536)
                try:
                    respond(conn)
                except OSError:
                    pass

    threading.Thread(target=loop, daemon=True).start()
    return srv, f"http://127.0.0.1:{srv.getsockname()[1]}/"


def test_resume_answered_from_byte_zero_is_not_appended(tmp_path):
    """A server that answers a Range request with 206 from byte 0 sends the whole file: the
    part is rewritten, not appended to (the file stays intact)."""
    from drocli.data.fetch import download

    body = bytes(range(256)) * 64
    head = (f"HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-{len(body) - 1}/"
            f"{len(body)}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n")
    srv, url = _raw_server(lambda c: c.sendall(head.encode() + body))
    try:
        target = tmp_path / "f.bin"
        (tmp_path / ".f.bin.part").write_bytes(body[:1000])      # an earlier, cut download
        part = download(url + "f.bin", target, quiet=True)
        assert part.read_bytes() == body
    finally:
        srv.close()


def test_server_that_is_not_http_and_endless_bodies_end(tmp_path, monkeypatch, capsys):
    """A status line that is not HTTP exits 2 with one line; a body without a length is cut
    at the cap instead of filling the disk."""
    from drocli.data import fetch

    srv, url = _raw_server(lambda c: c.sendall(b"SSH-2.0-OpenSSH_9.2\r\n"))
    try:
        with pytest.raises(DrocliError, match="download failed"):
            fetch.download(url + "x", tmp_path / "x", quiet=True)
    finally:
        srv.close()
    monkeypatch.setattr(fetch, "MAX_BYTES", 5 << 20)

    def endless(c):
        c.sendall(b"HTTP/1.0 200 OK\r\n\r\n")
        for _ in range(64):
            c.sendall(b"\0" * (1 << 20))

    srv, url = _raw_server(endless)
    try:
        with pytest.raises(DrocliError, match="exceeds"):
            fetch.download(url + "y", tmp_path / "y", quiet=True)
        assert not (tmp_path / ".y.part").exists()           # removed, not left half-full
    finally:
        srv.close()
