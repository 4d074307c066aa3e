"""JMS 2.0 message selectors (JMS 2.0 section 3.8.1): parsed once, evaluated many times.

Why it is built the way it is:

* A selector is fixed when its consumer is created, but the broker tests it against every
  candidate message. So everything that does not depend on a message (tokenising, parsing,
  type checking, constant folding, turning LIKE patterns into regular expressions) happens once,
  in :func:`parse_selector`. Mistakes are reported there, to the application that wrote the
  selector, and never later to a broker in the middle of a delivery.
* The checked tree is compiled into nested closures, each one made for its node and its operand
  shapes (an identifier compared with a literal reads one property and compares it, nothing
  else). ``Selector.matches`` walks no tree and dispatches on no node types.
* Selectors use SQL three-valued logic: an absent property is NULL and a comparison with NULL is
  UNKNOWN, not FALSE, so ``NOT (a = 1)`` does not select messages that lack ``a``. The evaluator
  writes UNKNOWN (and NULL) as ``None``, which is exactly what a lookup returns for an absent
  name, so nothing is translated at run time. Only TRUE selects.
* A property of an unexpected type is the sender's business, not an error: comparing values of
  different kinds is FALSE (the spec's rule), arithmetic on a non-number is NULL, and LIKE or IN
  on a non-string is UNKNOWN. What is wrong in the text itself (``'a' + 1``, ``TRUE > 1``,
  ``x LIKE 5``) is refused at parse time instead.
* The parser is a precedence-climbing parser with hard limits on nesting and tree depth, so
  hostile text gets an :class:`InvalidSelectorError` and never a ``RecursionError``.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Final, cast

from jmslike.errors import InvalidSelectorError

__all__ = [
    "ARTEMIS_AMQP_FILTER",
    "ARTEMIS_FILTER",
    "HEADER_IDENTIFIERS",
    "JMS_SYNTAX",
    "Selector",
    "SelectorDialect",
    "message_lookup",
    "parse_selector",
    "render_selector",
]

Lookup = Callable[[str], object]
_Eval = Callable[[Lookup], object]  # a value; None is NULL (and UNKNOWN for predicates)

_MAX_DEPTH: Final = 200  # both parser nesting and tree depth
_LONG_MAX: Final = 2**63 - 1
_KEYWORDS: Final = frozenset(
    {"NULL", "TRUE", "FALSE", "NOT", "AND", "OR", "BETWEEN", "LIKE", "IN", "IS", "ESCAPE"}
)
_TOKEN_RE: Final = re.compile(
    r"""(?P<ws>\s+)
    |(?P<str>'(?:[^']|'')*')
    |(?P<num>0[xX][0-9a-fA-F]+[lL]?
        |(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?
        |[0-9]+[eE][+-]?[0-9]+[fFdD]?
        |[0-9]+[fFdDlL]?)
    |(?P<id>(?:[^\W\d]|\$)[\w$]*)
    |(?P<sym><>|<=|>=|[=<>+\-*/(),])""",
    re.VERBOSE,
)
_AFTER_NUMBER: Final = re.compile(r"[\w$.]")

# Static types of expressions; "any" is an identifier, whose type is only known at run time.
_NUM, _STR, _BOOL, _ANY = "numeric", "string", "boolean", "any"
_NUMERIC: Final = (_NUM, _ANY)
_BOOLEAN: Final = (_BOOL, _ANY)
_FLIP: Final = {"=": "=", "<>": "<>", "<": ">", ">": "<", "<=": ">=", ">=": "<="}
_TESTS: Final[dict[str, Callable[[Any, Any], bool]]] = {
    "=": operator.eq,
    "<>": operator.ne,
    "<": operator.lt,
    ">": operator.gt,
    "<=": operator.le,
    ">=": operator.ge,
}
_NUMBERS: Final = (int, float)
_FAST: Final[dict[str, tuple[type, ...]]] = {_NUM: _NUMBERS, _STR: (str,), _BOOL: (bool,)}


def _error(text: str, position: int, detail: str) -> InvalidSelectorError:
    shown = text if len(text) <= 200 else text[:197] + "..."
    return InvalidSelectorError(
        f"invalid selector {shown!r} at position {position}: {detail}", text, position
    )


# ------------------------------------------------------------------------------- tokens


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # "str", "num", "id", "sym" (keyword, upper-cased, or operator) or "eof"
    value: str | int | float
    pos: int
    end: int
    text: str


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    pos, size = 0, len(text)
    while pos < size:
        match = _TOKEN_RE.match(text, pos)
        if match is None:
            if text[pos] == "'":
                raise _error(text, pos, "unterminated string literal")
            raise _error(text, pos, f"unexpected character {text[pos]!r}")
        kind, raw, end = match.lastgroup, match.group(), match.end()
        if kind == "str":
            tokens.append(_Token("str", raw[1:-1].replace("''", "'"), pos, end, raw))
        elif kind == "num":
            if _AFTER_NUMBER.match(text, end):
                raise _error(text, pos, f"malformed number {text[pos : end + 1]!r}")
            tokens.append(_Token("num", _number(text, pos, raw), pos, end, raw))
        elif kind == "id" and not (raw.isascii() and raw.upper() in _KEYWORDS):
            tokens.append(_Token("id", raw, pos, end, raw))
        elif kind != "ws":
            tokens.append(_Token("sym", raw.upper(), pos, end, raw))
        pos = end
    tokens.append(_Token("eof", "", size, size, "end of selector"))
    return tokens


def _number(text: str, pos: int, raw: str) -> int | float:
    """Value of a Java numeric literal; a decimal integer may be 2**63 (for a leading '-')."""
    out_of_range = _error(text, pos, f"number {raw!r} out of range")
    is_hex = raw[:2] in ("0x", "0X")
    if is_hex or (raw[0] == "0" and raw.rstrip("lL").isdigit()):
        digits = (raw[2:] if is_hex else raw).rstrip("lL").lstrip("0") or "0"
        if not (is_hex or set(digits) <= set("01234567")):
            raise _error(text, pos, f"malformed octal number {raw!r}")
        value = int(digits, 16 if is_hex else 8) if len(digits) <= 22 else 2**64
        if value >= 2**64:
            raise out_of_range
        return value - 2**64 if value > _LONG_MAX else value  # two's complement, as Java
    if any(c in raw for c in ".eE") or raw[-1] in "fFdD":
        number = float(raw.rstrip("fFdD"))
        if not math.isfinite(number):
            raise out_of_range
        return number
    digits = raw.rstrip("lL")
    if len(digits) > 19 or int(digits) > _LONG_MAX + 1:
        raise out_of_range
    return int(digits)


# ------------------------------------------------------------------------------- syntax tree


@dataclass(frozen=True, slots=True, kw_only=True)
class _Node:
    start: int  # source span, for error messages
    end: int
    depth: int = 1


@dataclass(frozen=True, slots=True)
class _Lit(_Node):
    value: bool | int | float | str


@dataclass(frozen=True, slots=True)
class _Ident(_Node):
    name: str


@dataclass(frozen=True, slots=True)
class _Binary(_Node):
    op: str  # arithmetic (+ - * /) or comparison (= <> < > <= >=)
    left: _Node
    right: _Node
    unary: bool = False  # -x or +x, kept as 0 - x or 0 + x (NULL unless x is a number)


@dataclass(frozen=True, slots=True)
class _Between(_Node):
    operand: _Node
    low: _Node
    high: _Node


@dataclass(frozen=True, slots=True)
class _Test(_Node):
    """IN, LIKE or IS NULL: one identifier's value checked by a function made at parse time.

    ``form`` and ``operands`` keep what the check was made from, so the test can be written
    out again for a broker (:meth:`Selector.render`)."""

    name: str
    check: Callable[[object], bool | None]
    form: str  # "IS NULL", "IS NOT NULL", "IN" or "LIKE"
    operands: tuple[int | float | str, ...] = ()  # IN's list; LIKE's pattern (and escape)


@dataclass(frozen=True, slots=True)
class _Not(_Node):
    operand: _Node


@dataclass(frozen=True, slots=True)
class _Logic(_Node):
    op: str  # "AND" or "OR"
    operands: tuple[_Node, ...]


def _type(node: _Node) -> str:
    if isinstance(node, _Lit):
        if isinstance(node.value, bool):
            return _BOOL
        return _STR if isinstance(node.value, str) else _NUM
    if isinstance(node, _Ident):
        return _ANY
    return _NUM if isinstance(node, _Binary) and node.op not in _TESTS else _BOOL


# ------------------------------------------------------------------------------- parser

_BP_OR, _BP_AND, _BP_NOT, _BP_CMP, _BP_ADD, _BP_MUL = 1, 2, 3, 4, 5, 6
_INFIX: Final = (
    {"OR": _BP_OR, "AND": _BP_AND, "+": _BP_ADD, "-": _BP_ADD, "*": _BP_MUL, "/": _BP_MUL}
    | dict.fromkeys(_TESTS, _BP_CMP)
    | dict.fromkeys(("NOT", "BETWEEN", "IN", "LIKE", "IS"), _BP_CMP)
)


class _Parser:
    """Precedence climbing over the token list; builds a type-checked tree of _Node."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.index = 0
        self.nesting = 0
        self.names: set[str] = set()

    def parse(self) -> _Node:
        node = self._expr(0)
        if self._peek().kind != "eof":
            raise self._unexpected(self._peek())
        self._require(node, _BOOLEAN, "a selector must be a boolean expression")
        return node

    # -- helpers
    def _peek(self) -> _Token:
        return self.tokens[self.index]

    def _next(self) -> _Token:
        token = self.tokens[self.index]
        if token.kind != "eof":
            self.index += 1
        return token

    def _take(self, *symbols: str) -> _Token | None:
        """Consume and return the next token if it is one of ``symbols``."""
        token = self.tokens[self.index]
        if token.kind == "sym" and token.value in symbols:
            self.index += 1
            return token
        return None

    def _expect(self, symbol: str, after: str) -> _Token:
        token = self._take(symbol)
        if token is None:
            token = self._peek()
            raise self._error(token.pos, f"expected {symbol!r} {after}, not {token.text!r}")
        return token

    def _error(self, position: int, detail: str) -> InvalidSelectorError:
        return _error(self.text, position, detail)

    def _unexpected(self, token: _Token) -> InvalidSelectorError:
        if token.kind == "eof":
            return self._error(token.pos, "unexpected end of selector")
        return self._error(token.pos, f"unexpected {token.text!r}")

    def _require(self, node: _Node, allowed: tuple[str, ...], what: str) -> None:
        if _type(node) not in allowed:
            source = self.text[node.start : node.end]
            shown = repr(source if len(source) <= 40 else source[:37] + "...")
            raise self._error(node.start, f"{what}, not {_type(node)} {shown}")

    def _depth(self, position: int, *children: _Node) -> int:
        depth = 1 + max(child.depth for child in children)
        if depth > _MAX_DEPTH:
            raise self._error(position, f"expression nested deeper than {_MAX_DEPTH}")
        return depth

    def _identifier(self, node: _Node, token: _Token) -> str:
        if not isinstance(node, _Ident):
            raise self._error(token.pos, f"{token.text!r} needs an identifier on its left")
        return node.name

    def _int_literal(self, token: _Token, value: int) -> int:
        if value > _LONG_MAX:
            raise self._error(token.pos, f"number {token.text!r} out of range")
        return value

    # -- grammar
    def _expr(self, min_bp: int) -> _Node:
        self.nesting += 1
        if self.nesting > _MAX_DEPTH:
            raise self._error(self._peek().pos, f"selector nested deeper than {_MAX_DEPTH}")
        left = self._prefix(min_bp)
        compared = False
        while True:
            token = self._peek()
            bp = _INFIX.get(str(token.value), 0) if token.kind == "sym" else 0
            if bp <= min_bp:
                break
            if bp == _BP_CMP:
                if compared:  # comparisons do not chain: a = b = c
                    raise self._unexpected(token)
                compared = True
            self.index += 1
            left = self._infix(left, token, bp)
        self.nesting -= 1
        return left

    def _prefix(self, min_bp: int) -> _Node:
        token = self._next()
        start, end, value = token.pos, token.end, token.value
        if token.kind in ("num", "str"):
            if isinstance(value, int):
                value = self._int_literal(token, value)
            return _Lit(value, start=start, end=end)
        if token.kind == "id":
            self.names.add(str(value))
            return _Ident(str(value), start=start, end=end)
        if token.kind != "sym":
            raise self._unexpected(token)
        if value in ("TRUE", "FALSE"):
            return _Lit(value == "TRUE", start=start, end=end)
        if value == "NOT" and min_bp <= _BP_NOT:
            operand = self._expr(_BP_NOT)
            self._require(operand, _BOOLEAN, "NOT needs a boolean operand")
            return _Not(operand, start=start, end=operand.end, depth=self._depth(start, operand))
        if value == "(":
            inner = self._expr(0)
            close = self._expect(")", "to close the '(' at position " + str(start))
            return replace(inner, start=start, end=close.end)
        if value in ("+", "-"):
            number = self._peek()
            if value == "-" and number.kind == "num" and isinstance(number.value, int):
                self.index += 1  # -9223372036854775808 is in range, 9223372036854775808 not
                return _Lit(-number.value, start=start, end=number.end)
            operand = self._expr(_BP_MUL)
            self._require(operand, _NUMERIC, f"unary {value!r} needs a numeric operand")
            if isinstance(operand, _Lit) and not isinstance(operand.value, str | bool):
                # + 0: -0.0 equals 0.0 in JMS (Java's <), but Classic and Artemis compare
                # doubles as Double.compareTo does, -0.0 below 0.0; -0.0 + 0 is 0.0.
                folded = (-operand.value if value == "-" else operand.value) + 0
                # -(-9223372036854775808) is no long: folded, it rendered as a literal
                # that does not parse (tests/unit/test_fuzz_text.py); it stays 0 - x.
                if not isinstance(folded, int) or -_LONG_MAX - 1 <= folded <= _LONG_MAX:
                    return _Lit(folded, start=start, end=operand.end)
            zero = _Lit(0, start=start, end=start)  # -x is 0 - x: NULL unless x is a number
            depth = self._depth(start, operand)
            return _Binary(
                str(value), zero, operand, True, start=start, end=operand.end, depth=depth
            )
        raise self._unexpected(token)

    def _infix(self, left: _Node, token: _Token, bp: int) -> _Node:
        op, start = str(token.value), left.start
        if op in ("AND", "OR"):
            operands = [left]
            while True:  # a AND b AND c is one n-ary node, not a deep chain
                operands.append(self._expr(bp))
                if self._take(op) is None:
                    break
            for operand in operands:
                self._require(operand, _BOOLEAN, f"{op} needs boolean operands")
            depth = self._depth(token.pos, *operands)
            end = operands[-1].end
            return _Logic(op, tuple(operands), start=start, end=end, depth=depth)
        if op in _TESTS or op in ("+", "-", "*", "/"):
            right = self._expr(bp)
            if op not in ("=", "<>"):
                what = f"{op!r} compares numbers only" if op in _TESTS else f"{op!r} needs numbers"
                self._require(left, _NUMERIC, what)
                self._require(right, _NUMERIC, what)
            depth = self._depth(token.pos, left, right)
            return _Binary(op, left, right, start=start, end=right.end, depth=depth)
        if op == "IS":
            name = self._identifier(left, token)
            negated = self._take("NOT") is not None
            end = self._expect("NULL", "after IS").end
            check = operator.is_not if negated else operator.is_
            form = "IS NOT NULL" if negated else "IS NULL"
            return _Test(name, partial(check, None), form, start=start, end=end, depth=2)
        negated = op == "NOT"
        if negated:
            keyword = self._take("BETWEEN", "IN", "LIKE")
            if keyword is None:
                after = self._peek()
                raise self._error(
                    after.pos, f"expected BETWEEN, IN or LIKE after NOT, not {after.text!r}"
                )
            token, op = keyword, str(keyword.value)
        node: _Node
        if op == "BETWEEN":
            low = self._expr(_BP_CMP)
            self._expect("AND", "in BETWEEN")
            high = self._expr(_BP_CMP)
            for operand in (left, low, high):
                self._require(operand, _NUMERIC, "BETWEEN compares numbers only")
            depth = self._depth(token.pos, left, low, high)
            node = _Between(left, low, high, start=start, end=high.end, depth=depth)
        elif op == "IN":
            node = self._in_list(left, token)
        else:
            node = self._like(left, token)
        if negated:
            node = _Not(node, start=start, end=node.end, depth=self._depth(start, node))
        return node

    def _in_list(self, left: _Node, keyword: _Token) -> _Node:
        name = self._identifier(left, keyword)
        self._expect("(", "after IN")
        values: list[int | float | str] = []
        while True:
            token, sign = self._next(), None
            if token.kind == "sym" and token.value in ("+", "-"):
                sign, token = token.value, self._next()
            if token.kind == "str" and sign is None:
                values.append(str(token.value))
            elif token.kind == "num" and not isinstance(token.value, str):
                number = token.value
                if sign == "-":
                    values.append(-number)  # the tokenizer allows 2**63 for this
                else:
                    values.append(
                        self._int_literal(token, number) if isinstance(number, int) else number
                    )
            else:
                raise self._error(
                    token.pos, f"IN takes string or numeric literals, not {token.text!r}"
                )
            if self._take(",") is None:
                end = self._expect(")", "to close the IN list").end
                members = _member(values)
                return _Test(name, members, "IN", tuple(values), start=left.start, end=end)

    def _like(self, left: _Node, keyword: _Token) -> _Node:
        name = self._identifier(left, keyword)
        pattern = self._next()
        if pattern.kind != "str":
            raise self._error(pattern.pos, f"LIKE needs a string literal, not {pattern.text!r}")
        escape, end = None, pattern.end
        if self._take("ESCAPE") is not None:
            token = self._next()
            if token.kind != "str" or len(str(token.value)) != 1:
                raise self._error(
                    token.pos, f"ESCAPE needs a one-character string, not {token.text!r}"
                )
            escape, end = str(token.value), token.end
        matcher = _like_matcher(str(pattern.value), escape)
        if matcher is None:
            raise self._error(pattern.pos, f"LIKE pattern {pattern.text} ends in its escape")

        def like(value: object) -> bool | None:
            return matcher(value) if isinstance(value, str) else None

        operands = (str(pattern.value),) if escape is None else (str(pattern.value), escape)
        return _Test(name, like, "LIKE", operands, start=left.start, end=end)


def _member(values: list[int | float | str]) -> Callable[[object], bool | None]:
    """The IN check: a string or number in the list; UNKNOWN for NULL or any other kind."""
    strings = frozenset(v for v in values if isinstance(v, str))
    numbers = frozenset(v for v in values if not isinstance(v, str))
    any_strings, any_numbers = bool(strings), bool(numbers)

    def member(value: object) -> bool | None:
        if isinstance(value, str):
            return value in strings if any_strings else None
        if any_numbers and _is_number(value):
            return value in numbers
        return None

    return member


def _like_parts(pattern: str, escape: str | None) -> list[str] | None:
    """A LIKE pattern as "%", "_" and runs of literal text (as "=" + text); None if the
    pattern ends in its escape. Shared by the matcher and the renderer, so both read a
    pattern the same way."""
    parts: list[str] = []
    chars = iter(pattern)
    for char in chars:
        literal = char
        if char == escape:
            literal = next(chars, "")
            if not literal:
                return None
        elif char in ("%", "_"):
            if not (char == "%" and parts and parts[-1] == "%"):
                parts.append(char)
            continue
        if parts and parts[-1][0] == "=":
            parts[-1] += literal
        else:
            parts.append("=" + literal)
    return parts


def _like_matcher(pattern: str, escape: str | None) -> Callable[[str], bool] | None:
    """A whole-string matcher for a LIKE pattern; None if the pattern ends in the escape."""
    parts = _like_parts(pattern, escape)
    if parts is None:
        return None
    shape = "".join(p if p in ("%", "_") else "=" for p in parts)
    text = [p[1:] for p in parts if p not in ("%", "_")]
    if shape in ("", "="):
        return (text[0] if text else "").__eq__
    if shape == "%":
        return lambda _value: True
    if shape == "=%":
        return lambda value: value.startswith(text[0])
    if shape == "%=":
        return lambda value: value.endswith(text[0])
    if shape == "%=%":
        return lambda value: text[0] in value
    regex = "".join({"%": ".*", "_": "."}.get(p) or re.escape(p[1:]) for p in parts)
    fullmatch = re.compile(regex, re.DOTALL).fullmatch
    return lambda value: fullmatch(value) is not None


# ------------------------------------------------------------------------------- compiler


@dataclass(frozen=True, slots=True)
class _Const:
    """A compiled expression whose value does not depend on the message."""

    value: object


def _kind(value: object) -> str | None:
    if isinstance(value, str):
        return _STR
    if isinstance(value, bool):
        return _BOOL
    return _NUM if isinstance(value, int | float) else None


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _compare(op: str, left: object, right: object) -> bool | None:
    if left is None or right is None:
        return None
    kind = _kind(left)
    if kind is None or kind != _kind(right):
        return False  # JMS 3.8.1.2: comparing unlike types is false
    if kind == _NUM or op in ("=", "<>"):
        return bool(_TESTS[op](left, right))
    return False  # strings and booleans allow only = and <>


def _java_divide(left: Any, right: Any) -> object:
    if isinstance(left, int) and isinstance(right, int):  # long division truncates to zero
        quotient = abs(left) // abs(right)
        return quotient if (left < 0) == (right < 0) else -quotient
    return left / right


def _numeric(function: Callable[[Any, Any], object]) -> Callable[[object, object], object]:
    def apply(left: object, right: object) -> object:
        if (left.__class__ in _NUMBERS and right.__class__ in _NUMBERS) or (
            _is_number(left) and _is_number(right)
        ):
            try:
                return function(left, right)
            except (ZeroDivisionError, OverflowError):
                return None
        return None

    return apply


_ARITHMETIC: Final = {
    "+": _numeric(operator.add),
    "-": _numeric(operator.sub),
    "*": _numeric(operator.mul),
    "/": _numeric(_java_divide),
}


def _function(compiled: _Const | _Eval) -> _Eval:
    if isinstance(compiled, _Const):
        value = compiled.value
        return lambda _lookup: value
    return compiled


def _value(node: _Node) -> _Const | _Eval:
    if isinstance(node, _Lit):
        return _Const(node.value)
    if isinstance(node, _Ident):
        name = node.name
        return lambda lookup: lookup(name)
    if isinstance(node, _Binary) and node.op not in _TESTS:
        apply = _ARITHMETIC[node.op]
        left, right = _value(node.left), _value(node.right)
        if isinstance(left, _Const) and isinstance(right, _Const):
            return _Const(apply(left.value, right.value))
        if isinstance(right, _Const):
            get, constant = _function(left), right.value
            return lambda lookup: apply(get(lookup), constant)
        get_left, get_right = _function(left), _function(right)
        return lambda lookup: apply(get_left(lookup), get_right(lookup))
    return _predicate(node)


def _comparison(node: _Binary) -> _Const | _Eval:
    op, subject, left, right = node.op, node.left, _value(node.left), _value(node.right)
    if isinstance(left, _Const) and not isinstance(right, _Const):  # 10 < qty is qty > 10
        op, subject, left, right = _FLIP[op], node.right, right, left
    if isinstance(left, _Const) and isinstance(right, _Const):
        return _Const(_compare(op, left.value, right.value))
    constant = right.value if isinstance(right, _Const) else None
    kind = _kind(constant)
    if kind is None:
        get_left, get_right = _function(left), _function(right)
        return lambda lookup: _compare(op, get_left(lookup), get_right(lookup))
    # Against a literal, a value of the literal's own type is compared directly; anything
    # else (NULL included) takes the general path.
    test = _TESTS[op]
    fast = _FAST[kind] if kind == _NUM or op in ("=", "<>") else ()
    if isinstance(subject, _Ident):  # the most common case of all: a property and a literal
        name = subject.name

        def property_test(lookup: Lookup) -> object:
            value = lookup(name)
            if value.__class__ in fast:
                return test(value, constant)
            return _compare(op, value, constant)

        return property_test
    get = _function(left)

    def value_test(lookup: Lookup) -> object:
        value = get(lookup)
        if value.__class__ in fast:
            return test(value, constant)
        return _compare(op, value, constant)

    return value_test


def _and(left: object, right: object) -> bool | None:
    if left is False or right is False:
        return False
    return None if left is None or right is None else True


def _between(node: _Between) -> _Eval:
    get = _function(_value(node.operand))
    low, high = _value(node.low), _value(node.high)
    if isinstance(low, _Const) and isinstance(high, _Const):
        low_value, high_value = low.value, high.value
        if _is_number(low_value) and _is_number(high_value):

            def between_numbers(lookup: Lookup) -> object:
                value = get(lookup)
                if value.__class__ in _NUMBERS:
                    return low_value <= value <= high_value  # type: ignore[operator]
                return _and(_compare(">=", value, low_value), _compare("<=", value, high_value))

            return between_numbers
    get_low, get_high = _function(low), _function(high)

    def between(lookup: Lookup) -> object:
        value = get(lookup)
        return _and(_compare(">=", value, get_low(lookup)), _compare("<=", value, get_high(lookup)))

    return between


def _logic(node: _Logic) -> _Eval:
    functions = tuple(_function(_predicate(operand)) for operand in node.operands)
    decisive = node.op == "OR"  # the value that settles the result: TRUE for OR, FALSE for AND
    if len(functions) == 2:
        first, second = functions

        def pair(lookup: Lookup) -> object:
            left = first(lookup)
            if left is decisive:
                return decisive
            right = second(lookup)
            if right is decisive:
                return decisive
            return None if left is None or right is None else not decisive

        return pair

    def chain(lookup: Lookup) -> object:
        unknown = False
        for function in functions:
            result = function(lookup)
            if result is decisive:
                return decisive
            if result is None:
                unknown = True
        return None if unknown else not decisive

    return chain


def _predicate(node: _Node) -> _Const | _Eval:
    """Compile a boolean-typed node (or an identifier read as a boolean) to bool | None."""
    if isinstance(node, _Lit):
        return _Const(node.value)
    if isinstance(node, _Ident):
        name = node.name

        def flag(lookup: Lookup) -> object:
            value = lookup(name)
            return value if value is True or value is False else None

        return flag
    if isinstance(node, _Test):
        name, check = node.name, node.check
        return lambda lookup: check(lookup(name))
    if isinstance(node, _Binary):
        return _comparison(node)
    if isinstance(node, _Logic):
        return _logic(node)
    if isinstance(node, _Between):
        return _between(node)
    if not isinstance(node, _Not):  # pragma: no cover - the parser builds no other nodes
        raise TypeError(f"not a predicate: {node!r}")
    operand = _predicate(node.operand)
    if isinstance(operand, _Const):
        return _Const(None if operand.value is None else not operand.value)

    def negation(lookup: Lookup) -> object:
        result = operand(lookup)
        return None if result is None else not result

    return negation


# ------------------------------------------------------------------------------- renderer

_BP_UNARY, _BP_ATOM = 7, 8  # above every infix operator: see _BP_OR .. _BP_MUL


@dataclass(frozen=True, slots=True)
class SelectorDialect:
    """What a broker must be given in place of the selector the application wrote.

    Brokers read some JMS header fields under names of their own (Artemis: ``AMQPriority``
    for ``JMSPriority``), spell JMSDeliveryMode's values their own way, and some rewrite
    the text they are given. Only the parsed tree tells an identifier that is a header
    field, or a literal compared with one, from a property or string that merely looks
    the same, so :meth:`Selector.render` changes those and nothing else.
    """

    names: Mapping[str, str] = field(default_factory=dict)
    """Identifier (a JMS header field) -> the name the broker reads it under."""
    values: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """Identifier, as JMS names it -> each of its values -> the broker's spelling. The
    identifier has no other values: a LIKE on it becomes an IN of the values it matches."""
    guarded: frozenset[str] = frozenset()
    """Values (without quotes) the broker itself rewrites wherever they stand quoted
    between characters that cannot be part of an identifier (Artemis' SelectorTranslator
    turns every ``'PERSISTENT'`` into ``'DURABLE'``). Inside a literal quotes come doubled,
    and the translator does not retry the quote that broke a partial match, so such a
    match starts at a literal's opening quote: a literal that equals one, or starts with
    one and a quote, is written with a keyword touching its opening quote, which spares it
    and means the same. (One that starts with quotes and then one, ``'PERSISTENT``, is
    rewritten all the same: no text survives that translator as that literal.)"""
    carried: Mapping[str, str] = field(default_factory=dict)
    """Header field -> the property in which jmslike's own messages carry its value, the
    broker seeing the header's default (JMSPriority travels in ``jmslikePriority`` where
    the broker would let priority reorder a group, ORD-12). A test of the field becomes
    "the property's test where the property is set, else the header's", which also holds
    for messages other clients sent with the header itself."""
    ascii_names: bool = False
    """The broker's grammar takes names of ASCII letters, digits, ``_`` and ``$`` only
    (ActiveMQ Classic's and Artemis' do), where JMS takes any Java identifier: a name such
    as ``größe`` is refused by :meth:`Selector.render`, before anything is sent (Artemis
    over STOMP drops the connection on the ERROR it sends; Classic over AMQP refuses the
    link)."""
    string_properties: bool = False
    """The broker holds every property as a string (STOMP carries them as headers), and
    reads a string as a number or boolean only where the selector compares it with one.
    So a bare identifier is written ``name = TRUE`` (bare, it selected nothing on Classic
    and Artemis), and an integer compared with something as a decimal, ``1.0``, which
    both compare as numbers whatever the string spells ('3.5' against ``1`` was false
    there). For a property that is a boolean or absent, ``name = TRUE`` is the same test;
    one that is not a boolean counts as FALSE, as the brokers count it over AMQP."""


JMS_SYNTAX: Final = SelectorDialect()
"""The selector as JMS writes it (ActiveMQ Classic reads JMS names): parenthesised so that
brokers whose grammar binds NOT tighter than JMS does (Classic's, Artemis') read it as
JMS does."""

ARTEMIS_FILTER: Final = SelectorDialect(
    names={
        "JMSPriority": "AMQPriority",
        "JMSMessageID": "AMQUserID",
        "JMSTimestamp": "AMQTimestamp",
        "JMSExpiration": "AMQExpiration",
        "JMSDeliveryMode": "AMQDurable",
        "JMSXGroupID": "AMQGroupID",
    },
    values={"JMSDeliveryMode": {"PERSISTENT": "DURABLE", "NON_PERSISTENT": "NON_DURABLE"}},
    ascii_names=True,
)
"""Artemis' Core filter syntax, which Artemis applies untranslated to STOMP subscriptions
and to its management API's browse."""

ARTEMIS_AMQP_FILTER: Final = replace(
    ARTEMIS_FILTER, guarded=frozenset({"PERSISTENT", "NON_PERSISTENT"})
)
"""For Artemis over AMQP, which runs every selector through its SelectorTranslator: given
Core names already, the translator has nothing left to rename, and the literals it would
rewrite are guarded from it."""


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _literal_text(value: bool | int | float | str) -> str:
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, str):
        return _quote(value)
    return repr(value)  # a finite float's repr is a JMS approximate literal: 1e-05, 2.5


