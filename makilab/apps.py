"""Django's admin app on the project's own site (makilab.admin_site.MakilabAdminSite).

Kept apart from the site: INSTALLED_APPS imports this module before the models are
ready, and the site module is only imported when admin.site is first used.
"""

from django.contrib.admin.apps import AdminConfig


class MakilabAdminConfig(AdminConfig):
    default_site = "makilab.admin_site.MakilabAdminSite"
