"""A pydantic base for files whose key order must survive a read → write (BLADE's JSON files)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import (
    BaseModel,
    ConfigDict,
    PrivateAttr,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    ValidatorFunctionWrapHandler,
    model_serializer,
    model_validator,
)

__all__ = ["SourceOrdered"]


class SourceOrdered(BaseModel):
    """Keeps unknown keys and writes keys in the order the source listed them (declared order otherwise).

    With ``drop_unset_none``, declared fields that are ``None`` and were never set are left out, so an
    optional key the file did not have is not written as ``null`` (one the file set to ``null`` is).
    """

    model_config = ConfigDict(extra="allow")
    drop_unset_none: ClassVar[bool] = False

    _key_order: tuple[str, ...] | None = PrivateAttr(default=None)

    @model_validator(mode="wrap")
    @classmethod
    def _remember_key_order(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        model = handler(data)
        if isinstance(data, Mapping) and isinstance(model, SourceOrdered):
            model._key_order = tuple(str(key) for key in data)
        return model

    @model_serializer(mode="wrap")
    def _serialize_in_source_order(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> dict[str, Any]:
        raw: dict[str, Any] = handler(self)
        if self.drop_unset_none:
            for name in type(self).model_fields:
                if name in raw and raw[name] is None and name not in self.model_fields_set:
                    del raw[name]
        ordered = {key: raw[key] for key in (self._key_order or ()) if key in raw}
        ordered.update((key, value) for key, value in raw.items() if key not in ordered)
        return ordered
