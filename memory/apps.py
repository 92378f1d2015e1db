from django.apps import AppConfig


class MemoryConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "memory"
    verbose_name = "Mémoire"

    def ready(self) -> None:
        # Before this process opens its first SQLite connection (memory.db.sqlite_memstatus).
        from memory.db.sqlite_memstatus import sqlite_memstatus_off

        sqlite_memstatus_off()

        # A Celery worker in this process shares the cores between its indexing threads.
        from celery.signals import task_prerun, worker_init, worker_shutdown

        from memory.stores.local_engine import (
            worker_shares_cores,
            worker_stopped,
            worker_thread_yields,
        )

        worker_init.connect(worker_shares_cores, weak=False, dispatch_uid="memory-engine-share")
        worker_shutdown.connect(worker_stopped, weak=False, dispatch_uid="memory-engine-free")
        task_prerun.connect(worker_thread_yields, weak=False, dispatch_uid="memory-worker-yields")
