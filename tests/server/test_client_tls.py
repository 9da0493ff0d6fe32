"""The clients make their TLS settings once per process (``client.tls_context``): httpx loads
the CA bundle again for every client by default (~30 ms each), which held a load generator's
event loop for a second while 32 agents' clients were made. The shared settings still verify
the service's certificate, and take ``SSL_CERT_FILE`` as set when the first client is made."""

from __future__ import annotations

import asyncio
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


def test_every_client_of_a_process_shares_one_tls_context(
    fresh_tls: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[ssl.SSLContext] = []
    create = httpx.create_ssl_context

    def counted() -> ssl.SSLContext:
        made.append(create())
        return made[-1]

    monkeypatch.setattr(httpx, "create_ssl_context", counted)
    clients = [Client("http://127.0.0.1:9", space="s") for _ in range(3)]
    async_clients = [AsyncClient("http://127.0.0.1:9", space="s") for _ in range(3)]
    assert len(made) == 1
    for c in clients:
        c.close()
    for a in async_clients:
        asyncio.run(a.aclose())


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
