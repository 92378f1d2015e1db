"""Django's SQLite backend with the process's writers queued in order (base.py)."""
