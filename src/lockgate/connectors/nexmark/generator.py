"""Nexmark's event generator (after Apache Beam's and Flink's ``GeneratorConfig``,
``PersonGenerator``, ``AuctionGenerator`` and ``BidGenerator``), as a pure function of the
event's index: ``NexmarkGenerator(config).event(i)``.

The model:

- **Proportions**: of every 50 events (``TOTAL_PROPORTION``) the first is a person
  (``PERSON_PROPORTION = 1``), the next 3 auctions (``AUCTION_PROPORTION``) and the other 46
  bids (``BID_PROPORTION``); event ``i``'s kind is fixed by ``i % 50``.
- **Ids**: people and auctions are numbered in order of appearance from 1000
  (``FIRST_PERSON_ID``, ``FIRST_AUCTION_ID``); categories are 10 to 14.
- **Hot sellers, auctions and bidders**: an auction's seller is, with probability
  ``1 - 1/hot_sellers_ratio``, the first person of the latest batch of 100 people
  (``HOT_SELLER_RATIO``), otherwise one of the last ``num_active_people`` people (or up to
  10 ahead of them, people yet to come). A bid is, with probability
  ``1 - 1/hot_auction_ratio``, on the first auction of the latest batch of 100
  (``HOT_AUCTION_RATIO``), otherwise on one of the last ``num_in_flight_auctions`` auctions
  (or up to 10 ahead); its bidder is, with probability ``1 - 1/hot_bidders_ratio``, the
  second person of the latest batch of 100 (``HOT_BIDDER_RATIO``), otherwise a person
  chosen as sellers are.
- **Prices** are ``round(10 ** (6 u) * 100)`` cents for a uniform ``u``; a reserve is the
  initial bid plus such a price. An auction lasts a random time up to twice the event time
  that ``num_in_flight_auctions`` auctions take to arrive.
- **Channels**: half the bids come from one of four hot channels (Google, Facebook, Baidu,
  Apple) with their URLs, the others from ``channel-<n>`` for n below 10,000.
- **Event time**: event ``i`` happens at ``base_time + i * 1000 // events_per_second``
  milliseconds. A share ``out_of_order_share`` of the events (chosen by the event's own
  random numbers) is moved back by 1 to ``out_of_order_max_delay`` ms, so it arrives after
  events that are newer than it: a watermark that lags by ``out_of_order_max_delay`` (see
  ``watermark_strategy``) makes none of them late.
- **Sizes**: ``extra`` pads each event to the average byte sizes of Nexmark (person 200,
  auction 500, bid 100; configurable, 0 for none), with letters cut from one fixed random
  text rather than drawn one by one (the Python cost of a record matters more than the
  padding's content).

Each event's random numbers are a function of ``(seed, i)`` (``event_draws``: SplitMix64 of
a counter), as Nexmark seeds a generator with the event id: event ``i`` is a pure function
of the configuration and ``i``, so a source splits by index ranges and restores by offset,
and a range of events is generated at once (``NexmarkGenerator.events``). The numbers are
not Java's: the events follow Nexmark's distributions, not its exact values.
Strings, like the padding, are cut from one fixed random text of Nexmark's characters at a
random place and length.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass, fields

import numpy as np

from lockgate.connectors.nexmark.model import Auction, Bid, Event, Person

PERSON_PROPORTION = 1
AUCTION_PROPORTION = 3
BID_PROPORTION = 46
TOTAL_PROPORTION = PERSON_PROPORTION + AUCTION_PROPORTION + BID_PROPORTION

FIRST_PERSON_ID = 1000
FIRST_AUCTION_ID = 1000
FIRST_CATEGORY_ID = 10
NUM_CATEGORIES = 5

HOT_AUCTION_RATIO = 100
HOT_SELLER_RATIO = 100
HOT_BIDDER_RATIO = 100
PERSON_ID_LEAD = 10
AUCTION_ID_LEAD = 10

HOT_CHANNELS_RATIO = 2
CHANNELS_NUMBER = 10_000
HOT_CHANNELS = ("Google", "Facebook", "Baidu", "Apple")
HOT_URLS = tuple(
    f"https://www.nexmark.com/{name.lower()[:5]}/item.htm?query=1" for name in HOT_CHANNELS
)

US_STATES = ("AZ", "CA", "ID", "OR", "WA", "WY")
US_CITIES = (
    "Phoenix",
    "Los Angeles",
    "San Francisco",
    "Boise",
    "Portland",
    "Bend",
    "Redmond",
    "Seattle",
    "Kent",
    "Cheyenne",
)
FIRST_NAMES = (
    "Peter",
    "Paul",
    "Luke",
    "John",
    "Saul",
    "Vicky",
    "Kate",
    "Julie",
    "Sarah",
    "Deiter",
    "Walter",
)
LAST_NAMES = (
    "Shultz",
    "Abrams",
    "Spencer",
    "White",
    "Bartels",
    "Walton",
    "Smith",
    "Jones",
    "Noris",
)

MIN_STRING_LENGTH = 3
MAX_STRING_LENGTH = 100
# One space in 13 characters, as Nexmark's nextString
_STRING_TEXT = "".join(
    random.Random(1).choices(string.ascii_lowercase * 12 + " " * 26, k=MAX_STRING_LENGTH * 20)
)
MAX_BYTE_SIZE = 4096  # of an event's padding, and so of its average size
_PAD = "".join(random.Random(0).choices(string.ascii_lowercase, k=MAX_BYTE_SIZE * 6 // 5))


@dataclass(frozen=True)
class NexmarkConfig:
    """What the generator makes; the defaults are Nexmark's (``NexmarkConfiguration``)."""

    events: int  # how many events (the source is bounded)
    events_per_second: int = 10_000  # of event time
    base_time: int = 0  # event time of the first event, epoch ms
    seed: int = 0
    out_of_order_share: float = 0.0  # of the events, moved back in event time
    out_of_order_max_delay: int = 0  # ms, at most, that such an event is moved back
    hot_auction_ratio: int = 2
    hot_sellers_ratio: int = 4
    hot_bidders_ratio: int = 4
    num_active_people: int = 1000
    num_in_flight_auctions: int = 100
    avg_person_byte_size: int = 200
    avg_auction_byte_size: int = 500
    avg_bid_byte_size: int = 100

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if item.name == "out_of_order_share":
                if not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
                    raise ValueError(
                        f"nexmark: out_of_order_share must be in [0, 1], got {value!r}"
                    )
                continue
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"nexmark: {item.name} must be an integer, got {value!r}")
            least = 1 if item.name in _POSITIVE else 0
            if item.name != "base_time" and value < least:
                raise ValueError(f"nexmark: {item.name} must be >= {least}, got {value}")
        for name in ("avg_person_byte_size", "avg_auction_byte_size", "avg_bid_byte_size"):
            if getattr(self, name) > MAX_BYTE_SIZE:
                raise ValueError(
                    f"nexmark: {name} must be <= {MAX_BYTE_SIZE}, got {getattr(self, name)}"
                )
        if self.out_of_order_share > 0 and self.out_of_order_max_delay < 1:
            raise ValueError(
                "nexmark: out_of_order_share > 0 needs out_of_order_max_delay >= 1 (ms), "
                f"got {self.out_of_order_max_delay}"
            )


