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

Each event draws its random numbers from a keyed hash of ``(seed, i)`` (``EventDraws``), as
Nexmark seeds a generator with the event id: event ``i`` is a pure function of the
configuration and ``i``, so a source splits by index ranges and restores by offset. The
numbers are not Java's: the events follow Nexmark's distributions, not its exact values.
Strings, like the padding, are cut from one fixed random text of Nexmark's characters at a
random place and length.
"""

from __future__ import annotations

import hashlib
import random
import string
import struct
from dataclasses import dataclass, fields

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


_SIXTEEN_WORDS = struct.Struct("<16I").unpack
_TO_UNIT = 2.0**-32  # 32 random bits to a float in [0, 1): finer than any draw here needs


class EventDraws:
    """One event's uniform random numbers in [0, 1): sixteen from each BLAKE2b hash of the
    event's index (and a block number, for an event that needs more), keyed by the seed.
    Seeding a Mersenne Twister per event cost about half of an event's generation."""

    __slots__ = ("_block", "_index", "_key", "_left")

    def __init__(self, seed: int):
        self._key = str(seed).encode()[:64]  # BLAKE2b's longest key
        self._index = 0
        self._block = 0
        self._left: list[float] = []

    def start(self, index: int) -> None:
        """The draws of event ``index``, from its first."""
        self._index = index
        self._block = 0
        self._left = self._hash()

    def _hash(self) -> list[float]:
        data = self._index.to_bytes(8, "little") + self._block.to_bytes(4, "little")
        words = _SIXTEEN_WORDS(hashlib.blake2b(data, digest_size=64, key=self._key).digest())
        return [word * _TO_UNIT for word in words]

    def random(self) -> float:
        left = self._left
        if not left:
            self._block += 1
            left = self._left = self._hash()
        return left.pop()

    def below(self, n: int) -> int:
        """A uniform integer in ``[0, n)``."""
        left = self._left
        if not left:
            self._block += 1
            left = self._left = self._hash()
        return int(left.pop() * n)


class NexmarkGenerator:
    """Event ``i`` of a configuration, computed from ``i`` alone."""

    def __init__(self, config: NexmarkConfig):
        self.config = config
        self._rng = EventDraws(config.seed)
        # The event time that num_in_flight_auctions auctions take to arrive
        self._auction_events = config.num_in_flight_auctions * TOTAL_PROPORTION
        self._auction_events //= AUCTION_PROPORTION

    def timestamp(self, i: int) -> int:
        """Event ``i``'s event time before any out-of-order move."""
        return self.config.base_time + i * 1000 // self.config.events_per_second

    def event(self, i: int) -> Event:
        config = self.config
        rng = self._rng
        rng.start(i)
        timestamp = self.timestamp(i)
        if config.out_of_order_share and rng.random() < config.out_of_order_share:
            timestamp -= 1 + rng.below(config.out_of_order_max_delay)
        kind = i % TOTAL_PROPORTION
        if kind < PERSON_PROPORTION:
            return self._person(i, rng, timestamp)
        if kind < PERSON_PROPORTION + AUCTION_PROPORTION:
            return self._auction(i, rng, timestamp)
        return self._bid(i, rng, timestamp)

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

    def _bid(self, i: int, rng: EventDraws, timestamp: int) -> Bid:
        config = self.config
        if rng.below(config.hot_auction_ratio) > 0:
            auction = (last_base0_auction_id(i) // HOT_AUCTION_RATIO) * HOT_AUCTION_RATIO
        else:
            last = last_base0_auction_id(i)
            least = max(last - config.num_in_flight_auctions, 0)
            auction = least + rng.below(last - least + 1 + AUCTION_ID_LEAD)
        if rng.below(config.hot_bidders_ratio) > 0:
            bidder = (last_base0_person_id(i) // HOT_BIDDER_RATIO) * HOT_BIDDER_RATIO + 1
        else:
            bidder = self._next_base0_person_id(i, rng)
        price = _next_price(rng)
        if rng.below(HOT_CHANNELS_RATIO) > 0:
            hot = rng.below(len(HOT_CHANNELS))
            channel, url = HOT_CHANNELS[hot], HOT_URLS[hot]
        else:
            number = rng.below(CHANNELS_NUMBER)
            channel = f"channel-{number}"
            url = f"https://www.nexmark.com/item.htm?query=1&channel_id={number}"
        extra = _next_extra(rng, 8 + 8 + 8 + 8, config.avg_bid_byte_size)
        return Bid(
            auction + FIRST_AUCTION_ID,
            bidder + FIRST_PERSON_ID,
            price,
            channel,
            url,
            timestamp,
            extra,
        )

    def _next_base0_person_id(self, i: int, rng: EventDraws) -> int:
        """One of the last ``num_active_people`` people, or of the next 10 to come."""
        people = last_base0_person_id(i) + 1
        active = min(people, self.config.num_active_people)
        return people - active + rng.below(active + PERSON_ID_LEAD)


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
