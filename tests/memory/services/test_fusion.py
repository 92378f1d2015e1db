from memory.services.fusion import RRF_K, reciprocal_rank_fusion


def test_an_item_in_several_lists_beats_the_best_of_a_single_list():
    fused = reciprocal_rank_fusion(
        {"semantic": [("a", 0.9), ("b", 0.8)], "keywords": [("b", 12.0), ("c", 3.0)]}
    )
    assert [f.id for f in fused] == ["b", "a", "c"]
    assert fused[0].rrf == 1 / (RRF_K + 2) + 1 / (RRF_K + 1)
    assert fused[0].sources == {
        "semantic": {"rank": 2, "score": 0.8},
        "keywords": {"rank": 1, "score": 12.0},
    }


def test_a_list_naming_an_id_twice_counts_its_best_rank_once():
    fused = reciprocal_rank_fusion({"keywords": [("a", 2.0), ("a", 1.0)]})
    assert fused[0].rrf == 1 / (RRF_K + 1)


def test_weights_scale_a_source():
    fused = reciprocal_rank_fusion(
        {"t1": [("a", 1.0)], "semantic": [("b", 0.7)]}, weights={"t1": 0.5}
    )
    assert [f.id for f in fused] == ["b", "a"]


def test_ties_keep_first_met_order_and_empty_input_is_empty():
    assert [f.id for f in reciprocal_rank_fusion({"x": [("a", 1)], "y": [("b", 1)]})] == ["a", "b"]
    assert reciprocal_rank_fusion({}) == []


def test_a_first_hit_outranks_what_both_lists_found_only_in_their_lower_half():
    """With k = 60 agreement always won: an item both sources ranked 12th and 14th of 16
    (1/72 + 1/74) came before one source's first hit (1/61). On the evaluation sets the
    pre-hook's answer, ranked first by meaning alone, fell to 10th below such items and
    out of the four injected (heldout5: « on économise combien par mois avec le nouveau
    taux ? »). An item both rank near the top still wins."""
    semantic = [("answer", 0.9)] + [(f"s{i}", 0.5) for i in range(2, 12)]
    keywords = [(f"k{i}", 3.0) for i in range(1, 12)]
    semantic += [("both-low-1", 0.4), ("filler", 0.4), ("both-low-2", 0.4)]
    keywords += [("both-low-2", 1.0), ("filler-k", 1.0), ("both-low-1", 1.0)]
    semantic[2] = ("both-high", 0.8)  # third by meaning
    keywords[1] = ("both-high", 2.9)  # second by keywords

    order = [f.id for f in reciprocal_rank_fusion({"semantic": semantic, "keywords": keywords})]

    assert order.index("both-high") < order.index("answer")
    assert order.index("answer") < order.index("both-low-1")
    assert order.index("answer") < order.index("both-low-2")
