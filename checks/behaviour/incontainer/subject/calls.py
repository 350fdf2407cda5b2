"""A differential check's calls in the subject: the change's function applied to arguments sent by value.

The grader draws the inputs and keeps the reference; the subject is given a
module, a function name and the arguments (encoded by ``codec``), never why
they were chosen, what they should give, or the seed they came from. It
answers with an observation, as a declarative case does: the value encoded
by walking exact built-in types, or the exception's real type and first
line. The grader compares; nothing the subject says is taken as a verdict.

Calls run in this process, one at a time, under the request's deadline
(``Agent._arm``): a differential check makes thousands of them, and a fork
each would cost more than most calls. State the change keeps between calls
is its own; the grader never reads it.
"""

from __future__ import annotations

import importlib
from typing import Any

from ..channel import codec
from . import tree
from .cases import CallTimeout

# Results of a timed call may be as large as the inputs an efficiency check gives (10^6 items and more);
# the wire's own cap (16 MiB a message) still holds.
MAX_RESULT_NODES = 4_000_000


def apply(request: dict[str, Any], repo: str) -> dict[str, Any]:
    """Import the module, call the function with the decoded arguments and describe what happened."""
    module_name, name = str(request.get("module")), str(request.get("function"))
    try:
        module = importlib.import_module(module_name)
        if tree.provides(repo, module_name):
            tree.check(module, module_name, repo)
        function = getattr(module, name)
    except CallTimeout:
        return {"status": "timeout"}
    except BaseException as exc:  # the code under test may raise anything at import, SystemExit too
        missing = exc.name if isinstance(exc, ModuleNotFoundError) else None
        return {"status": "import_error", "exception": codec.describe(exc), "missing_module": missing}
    # The arguments are plain values of known types: nothing is resolved, evaluated or unpickled.
    args = codec.decode(request.get("args", []))
    kwargs = codec.decode(request.get("kwargs", {}))
    try:
        value = function(*args, **kwargs)
    except CallTimeout:
        return {"status": "timeout"}
    except BaseException as exc:
        return {"status": "raised", "exception": codec.describe(exc)}
    try:
        return {"status": "returned", "value": _encode(value)}
    except CallTimeout:
        return {"status": "timeout"}
    except codec.Unserializable as exc:
        return {"status": "unserializable", "detail": str(exc)}
    except BaseException as exc:  # e.g. a hostile tzinfo raising while encoded
        return {
            "status": "unserializable",
            "detail": f"encoding the result raised {codec.type_name(type(exc))}",
        }


def _encode(value: object) -> Any:
    encoder = codec.Encoder()
    encoder.max_nodes = MAX_RESULT_NODES
    return encoder(value)
