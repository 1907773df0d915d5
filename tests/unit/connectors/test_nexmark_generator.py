"""The Nexmark generator: Nexmark's proportions and hot ratios, event time and its disorder,
determinism by index, and a source that splits by index ranges and restores by offset."""

from __future__ import annotations

import json
import pickle
from collections import Counter
from itertools import pairwise

import pytest

from lockgate.common.records import RecordFormatError
from lockgate.connectors.nexmark.generator import DRAWS_PER_EVENT, event_draws
from lockgate.core.source import SplitAssignment
from lockgate.datastream.connectors.nexmark import (
    Auction,
    Bid,
    NexmarkConfig,
    NexmarkGenerator,
    NexmarkSource,
    Person,
)

EVENTS = 5000


def generate(events: int = EVENTS, **settings) -> list:
    generator = NexmarkGenerator(NexmarkConfig(events=events, **settings))
    return generator.events(0, events)


def run_epoch(source, enumerator, max_records: int) -> list:
    records, progress = [], {}
    for assignments in enumerator.plan(max_records).values():
        for assignment in assignments:
            received = SplitAssignment.from_json(json.loads(json.dumps(assignment.to_json())), "t")
            records.extend(source.read(received, None, progress))
    enumerator.acknowledge(progress)
    return records


def test_persons_auctions_and_bids_come_1_3_46_in_every_50_events():
    events = generate()
    kinds = [type(e) for e in events]
    assert Counter(kinds) == {Person: 100, Auction: 300, Bid: 4600}
    assert kinds[:5] == [Person, Auction, Auction, Auction, Bid]
    assert kinds[50:54] == [Person, Auction, Auction, Auction]


