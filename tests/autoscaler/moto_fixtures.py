"""A moto server on loopback (reset before each test); import both fixtures where needed."""

from __future__ import annotations

import logging
import urllib.request

import pytest
from moto.server import ThreadedMotoServer


@pytest.fixture(scope="session")
def _moto_server():
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


def reset(url: str) -> str:
    urllib.request.urlopen(urllib.request.Request(f"{url}/moto-api/reset", method="POST")).read()
    return url


@pytest.fixture
def moto_url(_moto_server) -> str:
    """The server, emptied."""
    return reset(_moto_server)
