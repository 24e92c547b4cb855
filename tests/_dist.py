"""Helpers for tests that run real gloo process groups on CPU."""
import socket


def free_port() -> int:
    """A free TCP port on the loopback interface for MASTER_PORT."""
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]
