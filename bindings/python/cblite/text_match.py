"""Full-text queries on a view's text keys (Couchbase Lite 1.x's ``CBLTextKey`` and
``CBLFullTextQueryRow``): a map function emits ``emit(TextKey(text), value)``, and
``view.query(full_text="coffee")`` yields :class:`TextMatch` rows, best match first."""
from __future__ import annotations

from typing import Any, Dict, List, NamedTuple, Optional

from ._util import ReleasableHandle
from .query_result import QueryResult, Row

__all__ = ["TextKey", "TextMatch", "Match", "TextMatchResult"]


class TextKey:
    """A text key: ``emit(TextKey(text), value)`` in a map function indexes ``text`` for
    the view's full-text queries (its row's key is None in ordinary queries)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        if not isinstance(text, str):
            raise TypeError(f"TextKey takes a str, not {type(text).__name__}")
        self.text = text

    def __repr__(self) -> str:
        return f"TextKey({self.text!r})"


class Match(NamedTuple):
    """One matched word of a row's text: ``term`` numbers the query's words from 0 in
    query order (stop words have none, a repeated word keeps its first number);
    ``full_text[start:end]`` is the matched word (str indexes)."""

    term: int
    start: int
    end: int


class TextMatch(NamedTuple):
    """A row of a full-text query: the emitted text (``full_text``), its BM25 ``score``
    (higher is better), every matched word (``matches``, in text order), the ``snippet``
    when asked for (``snippets=``), and the row's value, document IDs, document
    (``include_docs``) and sequence."""

    full_text: str
    score: float
    matches: List[Match]
    snippet: Optional[str]
    value: Any
    doc_id: Optional[str]
    source_doc_id: Optional[str]
    doc: Optional[Dict[str, Any]]
    sequence: int

    @property
    def match_count(self) -> int:
        """The number of matched words (every occurrence counts)."""
        return len(self.matches)

    @classmethod
    def from_row(cls, row: Row) -> "TextMatch":
        """The match a full-text query's row carries as its key (UTF-8 byte ranges there,
        str indexes here)."""
        key: Dict[str, Any] = row.key
        text: str = key["text"]
        raw = text.encode("utf-8", errors="surrogatepass")

        def index(byte: int) -> int:
            return len(raw[:byte].decode("utf-8", errors="surrogatepass"))

        matches = []
        for m in key["matches"]:
            start, length = m["range"]
            begin = index(start)
            matches.append(Match(m["term"], begin, begin + len(raw[start:start + length].decode("utf-8", errors="surrogatepass"))))
        return cls(text, float(key["score"]), matches, key.get("snippet"), row.value, row.doc_id,
                   row.source_doc_id, row.doc, row.sequence)


class TextMatchResult(ReleasableHandle):
    """The rows of a full-text query as :class:`TextMatch` values, read lazily (a
    :class:`QueryResult` underneath). Iterate it; release it (or use ``with``)."""

    def __init__(self, result: QueryResult) -> None:
        self._result = result

    def __iter__(self) -> "TextMatchResult":
        return self

    def __next__(self) -> TextMatch:
        return TextMatch.from_row(next(self._result))

    def rows(self) -> List[TextMatch]:
        """Every remaining row."""
        return list(self)

    @property
    def stale(self) -> bool:
        """True when re-running the query could give other rows."""
        return self._result.stale

    def release(self) -> None:
        """Releases the result (idempotent)."""
        self._result.release()