def _escaped(text: str, escape: str | None, special: tuple[str | None, ...]) -> str:
    """Literal ``text`` inside a LIKE pattern (without an escape it has no specials)."""
    if escape is None:
        return text
    return "".join(escape + char if char in special else char for char in text)


def _outside(taken: Iterable[str]) -> str:
    """A string none of ``taken``: stands for a value a header can never have."""
    taken = set(taken)
    candidate = ""
    while candidate in taken:
        candidate += "?"
    return candidate


_CHILDREN: Final = ("left", "right", "operand", "low", "high")
"""The attributes under which a node keeps single child nodes (a _Logic keeps a tuple)."""


def _nodes(node: _Node) -> Iterator[_Node]:
    """``node`` and every node under it."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        for child in _CHILDREN:
            if isinstance(value := getattr(current, child, None), _Node):
                stack.append(value)
        if isinstance(current, _Logic):
            stack.extend(current.operands)


def _identifiers(node: _Node) -> set[str]:
    """The identifiers a node reads (an IN, LIKE or IS NULL test's own name aside)."""
    return {current.name for current in _nodes(node) if isinstance(current, _Ident)}


def _is_value(node: _Node) -> bool:
    """An identifier or arithmetic on some: a value that is NULL when one of them is."""
    if isinstance(node, _Ident):
        return True
    return (
        isinstance(node, _Binary)
        and node.op not in _TESTS
        and (_is_value(node.left) or _is_value(node.right))
    )


def _renamed(node: _Node, old: str, new: str) -> _Node:
    """``node`` reading identifier ``new`` wherever it read ``old``."""
    if isinstance(node, _Ident):
        return replace(node, name=new) if node.name == old else node
    if isinstance(node, _Test):
        return replace(node, name=new) if node.name == old else node
    changes: dict[str, Any] = {
        child: _renamed(value, old, new)
        for child in _CHILDREN
        if isinstance(value := getattr(node, child, None), _Node)
    }
    if isinstance(node, _Logic):
        changes["operands"] = tuple(_renamed(o, old, new) for o in node.operands)
    return replace(node, **changes) if changes else node


class _Renderer:
    """Writes a checked tree out as selector text for one :class:`SelectorDialect`.

    Each node gives its text and how tightly it binds (the parser's binding powers); a
    child binding less tightly than its place needs is parenthesised. NOT's operand is
    always parenthesised unless it is a single name or literal, and operators are always
    spaced: Classic's and Artemis' grammars bind NOT tighter than comparisons, and read
    ``--`` as the start of a comment.
    """

    def __init__(self, dialect: SelectorDialect) -> None:
        self.names = dialect.names
        self.values = dialect.values
        self.guarded = dialect.guarded
        self.strings = dialect.string_properties
        self.carried = dialect.carried
        self.dialect = dialect

    def render(self, node: _Node) -> str:
        return self._condition(node)[0]

    def _condition(self, node: _Node) -> tuple[str, int]:
        """A node that stands as a truth value: the whole selector, or an operand of
        AND, OR or NOT (see ``string_properties`` for a bare identifier there)."""
        if self.strings and isinstance(node, _Ident):
            return f"{self.names.get(node.name, node.name)} = TRUE", _BP_CMP
        return self._node(node)

    def _compared(self, node: _Node, needed: int) -> str:
        """A comparison's or BETWEEN's operand (see ``string_properties`` for an integer).

        Over string properties, arithmetic on literals alone is written as its value: its
        integer result made Artemis read a property compared with it as a long, so '-1.5'
        was not below ``(0 - 0)``; as ``0.0`` it is."""
        if self.strings and isinstance(node, _Binary):
            folded = _value(node)  # a _Const exactly when no identifier is read
            if isinstance(folded, _Const) and _is_number(folded.value):
                number = cast(int | float, folded.value) + 0  # -0.0 + 0 is 0.0 (see _prefix)
                # Past a long, Java wraps where Python does not: left to the broker.
                in_range = isinstance(number, float) or -_LONG_MAX - 1 <= number <= _LONG_MAX
                if in_range and math.isfinite(number):
                    node = _Lit(number, start=node.start, end=node.end)
        if (
            self.strings
            and isinstance(node, _Lit)
            and type(node.value) is int
            and abs(node.value) < 2**53  # exact as a double
        ):
            return f"{node.value}.0" if node.value >= 0 else f"-{-node.value}.0"
        return self._wrap(node, needed)

    def _wrap(self, node: _Node, needed: int) -> str:
        text, binds = self._node(node)
        return text if binds >= needed else f"({text})"

    def _node(self, node: _Node) -> tuple[str, int]:
        if self.carried and isinstance(node, _Binary | _Between | _Test):
            carried = self._carried_test(node)
            if carried is not None:
                return carried, _BP_OR
        if isinstance(node, _Lit):
            text = _literal_text(node.value)
            return text, _BP_UNARY if text.startswith("-") else _BP_ATOM
        if isinstance(node, _Ident):
            return self.names.get(node.name, node.name), _BP_ATOM
        if isinstance(node, _Binary):
            if node.op in _TESTS:
                return self._comparison(node)
            if node.unary and not self.strings:
                # (Over STOMP a sign is written 0 - x: Artemis negated a property that came
                # as a string to NULL, where it computes 0 - '7' as -7.)
                operand, binds = self._node(node.right)
                if binds == _BP_UNARY:
                    # Another sign: spaced, never bracketed. Brackets made each nested
                    # sign two levels deep, so a chain of 101 signs, which parses,
                    # rendered past the parser's depth limit (the atheris target found
                    # it); and a space keeps '--' out of the text.
                    return f"{node.op} {operand}", _BP_UNARY
                return node.op + (operand if binds >= _BP_ATOM else f"({operand})"), _BP_UNARY
            bp = _INFIX[node.op]  # left-associative: an equal right operand needs brackets
            left, right = self._wrap(node.left, bp), self._wrap(node.right, bp + 1)
            return f"{left} {node.op} {right}", bp
        if isinstance(node, _Between):
            x, low, high = (self._compared(n, _BP_ADD) for n in (node.operand, node.low, node.high))
            return f"{x} BETWEEN {low} AND {high}", _BP_CMP
        if isinstance(node, _Test):
            return self._test(node)
        if isinstance(node, _Not):
            return "NOT " + self._wrap_condition(node.operand, _BP_ATOM), _BP_NOT
        if not isinstance(node, _Logic):  # pragma: no cover - the parser builds no other nodes
            raise TypeError(f"cannot render {node!r}")
        bp = _INFIX[node.op]
        operands = (self._wrap_condition(operand, bp) for operand in node.operands)
        return f" {node.op} ".join(operands), bp

    def _wrap_condition(self, node: _Node, needed: int) -> str:
        text, binds = self._condition(node)
        return text if binds >= needed else f"({text})"

    def _carried_test(self, node: _Node) -> str | None:
        """A test that reads a carried header (see ``SelectorDialect.carried``), written
        as the property's test where the property is set, else the header's; None if the
        node reads none or is not a test."""
        if isinstance(node, _Binary) and node.op not in _TESTS:
            return None
        named = _identifiers(node)
        if isinstance(node, _Test):
            named.add(node.name)
        moved = [header for header in self.carried if header in named]
        if not moved:
            return None
        header = moved[0]
        prop = self.carried[header]
        rest = {name: value for name, value in self.carried.items() if name != header}
        inner = _Renderer(replace(self.dialect, carried=rest))
        by_property = inner._node(_renamed(node, header, prop))[0]
        by_header = inner._node(node)[0]
        return f"({prop} IS NOT NULL AND ({by_property})) OR ({prop} IS NULL AND ({by_header}))"

    def _value(self, name: str, value: str) -> str:
        """``value`` compared with identifier ``name``, in the broker's spelling."""
        spelling = self.values.get(name)
        if spelling is None:
            return value
        if value in spelling:
            return spelling[value]
        if value in spelling.values():  # JMSDeliveryMode = 'DURABLE' selects nothing in JMS
            return _outside(spelling.values())
        return value

    def _exposed(self, value: object) -> bool:
        """Whether the broker would rewrite ``value`` written as a literal (``guarded``)."""
        return isinstance(value, str) and any(
            value == word or value.startswith(word + "'") for word in self.guarded
        )

    def _operand(self, node: _Node, other: _Node) -> tuple[str, bool]:
        """A comparison operand's text, and whether it is a literal to guard."""
        if isinstance(node, _Lit) and isinstance(node.value, str):
            value = node.value
            if isinstance(other, _Ident):
                value = self._value(other.name, value)
            return _quote(value), self._exposed(value)
        return self._compared(node, _BP_ADD), False

    def _respelled(self, node: _Binary) -> tuple[_Ident, _Node] | None:
        """The identifier whose values the broker spells its own way, and what it is
        compared with, when that is neither a literal (respelled in place) nor the same
        identifier (the spelling is one to one, so ``c = c`` holds as written). Only = and
        <> compare strings: ``c < p`` is UNKNOWN for a string either way."""
        if node.op not in ("=", "<>"):
            return None
        for ident, other in ((node.left, node.right), (node.right, node.left)):
            if (
                isinstance(ident, _Ident)
                and ident.name in self.values
                and not isinstance(other, _Lit)
                and not (isinstance(other, _Ident) and other.name == ident.name)
            ):
                return ident, other
        return None

    def _spelled_comparison(self, node: _Binary, ident: _Ident, other: _Node) -> str:
        """``ident op other`` where the broker holds ``ident``'s values respelled, so the
        text as written would compare the broker's spelling with ``other``'s value (JMS
        ``JMSDeliveryMode = p`` with p = 'PERSISTENT' holds; Artemis' ``AMQDurable = p``
        does not). Written as one case per value, which holds, fails or is UNKNOWN exactly
        when the comparison does: only the case of the value ``ident`` has can be other
        than FALSE, and a value it does not spell (NULL, a number) is compared as it is.
        ``NOT (c = v)`` rather than ``c <> v``: for a value of another type both are FALSE."""
        cases, unspelled = [], []
        for value in self.values[ident.name]:
            literal = _Lit(value, start=node.start, end=node.end)
            test = replace(node, op="=", left=ident, right=literal)
            then = self._wrap(replace(node, left=literal, right=other), _BP_AND + 1)
            cases.append(f"({self._wrap(test, _BP_AND + 1)} AND {then})")
            unspelled.append("NOT " + self._wrap(test, _BP_ATOM))
        name = self.names.get(ident.name, ident.name)
        unspelled.append(f"{name} {node.op} {self._wrap(other, _BP_ADD)}")
        return " OR ".join([*cases, f"({' AND '.join(unspelled)})"])

    def _comparison(self, node: _Binary) -> tuple[str, int]:
        spelled = self._respelled(node)
        if spelled is not None:
            return self._spelled_comparison(node, *spelled), _BP_OR
        if node.op in ("=", "<>") and not _identifiers(node.left) and _identifiers(node.right):
            # Classic and Artemis take `0 = n` as FALSE and `0 <> n` as TRUE where n is
            # NULL, not UNKNOWN (so `NOT (0 = n)` selected messages without n), a constant
            # expression on the left too; `n = 0` and `n <> 0` they read as JMS does.
            node = replace(node, left=node.right, right=node.left)
        left, guard_left = self._operand(node.left, node.right)
        right, guard_right = self._operand(node.right, node.left)
        if not (guard_left or guard_right):
            if node.op in ("=", "<>") and _is_value(node.left) and _is_value(node.right):
                guard = self._unknown_if_null(node)
                if guard:
                    # Classic and Artemis take NULL = NULL as TRUE (`n = n` selected
                    # messages without n): held to non-NULL identifiers, UNKNOWN else.
                    return f"({left} {node.op} {right} AND {guard[0]}) OR {guard[1]}", _BP_OR
            return f"{left} {node.op} {right}", _BP_CMP
        if isinstance(node.left, _Lit) and isinstance(node.right, _Lit):  # both: its value
            value = _compare(node.op, node.left.value, node.right.value)
            return _literal_text(bool(value)), _BP_ATOM
        other = node.left if guard_right else node.right
        if guard_right:  # strings compare with = and <> only, which are symmetric
            left, right = right, left
        # p is (TRUE AND p) in three-valued logic too; AND touches the literal's quote.
        if isinstance(other, _Ident):
            # The literal comes first here, where `'v' = x` is FALSE and `'v' <> x` TRUE
            # for a NULL x (see above): held to a non-NULL x, with a second case that is
            # UNKNOWN exactly for a NULL x, as `x <> ''` is.
            unknown = f"({right} IS NULL AND {right} <> '')"
            return (
                f"(TRUE AND{left} {node.op} {right} AND {right} IS NOT NULL) OR {unknown}",
                _BP_OR,
            )
        return f"TRUE AND{left} {node.op} {right}", _BP_AND

    def _unknown_if_null(self, node: _Node) -> tuple[str, str] | None:
        """("every identifier of ``node`` is set", "one is not, and then UNKNOWN"), in
        this dialect's names; None for a node that reads no identifier."""
        names = sorted({self.names.get(n, n) for n in _identifiers(node)})
        if not names:
            return None
        set_ = " AND ".join(f"{name} IS NOT NULL" for name in names)
        unset = " OR ".join(f"{name} IS NULL AND {name} <> ''" for name in names)
        return set_, f"({unset})"

    def _keyword_literal(self, keyword: str, value: str) -> str:
        return keyword + ("" if self._exposed(value) else " ") + _quote(value)

    def _test(self, node: _Test) -> tuple[str, int]:
        name = self.names.get(node.name, node.name)
        spelling = self.values.get(node.name)
        if node.form == "IN":
            items = node.operands
            if spelling is not None:
                items = tuple(self._value(node.name, i) if isinstance(i, str) else i for i in items)
            return self._in(name, items)
        if node.form != "LIKE":
            return f"{name} {node.form}", _BP_CMP
        if spelling is not None:  # the values it may have that match, as the broker has them
            matched = tuple(spelling[key] for key in spelling if node.check(key))
            return self._in(name, matched or (_outside(spelling.values()),))
        pattern = str(node.operands[0])
        escape = str(node.operands[1]) if len(node.operands) > 1 else None
        parts = _like_parts(pattern, escape) or []  # never None: the parser checked it
        # An escape only where one is needed: Artemis reads a needless one literally.
        special = ("%", "_", escape)
        canonical = "".join(
            part if part in ("%", "_") else _escaped(part[1:], escape, special) for part in parts
        )
        text = f"{name} {self._keyword_literal('LIKE', canonical)}"
        if escape is not None:
            text += " " + self._keyword_literal("ESCAPE", escape)
        return text, _BP_CMP

    def _in(self, name: str, items: tuple[int | float | str, ...]) -> tuple[str, int]:
        caught = [i for i in items if isinstance(i, str) and self._exposed(i)]
        plain = [i for i in items if not self._exposed(i)]
        if not caught:
            return f"{name} IN ({', '.join(_literal_text(i) for i in items)})", _BP_CMP
        # Each guarded item as a LIKE, which a keyword can touch; the rest stays an IN with
        # a string in it (else two, which no string matches both of): like the IN, both are
        # UNKNOWN for a value that is not a string (a number in a mixed list aside, which
        # Classic and Artemis refuse anyway).
        if any(isinstance(i, str) for i in plain):
            parts = [f"{name} IN ({', '.join(_literal_text(i) for i in plain)})"]
        else:
            first = _outside(self.guarded)
            second = _outside(self.guarded | {first})
            parts = [
                f"{name} IN ({', '.join(_literal_text(i) for i in (dummy, *plain))})"
                for dummy in (first, second)
            ]
            parts = [" AND ".join(parts)]
        for value in caught:
            pattern = _escaped(value, "!", ("%", "_", "!"))
            like = f"{name} {self._keyword_literal('LIKE', pattern)}"
            if pattern != value:
                like += " " + self._keyword_literal("ESCAPE", "!")
            parts.append(like)
        return " OR ".join(parts), _BP_OR


# ------------------------------------------------------------------------------- public API


class Selector:
    """A parsed, compiled message selector; test messages with :meth:`matches`."""

    __slots__ = ("_predicate", "_tree", "identifiers", "text")

    def __init__(self, text: str) -> None:
        """Parse ``text``; raises :class:`InvalidSelectorError` (also for blank text)."""
        if not text.strip():
            raise _error(text, 0, "empty selector")
        try:
            parser = _Parser(text)
            tree = parser.parse()
            self._predicate = _function(_predicate(tree))
        except RecursionError:  # a backstop only: the depth limits should make this unreachable
            raise _error(text, 0, "selector nested too deeply") from None
        self._tree = tree
        self.text: str = text
        self.identifiers: frozenset[str] = frozenset(parser.names)

    def matches(self, lookup: Lookup) -> bool:
        """True only if the selector is TRUE for the values ``lookup`` gives (None = absent)."""
        return self._predicate(lookup) is True

    def render(self, dialect: SelectorDialect = JMS_SYNTAX) -> str:
        """The selector as ``dialect``'s broker must be given it, written from the parsed
        tree: the same messages match, whatever the application's spacing, brackets or
        literal spellings (``0x1F``, ``1.5f``) were."""
        if dialect.ascii_names:
            for node in _nodes(self._tree):
                if isinstance(node, _Ident) and not node.name.isascii():
                    raise _error(
                        self.text,
                        node.start,
                        f"the broker reads names of ASCII letters, digits, _ and $ only, "
                        f"not {node.name!r} (ActiveMQ Classic and Artemis): rename the "
                        "property",
                    )
        return _Renderer(dialect).render(self._tree)

    def property_arithmetic(self, carried: Iterable[str] = ()) -> str | None:
        """The first property (not a JMS header field, unless a ``carried`` one: see
        ``SelectorDialect.carried``) the selector does arithmetic on, or None: a broker
        that holds properties as strings may not compute with them."""
        headers = HEADER_IDENTIFIERS - set(carried)
        for node in _nodes(self._tree):
            if isinstance(node, _Binary) and node.op not in _TESTS:
                for operand in (node.left, node.right):
                    if isinstance(operand, _Ident) and operand.name not in headers:
                        return operand.name
        return None

    def __repr__(self) -> str:
        text = self.text if len(self.text) <= 80 else self.text[:77] + "..."
        return f"Selector({text!r})"


def parse_selector(text: str | None) -> Selector | None:
    """Parse a selector; None or blank text means no selector (everything matches)."""
    if text is None or not text.strip():
        return None
    return Selector(text)


def render_selector(text: str | None, dialect: SelectorDialect = JMS_SYNTAX) -> str | None:
    """:meth:`Selector.render` of ``text``; None for no selector (None or blank text)."""
    selector = parse_selector(text)
    return None if selector is None else selector.render(dialect)


def _delivery_mode(message: object) -> object:
    mode = getattr(message, "jms_delivery_mode", None)
    if mode is None:
        return None
    return "PERSISTENT" if getattr(mode, "value", mode) == 2 else "NON_PERSISTENT"


def _header(attribute: str) -> Callable[[object], object]:
    return lambda message: getattr(message, attribute, None)


_HEADERS: Final[Mapping[str, Callable[[object], object]]] = {
    "JMSDeliveryMode": _delivery_mode,
    "JMSPriority": _header("jms_priority"),
    "JMSMessageID": _header("jms_message_id"),
    "JMSTimestamp": _header("jms_timestamp"),
    "JMSCorrelationID": _header("jms_correlation_id"),
    "JMSType": _header("jms_type"),
}
HEADER_IDENTIFIERS: Final[frozenset[str]] = frozenset(_HEADERS)


def message_lookup(message: object) -> Lookup:
    """Resolve selector identifiers on a jmslike message: the six selectable headers from its
    attributes, every other name (JMSX* included) from ``message.properties``."""
    properties: Mapping[str, object] | None = getattr(message, "properties", None)
    get_property: Lookup = properties.get if properties is not None else (lambda _name: None)
    headers = _HEADERS

    def lookup(name: str) -> object:
        header = headers.get(name)
        return header(message) if header is not None else get_property(name)

    return lookup
