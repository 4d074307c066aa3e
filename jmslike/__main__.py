"""``python -m jmslike``: the same as the ``jmslike`` console script."""

from jmslike.cli import main

raise SystemExit(main())
