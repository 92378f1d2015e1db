"""Serializer fields of the API (memory and agent) whose every message is French.

DRF's French catalogue lacks the FloatField "overflow" message, so an integer
too large for a float (a valid JSON number of 400 digits) came back in English.
Every float of the API's serializers is a ``FrenchFloatField``: declared ones
directly, the ones a ModelSerializer builds from a model ``FloatField`` through
``ApiModelSerializer``'s field mapping. It also refuses a boolean: DRF's FloatField
read JSON ``true`` as 1.0 (its IntegerField already refuses one).

Every text field of the API is a ``StrictCharField``: DRF's CharField turns a JSON
number into its text (``{"topic": 5}`` forgot the topic "5"); this one refuses any value
that is not a string. Form values are strings, so form-encoded bodies still pass.

Every number the API reads is a ``FrenchFloatField`` or a ``StrictIntegerField``: in a
JSON body a JSON number (the text « 0.5 » is refused, as the number 5 is where text is
expected); a query string's or a form's digits are read.

Every yes-or-no the API reads is a ``StrictBooleanField``: JSON true or false in a JSON
body, or the words "true" / "false" / "1" / "0" of a query string or a form; DRF's
BooleanField also took "yes", "on", "y", "t" and the JSON numbers 1 and 0.

Every date the API reads is a ``DateTimeInRangeField``: within the years the memory
keeps (memory.services.search.DATE_YEARS) once moved to UTC, the time zone the memory
stores. Checked in the value's own offset, 1000-01-01T00:30+05:00 passed and was stored
in the year 999; at the calendar's ends the move itself overflows: refused in French too.
"""

from __future__ import annotations

from datetime import datetime

from django.db import models
from django.http import QueryDict
from rest_framework import serializers
from rest_framework.utils import html

from memory.services.search import DATE_RANGE_UTC_MESSAGE, NO_SUCH_DATE_MESSAGE, moment_in_range

FLOAT_OVERFLOW_MESSAGE = "Ce nombre est trop grand."
# A value of the wrong JSON shape, in JSON's words (DRF names Python's types: "list").
# (No braces: DRF formats these with the type's name.)
JSON_OBJECT_EXPECTED = "Un objet JSON est attendu (des champs entre accolades)."
JSON_LIST_EXPECTED = "Une liste JSON est attendue (des valeurs entre crochets)."
STRING_REQUIRED_MESSAGE = "Une chaîne de caractères est attendue."
NUMBER_EXPECTED = "Un nombre est attendu, sans guillemets."
BOOLEAN_EXPECTED = (
    "Un booléen est attendu : true ou false (ou 1 et 0 dans une adresse ou un formulaire)."
)


class JsonListField(serializers.ListField):
    """DRF's list field, saying a value that is no list in JSON's words."""

    default_error_messages = {"not_a_list": JSON_LIST_EXPECTED}


def words_given(field: serializers.Field) -> bool:
    """Whether ``field``'s value comes from a query string or a form (a QueryDict: every
    value is text there), not from a JSON body (which has its numbers and booleans)."""
    return isinstance(getattr(field.root, "initial_data", None), QueryDict)


class NumberNotText:
    """The rule of every number field: in a JSON body a number is a JSON number, and the
    text « 0.5 » is as wrong there as the number 5 where text is expected (DRF read the
    digits of a string). A query string or a form (a QueryDict) carries every value as
    text: there the digits are read."""

    default_error_messages = {"not_a_number": NUMBER_EXPECTED}

    def to_internal_value(self, data):
        if isinstance(data, str) and not words_given(self):
            self.fail("not_a_number")
        return super().to_internal_value(data)


class StrictIntegerField(NumberNotText, serializers.IntegerField):
    """DRF's IntegerField that refuses a JSON string."""


class FrenchFloatField(NumberNotText, serializers.FloatField):
    """DRF's FloatField with a French "overflow" message (its other ones are translated),
    refusing a JSON string and a boolean."""

    default_error_messages = {"overflow": FLOAT_OVERFLOW_MESSAGE}

    def to_internal_value(self, data):
        if isinstance(data, bool):
            self.fail("invalid")
        return super().to_internal_value(data)


class _StringOnly:
    """The rule of every text field: a value that is not a string is refused, before the
    field's own checks (its "invalid" message may be one of its own, e.g. a regex's)."""

    default_error_messages = {"not_a_string": STRING_REQUIRED_MESSAGE}

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("not_a_string")
        return super().to_internal_value(data)


class StrictCharField(_StringOnly, serializers.CharField):
    """DRF's CharField that refuses a number, a boolean or any JSON value not a string."""


class StrictRegexField(_StringOnly, serializers.RegexField):
    """DRF's RegexField that refuses any JSON value not a string."""


class StrictBooleanField(serializers.BooleanField):
    """A yes-or-no: JSON true or false in a JSON body, or the words a query string or a form
    carries for them ("true" / "false" in any case, "1" / "0"). DRF's BooleanField also read
    "yes", "on", "y", "t" and the JSON numbers 1 and 0."""

    default_error_messages = {"invalid": BOOLEAN_EXPECTED}
    WORDS = {"true": True, "false": False, "1": True, "0": False}

    def get_value(self, dictionary):
        """An empty value of a form or query string (``dry_run=``) is no answer: DRF read
        it as false (and a forget asked so was real)."""
        if html.is_html_input(dictionary) and dictionary.get(self.field_name) == "":
            return ""
        return super().get_value(dictionary)

    def to_internal_value(self, data):
        if isinstance(data, bool):
            return data
        # The words are a query string's or a form's: a JSON body has its own true and
        # false, and there the text « true » is as wrong as the number 1.
        said = data.strip().lower() if words_given(self) and isinstance(data, str) else None
        if said in self.WORDS:
            return self.WORDS[said]
        self.fail("invalid", input=data)


class ApiModelSerializer(serializers.ModelSerializer):
    """A ModelSerializer whose fields built from a model FloatField are FrenchFloatField,
    from a model integer StrictIntegerField, from a model CharField or TextField
    StrictCharField, from a BooleanField StrictBooleanField."""

    serializer_field_mapping = {
        **serializers.ModelSerializer.serializer_field_mapping,
        **dict.fromkeys(
            (
                models.IntegerField,
                models.BigIntegerField,
                models.SmallIntegerField,
                models.PositiveIntegerField,
                models.PositiveBigIntegerField,
                models.PositiveSmallIntegerField,
            ),
            StrictIntegerField,
        ),
        models.FloatField: FrenchFloatField,
        models.CharField: StrictCharField,
        models.TextField: StrictCharField,
        models.BooleanField: StrictBooleanField,
    }


class DateTimeInRangeField(serializers.DateTimeField):
    """A date the memory accepts (``moment_in_range``): a French 400 for one whose UTC
    moment is out of the memory's years or past the calendar (DRF's move to the time
    zone would overflow: a 500)."""

    default_error_messages = {"range": DATE_RANGE_UTC_MESSAGE, "no_such_date": NO_SUCH_DATE_MESSAGE}

    def to_internal_value(self, value):
        try:
            parsed = self._parsed(value)
        except ValueError:  # the right form, a day or an hour out of the calendar
            self.fail("no_such_date", value=value)
        if parsed is not None and not moment_in_range(parsed):
            self.fail("range")
        return super().to_internal_value(value)

    def _parsed(self, value):
        from django.utils.dateparse import parse_date, parse_datetime

        if not isinstance(value, str):
            return value if isinstance(value, datetime) else None
        return parse_datetime(value.strip()) or parse_date(value.strip())
