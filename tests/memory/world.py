"""A remembered world for the tests: exchanges saved as the agent saves them, the owner's
facts of the gate's tests, and every row indexed at once (what the tasks sent on commit
would do)."""

from __future__ import annotations

from memory.models import Fact, Message, Summary
from memory.services.indexing import KIND_FACT, KIND_MESSAGE, KIND_SUMMARY, index_rows
from memory.services.messages import message_save


def exchange_save(channel: str, user: str, reply: str) -> tuple[Message, Message]:
    """The owner's message and the assistant's reply to it: (question, answer)."""
    question = message_save(channel=channel, role="user", content=user)
    answer = message_save(channel=channel, role="assistant", content=reply, reply_to_id=question.id)
    return question, answer


def index_everything() -> None:
    """Index every message, fact and summary now, forgotten rows included: what the
    indexing then does with them is what the tests check."""
    index_rows(KIND_MESSAGE, list(Message.all_objects.values_list("id", flat=True)))
    index_rows(KIND_FACT, list(Fact.all_objects.values_list("id", flat=True)))
    index_rows(KIND_SUMMARY, list(Summary.all_objects.values_list("id", flat=True)))


def marie_messages_save(channel: str = "whatsapp") -> None:
    """The owner's two messages about Marie: her wedding (the topic the forget API's and
    page's tests forget) and her dog (the neighbour that must stay)."""
    for text in (
        "Le mariage de Marie à Lisbonne est le 14 juin",
        "Le chien de Marie s'appelle Filou",
    ):
        message_save(channel=channel, role="user", content=text)


# The owner's facts of the gate's tests: a name and a few unrelated topics.
OWNER_FACTS = [
    ("user_name", "Mickael", "identity"),
    ("velo", "Le vélo de route est au garage pour un pneu crevé.", "fact"),
    ("chat", "Le chat de Mickael s'appelle Pixel.", "fact"),
    ("kine", "Le kiné s'appelle Hélène, cabinet rue Victor Hugo.", "fact"),
    ("wifi", "Le mot de passe du wifi est licorne42.", "fact"),
    ("lisbonne", "Voyage à Lisbonne en juin avec Sophie.", "event"),
]


def facts_remember_indexed(facts) -> dict:
    """Store (key, value, memory_type) facts, index each, warm retrieval: key -> Fact."""
    from memory.services.facts import fact_store
    from memory.services.indexing import KIND_FACT, index_row
    from memory.services.retrieval import retrieval_warm

    stored = {}
    for key, value, memory_type in facts:
        fact = fact_store(key=key, value=value, memory_type=memory_type)[0]
        index_row(KIND_FACT, fact.id)
        stored[key] = fact
    retrieval_warm()
    return stored
