"""The relevance gate: "inject nothing" is a possible answer of the auto-retrieval.

Two signals decide, before any memory reaches the prompt:

1. The message itself. Small talk ("ok", "lol", "👍", "merci", "Bonne nuit")
   has no content word once stop words, the small-talk lexicon and its phrases
   (words that name a topic elsewhere: "bonne soirée", "à demain") are removed:
   nothing is injected, not even the identity facts or the notes.
2. The sources' evidence. A query embedding is close to *everything* when it
   says little: the bundled e5 scores "ok" at 0.83 against unrelated memories,
   as high as real answers to real questions. So a semantic hit is measured
   against the query's own background: its mean cosine to a fixed set of
   neutral reference sentences (below), embedded once per embedder. A message
   passes the gate when its best semantic hit stands clear of that background
   (``gate_margin``, calibrated per embedder next to its other thresholds), or
   when two sources agree (a memory found by meaning is also found by its
   words). Otherwise the question is about something the memory does not hold
   ("Quelle est la capitale de l'Australie ?") and nothing is injected.

Measured on the dev set (memory/eval/dataset.json) with the local model:
off-topic questions' best hit stands 0.046-0.079 above their background,
answerable questions' 0.035-0.20; the agreement rule keeps most answerable
ones that fall below the margin (see embedders.LOCAL_GATE_MARGIN).
"""

from __future__ import annotations

import functools
import re
import threading
from typing import Any

from memory.services.keywords import keyword_terms
from memory.stores.fts import fold, query_terms

# Words that carry no topic in a chat message, folded like the index (FR and EN).
SMALL_TALK = frozenset(
    fold(word)
    for word in """
    ok okay oki okk d'accord dac daccord accord merci mercii remercie thanks thank thx ty
    lol mdr ptdr haha hahaha hihi hehe xd cool super top genial parfait nickel bravo
    bonjour bonsoir salut coucou hello hi hey yo bonne bon oui ouais non nope yes yeah yep
    no bien vu entendu ca marche roger noted pris see you bye ciao plus tard later a tkt np
    beaucoup lot much vraiment really trop grave ah oh eh euh hmm bah ben wow waouh
    va vas vais how are you what's up sup
    bcp bcq acc dacc cheers perfect awesome amazing excellent alright sure kk tks thnx
    oki doki infiniment bisous bises biz
    """.split()
)


def _spoken(text: str) -> str:
    """A message's words folded, apostrophes and edge punctuation gone, one space apart
    and around (" c est note "): what the small-talk phrases are looked for in."""
    words = fold(text).replace("'", " ").replace("’", " ").split()
    return " " + " ".join(w for w in (w.strip('.,;:!?…"()«»') for w in words) if w) + " "


# Politeness made of words that name a topic elsewhere ("un souci de freins", "rien à
# signaler", "j'ai quoi demain ?", "c'est quand la soirée ?", "what do I have tomorrow?"):
# small talk only as a whole phrase (FR and EN).
SMALL_TALK_PHRASES = tuple(
    _spoken(phrase)
    for phrase in """
    pas de souci|pas de soucis|aucun souci|sans souci|pas de probleme|aucun probleme
    pas de pb|de rien|avec plaisir|je vois|ok je vois|ca roule|ca me va|entendu
    no worries|no problem|no prob|great thanks|great|sounds good|got it|you're welcome
    my pleasure|all good|i see|makes sense|je note|je comprends|d'accord je comprends
    thanks for your help|thanks for the help|thank you for your help|thanks for helping
    merci pour ton aide|merci pour votre aide|merci de ton aide|merci de votre aide
    merci pour l'aide|reçu 5/5
    à demain|à plus tard|à tout à l'heure|à tout de suite|à la prochaine|bonne nuit
    bonne soirée|bonne journée|bonne matinée|bonne après-midi|bon après-midi|bonne semaine
    bonne fin de journée|bonne fin de soirée|bon week-end|bon weekend|c'est noté|bien noté
    noté pris|pris note|see you tomorrow|see you later|see you soon|good morning
    good afternoon|good evening|good night|good day|have a good day|have a nice day
    have a good one|have a good night|have a good evening|have a great day|good job
    good to know|very good|good one|nice one|love it|good idea|bonne idee|c'est gentil
    mille fois|je regarde|je regarde ça|je vais voir
    """.replace("\n", "|").split("|")
    if phrase.strip()
)
# Replies that are small talk alone ("noté !", "ok, noté", "good!"), but name a topic
# beside other words ("et la note ?").
SMALL_TALK_REPLIES = frozenset(fold(w) for w in ("note", "good", "compris", "impeccable", "reçu"))
# ASCII emoticons: « <3 » and « +1 » read as the numbers 3 and 1 (QA), « :) » as nothing.
_EMOTICONS = re.compile(
    r"(?<!\w)(?:<\/?3+|\+1|[:;=]['-]?[()\[\]dDpPoO/\\|*]+|\^\^|[xX][dD]+)(?!\w)"
)

