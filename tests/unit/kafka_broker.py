"""A Kafka-protocol broker for the tests: noida-db's binary (from PyPI, a dev dependency),
started on 127.0.0.1 on a free port with its own data directory.

It implements transactions and read_committed, but it is one node without replication, and
it does not enforce ``transaction.timeout.ms``: what the tests prove of exactly-once holds
for one broker, not for a replicated cluster.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import time
import uuid
from importlib import resources
from pathlib import Path

_LISTENING = re.compile(rb"kafka\s+(127\.0\.0\.1:\d+)")


class KafkaBroker:
    def __init__(self) -> None:
        self.data_dir = Path(tempfile.mkdtemp(prefix="lockgate-kafka-"))
        self.process: subprocess.Popen[bytes] | None = None
        self.bootstrap_servers = ""
        self.port = 0

    def start(self) -> KafkaBroker:
        binary = resources.files("noida_db") / "noida-db"
        command = [str(binary), "start", "--data-dir", str(self.data_dir), "--host", "127.0.0.1"]
        command += ["--only", "kafka", "--kafka-port", str(self.port)]
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True
        )
        assert self.process.stdout is not None
        deadline = time.monotonic() + 20
        output = b""
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line and self.process.poll() is not None:
                break
            output += line
            found = _LISTENING.search(line)
            if found:
                self.bootstrap_servers = found.group(1).decode()
                self.port = int(self.bootstrap_servers.rpartition(":")[2])
                return self
        raise RuntimeError(f"the Kafka broker did not start: {output.decode(errors='replace')}")

    def stop(self) -> None:
        """Stop the broker (SIGTERM); its data stays, so ``start`` brings it back."""
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.data_dir, ignore_errors=True)

    def create_topic(self, partitions: int, name: str | None = None) -> str:
        from confluent_kafka.admin import AdminClient, NewTopic

        topic = name or f"t-{uuid.uuid4().hex[:10]}"
        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers})
        for future in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
            future.result(30)
        return topic

    def produce(
        self,
        topic: str,
        records: list[tuple[int, bytes | None]],
        timestamps: list[int] | None = None,
    ) -> None:
        """``records``: (partition, value) each, produced in order and flushed."""
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": self.bootstrap_servers, "linger.ms": 0})
        for index, (partition, value) in enumerate(records):
            extra = {"timestamp": timestamps[index]} if timestamps else {}
            producer.produce(topic, value=value, partition=partition, **extra)
        assert producer.flush(30) == 0

    def read(
        self, topic: str, partitions: int, committed: bool = False
    ) -> list[tuple[bytes | None, str, int]]:
        """(key, value, partition) of every record of ``topic``, up to each partition's end
        (``committed``: as a read_committed consumer sees them)."""
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap_servers,
                "group.id": "check",
                "enable.partition.eof": True,
                "isolation.level": "read_committed" if committed else "read_uncommitted",
            }
        )
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        found: list[tuple[bytes | None, str, int]] = []
        ended: set[int] = set()
        try:
            while len(ended) < partitions:
                message = consumer.poll(10)
                assert message is not None, f"{topic}: no end of partition after {len(found)}"
                if message.error():
                    ended.add(message.partition())
                    continue
                found.append((message.key(), message.value().decode(), message.partition()))
        finally:
            consumer.close()
        return found
