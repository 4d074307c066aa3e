"""AMQP 1.0 provider for jmslike, on python-qpid-proton (issue 5: in progress).

So far this package holds the JMS <-> AMQP message mapping (``codec``) that Qpid JMS and
Artemis use; the provider itself (``amqp://``, ``amqps://``) is not registered yet.
"""
