"""Makilab Memory settings: one module, driven by environment variables.

Every variable is documented in README.md and .env.example. Without any of
them the service runs on its embedded defaults: SQLite, Qdrant embedded in a
folder, the bundled local embedder, an in-process broker and a local notes
folder, all under MAKILAB_DATA_DIR. A `.env` file in the project directory (or
the file MAKILAB_ENV_FILE names) is read first; the real environment wins.
The installed apps, the middleware and the URL conf read no variable: they are in
makilab/settings_apps.py, imported below.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from makilab.env import (
    env_bool,
    env_broker_url,
    env_choice,
    env_file_load,
    env_float,
    env_hours,
    env_int,
    env_language_code,
    env_list,
    env_proxy,
    env_rate,
    env_secret,
    env_secret_key,
    env_str,
    env_time_zone,
    env_url,
)

BASE_DIR = Path(__file__).resolve().parent.parent
# Before anything reads the environment.
ENV_FILE = env_file_load(BASE_DIR / ".env")

# --- Data -------------------------------------------------------------------
DATA_DIR = Path(env_str("MAKILAB_DATA_DIR") or BASE_DIR / "var").resolve()
DATA_DIR.mkdir(parents=True, exist_ok=True)


SECRET_KEY = env_secret_key(DATA_DIR)
DEBUG = env_bool("DJANGO_DEBUG", False)
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

# --- HTTPS: off by default (`serve` answers plain http on 127.0.0.1) -----------
# MAKILAB_HTTPS=true when the site is reached over https only (a TLS proxy in
# front): redirect http to https, secure-only cookies, a year of HSTS. Each one
# has its own switch; `check --deploy` is clean with MAKILAB_HTTPS=true.
MAKILAB_HTTPS = env_bool("MAKILAB_HTTPS", False)
SECURE_SSL_REDIRECT = MAKILAB_HTTPS
SESSION_COOKIE_SECURE = MAKILAB_HTTPS
CSRF_COOKIE_SECURE = MAKILAB_HTTPS
SECURE_HSTS_SECONDS = env_int("MAKILAB_HSTS_SECONDS", 31_536_000 if MAKILAB_HTTPS else 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("MAKILAB_HSTS_INCLUDE_SUBDOMAINS", MAKILAB_HTTPS)
# Preloading commits the whole registrable domain to https in every browser and
# is a manual submission: off unless asked, and check --deploy is told so.
SECURE_HSTS_PRELOAD = env_bool("MAKILAB_HSTS_PRELOAD", False)
SILENCED_SYSTEM_CHECKS = [] if SECURE_HSTS_PRELOAD else ["security.W021"]
# Behind a reverse proxy that terminates TLS: trust its X-Forwarded-Proto, so a
# request it received over https is seen as https (no redirect loop). `serve`
# keeps that header only from MAKILAB_TRUSTED_PROXY (an address, or "*").
MAKILAB_BEHIND_PROXY = env_bool("MAKILAB_BEHIND_PROXY", False)
# Read only behind a proxy: a value left over from another set-up stops nothing otherwise.
MAKILAB_TRUSTED_PROXY = (
    env_proxy("MAKILAB_TRUSTED_PROXY", "127.0.0.1") if MAKILAB_BEHIND_PROXY else "127.0.0.1"
)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if MAKILAB_BEHIND_PROXY else None

# --- Applications, middleware, URL conf: makilab/settings_apps.py -------------
from makilab.settings_apps import *  # noqa: E402, F403

# --- Templates --------------------------------------------------------------
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database: SQLite tuned for a web process and workers writing at once ---
# WAL lets readers run beside one writer; busy_timeout makes a writer wait for
# the lock instead of failing; IMMEDIATE transactions take the write lock at
# BEGIN, so two writers never deadlock upgrading a read lock ("database is
# locked" despite the timeout); synchronous=FULL keeps T1 durable on power loss;
# secure_delete writes zeros over what a deletion frees, so a purge or an erasure
# leaves no byte of the deleted text in the file (memory.stores.sqlite_scrub).
# The engine is Django's, with this process's writers queued for that lock
# (memory.db.backend: SQLite's busy handler sleeps instead of waking them).
SQLITE_BUSY_TIMEOUT_MS = env_int("MAKILAB_SQLITE_BUSY_TIMEOUT_MS", 20_000, minimum=0)
# A thread's connection is kept across requests for this long (0: one per request).
# Opening one runs the PRAGMAs below and registers Django's SQL functions: about
# a millisecond of CPU, on every request otherwise. Checked before each reuse.
SQLITE_CONN_MAX_AGE_S = env_int("MAKILAB_SQLITE_CONN_MAX_AGE_S", 600, minimum=0)
DATABASES = {
    "default": {
        "ENGINE": "memory.db.backend",
        "NAME": Path(env_str("MAKILAB_SQLITE_PATH") or DATA_DIR / "makilab.sqlite3"),
        "CONN_MAX_AGE": SQLITE_CONN_MAX_AGE_S,
        "CONN_HEALTH_CHECKS": True,
        "OPTIONS": {
            "transaction_mode": "IMMEDIATE",
            "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000,
            "init_command": (
                "PRAGMA journal_mode=WAL;"
                "PRAGMA synchronous=FULL;"
                f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS};"
                "PRAGMA foreign_keys=ON;"
                "PRAGMA secure_delete=ON;"
            ),
        },
        "TEST": {"NAME": DATA_DIR / "test-makilab.sqlite3"},
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Auth -------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# django-axes first: it refuses a locked-out account before the password is checked.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
# Login lockout: after MAKILAB_LOGIN_FAILURE_LIMIT wrong passwords within the
# cool-off, the account is refused (even with the right password) until
# MAKILAB_LOGIN_COOLOFF_MINUTES pass without a new failure. Counted per
# username (the service has one owner account and a guesser can change
# addresses) and also per address (one address trying many usernames).
# The owner can unlock early: `manage.py axes_reset_username <name>` for a name,
# `axes_reset_ip <address>` for an address, `axes_reset` for everything (the 429 page says so).
AXES_FAILURE_LIMIT = env_int("MAKILAB_LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("MAKILAB_LOGIN_COOLOFF_MINUTES", 15, minimum=1))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "makilab.throttling.login_locked_out"
AXES_COOLOFF_MESSAGE = "Trop de tentatives de connexion : compte bloqué, réessayez plus tard."
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/memory/"
LOGOUT_REDIRECT_URL = "login"

# --- Internationalisation ---------------------------------------------------
LANGUAGE_CODE = env_language_code("MAKILAB_LANGUAGE_CODE", "fr")
# One language, whatever the browser asks for: the owner's texts are written in
# French, and Django, the admin and DRF would otherwise answer an
# "Accept-Language: en" request half in English (hence no LocaleMiddleware).
LANGUAGES = [(LANGUAGE_CODE, LANGUAGE_CODE)]
TIME_ZONE = env_time_zone("MAKILAB_TIME_ZONE", "Europe/Paris")
USE_I18N = True
USE_TZ = True

# --- Static files -----------------------------------------------------------
STATIC_URL = "static/"
STATIC_ROOT = DATA_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
# Serve straight from the apps' static folders: no collectstatic step needed
# for the embedded default.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

# --- API --------------------------------------------------------------------
REST_FRAMEWORK = {
    # The token first: a caller without credentials is answered 401 with the header that
    # says how to authenticate (the session's class would make it a 403), as memory.api does.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        # DRF's, its CSRF refusal in French (makilab/api_authentication.py).
        "makilab.api_authentication.FrenchCsrfSessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # Size- and depth-capped, French errors (memory/api/parsers.py): every JSON endpoint.
    "DEFAULT_PARSER_CLASSES": [
        "memory.api.parsers.LimitedJSONParser",
        "memory.api.parsers.LimitedFormParser",
    ],
    # drf-spectacular's, plus what CharField refuses (NUL, blank): makilab/schema.py.
    "DEFAULT_SCHEMA_CLASS": "makilab.schema.AutoSchema",
    "EXCEPTION_HANDLER": "makilab.exception_handlers.api_exception_handler",
    # OPTIONS shows a view's French ``description`` or nothing, never its English docstring.
    "VIEW_DESCRIPTION_FUNCTION": "makilab.view_descriptions.view_description",
    # Rates are read on every request (makilab/throttling.py); None: no limit.
    # The counts live in the process's cache: per process with several workers.
    # The address a throttle counts: the peer's, or behind the reverse proxy the one it adds
    # to X-Forwarded-For (DRF's default took the client's own header, which a caller sets).
    "NUM_PROXIES": 1 if MAKILAB_BEHIND_PROXY else 0,
    "DEFAULT_THROTTLE_CLASSES": [
        "makilab.throttling.UserRateThrottle",
        "makilab.throttling.AnonRateThrottle",
        "makilab.throttling.ScopedRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "user": env_rate("MAKILAB_API_RATE", "600/minute"),
        "anon": env_rate("MAKILAB_API_ANON_RATE", "60/minute"),
        "chat": env_rate("MAKILAB_API_CHAT_RATE", "30/minute"),
    },
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Makilab Memory API",
    "DESCRIPTION": (
        "Les faits, la recherche, les réglages et le journal de l'auto-retrieval "
        "de la mémoire de Makilab."
    ),
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["memory.api.permissions.IsStaffOrToken"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # /api/v1/ only: the unversioned paths are aliases of the same views (makilab/urls.py).
    "PREPROCESSING_HOOKS": ["makilab.schema.v1_endpoints_only"],
    # Two "source" fields with different choices: name their enums apart.
    "ENUM_NAME_OVERRIDES": {
        "FactSourceEnum": "memory.models.FactSource",
        "MessageSourceEnum": "memory.models.MessageSource",
        "FactKindEnum": "memory.models.FactKind",
        "MemoryKindEnum": ["message", "exchange", "fact", "summary"],
        # Two "state" fields: a forget's and a digest's.
        "ForgettingStateEnum": "memory.models.ForgettingState",
        "DigestStateEnum": "memory.models.DigestState",
    },
}
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("MAKILAB_MAX_BODY_BYTES", 1_000_000, minimum=1024)

# --- Embeddings: Voyage AI when a key is set, else the bundled local model ---
VOYAGE_API_KEY = env_secret("VOYAGE_API_KEY")
# empty: the SDK's default endpoint
VOYAGE_BASE_URL = env_url("VOYAGE_BASE_URL", schemes={"http", "https"})
if VOYAGE_API_KEY:
    # A model whose dimension is unknown would only fail at the first embedding.
    from memory.stores.embedders_voyage import VOYAGE_MODEL_DIMENSIONS

    VOYAGE_MODEL = env_choice("VOYAGE_MODEL", "voyage-3", VOYAGE_MODEL_DIMENSIONS)
else:
    VOYAGE_MODEL = env_str("VOYAGE_MODEL", "voyage-3")
VOYAGE_TIMEOUT_S = env_float("VOYAGE_TIMEOUT_S", 20.0, positive=True)
VOYAGE_MAX_RETRIES = env_int("VOYAGE_MAX_RETRIES", 4, minimum=0)

# --- Vectors: a Qdrant server when QDRANT_URL is set, else embedded ---------
QDRANT_URL = env_url("QDRANT_URL", schemes={"http", "https"})
QDRANT_API_KEY = env_secret("QDRANT_API_KEY")
QDRANT_PATH = DATA_DIR / "qdrant"
QDRANT_TIMEOUT_S = env_float("QDRANT_TIMEOUT_S", 5.0, positive=True)

# --- LLM: Anthropic when a key is set ----------------------------------------
ANTHROPIC_API_KEY = env_secret("ANTHROPIC_API_KEY")
# empty: the SDK's default endpoint
ANTHROPIC_BASE_URL = env_url("ANTHROPIC_BASE_URL", schemes={"http", "https"})
ANTHROPIC_MODEL = env_str("ANTHROPIC_MODEL", "claude-sonnet-4-6")
# At most 128,000: a reply is a message the memory stores (messages.STORED_MAX_CHARS).
ANTHROPIC_MAX_TOKENS = env_int("ANTHROPIC_MAX_TOKENS", 1024, minimum=1, maximum=128_000)
ANTHROPIC_TIMEOUT_S = env_float("ANTHROPIC_TIMEOUT_S", 60.0, positive=True)
# Retries of the SDK (exponential backoff with jitter, Retry-After honoured) on
# 529 overloaded, 5xx, 429, timeouts and connection errors.
ANTHROPIC_MAX_RETRIES = env_int("ANTHROPIC_MAX_RETRIES", 3, minimum=0)

# --- The agent loop (agent app) ------------------------------------------------
# The base system prompt; empty: the built-in French one (agent/prompts.py).
# AGENT_SYSTEM_PROMPT_FILE may point at a file holding it.
AGENT_SYSTEM_PROMPT = env_secret("AGENT_SYSTEM_PROMPT")
# LLM calls per answer, tool turns included; the last one is made without tools.
AGENT_MAX_TURNS = env_int("AGENT_MAX_TURNS", 5, minimum=1)
# User messages on one channel within this many seconds are answered once, together.
AGENT_COALESCE_SECONDS = env_float("AGENT_COALESCE_SECONDS", 2.0, minimum=0)
# A channel with more uncompacted messages than this gets its oldest summarised...
AGENT_COMPACTION_THRESHOLD = env_int("AGENT_COMPACTION_THRESHOLD", 60, minimum=2)
# ...except the last N, which always stay verbatim.
AGENT_COMPACTION_KEEP_LAST = env_int("AGENT_COMPACTION_KEEP_LAST", 20, minimum=0)

# --- Obsidian notes: the Local REST API when a URL is set, else a folder ----
OBSIDIAN_API_URL = env_url("OBSIDIAN_API_URL", schemes={"http", "https"})
OBSIDIAN_API_KEY = env_secret("OBSIDIAN_API_KEY")
OBSIDIAN_CA_CERT = env_str("OBSIDIAN_CA_CERT")
OBSIDIAN_TLS_VERIFY = env_bool("OBSIDIAN_TLS_VERIFY", True)
OBSIDIAN_VAULT_PATH = Path(env_str("OBSIDIAN_VAULT_PATH") or DATA_DIR / "notes").resolve()
OBSIDIAN_TIMEOUT_S = env_float("OBSIDIAN_TIMEOUT_S", 2.0, positive=True)
OBSIDIAN_CACHE_SECONDS = env_int("OBSIDIAN_CACHE_SECONDS", 60, minimum=0)

# --- Auto-retrieval: each source's own time limit (milliseconds) -------------
RETRIEVAL_TIMEOUTS_MS = {
    "t1": env_int("MAKILAB_RETRIEVAL_T1_TIMEOUT_MS", 300, minimum=1),
    "semantic": env_int("MAKILAB_RETRIEVAL_SEMANTIC_TIMEOUT_MS", 1000, minimum=1),
    "keywords": env_int("MAKILAB_RETRIEVAL_KEYWORDS_TIMEOUT_MS", 300, minimum=1),
    "notes": env_int("MAKILAB_RETRIEVAL_NOTES_TIMEOUT_MS", 500, minimum=1),
    "live": env_int("MAKILAB_RETRIEVAL_LIVE_TIMEOUT_MS", 1000, minimum=1),
}

# --- Observed rooms: the digest's fixed hours (in TIME_ZONE) ------------------
DIGEST_HOURS = env_hours("MAKILAB_DIGEST_HOURS", [2, 6, 10, 14, 18, 22])

# --- Celery: an in-process broker unless CELERY_BROKER_URL is set -----------
CELERY_BROKER_URL = env_broker_url("CELERY_BROKER_URL", "memory://localhost/")
CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND") or None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_TIMEZONE = TIME_ZONE
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Run tasks in the calling thread (tests, one-off scripts); never in production.
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
# A broker that is down must not hold a web request: give up publishing fast
# (the row stays pending and the periodic sweep enqueues it later).
CELERY_BROKER_CONNECTION_TIMEOUT = 2
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 1,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.2,
}
# A task a killed worker had taken comes back to the queue after this long
# (Redis broker; acks are late, so a task is never lost, only delayed).
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env_int("MAKILAB_CELERY_VISIBILITY_TIMEOUT", 3600, minimum=1)
}
if CELERY_BROKER_URL.startswith("memory://"):
    # kombu's in-memory transport polls; makilab.broker's waits for a put, an ack or a
    # reject instead (a polling worker woke `serve` a hundred times a second).
    CELERY_BROKER_TRANSPORT = "makilab.broker:Transport"
CELERY_TASK_DEFAULT_QUEUE = env_str("MAKILAB_CELERY_QUEUE", "makilab")
# Celery's Django fixup closes a worker thread's connections after this many tasks (by
# default after each: every task opened SQLite again, 1.7-2.3 ms of CPU). A worker thread
# keeps its connection as a request's does (SQLITE_CONN_MAX_AGE_S), closed by Django's
# rule when unusable or obsolete (makilab.celery).
CELERY_DB_REUSE_MAX = 10_000
# Threads run by the in-process worker of `manage.py serve` (embedded default).
MAKILAB_WORKER_THREADS = env_int("MAKILAB_WORKER_THREADS", 2, minimum=1)

# --- Retention of the logs (a daily purge; /costs reads the daily totals, kept) --
# Rows of memory_retrievals (what each auto-retrieval injected) older than this.
MAKILAB_RETRIEVAL_LOG_RETENTION_DAYS = env_int(
    "MAKILAB_RETRIEVAL_LOG_RETENTION_DAYS", 90, minimum=1, maximum=36_500, allow_none=False
)
# Rows of llm_usage (one per LLM call) older than this; llm_usage_daily keeps the sums.
MAKILAB_LLM_USAGE_RETENTION_DAYS = env_int(
    "MAKILAB_LLM_USAGE_RETENTION_DAYS", 180, minimum=1, maximum=36_500, allow_none=False
)

# --- Web server (manage.py serve) --------------------------------------------
MAKILAB_HOST = env_str("MAKILAB_HOST", "127.0.0.1")
MAKILAB_PORT = env_int("MAKILAB_PORT", 8000, minimum=1)
MAKILAB_THREADS = env_int("MAKILAB_THREADS", 8, minimum=1)

# --- Logging ----------------------------------------------------------------
LOG_LEVEL = env_choice(
    "MAKILAB_LOG_LEVEL", "INFO", ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"), ignore_case=True
)
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    # The periodic sweeps of an idle service are not logged (makilab.logfilters).
    "filters": {
        "quiet_idle_sweeps": {"()": "makilab.logfilters.QuietIdleSweeps"},
        "client_error_as_warning": {"()": "makilab.logfilters.ClientErrorAsWarning"},
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        "celery.worker.strategy": {"filters": ["quiet_idle_sweeps"]},
        "celery.app.trace": {"filters": ["quiet_idle_sweeps"]},
        "django": {"handlers": ["console"], "level": "INFO", "propagate": False},
        # A bad Host header is the client's error: a warning line, no traceback.
        "django.security.DisallowedHost": {"filters": ["client_error_as_warning"]},
        # Lockouts are warnings; its start-up banner and per-attempt notes are not news.
        "axes": {"level": "WARNING"},
        # At DEBUG the LLM's and the HTTP clients' loggers write each request's body (an
        # exchange sent to extraction, a forget's topic and candidates sent to its judge):
        # never below INFO, so forgotten content stays out of the log at any level.
        **{
            name: {"level": "INFO" if LOG_LEVEL == "DEBUG" else LOG_LEVEL}
            for name in ("anthropic", "httpx", "httpcore", "httpcore2", "urllib3")
        },
    },
}
