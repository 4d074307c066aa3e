"""ORD-9 and ORD-10 through the asyncio API, as a property (hypothesis): whatever the
send order of the groups, the number of sessions, the acknowledge mode and how long each
coroutine listener takes (or whether it yields at all), every message is handled once,
each group in send order, and never two messages of one group at once. On the embedded
broker, with and without its native groups (``nativeGroups=false``: the client gate)."""

from __future__ import annotations

import asyncio
import uuid
from collections import defaultdict

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jmslike
from jmslike import Session, aio

MODES = [Session.AUTO_ACKNOWLEDGE, Session.CLIENT_ACKNOWLEDGE, Session.SESSION_TRANSACTED]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sends=st.lists(st.sampled_from("abcde"), min_size=1, max_size=40),
    works=st.lists(st.sampled_from([0.0, 0.0005, 0.002, None]), min_size=1, max_size=8),
    sessions=st.integers(min_value=1, max_value=4),
    mode=st.sampled_from(MODES),
    native=st.booleans(),
)
def test_groups_stay_in_order_through_coroutine_listeners(
    sends: list[str], works: list[float | None], sessions: int, mode: int, native: bool
) -> None:
    url = f"embedded://aio-prop-{uuid.uuid4().hex[:8]}" + ("" if native else "?nativeGroups=false")
    expected: dict[str, list[int]] = defaultdict(list)
    for group in sends:
        expected[group].append(len(expected[group]))
    asyncio.run(asyncio.wait_for(_run(url, sends, works, sessions, mode, expected), 30.0))


async def _run(
    url: str,
    sends: list[str],
    works: list[float | None],
    sessions: int,
    mode: int,
    expected: dict[str, list[int]],
) -> None:
    seen: dict[str, list[int]] = defaultdict(list)
    busy: set[str] = set()
    overlaps: list[str] = []
    done = asyncio.Event()
    turn = iter(range(10**9))

    async with await aio.connect(url) as connection:
        listeners: list[aio.Session] = []
        for _ in range(sessions):
            session = await connection.create_session(mode == Session.SESSION_TRANSACTED, mode)
            listeners.append(session)

        def handler_for(session: aio.Session):
            async def on_message(message: jmslike.Message) -> None:
                group, _, n = message.text.partition(":")
                if group in busy:
                    overlaps.append(message.text)
                busy.add(group)
                work = works[next(turn) % len(works)]
                if work is not None:
                    await asyncio.sleep(work)  # None: no await at all
                seen[group].append(int(n))
                busy.discard(group)
                if mode == Session.SESSION_TRANSACTED:
                    await session.commit()
                elif mode == Session.CLIENT_ACKNOWLEDGE:
                    await session.acknowledge()
                if sum(map(len, seen.values())) >= len(sends):
                    done.set()

            return on_message

        for session in listeners:
            consumer = await session.create_consumer("queue://q")
            await consumer.set_message_listener(handler_for(session))
        await connection.start()
        sender = await connection.create_session()
        producers: dict[str, aio.MessageProducer] = {}
        counts: dict[str, int] = defaultdict(int)
        for group in sends:
            if group not in producers:
                producers[group] = await sender.create_producer("queue://q")
                producers[group].enable_ordering_group(group)
            await producers[group].send(sender.create_text_message(f"{group}:{counts[group]}"))
            counts[group] += 1
        await asyncio.wait_for(done.wait(), 20.0)
    assert not overlaps, overlaps
    assert dict(seen) == dict(expected)
