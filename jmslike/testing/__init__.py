"""Tools for testing applications and deployments that use jmslike (not imported by
jmslike itself)."""
