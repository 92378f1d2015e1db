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
