"""The bookstore case: competing consumers, with and without ordering groups.

Each customer places an order and then cancels it. Without ordering groups a quick
"cancel" can be processed before the slow "place" it cancels; with one group per
customer it cannot. The same thing as ``jmslike demo``, from Python.
"""

import sys

from jmslike.demo import format_table, run_bookstore, verdict

CUSTOMERS, CONSUMERS, SEED = 20, 4, 42

unordered = run_bookstore(None, CUSTOMERS, CONSUMERS, ordered=False, seed=SEED)
ordered = run_bookstore(None, CUSTOMERS, CONSUMERS, ordered=True, seed=SEED)

print(format_table([unordered, ordered]))
print(verdict(unordered, ordered))

# Without groups the result depends on thread timing, so only the ordered run is checked.
if ordered.overtakes or not ordered.complete:
    sys.exit("ordering groups did not keep a customer's messages in order")