# Neutral sentences, unrelated to any owner: a query's background closeness.
REFERENCE_TEXTS = (
    "Le train de 8h12 a été supprimé à cause d'une grève.",
    "La recette demande deux œufs, du sucre et un peu de farine.",
    "Il a plu toute la journée sur la côte bretonne.",
    "Les impôts doivent être déclarés avant la fin mai.",
    "J'ai regardé un documentaire sur les baleines hier soir.",
    "La réunion de copropriété est repoussée au mois prochain.",
    "Mon ordinateur portable chauffe beaucoup quand je compile.",
    "Le marché du samedi vend des fromages de montagne.",
    "Elle apprend le piano depuis trois ans.",
    "Le garage m'a appelé pour la révision de la voiture.",
    "On a trouvé un appartement avec un balcon plein sud.",
    "La bibliothèque ferme plus tôt pendant les vacances.",
    "Il faut arroser les tomates deux fois par semaine.",
    "Le match a fini sur un match nul, un partout.",
    "Je dois rappeler la banque au sujet du prêt.",
    "Les enfants partent en colonie au mois de juillet.",
    "Le dentiste a trouvé une petite carie.",
    "Nous avons réservé un gîte dans le Jura.",
    "Le chat a encore renversé son bol d'eau.",
    "Le contrat de travail commence le premier du mois.",
    "Il y a des bouchons sur le périphérique ce matin.",
    "Le nouveau téléphone a une meilleure batterie.",
    "Ma grand-mère fête ses quatre-vingt-dix ans.",
    "Le chantier de la cuisine a pris du retard.",
    "J'ai couru dix kilomètres dimanche.",
    "The meeting was moved to Thursday afternoon.",
    "She bought a second-hand bike for commuting.",
    "The flight to Montreal was delayed by two hours.",
    "We need to renew the car insurance before March.",
    "He is learning to cook Thai food.",
    "The landlord finally fixed the heating.",
    "My sister moved to Berlin for a new job.",
    "The package was left with the neighbour.",
    "I started reading a novel about the French revolution.",
    "The doctor recommended more sleep and less coffee.",
    "Our team won the quiz night at the pub.",
    "The garden fence was damaged in the storm.",
    "I signed up for a pottery class on Tuesdays.",
    "The electricity bill went up again this month.",
    "We watched the fireworks from the river bank.",
    "Le vétérinaire a vacciné le chien contre la rage.",
    "La facture d'eau est arrivée avec un mois de retard.",
    "Nous avons planté un cerisier au fond du jardin.",
    "Le colis contient des livres pour l'école.",
    "Le médecin du travail m'a convoqué mardi.",
    "Les voisins font des travaux dans leur salle de bain.",
    "J'ai perdu mes clés dans le bus.",
    "Le festival de jazz commence la semaine prochaine.",
    "Ma fille veut faire de l'escrime.",
    "Le prix de l'essence a encore augmenté.",
)

