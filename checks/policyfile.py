"""Reading `.github/patchgate.yml`: YAML to a Policy, every error a PolicyError naming the field and line.

The file is the base branch's (trusted) but still text: an alias loop, aliases of aliases, nesting
hundreds deep or a merge key carrying a bare ``yes`` is a PolicyError, never a crash.
"""

from __future__ import annotations

from typing import Any, get_args

import yaml
from pydantic import ValidationError

from checks.policy import _YAML11_BOOLEANS, POLICY_PATH, Policy


class PolicyError(Exception):
    """The policy file is invalid; the message names the field and line."""


def load_policy(text: str | None, source: str = POLICY_PATH) -> Policy:
    """Parse policy YAML; None (no file) gives the defaults. Errors name ``source``, the field and line."""
    if text is None or not text.strip():
        return Policy()
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise PolicyError(f"{source}: invalid YAML{where}: {getattr(exc, 'problem', exc)}") from exc
    except RecursionError as exc:  # nesting hundreds deep: no policy needs it, and no crash may follow
        raise PolicyError(f"{source}: nested too deeply to be a policy") from exc
    if data is None:
        return Policy()
    if not isinstance(data, dict):
        raise PolicyError(f"{source}: line 1: the policy must be a mapping")
    # YAML 1.1 (PyYAML) reads a bare on/off/yes/no as a boolean; YAML 1.2 - editors, the
    # published JSON Schema - as text. Read them as text, as the schema does: a field of
    # words (report.comment: off) gets its word; a yes/no field is told to say true or false.
    ambiguous = _yaml11_booleans(node, source)
    for _line, word, path in ambiguous:
        data = _set_at(data, path, word)
    flags = [(line, word, path) for line, word, path in ambiguous if _is_flag(path)]
    if flags:
        where = "; ".join(f"line {line}: {'.'.join(map(str, path))}: {word!r}" for line, word, path in flags)
        why = "write true or false (YAML 1.1 reads it as a boolean, YAML 1.2 and the schema as text)"
        raise PolicyError(f"{source}: {where}: {why}")
    try:
        return Policy.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            loc = tuple(err["loc"])
            field = ".".join(str(p) for p in loc)
            line = _line_of(node, loc)
            at = f"line {line}: " if line else ""
            problems.append(f"{at}{field}: {err['msg']}")
        raise PolicyError(f"{source}: " + "; ".join(problems)) from exc


# More YAML nodes than any policy has: aliases of aliases must not expand into millions of paths.
MAX_NODES = 10_000
_MERGE = "tag:yaml.org,2002:merge"


def _yaml11_booleans(root: Any, source: str = POLICY_PATH) -> list[tuple[int, str, tuple[str | int, ...]]]:
    """Return (line, word, path) of every plain scalar YAML 1.1 reads as a boolean but YAML 1.2 does not.

    Raises PolicyError for a merge key (``<<``: its values would reach fields by a path this
    walk cannot name, past the true/false rule) and for a document that expands past MAX_NODES.
    """
    found = []
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(root, ())]
    seen = 0
    while stack:
        node, path = stack.pop()
        seen += 1
        if seen > MAX_NODES:
            raise PolicyError(f"{source}: more than {MAX_NODES} values (aliases of aliases?): not a policy")
        if isinstance(node, yaml.ScalarNode):
            plain_bool = node.tag == "tag:yaml.org,2002:bool" and node.style is None
            if plain_bool and node.value.lower() in _YAML11_BOOLEANS:
                found.append((node.start_mark.line + 1, node.value, path))
        elif isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if k.tag == _MERGE:
                    raise PolicyError(
                        f"{source}: line {k.start_mark.line + 1}: merge keys (<<) are not supported"
                    )
                # A key that reads as a boolean is no field name either way: validation names it.
                stack.append((v, (*path, str(k.value))))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((v, (*path, i)) for i, v in enumerate(node.value))
    return sorted(found)


def _set_at(data: Any, path: tuple[str | int, ...], value: str) -> Any:
    """Put ``value`` at ``path`` of the loaded policy (mappings and lists, as loaded)."""
    if not path:
        return value
    target: Any = data
    try:
        for key in path[:-1]:
            target = target[key]
        last = path[-1]
        in_list = isinstance(target, list) and isinstance(last, int)
        if in_list or (isinstance(target, dict) and last in target):
            target[last] = value
    except (KeyError, IndexError, TypeError):  # under a key YAML 1.1 read as a boolean: validation names it
        pass
    return data


def _is_flag(path: tuple[str | int, ...], model: Any = None) -> bool:
    """Tell whether the policy field at ``path`` takes true or false (a yes/no field).

    Whatever the field's type says: ``bool``, ``bool | None``, or the items of a list of them.
    """
    annotation: Any = Policy if model is None else model
    for key in path:
        if isinstance(key, int):  # an item of a list (or tuple) field
            args = get_args(annotation)
            annotation = args[0] if args else None
            continue
        fields = getattr(annotation, "model_fields", None)
        if fields is None or key not in fields:
            return False
        annotation = fields[key].annotation
    return annotation is bool or bool in get_args(annotation)


def _line_of(node: Any, loc: tuple[Any, ...]) -> int | None:
    """Find the 1-based line of the YAML node at ``loc`` (or its nearest parent)."""
    line = None
    for key in loc:
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if k.value == str(key):
                    line = k.start_mark.line + 1
                    node = v
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
            line = node.start_mark.line + 1
        else:
            return line
    return line
