"""AMQP 1.0 provider for jmslike, on python-qpid-proton (issue 5: in progress).

So far this package holds the JMS <-> AMQP message mapping that Qpid JMS and Artemis use
(``codec``) and the connection, driven by one Proton container thread (``transport``).
The provider on top of them (``amqp://``, ``amqps://``) is not registered yet.
"""
