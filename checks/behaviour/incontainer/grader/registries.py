"""The standard library's process-wide registries the change fills and a test reads (issue 19).

In one process, a library that registers a codec at import (``idna.codec``:
``codecs.register(search_function)``) makes ``"x".encode("idna2008")`` and
``codecs.lookup("idna2008")`` work in the test that imported it. Isolated,
the registration happens in the subject and the test asks the grader's
registry, which never heard of it: ``LookupError``.

So the grader registers one search function of its own, last: it is asked
only for a name the grader's standard library does not know (every codec the
harness and pytest use is found before it), and asks the subject's registry
for that name. What comes back is the change's codec - its functions and
classes as handles and local classes, so encoding runs the change's code in
the subject, as any call of it does. ``codecs`` keeps what it found, as it
would in one process.

Only search functions cross this way: ``codecs.register_error`` has no
search hook (its registry is a mapping by name), and a name the grader
already has must never be answered by the change.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable
from typing import Any

from ..channel.protocol import CODEC_FIELDS
from .errors import SubjectGone, SubjectTimeout
from .handles import Requester


def _bytes_for(decode: Callable[..., Any]) -> Callable[..., Any]:
    """``bytes.decode(name)`` hands a codec a memoryview of the bytes (CPython's own call); it crosses as
    the bytes it views, which a test's memoryview would not (a handle the change cannot read)."""

    def decoding(data: Any, errors: str = "strict") -> Any:
        return decode(bytes(data) if isinstance(data, memoryview) else data, errors)

    return decoding


def install_codecs(bridge: Requester) -> Callable[[str], codecs.CodecInfo | None]:
    """Ask the subject for a codec the grader's standard library does not know; return the search
    function registered (the registry is the process's for good: a test of this module unregisters it)."""

    def search(name: str) -> codecs.CodecInfo | None:
        try:
            found = bridge.request("codec", name=name)
        except (SubjectGone, SubjectTimeout):
            return None
        if not isinstance(found, dict) or not all(callable(found.get(key)) for key in ("encode", "decode")):
            return None
        fields: dict[str, Any] = {key: found.get(key) for key in CODEC_FIELDS}
        fields["decode"] = _bytes_for(fields["decode"])
        info = codecs.CodecInfo(name=str(found.get("name") or name), **fields)
        info._is_text_encoding = bool(found.get("text", True))  # codecs' own flag
        return info

    codecs.register(search)
    return search
