"""Tools for testing applications, deployments and providers that use jmslike (not
imported by jmslike itself).

``ordercheck`` checks processing logs against the ordering-group promise. The provider
contract suite is ``suite`` (the scenarios), ``plugin`` (their pytest fixtures, loaded
with ``-p jmslike.testing.plugin``), ``cases`` and ``helpers``; see docs/plugins.md,
"Testing your provider". Only ``plugin`` and ``suite`` import pytest (the ``testing``
extra).
"""
