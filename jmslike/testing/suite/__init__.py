"""jmslike's provider contract suite: scenarios every provider must pass, using only the
public API and the fixtures of :mod:`jmslike.testing.plugin`.

Run it against a provider with ``pytest -p jmslike.testing.plugin --pyargs
jmslike.testing.suite --jmslike-url=<scheme>://...`` (docs/plugins.md, "Testing your
provider"). A scenario that needs a capability the provider does not report skips, naming
it. jmslike's own ``tests/contract`` imports these modules and runs them over every
provider case of the repository.
"""
