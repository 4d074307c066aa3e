"""Did a run keep the ordering-group promise? A checker for processing logs.

Give it what consumers logged, one record per attempt to process a message (which
process, the message's text ``"<group>:<n>"``, whether it came flagged redelivered, when
the work started and ended, and whether its acknowledgement or commit succeeded), and the
texts that were sent. It answers in readable lines what broke the promise:

* a message that was never processed (lost);
* one processed twice where the later copy was not flagged redelivered;
* a group whose messages were first processed out of send order;
* two messages of one group in progress at the same time.

Only attempts whose acknowledgement succeeded count: work whose acknowledgement failed
was given back and is not an effect. A commit in doubt (``in_doubt``: sent, answer lost
with the connection, see TransactionInDoubtError) counts when the message never came
again: the commit took effect. An attempt may be logged twice, in doubt before its
acknowledgement and with its outcome after it (a process killed in between leaves the
first); the last record of an attempt stands. jmslike's own cross-process tests and the
partition benchmark use it; it is as useful on a real deployment's logs.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Findings", "check", "group_of", "outcomes", "problems"]


@dataclass(frozen=True)
class Findings:
    """What a processing log shows, each breach with the texts or groups it concerns."""

    processed: int
    """Distinct messages processed (their acknowledgement or commit went through)."""
    attempts: int
    """Attempts that counted, copies included."""
    lost: list[str]
    duplicates: list[tuple[str, int]]
    """(text, copies) for messages processed again with a later copy not flagged."""
    misordered: dict[str, list[str]]
    """Group -> its first processings, in the order they started, where not send order."""
    overlaps: list[str]
    """One line per group that had two messages in progress at once."""

    def figures(self) -> dict[str, int]:
        """The counts, for a report (docs/reliability.md)."""
        return {
            "processed": self.processed,
            "lost": len(self.lost),
            "unflagged_duplicates": len(self.duplicates),
            "misordered": len(self.misordered),
            "overlaps": len(self.overlaps),
        }


def problems(records: Iterable[Mapping[str, Any]], sent: Sequence[str]) -> list[str]:
    """What breaks the promise, as readable lines (empty: the run kept it).

    ``records`` need the keys ``pid``, ``text`` (``"<group>:<n>"``, ``n`` zero-padded so
    that texts of a group sort in send order), ``redelivered``, ``start``, ``end`` and
    ``ok`` (and may have ``in_doubt``); records without ``ok`` (errors, notes) are
    ignored.
    """
    found = check(records, sent)
    lines: list[str] = []
    if found.lost:
        lines.append(f"lost {len(found.lost)}: {found.lost[:10]}")
    for text, copies in found.duplicates:
        lines.append(f"{text} processed {copies} times, a later copy not redelivered")
    for name, order in found.misordered.items():
        lines.append(f"group {name} out of order: {order}")
    return lines + found.overlaps


def check(records: Iterable[Mapping[str, Any]], sent: Sequence[str]) -> Findings:
    """The same checks as :func:`problems`, kept as data (for counting them)."""
    records = outcomes(records)
    succeeded = {r["text"] for r in records if r.get("ok")}
    done = sorted(
        (
            r
            for r in records
            if r.get("ok") or (r.get("in_doubt") and r.get("text") not in succeeded)
        ),
        key=lambda r: r["start"],
    )
    by_text: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for record in done:
        by_text[record["text"]].append(record)
    lost = [text for text in sent if text not in by_text]
    duplicates = [
        (text, len(copies))
        for text, copies in by_text.items()
        if any(not later["redelivered"] for later in copies[1:])
    ]
    firsts: dict[str, list[str]] = defaultdict(list)
    for record in sorted((c[0] for c in by_text.values()), key=lambda r: r["start"]):
        firsts[group_of(record["text"])].append(record["text"])
    misordered = {name: order for name, order in firsts.items() if order != sorted(order)}
    spans: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for record in done:
        spans[group_of(record["text"])].append(record)
    overlaps: list[str] = []
    for name, group_records in spans.items():
        for before, after in itertools.pairwise(group_records):
            if after["start"] < before["end"]:
                overlaps.append(
                    f"group {name}: {before['text']} (pid {before['pid']}) and "
                    f"{after['text']} (pid {after['pid']}) in progress at once"
                )
                break
    return Findings(len(by_text), len(done), lost, duplicates, misordered, overlaps)


def outcomes(records: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The last record of each attempt (process, message, start): an attempt may be
    logged in doubt before its acknowledgement and again with its outcome after it."""
    last: dict[tuple[Any, Any, Any], Mapping[str, Any]] = {}
    for record in records:
        if "text" in record:
            last[(record.get("pid"), record["text"], record.get("start"))] = record
    return list(last.values())


def group_of(text: str) -> str:
    """The group of a logged text ``"<group>:<n>"``."""
    return text.rsplit(":", 1)[0]
