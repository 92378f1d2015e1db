"""The keyword query of the auto-retrieval: the meaningful words of a message.

An OR query over every word of a message costs a lot on a big index (at a
million rows, ~400 ms with stop words, a few ms without: stop words match
almost every row), and stop words add nothing to bm25's ranking. So French and
English stop words are dropped before the words are quoted for MATCH.
"""

from __future__ import annotations

from memory.stores.fts import fold, query_terms

MAX_KEYWORDS = 12

# Folded (lower case, no accents, œ→oe) as the index sees words.
STOP_WORDS_FR = """
a ai aie aient aies ait alors as au aucun aucune aupres aura aurai auraient aurais aurait auras aurez
auriez aurions aurons auront aussi autre autres aux avaient avais avait avant avec avez aviez avions avoir
avons ayant ayez ayons bah bien c ca car ce ceci cela celle celles celui cependant ces cet cette ceux chaque
chez ci comme comment d dans de des deja depuis donc dont du elle elles en encore entre es est et etaient
etais etait etant ete etes etiez etions etre eu eue eues eus eut faire fait fais faut hein ici il ils j je
jusqu l la laquelle le lequel les lesquelles lesquels leur leurs lui m ma mais me meme memes mes moi mon
moins n ne ni non nos notre nous o on ont ou oui par parce pas pendant peu peut plus pour pourquoi puis
qu quand que quel quelle quelles quels qui quoi s sa sans se sera serai seraient serais serait seras serez
seriez serions serons seront ses si sien soi soit sommes son sont sous suis sur t ta te tes toi ton tous
tout toute toutes tres tu un une unes uns vers voici voila vos votre vous y
dit dis disait parle parler parlait parle dire avais fallait
""".split()
STOP_WORDS_EN = """
a about above after again against all am an and any are as at be because been before being below between
both but by can could did do does doing down during each few for from further had has have having he her
here hers herself him himself his how i if in into is it its itself just me more most my myself no nor not
now of off on once only or other our ours ourselves out over own same she should so some such than that the
their theirs them themselves then there these they this those through to too under until up very was we
were what when where which while who whom why will with would you your yours yourself yourselves
did say said tell told talk talked about know
""".split()
STOP_WORDS = frozenset(fold(w) for w in STOP_WORDS_FR + STOP_WORDS_EN)


def keyword_terms(text: str, *, limit: int = MAX_KEYWORDS) -> list[str]:
    """The folded meaningful words of ``text``, in order, at most ``limit``."""
    terms = [t for t in query_terms(text) if t not in STOP_WORDS and (len(t) > 1 or t.isdigit())]
    return terms[:limit]
