"""Which importable names the subject serves to the grader: the repository's modules, as proxies.

A test's import of one of the repository's top-level names becomes a
request to the subject; the module that comes back is a ``RemoteModule``
whose every use is a request too (``handles.py``).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Collection
from typing import Any

from . import handles
from .bridge import Bridge
from .errors import SubjectGone, SubjectTimeout
from .handles import RemoteModule


class Importer(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Resolve imports of the repository's top-level names to the subject's modules."""

    def __init__(self, bridge: Bridge, names: Collection[str]) -> None:
        self.bridge = bridge
        self.names = frozenset(names) - frozenset(sys.stdlib_module_names)

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> Any:
        if fullname.partition(".")[0] not in self.names:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: Any) -> types.ModuleType:
        try:
            module = self.bridge.request("import", name=spec.name)
        except (SubjectGone, SubjectTimeout) as exc:
            raise ImportError(f"{spec.name}: {exc}", name=spec.name) from None
        except Exception:
            raise
        except BaseException as exc:  # SystemExit at import: that module fails to import, nothing more
            why = f"importing {spec.name} raised {type(exc).__name__}: {exc}"
            raise ImportError(why, name=spec.name) from None
        if type(module) is not RemoteModule:
            raise ImportError(f"{spec.name}: the subject did not import a module", name=spec.name)
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        number = handles.number(module)
        if vars(types.ModuleType)["__dict__"].__get__(module).get("_pg_executed"):
            # importlib.reload: the subject runs the module again.
            self.bridge.request("reload", obj=number)
        object.__setattr__(module, "_pg_executed", True)
        # The import system called every module of ours a package; the subject's says what it is.
        package = self.bridge.request("getattr", obj=number, name="__package__")
        object.__setattr__(module, "__package__", package if isinstance(package, str) else None)
