from django.apps import AppConfig


class MemoryConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "memory"
    verbose_name = "Mémoire"

    def ready(self) -> None:
        # Before this process opens its first SQLite connection (memory.db.sqlite_memstatus).
        from memory.db.sqlite_memstatus import sqlite_memstatus_off

        sqlite_memstatus_off()
