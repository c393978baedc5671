"""A slow, independent SVMlight line parser: the oracle of the fuzz tests.

It follows the grammar in rankfast.io.svmlight's docstring with regular expressions
and Python's correctly rounded float(), where rankfast parses bytes in Cython
(a fast exact path, strtod for the rest).  parse(text) returns the rows
(label, qid, [(index, value), ...]) or raises Bad(line) at the first bad line.
"""
import math
import re

BLANKS = b" \t\r\v\f"
DECIMAL = re.compile(rb"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
HEX = re.compile(rb"[+-]?0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)([pP][+-]?\d+)?")
SPECIAL = re.compile(rb"[+-]?(inf|infinity|nan|nan\([0-9A-Za-z_]*\))", re.IGNORECASE)
DIGITS = re.compile(rb"\+?\d+")
MAX_INDEX = 2**31 - 1
MAX_QID = 2**63 - 1


class Bad(Exception):
    """The first malformed line (1-based)."""

    def __init__(self, line):
        super().__init__(line)
        self.line = line


def number(token):
    """The value of a whole token, or None (strtod's grammar, C locale)."""
    if DECIMAL.fullmatch(token):
        return float(token)
    if HEX.fullmatch(token):
        sign = -1.0 if token.startswith(b"-") else 1.0
        body = token.lstrip(b"+-").decode()
        return sign * float.fromhex(body if "p" in body.lower() else body + "p0")
    if SPECIAL.fullmatch(token):
        return float("nan") if b"nan" in token.lower() else float(token.lower().replace(b"inity", b""))
    return None


def unsigned(token, limit):
    if not DIGITS.fullmatch(token):
        return None
    value = int(token)
    return value if value <= limit else None


def parse_line(data):
    """(label, qid, features) of one line's data part, or None if it is malformed."""
    tokens = [t for t in re.split(rb"[ \t\r\v\f]+", data) if t]
    label = number(tokens[0])
    if label is None or not math.isfinite(label):
        return None
    qid, features, previous = 0, [], 0
    has_qid = False
    for token in tokens[1:]:
        name, colon, value = token.partition(b":")
        if not colon:
            return None
        if name == b"qid":
            if has_qid or value.startswith(b"+"):
                return None
            qid = unsigned(value, MAX_QID)
            if qid is None:
                return None
            has_qid = True
        elif name == b"sid":
            if unsigned(value, MAX_QID) is None:
                return None
        elif name == b"cost":
            cost = number(value)
            if cost is None or not math.isfinite(cost):
                return None
        else:
            index = unsigned(name, MAX_INDEX)
            v = number(value)
            if index is None or index < 1 or index <= previous or v is None or not math.isfinite(v):
                return None
            features.append((index, v))
            previous = index
    return label, qid, features


def parse(text):
    """Rows of an SVMlight text (bytes); raises Bad(line) at the first malformed line.

    A UTF-8 byte order mark at the start is skipped.
    """
    if text.startswith(b"\xef\xbb\xbf"):
        text = text[3:]
    rows = []
    for number_, line in enumerate(text.split(b"\n"), 1):
        data = line.split(b"#", 1)[0]
        if not data.strip(BLANKS):
            continue
        row = parse_line(data)
        if row is None:
            raise Bad(number_)
        rows.append(row)
    return rows
