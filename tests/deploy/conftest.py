"""The deployment tests reuse the service tests' PostgreSQL and Redis fixtures."""

from tests.bot.conftest import postgres_url, redis_url

__all__ = ["postgres_url", "redis_url"]
