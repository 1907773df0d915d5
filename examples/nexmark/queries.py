"""Nexmark's queries q0-q8 and q11 (as Flink's nexmark defines them in SQL), written
as a PyFlink user would, with lockgate's public DataStream API only.

Each query is a function ``build(env, events, **sizes) -> DataStream``: ``events`` is the
stream of a ``NexmarkSource`` with event time (``from_source(source,
source.watermark_strategy(), ...)``), the result the query's output stream. Windows are
event time; their sizes (milliseconds) default to Nexmark's. ``QUERIES`` names them all.

- q0 pass-through: the bids as they are.
- q1 currency conversion: bids with the price in euros, ``0.908 * price``.
- q2 selection: ``(auction, price)`` of the bids on auctions whose id is a multiple of 123.
- q3 local item suggestion: ``(name, city, state, auction id)`` of the people of OR, ID and
  CA joined with the auctions of category 10 they sell (a regular join on seller).
- q4 average price per category: each auction's winning bid (the highest bid within its
  lifetime, known when it expires), averaged per category: an updating result, one
  ``(category, auctions so far, average)`` per closed auction.
- q5 hot items: ``(auction, bids)`` of the auctions with the most bids in each sliding
  window (10 s every 2 s).
- q6 average selling price by seller: ``(seller, average)`` of the winning prices of the
  seller's last 10 closed auctions, once per closed auction (in the order of expiry), as
  Beam's Query6 (Flink's SQL has no runnable q6).
- q7 highest bid: the bids with the highest price of each tumbling 10 s window, as
  ``(auction, price, bidder, date_time, extra)``.
- q8 monitor new users: ``(id, name, window start)`` of the people who opened an auction in
  the tumbling 10 s window in which they appeared.
- q11 user sessions: ``(bidder, bids, session start, session end)`` per bidder and
  session window (gap 10 s).

The module is a PyFlink program with its imports moved from ``pyflink`` to ``lockgate``:
bench/peers/pyflink_nexmark.py runs it on PyFlink with them swapped back (and Nexmark's
records, from lockgate's connector, taken from its pure-Python model). So its state
descriptors declare their type (``PICKLED``: PyFlink needs one) and its
AggregateFunctions define ``merge`` (abstract in PyFlink). A job's workers need not import
it: whoever runs the queries registers it for pickling by value with their engine's
cloudpickle (bench/nexmark.py and its test do).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from lockgate.common import Time, Types
from lockgate.datastream import (
    AggregateFunction,
    DataStream,
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    ProcessWindowFunction,
    StreamExecutionEnvironment,
)
from lockgate.datastream.connectors.nexmark import Auction, Bid, Person
from lockgate.datastream.functions import ProcessAllWindowFunction
from lockgate.datastream.state import ListStateDescriptor, ValueStateDescriptor
from lockgate.datastream.window import (
    EventTimeSessionWindows,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
)

DOLLAR_TO_EURO = 0.908
Q2_AUCTION_SKIP = 123
Q3_STATES = ("OR", "ID", "CA")
Q3_CATEGORY = 10
PICKLED = Types.PICKLED_BYTE_ARRAY()  # the type of the states' values: Python objects


def bids(events: DataStream) -> DataStream:
    return events.filter(lambda e: isinstance(e, Bid)).name("bids")


def persons(events: DataStream) -> DataStream:
    return events.filter(lambda e: isinstance(e, Person)).name("persons")


def auctions(events: DataStream) -> DataStream:
    return events.filter(lambda e: isinstance(e, Auction)).name("auctions")


# q0-q2: stateless ---------------------------------------------------------------------------


def q0(env: StreamExecutionEnvironment, events: DataStream) -> DataStream:
    return bids(events).map(lambda bid: bid).name("q0 pass-through")


def q1(env: StreamExecutionEnvironment, events: DataStream) -> DataStream:
    return (
        bids(events)
        .map(lambda b: (b.auction, b.bidder, DOLLAR_TO_EURO * b.price, b.date_time, b.extra))
        .name("q1 dollars to euros")
    )


def q2(env: StreamExecutionEnvironment, events: DataStream) -> DataStream:
    return (
        bids(events)
        .filter(lambda b: b.auction % Q2_AUCTION_SKIP == 0)
        .map(lambda b: (b.auction, b.price))
        .name("q2 selection")
    )


# q3: a regular join ---------------------------------------------------------------------------


class SellerJoin(KeyedCoProcessFunction):
    """People (input 1) and the auctions they sell (input 2), by person id: an auction that
    arrives before its seller (Nexmark refers to people up to 10 ahead) waits for them."""

    def open(self, runtime_context: Any) -> None:
        self.person = runtime_context.get_state(ValueStateDescriptor("person", PICKLED))
        self.waiting = runtime_context.get_list_state(ListStateDescriptor("waiting", PICKLED))

    def process_element1(self, person: Person, ctx: Any) -> Iterable[Any]:
        self.person.update((person.name, person.city, person.state))
        for auction_id in self.waiting.get():
            yield (person.name, person.city, person.state, auction_id)
        self.waiting.clear()

    def process_element2(self, auction: Auction, ctx: Any) -> Iterable[Any]:
        person = self.person.value()
        if person is None:
            self.waiting.add(auction.id)
        else:
            yield (*person, auction.id)


def q3(env: StreamExecutionEnvironment, events: DataStream) -> DataStream:
    local = persons(events).filter(lambda p: p.state in Q3_STATES)
    category = auctions(events).filter(lambda a: a.category == Q3_CATEGORY)
    return (
        local.connect(category)
        .key_by(lambda p: p.id, lambda a: a.seller)
        .process(SellerJoin())
        .name("q3 local item suggestion")
    )


# q4: winning bids, averaged per category -----------------------------------------------------


class WinningBid(KeyedCoProcessFunction):
    """Auctions (input 1) and their bids (input 2), by auction id: the highest bid within
    the auction's lifetime, emitted as ``(auction, seller, category, price)`` when the
    watermark passes the auction's expiry (nothing for an auction without such a bid).
    Bids that arrive before their auction (Nexmark bids on auctions up to 10 ahead) wait
    for it."""

    def open(self, runtime_context: Any) -> None:
        self.auction = runtime_context.get_state(ValueStateDescriptor("auction", PICKLED))
        self.best = runtime_context.get_state(ValueStateDescriptor("best", PICKLED))
        self.waiting = runtime_context.get_list_state(ListStateDescriptor("waiting", PICKLED))

    def process_element1(self, auction: Auction, ctx: Any) -> None:
        self.auction.update((auction.seller, auction.category, auction.date_time, auction.expires))
        for date_time, price in self.waiting.get():
            self._offer(date_time, price)
        self.waiting.clear()
        ctx.timer_service().register_event_time_timer(auction.expires)

    def process_element2(self, bid: Bid, ctx: Any) -> None:
        if self.auction.value() is None:
            self.waiting.add((bid.date_time, bid.price))
        else:
            self._offer(bid.date_time, bid.price)

    def _offer(self, date_time: int, price: int) -> None:
        _, _, opens, expires = self.auction.value()
        best = self.best.value()
        if opens <= date_time <= expires and (best is None or price > best):
            self.best.update(price)

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[Any]:
        seller, category, _, _ = self.auction.value()
        best = self.best.value()
        self.auction.clear()
        self.best.clear()
        if best is not None:
            yield (ctx.get_current_key(), seller, category, best)


class CategoryAverage(KeyedProcessFunction):
    """Per category: the average of the winning prices so far, with their count."""

    def open(self, runtime_context: Any) -> None:
        self.totals = runtime_context.get_state(ValueStateDescriptor("totals", PICKLED))

    def process_element(self, winner: tuple[int, int, int, int], ctx: Any) -> Iterable[Any]:
        _, _, category, price = winner
        total, count = self.totals.value() or (0, 0)
        total, count = total + price, count + 1
        self.totals.update((total, count))
        yield (category, count, total / count)


def q4(env: StreamExecutionEnvironment, events: DataStream) -> DataStream:
    return (
        auctions(events)
        .connect(bids(events))
        .key_by(lambda a: a.id, lambda b: b.auction)
        .process(WinningBid())
        .key_by(lambda winner: winner[2])
        .process(CategoryAverage())
        .name("q4 average price per category")
    )


# q6: average selling price by seller ------------------------------------------------------


class SellerAverage(KeyedProcessFunction):
    """Per seller: the average winning price of their last ``last`` closed auctions, once
    per closed auction. Winners come from several subtasks in any order: they wait for the
    watermark to pass their time (the auction's expiry) and are taken in the order of
    expiry, then auction id."""

    def __init__(self, last: int):
        self.last = last

    def open(self, runtime_context: Any) -> None:
        self.waiting = runtime_context.get_list_state(ListStateDescriptor("waiting", PICKLED))
        self.prices = runtime_context.get_state(ValueStateDescriptor("prices", PICKLED))

    def process_element(self, winner: tuple[int, int, int, int], ctx: Any) -> None:
        auction, _, _, price = winner
        self.waiting.add((ctx.timestamp(), auction, price))
        ctx.timer_service().register_event_time_timer(ctx.timestamp())

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[Any]:
        waiting = sorted(self.waiting.get())
        due = [w for w in waiting if w[0] <= timestamp]
        self.waiting.update([w for w in waiting if w[0] > timestamp])
        prices = self.prices.value() or []
        for _, _, price in due:
            prices = [*prices, price][-self.last :]
            yield (ctx.get_current_key(), sum(prices) / len(prices))
        self.prices.update(prices)


def q6(env: StreamExecutionEnvironment, events: DataStream, last: int = 10) -> DataStream:
    return (
        auctions(events)
        .connect(bids(events))
        .key_by(lambda a: a.id, lambda b: b.auction)
        .process(WinningBid())
        .key_by(lambda winner: winner[1])
        .process(SellerAverage(last))
        .name("q6 average selling price by seller")
    )


# q5: hot items --------------------------------------------------------------------------------


class Count(AggregateFunction):
    """How many elements (merges, for session windows)."""

    def create_accumulator(self) -> int:
        return 0

    def add(self, value: Any, accumulator: int) -> int:
        return accumulator + 1

    def get_result(self, accumulator: int) -> int:
        return accumulator

    def merge(self, acc_a: int, acc_b: int) -> int:
        return acc_a + acc_b


class WithWindow(ProcessWindowFunction):
    """``(key, count, window start, window end)`` of a window's count."""

    def process(self, key: Any, context: Any, elements: Iterable[int]) -> Iterable[Any]:
        window = context.window()
        for count in elements:
            yield (key, count, window.start, window.end)


class MostBids(ProcessWindowFunction):
    """Of one sliding window's ``(auction, count, start, end)``: the auctions with the
    highest count, as ``(auction, count)``."""

    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterable[Any]:
        counts = list(elements)
        most = max(count for _, count, _, _ in counts)
        for auction, count, _, _ in counts:
            if count == most:
                yield (auction, count)


def q5(
    env: StreamExecutionEnvironment,
    events: DataStream,
    size_ms: int = 10_000,
    slide_ms: int = 2_000,
) -> DataStream:
    # A sliding window's counts carry its end - 1 as timestamp: the tumbling windows of
    # the slide, keyed by that end, gather one sliding window's counts each.
    return (
        bids(events)
        .key_by(lambda b: b.auction)
        .window(SlidingEventTimeWindows.of(Time.milliseconds(size_ms), Time.milliseconds(slide_ms)))
        .aggregate(Count(), WithWindow())
        .key_by(lambda counted: counted[3])
        .window(TumblingEventTimeWindows.of(Time.milliseconds(slide_ms)))
        .process(MostBids())
        .name("q5 hot items")
    )


# q7: highest bid ------------------------------------------------------------------------------


class HighestBids(AggregateFunction):
    """The highest price and the bids that offer it."""

    def create_accumulator(self) -> tuple[int, list[Bid]]:
        return (-1, [])

    def add(self, bid: Bid, accumulator: tuple[int, list[Bid]]) -> tuple[int, list[Bid]]:
        price, best = accumulator
        if bid.price > price:
            return (bid.price, [bid])
        if bid.price == price:
            return (price, [*best, bid])
        return accumulator

    def get_result(self, accumulator: tuple[int, list[Bid]]) -> list[Bid]:
        return accumulator[1]

    def merge(
        self, acc_a: tuple[int, list[Bid]], acc_b: tuple[int, list[Bid]]
    ) -> tuple[int, list[Bid]]:
        if acc_a[0] == acc_b[0]:
            return (acc_a[0], [*acc_a[1], *acc_b[1]])
        return max(acc_a, acc_b, key=lambda accumulator: accumulator[0])


class EachBid(ProcessAllWindowFunction):
    def process(self, context: Any, elements: Iterable[list[Bid]]) -> Iterable[Any]:
        for best in elements:
            for b in best:
                yield (b.auction, b.price, b.bidder, b.date_time, b.extra)


def q7(env: StreamExecutionEnvironment, events: DataStream, size_ms: int = 10_000) -> DataStream:
    return (
        bids(events)
        .window_all(TumblingEventTimeWindows.of(Time.milliseconds(size_ms)))
        .aggregate(HighestBids(), EachBid())
        .name("q7 highest bid")
    )


# q8: monitor new users ------------------------------------------------------------------------


class PersonAndAuction(AggregateFunction):
    """Of a person id's events in a window: the person's name (None: not there) and
    whether they opened an auction."""

    def create_accumulator(self) -> tuple[str | None, bool]:
        return (None, False)

    def add(self, value: Any, accumulator: tuple[str | None, bool]) -> tuple[str | None, bool]:
        name, sold = accumulator
        if isinstance(value, Person):
            return (value.name, sold)
        return (name, True)

    def get_result(self, accumulator: tuple[str | None, bool]) -> tuple[str | None, bool]:
        return accumulator

    def merge(
        self, acc_a: tuple[str | None, bool], acc_b: tuple[str | None, bool]
    ) -> tuple[str | None, bool]:
        return (acc_a[0] if acc_a[0] is not None else acc_b[0], acc_a[1] or acc_b[1])


class NewSeller(ProcessWindowFunction):
    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterable[Any]:
        for name, sold in elements:
            if name is not None and sold:
                yield (key, name, context.window().start)


def q8(env: StreamExecutionEnvironment, events: DataStream, size_ms: int = 10_000) -> DataStream:
    return (
        persons(events)
        .union(auctions(events))
        .key_by(lambda e: e.id if isinstance(e, Person) else e.seller)
        .window(TumblingEventTimeWindows.of(Time.milliseconds(size_ms)))
        .aggregate(PersonAndAuction(), NewSeller())
        .name("q8 monitor new users")
    )


# q11: user sessions ---------------------------------------------------------------------------


def q11(env: StreamExecutionEnvironment, events: DataStream, gap_ms: int = 10_000) -> DataStream:
    return (
        bids(events)
        .key_by(lambda b: b.bidder)
        .window(EventTimeSessionWindows.with_gap(Time.milliseconds(gap_ms)))
        .aggregate(Count(), WithWindow())
        .name("q11 user sessions")
    )


QUERIES: dict[str, Callable[..., DataStream]] = {
    "q0": q0,
    "q1": q1,
    "q2": q2,
    "q3": q3,
    "q4": q4,
    "q5": q5,
    "q6": q6,
    "q7": q7,
    "q8": q8,
    "q11": q11,
}
