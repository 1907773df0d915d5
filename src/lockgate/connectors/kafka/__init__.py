"""Kafka: topic partitions read as splits whose offsets live in the checkpoint."""
