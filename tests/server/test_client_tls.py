"""The clients make their TLS settings once per process (``client.tls_context``): httpx loads
the CA bundle again for every client by default (~30 ms each), which held a load generator's
event loop for a second while 32 agents' clients were made. The shared settings still verify
the service's certificate, and take ``SSL_CERT_FILE`` as set when the first client is made."""

from __future__ import annotations

import asyncio
import shutil
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from chronomem.client import AsyncClient, Client, tls_context
from chronomem.errors import ServiceError

from ..scripted_http import scripted_server


@pytest.fixture
def fresh_tls() -> Iterator[None]:
    tls_context.cache_clear()
    yield
    tls_context.cache_clear()  # (the next test's clients read the environment again)


@pytest.fixture
def https(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """An HTTPS server on 127.0.0.1 with a self-signed certificate that answers every read with
    no hits; its URL and the certificate's file."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    no_hits = (200, {"Content-Type": "application/json"}, "[]")
    with scripted_server(lambda _: no_hits, tls=context) as (url, _):
        yield url.removesuffix("/v1"), cert


def test_every_client_of_a_process_loads_the_ca_bundle_once(
    fresh_tls: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    loads: list[object] = []
    load = ssl.SSLContext.load_verify_locations

    def counted(self: ssl.SSLContext, *args: object, **kwargs: object) -> None:
        loads.append(args or kwargs)
        load(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", counted)
    clients = [Client("http://127.0.0.1:9", space="s") for _ in range(3)]
    async_clients = [AsyncClient("http://127.0.0.1:9", space="s") for _ in range(3)]
    assert len(loads) == 1  # (httpx alone: one per client)
    for c in clients:
        c.close()
    for a in async_clients:
        asyncio.run(a.aclose())


def test_a_client_given_a_transport_makes_no_tls_context(
    fresh_tls: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", "/nonexistent/bundle.pem")  # (unread: nothing fails)
    transport = httpx.MockTransport(lambda request: httpx.Response(200, json=[]))
    with Client("https://example.invalid", space="s", transport=transport) as client:
        assert client.peek("anything") == []
    assert tls_context.cache_info().currsize == 0


def test_the_shared_context_still_verifies_the_service(
    fresh_tls: None, https: tuple[str, Path]
) -> None:
    url, _ = https
    with Client(url, space="s") as client, pytest.raises(ServiceError, match=r"(?i)certif"):
        client.peek("anything")


def test_the_first_clients_environment_names_the_trusted_certificates(
    fresh_tls: None, https: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, cert = https
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))

    async def peek() -> object:
        async with AsyncClient(url, space="s") as client:
            return await client.peek("anything")

    assert asyncio.run(peek()) == []
    with Client(url, space="s") as client:
        assert client.peek("anything") == []
