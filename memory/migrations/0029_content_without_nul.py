"""A message's and a summary's content refuse a NUL character, as the API does (QA: an import
took one, which pages then showed raw). Validation only: no change to the tables."""

import django.core.validators
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0028_summaries_fts"),
    ]

    operations = [
        migrations.AlterField(
            model_name="message",
            name="content",
            field=models.TextField(
                validators=[django.core.validators.ProhibitNullCharactersValidator()],
                verbose_name="contenu",
            ),
        ),
        migrations.AlterField(
            model_name="summary",
            name="content",
            field=models.TextField(
                validators=[django.core.validators.ProhibitNullCharactersValidator()],
                verbose_name="contenu",
            ),
        ),
    ]