def test_ids_count_up_from_1000_and_references_point_at_existing_or_soon_ones():
    events = generate()
    persons = [e for e in events if isinstance(e, Person)]
    auctions = [e for e in events if isinstance(e, Auction)]
    assert [p.id for p in persons] == list(range(1000, 1100))
    assert [a.id for a in auctions] == list(range(1000, 1300))
    for i, event in enumerate(events):
        people = i // 50 + 1  # people so far
        if isinstance(event, Auction):
            assert 1000 <= event.seller < 1000 + people + 10
            assert 10 <= event.category <= 14
            assert event.reserve > event.initial_bid > 0
            assert event.expires > event.date_time
        elif isinstance(event, Bid):
            assert 1000 <= event.auction <= 1000 + (i // 50) * 3 + 2 + 10
            assert 1000 <= event.bidder < 1000 + people + 10


def test_hot_sellers_auctions_and_bidders_follow_the_hot_ratios():
    events = generate(20_000, hot_auction_ratio=2, hot_sellers_ratio=4, hot_bidders_ratio=4)
    bids = [e for e in events if isinstance(e, Bid)]
    auctions = [e for e in events if isinstance(e, Auction)]
    # Hot: the first auction, seller and second bidder of the latest batch of 100
    hot_auction = sum(
        b.auction == 1000 + (((i // 50) * 3 + 2) // 100) * 100 for i, b in _indexed(events, Bid)
    )
    hot_bidder = sum(
        b.bidder == 1000 + ((i // 50) // 100) * 100 + 1 for i, b in _indexed(events, Bid)
    )
    hot_seller = sum(
        a.seller == 1000 + ((i // 50) // 100) * 100 for i, a in _indexed(events, Auction)
    )
    # P(hot) = 1 - 1/ratio, plus the cold picks that land on the hot one by chance
    assert 0.49 < hot_auction / len(bids) < 0.56
    assert 0.74 < hot_bidder / len(bids) < 0.80
    assert 0.72 < hot_seller / len(auctions) < 0.82
    cold = generate(20_000, hot_auction_ratio=1, hot_sellers_ratio=1, hot_bidders_ratio=1)
    assert max(Counter(b.auction for b in cold if isinstance(b, Bid)).values()) < 0.05 * len(bids)


def _indexed(events, kind):
    return [(i, e) for i, e in enumerate(events) if isinstance(e, kind)]


def test_event_time_follows_the_rate_and_a_share_moves_back_within_the_delay():
    in_order = generate(events_per_second=1000, base_time=10_000)
    assert [e.date_time for e in in_order] == [10_000 + i for i in range(EVENTS)]
    shuffled = generate(
        events_per_second=1000, base_time=10_000, out_of_order_share=0.2, out_of_order_max_delay=50
    )
    moved = [i for i, e in enumerate(shuffled) if e.date_time != 10_000 + i]
    assert 0.17 < len(moved) / EVENTS < 0.23
    assert all(10_000 + i - 50 <= shuffled[i].date_time < 10_000 + i for i in moved)
    # Late against the events before them: what the watermark's bound must cover
    assert sum(a.date_time > b.date_time for a, b in pairwise(shuffled)) > 0.1 * EVENTS


def test_an_event_is_a_function_of_the_configuration_and_its_index():
    events = generate(seed=3, out_of_order_share=0.1, out_of_order_max_delay=20)
    generator = NexmarkGenerator(
        NexmarkConfig(events=EVENTS, seed=3, out_of_order_share=0.1, out_of_order_max_delay=20)
    )
    for i in (4321, 7, 0, 4999, 7):
        assert generator.event(i) == events[i]
    assert generate(100, seed=3) != generate(100, seed=4)
    assert pickle.loads(pickle.dumps(events[:60])) == events[:60]


def test_extra_pads_events_to_the_average_sizes():
    events = generate(avg_person_byte_size=200, avg_auction_byte_size=500, avg_bid_byte_size=100)
    bids = [e for e in events if isinstance(e, Bid)]
    assert 60 < sum(len(b.extra) for b in bids) / len(bids) < 76  # 100 - 32, +-20%
    assert all(
        e.extra == ""
        for e in generate(200, avg_person_byte_size=0, avg_auction_byte_size=0, avg_bid_byte_size=0)
    )


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"events": -1}, "events"),
        ({"events_per_second": 0}, "events_per_second"),
        ({"hot_auction_ratio": 0}, "hot_auction_ratio"),
        ({"out_of_order_share": 1.5}, "out_of_order_share"),
        ({"out_of_order_share": 0.1}, "out_of_order_max_delay"),
        ({"avg_bid_byte_size": 10**6}, "avg_bid_byte_size"),
        ({"seed": "x"}, "seed"),
    ],
)
def test_a_bad_setting_is_named(settings, named):
    with pytest.raises(ValueError, match=named):
        NexmarkSource(**{"events": 10, **settings})


def test_the_source_reads_contiguous_index_ranges_and_restores_by_offset():
    source = NexmarkSource(1000, seed=1)
    expected = generate(1000, seed=1)
    enumerator = source.create_enumerator(3)
    first = run_epoch(pickle.loads(pickle.dumps(source)), enumerator, 100)
    assert Counter(first) == Counter(expected[0:100] + expected[333:433] + expected[666:766])
    snapshot = json.loads(json.dumps(enumerator.snapshot()))
    rest = []
    while not enumerator.is_finished():
        rest.extend(run_epoch(source, enumerator, 100))
    assert Counter(first + rest) == Counter(expected)
    # Restore at another parallelism: the three splits read on from their offsets
    restored = source.create_enumerator(2)
    restored.restore(snapshot, "chk-1")
    again = []
    while not restored.is_finished():
        again.extend(run_epoch(source, restored, 150))
    assert Counter(again) == Counter(rest)
    other = NexmarkSource(500).create_enumerator(3)
    with pytest.raises(RecordFormatError, match="outside its range"):
        other.restore(snapshot, "chk-1")


def test_the_watermark_bound_is_the_out_of_order_delay():
    source = NexmarkSource(10, out_of_order_share=0.5, out_of_order_max_delay=250)
    strategy = source.watermark_strategy()
    event = NexmarkGenerator(source.config).event(3)
    assert strategy.timestamp_assigner.extract_timestamp(event, 0) == event.date_time
    assert strategy.out_of_orderness_ms == 250


def test_an_events_draws_are_uniform_and_a_function_of_seed_and_index():
    draws = event_draws(1, 0, 2000)
    assert draws.shape == (2000, DRAWS_PER_EVENT)
    # event i's numbers whatever the range asked for; another seed, other numbers
    assert (event_draws(1, 7, 9) == draws[7:9]).all()
    assert not (event_draws(2, 0, 2000) == draws).any()
    many = draws.ravel()
    assert ((many >= 0.0) & (many < 1.0)).all()
    assert len(set(many.tolist())) == len(many)
    assert abs(many.mean() - 0.5) < 0.01
    tenths = Counter((many * 10).astype(int).tolist())
    assert all(abs(tenths[d] - len(many) / 10) < len(many) / 50 for d in range(10))


def test_a_range_of_events_is_the_events_one_by_one():
    config = NexmarkConfig(events=400, seed=5, out_of_order_share=0.3, out_of_order_max_delay=50)
    generator = NexmarkGenerator(config)
    assert generator.events(0, 400) == [generator.event(i) for i in range(400)]
    assert generator.events(123, 177) == generator.events(0, 400)[123:177]
