"""The objects the clients hand back for things that change while you hold them (a capture
job, an audit, a batch): the API's JSON as ``.data``, read by key (``job["publicUrl"]``) or by
attribute in either spelling (``job.public_url``, ``job.publicUrl``)."""

from __future__ import annotations

from typing import Any, Dict, Iterator, Mapping, Optional

from ._core import camel


class Record:
    """A resource's current state as the API last answered it."""

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, Any]) -> None:
        object.__setattr__(self, "_data", dict(data))

    @property
    def data(self) -> Dict[str, Any]:
        """The resource as the API answered it (a dict of the generated TypedDict's shape)."""
        return self._data

    def _update(self, data: Mapping[str, Any]) -> None:
        object.__setattr__(self, "_data", dict(data))

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def get(self, key: str, default: Any = None) -> Any:
        return self._data.get(key, default)

    def to_dict(self) -> Dict[str, Any]:
        return dict(self._data)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        data = object.__getattribute__(self, "_data")
        for key in (name, camel(name)):
            if key in data:
                return data[key]
        raise AttributeError(f"{type(self).__name__} has no field {name!r} (fields: {', '.join(data)})")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only; its data is .data")

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._data == self._data  # type: ignore[attr-defined]

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        shown = {k: self._data.get(k) for k in ("id", "status", "url", "error") if k in self._data}
        inner = ", ".join(f"{k}={v!r}" for k, v in shown.items())
        return f"{type(self).__name__}({inner})"

    # Fields most code reads, typed.
    @property
    def id(self) -> str:
        return self._data["id"]

    @property
    def status(self) -> Optional[str]:
        return self._data.get("status")


class JobFields(Record):
    """A screenshot job's fields (see ``models.Job``)."""

    __slots__ = ()

    @property
    def public_url(self) -> Optional[str]:
        return self._data.get("publicUrl")

    @property
    def error(self) -> Optional[str]:
        return self._data.get("error")

    @property
    def url(self) -> str:
        return self._data.get("url", "")

    @property
    def format(self) -> Optional[str]:
        return self._data.get("format")

    @property
    def width(self) -> Optional[int]:
        return self._data.get("width")

    @property
    def height(self) -> Optional[int]:
        return self._data.get("height")

    @property
    def done(self) -> bool:
        return self._data.get("status") == "done"

    @property
    def failed(self) -> bool:
        return self._data.get("status") == "failed"


class AuditFields(Record):
    """An audit's fields (see ``models.Audit``)."""

    __slots__ = ()

    @property
    def error(self) -> Optional[str]:
        return self._data.get("error")

    @property
    def report_url(self) -> Optional[str]:
        return self._data.get("reportUrl")

    @property
    def pdf_url(self) -> Optional[str]:
        return self._data.get("pdfUrl")

    @property
    def scores(self) -> Optional[Dict[str, Any]]:
        return self._data.get("scores")
