"""Nexmark's queries written with lockgate's DataStream API (see ``queries``)."""
