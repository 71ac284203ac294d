"""The word lists the text steps share, each defined once.

`STOPWORDS` is the one stop-word list: Lucene's English list (the one bm25s ships, written out
here because importing bm25s sets its logger to DEBUG), what keyword search drops. The other
lists serve one role each; the figures in benchmarks/results/ were measured with them, so a role
keeps its list rather than taking a longer or shorter one.
"""

from __future__ import annotations

from citerag.text.dates import MONTH_NAMES


def _listed(words: str) -> frozenset[str]:
    return frozenset(words.split())


STOPWORDS = _listed(
    "a an and are as at be but by for if in into is it no not of on or such that the their then "
    "there these they this to was will with"
)

# Pronouns, auxiliaries, prepositions and quantifiers beyond Lucene's list: highlights compare a
# question's meaningful words with a sentence's, and these carry no meaning there.
FUNCTION_WORDS = STOPWORDS | _listed(
    "about above after again against all am any because been before being below between both can "
    "could did do does doing down during each few from further had has have having he her here "
    "hers him his how i its itself just me more most my nor now off once only other our ours out "
    "over own same she should so some than theirs them those through too under until up very we "
    "were what when where which while who whom why would you your yours"
)

# What a request says around its subject ("tell me about", "list the", "how many").
REQUEST_WORDS = _listed("tell explain describe give show list please much many")

# The words a question is phrased with, which a section title or summary never answers: the
# list tree search's offline ranking was measured with (shorter than STOPWORDS on pronouns).
QUESTION_WORDS = _listed(
    "a an and are as at be by did do does for from how in is it of on or the this to was were "
    "what when where which who why with about"
)

# Words that start or end a capitalized run without being part of a name ("In March Netflix",
# "Mr Graham"). Narrower than FUNCTION_WORDS: "All", "Can" and "Will" begin names often enough.
NAME_EDGE_WORDS = (
    _listed(
        "a after also an and as at before but by during for from he her here his how however i "
        "i'd i'm i've if in it my no of on or our she since so that the their then there these "
        "they this those to until we what when where which while who why with yes you"
    )
    | frozenset(MONTH_NAMES)
    | _listed("monday tuesday wednesday thursday friday saturday sunday")
    | _listed("dr mr mrs ms st")
)
