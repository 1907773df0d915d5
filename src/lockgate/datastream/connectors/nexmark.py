"""The Nexmark source and its records (lockgate's own; PyFlink has none)."""

from lockgate.connectors.nexmark import (
    Auction,
    Bid,
    Event,
    NexmarkConfig,
    NexmarkGenerator,
    NexmarkSource,
    Person,
)

__all__ = [
    "Auction",
    "Bid",
    "Event",
    "NexmarkConfig",
    "NexmarkGenerator",
    "NexmarkSource",
    "Person",
]
