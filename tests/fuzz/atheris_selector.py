"""A coverage-guided fuzz target (atheris, libFuzzer) for the selector parser.

Hypothesis (tests/unit/test_fuzz_text.py) draws from grammars written by hand; libFuzzer
mutates towards new branches of jmslike/selector.py by itself, which finds inputs no
grammar thought of. Same property: any text is a Selector or an InvalidSelectorError,
and a valid one renders to text that parses to the same rendering (unless it holds a
NULL guard, which guards again).

Run for as long as wanted: ``python tests/fuzz/atheris_selector.py -max_total_time=600``
(libFuzzer's options); tests/unit/test_fuzz_atheris.py runs it briefly in CI.
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports():
    from jmslike.errors import InvalidSelectorError
    from jmslike.selector import Selector


def test_one_input(data: bytes) -> None:
    text = atheris.FuzzedDataProvider(data).ConsumeUnicodeNoSurrogates(len(data))
    try:
        selector = Selector(text)
    except InvalidSelectorError:
        return
    rendered = selector.render()
    again = Selector(rendered).render()
    if "IS NULL AND" in rendered:
        # A NULL guard (Classic and Artemis take NULL = NULL as TRUE) guards again when
        # rendered again: no fixed point, but what it selects is the same, which the
        # property tests of tests/unit/test_selector.py check with values.
        return
    if again != rendered:
        raise AssertionError(f"render round trip of {text!r}: {rendered!r} -> {again!r}")


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
