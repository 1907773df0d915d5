"""The Nexmark model: people, auctions and bids (Nexmark's ``Person``, ``Auction``, ``Bid``).

Each is a ``NamedTuple``: a tuple with names, so it pickles compactly, costs one allocation
on the per-record path and compares and hashes by value (tests compare multisets of them).
Fields are Nexmark's, in its order, in snake case (``emailAddress`` is ``email_address``,
``dateTime`` is ``date_time``); times are epoch milliseconds, prices cents (Nexmark's
``long``). Every event has ``date_time``, its event time.
"""

from __future__ import annotations

from typing import NamedTuple


class Person(NamedTuple):
    """A new person: a seller of auctions and a bidder (ids from 1000)."""

    id: int
    name: str
    email_address: str
    credit_card: str
    city: str
    state: str
    date_time: int
    extra: str


class Auction(NamedTuple):
    """A new auction of a seller (a person's id), open from ``date_time`` to ``expires``."""

    id: int
    item_name: str
    description: str
    initial_bid: int
    reserve: int
    date_time: int
    expires: int
    seller: int
    category: int
    extra: str


class Bid(NamedTuple):
    """A bid of ``bidder`` (a person's id) on ``auction`` (an auction's id)."""

    auction: int
    bidder: int
    price: int
    channel: str
    url: str
    date_time: int
    extra: str


Event = Person | Auction | Bid
