"""TLS peers are verified by default: a local HTTPS server with a self-signed certificate is
refused unless its certificate is given as the CA (FERRY_CA_BUNDLE)."""

import functools
import http.server
import os
import pathlib
import ssl
import subprocess
import threading

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
FERRY = ROOT / os.environ.get("FERRY_PYTHON_BUILD", "build/release") / "src" / "cli" / "ferry"


@pytest.fixture
def https_site(tmp_path):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True, timeout=60)
    site = tmp_path / "site"
    site.mkdir()
    (site / "hello.txt").write_text("hello over tls\n")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}", cert
    finally:
        server.shutdown()
        server.server_close()


def _stat(url, **env_overrides):
    env = {k: v for k, v in os.environ.items() if k != "FERRY_CA_BUNDLE"}
    env.update(env_overrides)
    return subprocess.run([str(FERRY), "stat", url], capture_output=True, text=True, env=env,
                          timeout=60)


def test_a_self_signed_server_is_refused_unless_its_ca_is_given(https_site):
    base, cert = https_site
    refused = _stat(f"{base}/hello.txt")
    assert refused.returncode != 0
    assert "127.0.0.1" in refused.stderr
    assert any(w in refused.stderr.lower() for w in ("certificate", "ssl", "tls")), refused.stderr
    trusted = _stat(f"{base}/hello.txt", FERRY_CA_BUNDLE=str(cert))
    assert trusted.returncode == 0, trusted.stderr
    assert "15" in trusted.stdout  # the size of "hello over tls\n"
