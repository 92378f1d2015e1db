"""Every field a client writes, on every input serializer of the API (each refuses unknown
fields: UnknownFieldsRefused), children of lists and dicts included: the strict-field
guards walk them."""

from __future__ import annotations

import inspect
from collections.abc import Iterator

from rest_framework import serializers


def input_fields() -> Iterator[tuple[str, serializers.Field]]:
    """("Serializer.field", field) for each written field; ``field[]`` for a child."""
    import agent.api.serializers
    import memory.api.channels
    import memory.api.context
    import memory.api.forgetting
    import memory.api.maintenance
    import memory.api.messages
    import memory.api.serializers
    from memory.api.serializers import UnknownFieldsRefused

    for module in (
        agent.api.serializers,
        memory.api.channels,
        memory.api.context,
        memory.api.forgetting,
        memory.api.maintenance,
        memory.api.messages,
        memory.api.serializers,
    ):
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if not issubclass(cls, UnknownFieldsRefused) or not issubclass(
                cls, serializers.Serializer
            ):
                continue
            for field_name, field in cls().fields.items():
                if field.read_only:
                    continue
                yield f"{name}.{field_name}", field
                child = getattr(field, "child", None)
                if child is not None:
                    yield f"{name}.{field_name}[]", child


def input_serializer_count() -> int:
    return len({name.split(".")[0] for name, _ in input_fields()})
