"""A wall-clock deadline for a whole HTTP request, not only for each read.

httpx's timeouts bound one socket operation each: an endpoint that sends a byte every second never trips a 10 s
read timeout, and held one LLM call for 612 s. httpx has no total timeout, so the deadline is enforced one level
down, where every byte passes: the connection pool's network backend is wrapped so that each connect, read and
write waits at most until the deadline of the call under way (:func:`deadline`), then fails with httpcore's own
timeout error, which httpx and the OpenAI SDK report as a timeout like any other.

Every outbound HTTP client of forkpaths is made by :func:`bounded_http_client` (today: the one LLM client's), and
every request it sends runs inside ``with deadline(seconds):``.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import httpcore2
import httpx2

__all__ = ["bounded_http_client", "deadline"]

_DEADLINE: ContextVar[float | None] = ContextVar("forkpaths_http_deadline", default=None)


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Every byte the bounded clients send or receive in this block (this thread) comes within ``seconds``."""
    token = _DEADLINE.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def _left(timeout: float | None, error: type[Exception]) -> float | None:
    end = _DEADLINE.get()
    if end is None:
        return timeout
    left = end - time.monotonic()
    if left <= 0:
        raise error("the request's wall-clock deadline passed")
    return left if timeout is None else min(timeout, left)


class _BoundedStream(httpcore2.NetworkStream):
    def __init__(self, inner: httpcore2.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _left(timeout, httpcore2.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _left(timeout, httpcore2.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore2.NetworkStream:
        return _BoundedStream(self._inner.start_tls(ssl_context, server_hostname,
                                                    _left(timeout, httpcore2.ConnectTimeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _BoundedBackend(httpcore2.NetworkBackend):
    def __init__(self, inner: httpcore2.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> httpcore2.NetworkStream:
        return _BoundedStream(self._inner.connect_tcp(host, port, _left(timeout, httpcore2.ConnectTimeout),
                                                      local_address, socket_options))

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[Any] | None = None) -> httpcore2.NetworkStream:
        return _BoundedStream(self._inner.connect_unix_socket(path, _left(timeout, httpcore2.ConnectTimeout),
                                                              socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def bounded_http_client(client: httpx2.Client) -> httpx2.Client:
    """``client`` with every transport's pool (the direct one and each proxy's from the environment) passing its
    bytes through the deadline; raises ``RuntimeError`` if a transport is not the kind this knows how to bound
    (a changed httpx), rather than sending requests without a deadline."""
    transports = [client._transport, *client._mounts.values()]  # noqa: SLF001 - httpx has no public hook for this
    for transport in transports:
        if transport is None:  # a NO_PROXY pattern: requests go through client._transport
            continue
        pool = getattr(transport, "_pool", None)
        backend = getattr(pool, "_network_backend", None)
        if not isinstance(backend, httpcore2.NetworkBackend):
            raise RuntimeError(f"cannot put a deadline on the HTTP transport {type(transport).__name__}")
        if not isinstance(backend, _BoundedBackend):
            pool._network_backend = _BoundedBackend(backend)  # type: ignore[union-attr]  # noqa: SLF001
    return client
