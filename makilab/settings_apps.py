"""What Django runs for Makilab Memory: the installed apps, the middleware in its order
(each placed for a reason, said beside it), the URL conf and the WSGI entry point.

Nothing here reads the environment: makilab/settings.py (the one env-driven module)
imports these names with ``from makilab.settings_apps import *``.
"""

__all__ = ["INSTALLED_APPS", "MIDDLEWARE", "ROOT_URLCONF", "WSGI_APPLICATION"]

INSTALLED_APPS = [
    # Django's admin on our site: every ModelAdmin guarded (makilab/admin_site.py).
    "makilab.apps.MakilabAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    # Swagger UI and Redoc as static files: the API docs page needs no CDN.
    "drf_spectacular_sidecar",
    "django_htmx",
    # Login lockout after repeated wrong passwords (admin and /login/).
    "axes",
    "memory",
    "agent",
    "dashboard",
]

MIDDLEWARE = [
    # First, so it sees the answer last: a HEAD gets the GET's headers, no body (waitress
    # sends what it is given; makilab/head_requests.py).
    "makilab.head_requests.HeadWithoutBody",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # A French 400 for a form body or query string that is not text (makilab/request_encoding.py).
    "makilab.request_encoding.RequestEncodingCheck",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # A French page for Django's bodiless 405 (a GET on an action URL).
    "makilab.method_not_allowed.MethodNotAllowedPage",
    # A French 503 page, not a 500, when another process holds SQLite's lock.
    "makilab.database_busy.DatabaseBusyPage",
    # Last, as django-axes asks: turns a locked-out login into its 429 page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "makilab.urls"
WSGI_APPLICATION = "makilab.wsgi.application"
