from tests.autoscaler.moto_fixtures import _moto_server, moto_url  # noqa: F401 - fixtures