_reference: dict[str, object] = {}
_reference_lock = threading.Lock()


# Every auto-retrieval cuts the message into words three times (small talk, the live
# gate, the notes' order) and the text of each live hit near the background once: the
# same messages come up again and again (0.4-0.8 ms a call). Texts up to this long
# are remembered (a pure function of the text).
CONTENT_WORDS_CACHED_CHARS = 2000


def content_words(text: str) -> list[str]:
    """The words of a message that can name a topic (no stop words, no small talk)."""
    if len(text) > CONTENT_WORDS_CACHED_CHARS:
        return _content_words(text)
    return list(_content_words_cached(text))


def _content_words(text: str) -> list[str]:
    return [term for term in keyword_terms(text) if term not in SMALL_TALK]


@functools.lru_cache(maxsize=4096)
def _content_words_cached(text: str) -> tuple[str, ...]:
    return tuple(_content_words(text))


def without_phrases(text: str) -> str:
    """``text`` spoken (_spoken), its small-talk phrases taken out (« bonne soirée »)."""
    spoken = _spoken(text)
    for phrase in SMALL_TALK_PHRASES:
        while phrase in spoken:  # "bonne nuit bonne nuit": the matches share a space
            spoken = spoken.replace(phrase, " ")
    return spoken


def is_small_talk(text: str) -> bool:
    """True when a message names no topic at all ("ok", "merci !", "👍", "<3", "Bonne
    nuit", "pas de souci", "No worries", "bien reçu")."""
    text = _EMOTICONS.sub(" ", text)
    words = content_words(text)
    if not words:
        return True
    if len(text) > 80:
        return False
    spoken = without_phrases(text)
    words = content_words(spoken)
    if not words:
        return True
    if not SMALL_TALK_REPLIES.issuperset(words):
        return False
    rest = [word for word in query_terms(spoken) if word not in SMALL_TALK]
    return len(rest) == 1 and rest[0] in SMALL_TALK_REPLIES


def _reference_matrix(embedder):
    import numpy as np

    name = getattr(embedder, "name", repr(embedder))
    with _reference_lock:
        matrix = _reference.get(name)
        if matrix is None:
            matrix = np.asarray(embedder.embed_documents(list(REFERENCE_TEXTS)), dtype="float32")
            _reference[name] = matrix
    return matrix


# The last query's background, with the embedder and the very vector object it was computed
# for: the semantic and the live sources of one pre-hook gate the same vector, in two
# threads (the product took 0.17 ms of CPU each, holding the GIL, after every embedding).
# Under a lock: the two sources asking at once computed it twice.
_last_background: tuple[Any, Any, float] | None = None
_last_background_lock = threading.Lock()


def query_background(embedder, vector) -> float:
    """How close this query is to unrelated text: its mean cosine to the reference sentences."""
    global _last_background
    import numpy as np

    with _last_background_lock:
        last = _last_background
        if last is not None and last[0] is embedder and last[1] is vector:
            return last[2]  # the object is held above: its id cannot be another vector's
        matrix = _reference_matrix(embedder)
        background = float(np.mean(matrix @ np.asarray(vector, dtype="float32")))
        _last_background = (embedder, vector, background)
    return background


def gate_passes(
    *, margin: float | None, gate_margin: float, semantic_ids: list[str], keyword_ids: list[str]
) -> bool:
    """Whether the sources' evidence says the memory holds something about the message.

    ``margin``: the best semantic hit's cosine minus the query background,
    None when the semantic source did not answer (down, timed out): then the
    gate cannot judge and lets the other sources through, as before it
    existed (small talk was already stopped on its words alone).
    ``semantic_ids`` / ``keyword_ids``: the ranked ids of each source.
    """
    if margin is None or margin >= gate_margin:
        return True
    return bool(set(semantic_ids[:10]) & set(keyword_ids[:10]))
