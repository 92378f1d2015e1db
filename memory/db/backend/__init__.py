"""Django's SQLite backend with this process's writers queued for the write lock (base.py)."""
