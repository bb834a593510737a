"""SHA-256 hex digests for the hook's start-up: :func:`sha256_hex`.

``hashlib`` loads OpenSSL's bindings when imported (a few milliseconds of every
``car-verify hook`` call, which runs once per tool call of a coding agent); the
interpreter's own SHA-256 module gives the same digest without them. The plain
version, :func:`sha256_hex_plain`, is ``hashlib``'s; ``tests/test_hook_startup.py``
holds the two equal.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["sha256_hex", "sha256_hex_plain"]


def sha256_hex_plain(data: bytes) -> str:
    """The SHA-256 digest of ``data`` in hex, by ``hashlib``."""
    import hashlib

    return hashlib.sha256(data).hexdigest()


def _builtin() -> Callable[[bytes], Any] | None:
    """The interpreter's own SHA-256 constructor (``_sha256`` up to Python 3.11,
    ``_sha2`` from 3.12), or None where it has neither."""
    try:
        from _sha2 import sha256  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        try:
            from _sha256 import sha256  # type: ignore[import-not-found,no-redef,unused-ignore]
        except ImportError:
            return None
    made: Callable[[bytes], Any] = sha256
    return made


_SHA256 = _builtin()


def sha256_hex(data: bytes) -> str:
    """:func:`sha256_hex_plain`, without importing ``hashlib`` where the interpreter
    has its own SHA-256 module."""
    if _SHA256 is None:
        return sha256_hex_plain(data)
    digest: str = _SHA256(data).hexdigest()
    return digest
