"""Issue 43, "nothing hangs, nothing escapes": a download from a local server on 127.0.0.1
that trickles, stalls (before or after its headers), is steady but too slow for its deadline,
or sends more than its cap stops with one line naming the address and the fix, and leaves
no partial file; a normal server still works. The limits are patched to about a second (the
defaults are 30 s and more); the only time asserted is a generous no-hang bound."""

from __future__ import annotations

import threading
import time

import pytest

from drocli.data import fetch
from drocli.errors import DrocliError
from tests.conftest import call
from tests.test_fetch import _raw_server

NO_HANG_S = 20.0     # every stop here is expected within about 1-2 s


def _head(length: int | None = None) -> bytes:
    size = f"Content-Length: {length}\r\n" if length is not None else ""
    return f"HTTP/1.1 200 OK\r\n{size}Connection: close\r\n\r\n".encode()


def _trickle(c):
    """One byte every 2 s of a 100-byte file: never stalled, far too slow."""
    c.sendall(_head(100))
    for _ in range(100):
        c.sendall(b"x")
        time.sleep(2)


def _stall_body(c):
    c.sendall(_head(100) + b"x" * 10)
    c.recv(1)                           # then silence, until the client hangs up


def _stall_headers(c):
    c.recv(1)                           # never answers


def _slow_prefix(prefix: bytes):
    """`prefix`, then a byte every 0.2 s (for 40 s) that never completes it: no body byte
    arrives."""
    def respond(c):
        c.sendall(prefix)
        for _ in range(200):
            c.sendall(b"X")
            time.sleep(0.2)
    return respond


def _steady(c):
    """16 KiB every 0.05 s of an announced 32 MiB: neither stalled nor a trickle."""
    c.sendall(_head(32 << 20))
    for _ in range(2000):
        c.sendall(b"x" * (16 << 10))
        time.sleep(0.05)


@pytest.fixture
def limits(monkeypatch):
    """Limits of about a second; a test widens the one it must not reach."""
    for name, value in {"STALL_S": 1.0, "GRACE_S": 1.0, "POLL_S": 0.05,
                        "DEADLINE_BASE_S": 60.0}.items():
        monkeypatch.setattr(fetch, name, value)
    return monkeypatch


def _stopped(respond, folder, tls=False, url=None, **kwargs) -> str:
    """The one-line error of a download into `folder` from a server answering with `respond`
    (`tls`: an https address; or from `url`); checks that it came in time, removed the
    partial file and left no watchdog running."""
    srv, url = _raw_server(respond) if url is None else (None, url)
    url = url.replace("http:", "https:") if tls else url
    folder.mkdir(exist_ok=True)
    start = time.monotonic()
    try:
        with pytest.raises(DrocliError) as err:
            fetch.download(url + "f.bin", folder / "f.bin", quiet=True, **kwargs)
    finally:
        if srv is not None:
            srv.close()
    assert time.monotonic() - start < NO_HANG_S
    assert list(folder.iterdir()) == []
    assert not [t for t in threading.enumerate() if t.name == "drocli-fetch-watch"]
    text = str(err.value)
    assert url + "f.bin" in text and "--mirror" in text and "\n" not in text
    return text


def test_trickle_is_stopped_by_the_average_rate(limits, tmp_path):
    limits.setattr(fetch, "STALL_S", 10.0)      # a byte every 2 s is not a stall
    text = _stopped(_trickle, tmp_path)
    assert "bytes/s on average" in text and "partial file was removed" in text


@pytest.mark.parametrize("respond, tls", [(_stall_body, False), (_stall_headers, False),
                                          (_stall_headers, True)],
                         ids=["body", "headers", "tls-handshake"])
def test_stalled_server_is_stopped(respond, tls, limits, tmp_path):
    """Silent after its headers, before them, or (https) before answering the TLS hello."""
    assert "no data for 1 s" in _stopped(respond, tmp_path, tls=tls)


@pytest.mark.parametrize("prefix, tls", [(b"HTTP/1.1 200 OK\r\nX-Slow: ", False),
                                         (b"\x16\x03\x03\x40\x00", True)],
                         ids=["headers", "tls-record"])
def test_trickled_headers_or_tls_are_stopped(prefix, tls, limits, tmp_path):
    """A server trickling its header line (each byte resets the socket's timeout: only the
    watchdog stops it), or (https) a TLS record in the handshake."""
    assert "no data for 1 s" in _stopped(_slow_prefix(prefix), tmp_path, tls=tls)


