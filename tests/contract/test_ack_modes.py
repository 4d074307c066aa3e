"""The shipped scenarios of jmslike.testing.suite.test_ack_modes, run over every provider case
of this repository (tests/contract/conftest.py parametrises them; known failures per case
are its KNOWN_BUGS)."""

from jmslike.testing.suite.test_ack_modes import *  # noqa: F403