_POSITIVE = {
    "events_per_second",
    "hot_auction_ratio",
    "hot_sellers_ratio",
    "hot_bidders_ratio",
    "num_active_people",
    "num_in_flight_auctions",
}


def last_base0_person_id(event_id: int) -> int:
    """The 0-based id of the last person at or before event ``event_id``."""
    epoch, offset = divmod(event_id, TOTAL_PROPORTION)
    return epoch * PERSON_PROPORTION + min(offset, PERSON_PROPORTION - 1)


def last_base0_auction_id(event_id: int) -> int:
    """The 0-based id of the last auction at or before event ``event_id`` (-1: none yet)."""
    epoch, offset = divmod(event_id, TOTAL_PROPORTION)
    if offset < PERSON_PROPORTION:
        epoch -= 1
        offset = AUCTION_PROPORTION - 1
    elif offset >= PERSON_PROPORTION + AUCTION_PROPORTION:
        offset = AUCTION_PROPORTION - 1
    else:
        offset -= PERSON_PROPORTION
    return epoch * AUCTION_PROPORTION + offset


DRAWS_PER_EVENT = 16  # a person takes the most: 16
BATCH = 4096  # events a source generates together (numpy's per-call cost spread thin)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_TO_UNIT = 2.0**-53  # 53 random bits to a float in [0, 1)


def _splitmix64(z: np.ndarray) -> np.ndarray:
    """SplitMix64's output function, elementwise (wrapping uint64 arithmetic)."""
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    mixed: np.ndarray = z ^ (z >> np.uint64(31))
    return mixed


