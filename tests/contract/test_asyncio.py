"""The shipped scenarios of jmslike.testing.suite.test_asyncio, run over every provider case
of this repository (tests/contract/conftest.py parametrises them)."""

from jmslike.testing.suite.test_asyncio import *  # noqa: F403
