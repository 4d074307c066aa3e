"""Java's JMS names on jmslike's objects, without ``jmslike.compat``: the AttributeError
says what the name is here (``jmslike.errors.java_name_error``). Run in a fresh
interpreter, because importing ``jmslike.compat`` (other tests do) adds the names."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import sys
    import jmslike

    factory = jmslike.ConnectionFactory("embedded://")
    context = factory.create_context()
    container = jmslike.MessageListenerContainer(factory, "queue://java-names", print)
    connection = factory.create_connection()
    session = connection.create_session()
    requestor = jmslike.QueueRequestor(session, session.create_queue("java-names"))
    cases = [
        (factory, "createConnection", "jmslike's name is create_connection"),
        (factory, "createContext", "jmslike's name is create_context"),
        (context, "createProducer", "jmslike's name is create_producer"),
        (context, "setClientID", "jmslike's name is set_client_id"),
        (context, "getSessionMode", "jmslike's name is get_session_mode"),
        (container, "getConcurrency", "getConcurrency() is the attribute concurrency here"),
        (container, "get_concurrency", "get_concurrency() is the attribute concurrency here"),
        (container, "setConcurrency", "setConcurrency(value) is concurrency = value here"),
        (requestor, "fooBar", "a Java JMS name"),
    ]
    for obj, name, said in cases:
        try:
            getattr(obj, name)
        except AttributeError as exc:
            text = str(exc)
            assert said in text, (name, text)
            assert ("import jmslike.compat" in text) == (name != "get_concurrency"), text
            assert exc.name == name and exc.obj is obj
        else:
            sys.exit(f"{name} was found")
    # A plain typo keeps Python's own error (and its "did you mean").
    try:
        factory.create_conection
    except AttributeError as exc:
        assert str(exc) == "'ConnectionFactory' object has no attribute 'create_conection'"
    assert not hasattr(factory, "_nothing") and getattr(context, "nothing", 7) == 7
    context.close()
    connection.close()
    print("ok")
    """
)


def test_java_names_say_what_they_are_here() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], check=False, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