def event_draws(seed: int, start: int, stop: int) -> np.ndarray:
    """The uniform random numbers in [0, 1) of events ``start`` to ``stop - 1``, a row of
    ``DRAWS_PER_EVENT`` each: SplitMix64 of a counter (event index and draw number) offset
    by the seed. Counter-based, so event i's numbers do not depend on the range asked for,
    and a range's are computed at once: seeding a generator per event cost half of an
    event's generation."""
    offset = _splitmix64(np.array([seed & (2**64 - 1)], dtype=np.uint64) + _GOLDEN)
    counters = np.arange(start * DRAWS_PER_EVENT, stop * DRAWS_PER_EVENT, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = _splitmix64((counters + np.uint64(1)) * _GOLDEN + offset)
    return ((z >> np.uint64(11)).astype(np.float64) * _TO_UNIT).reshape(-1, DRAWS_PER_EVENT)


class EventDraws:
    """One event's random numbers, drawn one after another from its row of
    ``event_draws`` (for the kinds of event generated one by one: people, auctions)."""

    __slots__ = ("_left",)

    def __init__(self, row: list[float]):
        self._left = row[::-1]

    def random(self) -> float:
        return self._left.pop()

    def below(self, n: int) -> int:
        """A uniform integer in ``[0, n)``."""
        return int(self._left.pop() * n)


class NexmarkGenerator:
    """Event ``i`` of a configuration, computed from ``i`` alone; ``events`` gives a range of
    them at once, far cheaper per event than ``event`` (numpy's per-call cost)."""

    def __init__(self, config: NexmarkConfig):
        self.config = config
        # The event time that num_in_flight_auctions auctions take to arrive
        self._auction_events = config.num_in_flight_auctions * TOTAL_PROPORTION
        self._auction_events //= AUCTION_PROPORTION

    def timestamp(self, i: int) -> int:
        """Event ``i``'s event time before any out-of-order move."""
        return self.config.base_time + i * 1000 // self.config.events_per_second

    def event(self, i: int) -> Event:
        return self.events(i, i + 1)[0]

    def events(self, start: int, stop: int) -> list[Event]:
        """Events ``start`` to ``stop - 1``. Bids, 92% of them, are computed together
        (numpy); people and auctions one by one, from the same rows of draws."""
        config = self.config
        draws = event_draws(config.seed, start, stop)
        index = np.arange(start, stop, dtype=np.int64)
        timestamps = config.base_time + index * 1000 // config.events_per_second
        if config.out_of_order_share:
            late = draws[:, 0] < config.out_of_order_share
            delays = 1 + (draws[:, 1] * config.out_of_order_max_delay).astype(np.int64)
            timestamps = np.where(late, timestamps - delays, timestamps)
        bids = self._bids(index, draws, timestamps)
        rows = draws.tolist()
        out: list[Event] = []
        for position, i in enumerate(range(start, stop)):
            kind = i % TOTAL_PROPORTION
            if kind >= PERSON_PROPORTION + AUCTION_PROPORTION:
                out.append(bids[position])
                continue
            rng = EventDraws(rows[position][2:])  # 0 and 1: the out-of-order move
            timestamp = int(timestamps[position])
            if kind < PERSON_PROPORTION:
                out.append(self._person(i, rng, timestamp))
            else:
                out.append(self._auction(i, rng, timestamp))
        return out

    def _bids(self, index: np.ndarray, draws: np.ndarray, timestamps: np.ndarray) -> list[Bid]:
        """Every row as a bid (the rows of other kinds are dropped by the caller). Draws:
        2 hot auction, 3 auction, 4 hot bidder, 5 bidder, 6 price, 7 hot channel, 8 hot
        channel's name, 9 channel number, 10 and 11 padding."""
        config = self.config
        epoch = index // TOTAL_PROPORTION
        last_auction = epoch * AUCTION_PROPORTION + AUCTION_PROPORTION - 1
        least = np.maximum(last_auction - config.num_in_flight_auctions, 0)
        auction = np.where(
            (draws[:, 2] * config.hot_auction_ratio).astype(np.int64) > 0,
            last_auction // HOT_AUCTION_RATIO * HOT_AUCTION_RATIO,
            least + (draws[:, 3] * (last_auction - least + 1 + AUCTION_ID_LEAD)).astype(np.int64),
        )
        people = epoch * PERSON_PROPORTION + 1  # the last person's 0-based id, plus one
        active = np.minimum(people, config.num_active_people)
        bidder = np.where(
            (draws[:, 4] * config.hot_bidders_ratio).astype(np.int64) > 0,
            (people - 1) // HOT_BIDDER_RATIO * HOT_BIDDER_RATIO + 1,
            people - active + (draws[:, 5] * (active + PERSON_ID_LEAD)).astype(np.int64),
        )
        price = np.round(10.0 ** (draws[:, 6] * 6.0) * 100.0).astype(np.int64)
        hot = (draws[:, 7] * HOT_CHANNELS_RATIO).astype(np.int64) > 0
        channel = np.where(
            hot,
            (draws[:, 8] * len(HOT_CHANNELS)).astype(np.int64),
            len(HOT_CHANNELS) + (draws[:, 9] * CHANNELS_NUMBER).astype(np.int64),
        )
        wanted = config.avg_bid_byte_size - (8 + 8 + 8 + 8)
        if wanted > 0:
            delta = round(wanted * 0.2)
            size = wanted - delta + (draws[:, 10] * 2 * delta).astype(np.int64)
            begin = (draws[:, 11] * (len(_PAD) - size + 1)).astype(np.int64)
            extras = [_PAD[b : b + n] for b, n in zip(begin.tolist(), size.tolist(), strict=True)]
        else:
            extras = [""] * len(index)
        return [
            Bid(a + FIRST_AUCTION_ID, b + FIRST_PERSON_ID, p, *_channel(c), t, e)
            for a, b, p, c, t, e in zip(
                auction.tolist(),
                bidder.tolist(),
                price.tolist(),
                channel.tolist(),
                timestamps.tolist(),
                extras,
                strict=True,
            )
        ]

    def _person(self, i: int, rng: EventDraws, timestamp: int) -> Person:
        first = FIRST_NAMES[rng.below(len(FIRST_NAMES))]
        name = f"{first} {LAST_NAMES[rng.below(len(LAST_NAMES))]}"
        email = f"{_next_string(rng, 7)}@{_next_string(rng, 5)}.com"
        card = " ".join(f"{rng.below(10_000):04d}" for _ in range(4))
        city = US_CITIES[rng.below(len(US_CITIES))]
        state = US_STATES[rng.below(len(US_STATES))]
        size = 8 + len(name) + len(email) + len(card) + len(city) + len(state)
        extra = _next_extra(rng, size, self.config.avg_person_byte_size)
        person_id = last_base0_person_id(i) + FIRST_PERSON_ID
        return Person(person_id, name, email, card, city, state, timestamp, extra)

    def _auction(self, i: int, rng: EventDraws, timestamp: int) -> Auction:
        if rng.below(self.config.hot_sellers_ratio) > 0:
            seller = (last_base0_person_id(i) // HOT_SELLER_RATIO) * HOT_SELLER_RATIO
        else:
            seller = self._next_base0_person_id(i, rng)
        category = FIRST_CATEGORY_ID + rng.below(NUM_CATEGORIES)
        initial_bid = _next_price(rng)
        horizon = self.timestamp(i + self._auction_events) - self.timestamp(i)
        expires = timestamp + 1 + rng.below(max(horizon * 2, 1))
        name = _next_string(rng, 20)
        description = _next_string(rng, 100)
        reserve = initial_bid + _next_price(rng)
        size = 8 + len(name) + len(description) + 8 + 8 + 8 + 8 + 8
        extra = _next_extra(rng, size, self.config.avg_auction_byte_size)
        return Auction(
            last_base0_auction_id(i) + FIRST_AUCTION_ID,
            name,
            description,
            initial_bid,
            reserve,
            timestamp,
            expires,
            seller + FIRST_PERSON_ID,
            category,
            extra,
        )

    def _next_base0_person_id(self, i: int, rng: EventDraws) -> int:
        """One of the last ``num_active_people`` people, or of the next 10 to come."""
        people = last_base0_person_id(i) + 1
        active = min(people, self.config.num_active_people)
        return people - active + rng.below(active + PERSON_ID_LEAD)


def _channel(number: int) -> tuple[str, str]:
    """A bid's channel and URL: below len(HOT_CHANNELS), that hot channel; else the
    channel numbered ``number - len(HOT_CHANNELS)``."""
    if number < len(HOT_CHANNELS):
        return HOT_CHANNELS[number], HOT_URLS[number]
    number -= len(HOT_CHANNELS)
    return f"channel-{number}", f"https://www.nexmark.com/item.htm?query=1&channel_id={number}"


def _next_string(rng: EventDraws, max_length: int) -> str:
    length = MIN_STRING_LENGTH + rng.below(max_length - MIN_STRING_LENGTH)
    start = rng.below(len(_STRING_TEXT) - length + 1)
    return _STRING_TEXT[start : start + length].strip()


def _next_price(rng: EventDraws) -> int:
    price: float = 10.0 ** (rng.random() * 6.0) * 100.0
    return round(price)


def _next_extra(rng: EventDraws, current_size: int, average_size: int) -> str:
    """Padding that brings an event of ``current_size`` bytes to ``average_size`` on
    average (within +-20%)."""
    if current_size >= average_size:
        return ""
    wanted = average_size - current_size
    delta = round(wanted * 0.2)
    size = wanted - delta + (rng.below(2 * delta) if delta else 0)
    start = rng.below(len(_PAD) - size + 1)
    return _PAD[start : start + size]
