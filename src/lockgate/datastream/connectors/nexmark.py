"""The Nexmark source and its records (lockgate's own; PyFlink has none)."""

from lockgate.connectors.nexmark.generator import NexmarkConfig, NexmarkGenerator
from lockgate.connectors.nexmark.model import Auction, Bid, Event, Person
from lockgate.connectors.nexmark.source import NexmarkSource

__all__ = [
    "Auction",
    "Bid",
    "Event",
    "NexmarkConfig",
    "NexmarkGenerator",
    "NexmarkSource",
    "Person",
]