def test_steady_but_slow_download_stops_at_its_deadline(limits, tmp_path):
    """The deadline follows the announced size: 1 s plus 32 MiB at 1 TB/s here."""
    limits.setattr(fetch, "STALL_S", 10.0)
    limits.setattr(fetch, "GRACE_S", 10.0)
    limits.setattr(fetch, "DEADLINE_BASE_S", 1.0)
    limits.setattr(fetch, "DEADLINE_RATE", 1e12)
    assert "deadline (1 s)" in _stopped(_steady, tmp_path)


def test_unknown_length_is_cut_at_a_multiple_of_the_expected_size(limits, tmp_path):
    text = _stopped(lambda c: c.sendall(_head() + b"x" * 10_000), tmp_path, size=1000)
    assert "exceeds 2 x its expected 1000 bytes" in text


def test_announced_length_past_the_cap_is_refused_before_reading(limits, tmp_path):
    limits.setattr(fetch, "MAX_BYTES", 1 << 20)
    text = _stopped(lambda c: (c.sendall(_head(1 << 40)), c.recv(1)), tmp_path)
    assert "announces 1099511627776 bytes" in text and "1 MiB" in text


def test_normal_servers_still_work(limits, tmp_path):
    """With and without a length, with and without an expected size, under the caps."""
    body = bytes(range(256)) * 40
    for head, size in ((_head(len(body)), None), (_head(), None), (_head(), len(body))):
        srv, url = _raw_server(lambda c, head=head: c.sendall(head + body))
        try:
            part = fetch.download(url + "g.bin", tmp_path / "g.bin", quiet=True, size=size)
        finally:
            srv.close()
        assert part.read_bytes() == body
        part.unlink()


def test_cli_stall_is_one_line_and_leaves_nothing(limits, tmp_path, monkeypatch, capsys):
    """`drocli data fetch` exits 2 with one line naming the address, --mirror and where to
    place the file by hand; the folder it made is removed again."""
    home = tmp_path / "data"
    monkeypatch.setenv("DROCLI_DATA", str(home))
    srv, url = _raw_server(_stall_body)
    try:
        code = call("data", "fetch", "libsvm", "--file", "a1a", "--mirror", url, "-q")
    finally:
        srv.close()
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert url + "a1a" in err and "--mirror" in err and "place it as" in err
    assert not home.exists() or not any(home.rglob("*"))


def _tls_context(folder, monkeypatch):
    """A server context with a self-signed certificate for 127.0.0.1, which the client's
    default context then trusts (SSL_CERT_FILE)."""
    import datetime
    import ipaddress
    import ssl

    x509 = pytest.importorskip("cryptography.x509")
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(x509.NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(True, False, False, False, False, True, False, False,
                                         False), critical=True)
            .add_extension(ski, critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski),
                           critical=False)
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .sign(key, hashes.SHA256()))
    folder.mkdir()
    (folder / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (folder / "key.pem").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    monkeypatch.setenv("SSL_CERT_FILE", str(folder / "cert.pem"))
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(folder / "cert.pem", folder / "key.pem")
    return ctx


@pytest.mark.parametrize("trickle", [False, True], ids=["normal", "trickled-headers"])
def test_https(trickle, limits, tmp_path):
    """Over TLS a normal download works, and trickled headers are stopped too (the watchdog
    shuts a duplicate of the socket: TLS detaches the one http.client made)."""
    import socket

    ctx = _tls_context(tmp_path / "tls", limits)
    body = b"tls body" * 100
    srv = socket.create_server(("127.0.0.1", 0))

    def serve():
        raw, _ = srv.accept()
        with ctx.wrap_socket(raw, server_side=True) as c:
            c.recv(65536)
            try:
                if trickle:
                    _slow_prefix(b"HTTP/1.1 200 OK\r\nX-Slow: ")(c)
                else:
                    c.sendall(_head(len(body)) + body)
            except OSError:
                pass

    threading.Thread(target=serve, daemon=True).start()
    url = f"https://127.0.0.1:{srv.getsockname()[1]}/"
    try:
        if trickle:
            assert "no data for 1 s" in _stopped(None, tmp_path / "dl", url=url)
        else:
            part = fetch.download(url + "f.bin", tmp_path / "f.bin", quiet=True)
            assert part.read_bytes() == body
    finally:
        srv.close()
