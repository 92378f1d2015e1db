"""Serializer fields of the API (memory and agent) whose every message is French.

DRF's French catalogue lacks the FloatField "overflow" message, so an integer
too large for a float (a valid JSON number of 400 digits) came back in English.
Every float of the API's serializers is a ``FrenchFloatField``: declared ones
directly, the ones a ModelSerializer builds from a model ``FloatField`` through
``ApiModelSerializer``'s field mapping. It also refuses a boolean: DRF's FloatField
read JSON ``true`` as 1.0 (its IntegerField already refuses one).
"""

from __future__ import annotations

from django.db import models
from rest_framework import serializers

FLOAT_OVERFLOW_MESSAGE = "Ce nombre est trop grand."


class FrenchFloatField(serializers.FloatField):
    """DRF's FloatField with a French "overflow" message (its other ones are translated)."""

    default_error_messages = {"overflow": FLOAT_OVERFLOW_MESSAGE}

    def to_internal_value(self, data):
        if isinstance(data, bool):
            self.fail("invalid")
        return super().to_internal_value(data)


class ApiModelSerializer(serializers.ModelSerializer):
    """A ModelSerializer whose fields built from a model FloatField are FrenchFloatField."""

    serializer_field_mapping = {
        **serializers.ModelSerializer.serializer_field_mapping,
        models.FloatField: FrenchFloatField,
    }
