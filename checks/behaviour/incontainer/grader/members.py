"""The local classes' members: the change's methods as local descriptors, one request per call.

``h.method(x)`` is one request (``call_attr``: the attribute is read and
called in the subject, in that order, as in one process) instead of two;
``super().method(x)`` from a test's subclass calls that class's own
function (``call_on``); a class method bound to a test's subclass is
called there (``call_classmethod``). Used as a value (passed on,
compared), a bound method is read from the subject like any attribute.
See classes.py for the classes these live on.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Any

from . import handles
from .handles import Requester


def request_of(cls: type, op: str, **fields: Any) -> Any:
    bridge: Requester = type.__getattribute__(cls, "_pgc_bridge")
    return bridge.request(op, **fields)


def class_id(cls: type) -> int:
    return int(type.__getattribute__(cls, "_pgc_id"))


class _Member:
    """A function of a class of the subject's, by name, and the local class that holds it."""

    __slots__ = ("name", "owner")

    def __init__(self, name: str) -> None:
        self.name = name
        self.owner: type | None = None

    def __set_name__(self, owner: type, name: str) -> None:
        self.owner = owner


_OWN_DICT = type.__dict__["__dict__"]


def own_dict(cls: type) -> Mapping[str, Any]:
    """The namespace ``cls`` holds here: for a library's class, never the subject's (RemoteClass.__dict__)."""
    found: Mapping[str, Any] = _OWN_DICT.__get__(cls)
    return found


class RemoteMethod(_Member):
    """A plain function of a class of the subject's: called through an instance, one request."""

    __slots__ = ()

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        cls = self.owner
        assert cls is not None  # noqa: S101 - set when the class was made
        if instance is None:
            return request_of(cls, "getattr", obj=class_id(cls), name=self.name)
        # Found first in the instance's own class order: an ordinary call (the attribute is read in the
        # subject, an instance attribute of that name included); found later: super(), this class's own.
        first = next((k for k in type(instance).__mro__ if self.name in own_dict(k)), None)
        return BoundRemote(instance, self, explicit=first is not cls)


class RemoteClassMethod(_Member):
    """A class method of a class of the subject's: bound to the class it is read through, as in one process.

    ``super().parse(text)`` in a test's subclass's own class method calls the base's function with
    the subclass as ``cls``, so it makes an instance of the subclass.
    """

    __slots__ = ()

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        cls = self.owner
        assert cls is not None  # noqa: S101 - set when the class was made
        bind = owner if owner is not None else type(instance)
        bridge: Requester = type.__getattribute__(cls, "_pgc_bridge")
        name = self.name

        def call(*args: Any, **kwargs: Any) -> Any:
            encoded = bridge.arguments(args, kwargs)
            return bridge.request("call_classmethod", cls=class_id(cls), name=name, bind=bridge.encode(bind),
                                  **encoded)  # fmt: skip

        call.__name__ = name
        return call


class BoundRemote:
    """``handle.method`` before it is called: a call is one request; any other use reads the real one."""

    __slots__ = ("_pg_explicit", "_pg_instance", "_pg_method")

    def __init__(self, instance: object, method: RemoteMethod, *, explicit: bool) -> None:
        object.__setattr__(self, "_pg_instance", instance)
        object.__setattr__(self, "_pg_method", method)
        object.__setattr__(self, "_pg_explicit", explicit)

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:
        method: RemoteMethod = object.__getattribute__(self, "_pg_method")
        instance = object.__getattribute__(self, "_pg_instance")
        cls = method.owner
        assert cls is not None  # noqa: S101 - set when the class was made
        bridge: Requester = type.__getattribute__(cls, "_pgc_bridge")
        encoded = bridge.arguments(args, kwargs)
        target = handles.number(instance)
        if object.__getattribute__(self, "_pg_explicit"):
            return bridge.request("call_on", cls=class_id(cls), name=method.name, obj=target, **encoded)
        return bridge.request("call_attr", obj=target, name=method.name, **encoded)

    def materialize(self) -> Any:
        """The subject's own bound method (or, for super(), the class's function bound to the instance)."""
        method: RemoteMethod = object.__getattribute__(self, "_pg_method")
        instance = object.__getattribute__(self, "_pg_instance")
        cls = method.owner
        assert cls is not None  # noqa: S101 - set when the class was made
        if object.__getattribute__(self, "_pg_explicit"):
            function = request_of(cls, "getattr", obj=class_id(cls), name=method.name)
            return types.MethodType(function, instance)
        return request_of(cls, "getattr", obj=handles.number(instance), name=method.name)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.materialize(), name)

    def __repr__(self) -> str:
        return repr(self.materialize())

    def __eq__(self, other: object) -> bool:
        if type(other) is BoundRemote:
            other = other.materialize()
        return bool(self.materialize() == other)

    def __hash__(self) -> int:
        return hash(self.materialize())

    @property
    def __signature__(self) -> Any:
        import inspect

        return inspect.signature(self.materialize())
