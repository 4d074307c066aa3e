"""An attribute of an asyncio object that is its synchronous twin's (``obj.sync``).

Settings are read and set on the synchronous object, where their checks run and where
the sends read them; facts (``closed``, ``destination``) are read there. One line a
name, in place of a property (and its setter) that only forwarded.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar, overload

__all__ = ["Synced"]

T = TypeVar("T")


class Synced(Generic[T]):
    """``priority: Synced[int] = Synced(settable=True)``: reads and sets
    ``self.sync.priority``. Not settable: assigning raises ``AttributeError``, as a
    property without a setter does."""

    __slots__ = ("name", "settable")

    def __init__(self, *, settable: bool = False) -> None:
        self.settable = settable
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> Synced[T]: ...

    @overload
    def __get__(self, obj: object, owner: type | None = None) -> T: ...

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        return getattr(obj.sync, self.name)

    def __set__(self, obj: Any, value: T) -> None:
        if not self.settable:
            raise AttributeError(
                f"property {self.name!r} of {type(obj).__name__!r} object has no setter"
            )
        setattr(obj.sync, self.name, value)
