"""Test-suite wide settings: the hypothesis profile every property test runs with."""

from hypothesis import settings

settings.register_profile("ci", max_examples=100, deadline=None)
settings.load_profile("ci")
