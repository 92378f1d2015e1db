# Import the Celery app so that @shared_task binds to it whenever Django starts.
from makilab.celery import app as celery_app

__all__ = ("celery_app",)
