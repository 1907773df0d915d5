"""Nexmark's queries (examples/nexmark/queries.py) on a small deterministic input, against
the same queries computed in plain Python from the same events: exact multisets."""

from __future__ import annotations

import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from pyspark import cloudpickle

from lockgate.datastream.connectors.nexmark import (
    Auction,
    Bid,
    NexmarkGenerator,
    NexmarkSource,
    Person,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from nexmark import queries

# Spark's Python workers cannot import examples/: ship the queries by value.
cloudpickle.register_pickle_by_value(queries)

SOURCE = NexmarkSource(
    3000,
    events_per_second=100,  # 30 s of event time
    base_time=1_000_000,
    seed=13,
    out_of_order_share=0.1,
    out_of_order_max_delay=500,
    avg_person_byte_size=0,
    avg_auction_byte_size=0,
    avg_bid_byte_size=0,
)
EVENTS = NexmarkGenerator(SOURCE.config).events(0, SOURCE.config.events)
PERSONS = [e for e in EVENTS if isinstance(e, Person)]
AUCTIONS = [e for e in EVENTS if isinstance(e, Auction)]
BIDS = [e for e in EVENTS if isinstance(e, Bid)]
SIZE = 10_000


def expected_q0():
    return BIDS


def expected_q1():
    return [(b.auction, b.bidder, 0.908 * b.price, b.date_time, b.extra) for b in BIDS]


def expected_q2():
    return [(b.auction, b.price) for b in BIDS if b.auction % 123 == 0]


def expected_q3():
    local = {p.id: p for p in PERSONS if p.state in ("OR", "ID", "CA")}
    return [
        (local[a.seller].name, local[a.seller].city, local[a.seller].state, a.id)
        for a in AUCTIONS
        if a.category == 10 and a.seller in local
    ]


def winners():
    """(auction, price of its winning bid) of the auctions with a bid in their lifetime."""
    result = []
    for a in AUCTIONS:
        prices = [
            b.price for b in BIDS if b.auction == a.id and a.date_time <= b.date_time <= a.expires
        ]
        if prices:
            result.append((a, max(prices)))
    return result


def expected_q4():
    """Each category's updates: (category, n, average of the first n winning prices) for
    n = 1.. number of winners; which winner comes when depends on the run, so only the
    last update's average is known, and every earlier one's count."""
    per_category = defaultdict(list)
    for a, price in winners():
        per_category[a.category].append(price)
    return {c: (len(prices), sum(prices) / len(prices)) for c, prices in per_category.items()}


def expected_q6(last=10):
    """Per seller, in the order of expiry (then auction id): the average of the winning
    prices of their last ``last`` closed auctions."""
    result, per_seller = [], defaultdict(list)
    for a, price in sorted(winners(), key=lambda w: (w[0].expires, w[0].id)):
        prices = per_seller[a.seller] = [*per_seller[a.seller], price][-last:]
        result.append((a.seller, sum(prices) / len(prices)))
    return result


def expected_q5(slide=2_000):
    counts = defaultdict(Counter)  # window end -> auction -> bids
    for b in BIDS:
        start = b.date_time - b.date_time % slide
        while start > b.date_time - SIZE:
            counts[start + SIZE][b.auction] += 1
            start -= slide
    result = []
    for per_auction in counts.values():
        most = max(per_auction.values())
        result.extend((auction, n) for auction, n in per_auction.items() if n == most)
    return result


def expected_q7():
    windows = defaultdict(list)
    for b in BIDS:
        windows[b.date_time // SIZE].append(b)
    result = []
    for window in windows.values():
        most = max(b.price for b in window)
        result.extend(
            (b.auction, b.price, b.bidder, b.date_time, b.extra) for b in window if b.price == most
        )
    return result


def expected_q8():
    sellers = {(a.seller, a.date_time // SIZE) for a in AUCTIONS}
    return [
        (p.id, p.name, p.date_time // SIZE * SIZE)
        for p in PERSONS
        if (p.id, p.date_time // SIZE) in sellers
    ]


def expected_q11():
    times = defaultdict(list)
    for b in BIDS:
        times[b.bidder].append(b.date_time)
    result = []
    for bidder, stamps in times.items():
        stamps.sort()
        start = last = stamps[0]
        count = 0
        for stamp in stamps:
            if stamp >= last + SIZE:
                result.append((bidder, count, start, last + SIZE))
                start, count = stamp, 0
            last, count = stamp, count + 1
        result.append((bidder, count, start, last + SIZE))
    return result


@pytest.mark.parametrize("query", sorted(queries.QUERIES, key=lambda q: int(q[1:])))
def test_a_nexmark_query_gives_the_reference_result(make_env, query):
    env = make_env(parallelism=2, max_records_per_split=2000)
    events = env.from_source(SOURCE, SOURCE.watermark_strategy(), "nexmark")
    with queries.QUERIES[query](env, events).execute_and_collect(f"nexmark {query}") as results:
        got = list(results)
    if query == "q4":
        final = {}
        for category, count, average in got:
            final[category] = max(final.get(category, (0, 0.0)), (count, average))
        expected = expected_q4()
        assert final == expected
        assert Counter(c for c, _, _ in got) == {c: n for c, (n, _) in expected.items()}
        return
    expected = globals()[f"expected_{query}"]()
    assert expected, "the input must give the query something to find"
    assert Counter(got) == Counter(expected)
