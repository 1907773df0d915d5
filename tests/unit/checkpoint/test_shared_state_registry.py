"""SharedStateRegistry: a state file lives while a subtask's live state or a retained
checkpoint names it, and only the job's own files are ever deleted."""

from __future__ import annotations

from lockgate.checkpoint.shared_state_registry import SharedStateRegistry
from lockgate.core.fs.storage import Storage


def setup(tmp_path, *names):
    storage = Storage(f"file://{tmp_path}/shared")
    for name in names:
        storage.write_bytes(name, b"x")
    return SharedStateRegistry(storage), {name: storage.url_of(name) for name in names}


def exists(url: str) -> bool:
    return Storage(url).exists("")


def test_a_file_goes_when_the_last_holder_lets_go(tmp_path):
    registry, url = setup(tmp_path, "a.sst", "b.sst", "c.sst")
    registry.hold(("live", 1, 0), [url["a.sst"], url["b.sst"]])
    registry.hold(("checkpoint", 1), [url["a.sst"], url["b.sst"]])
    registry.hold(("live", 1, 0), [url["a.sst"], url["c.sst"]])  # compaction replaced b
    assert exists(url["b.sst"])  # checkpoint 1 still names it
    registry.release(("checkpoint", 1))
    assert not exists(url["b.sst"])
    assert exists(url["a.sst"]) and exists(url["c.sst"])
    assert registry.referenced() == {url["a.sst"], url["c.sst"]}


def test_live_state_is_held_per_subtask(tmp_path):
    registry, url = setup(tmp_path, "a.sst", "b.sst")
    registry.hold_live({(1, 0): [url["a.sst"]], (1, 1): [url["a.sst"], url["b.sst"]]})
    registry.release_live([(1, 1)])
    assert exists(url["a.sst"]) and not exists(url["b.sst"])
    registry.release_live([(1, 0)])
    assert not exists(url["a.sst"])


def test_holding_the_same_files_again_changes_nothing(tmp_path):
    registry, url = setup(tmp_path, "a.sst")
    registry.hold("live", [url["a.sst"]])
    registry.hold("live", [url["a.sst"]])
    registry.release("live")
    assert not exists(url["a.sst"])
    assert registry.referenced() == set()


def test_files_outside_the_state_directory_are_never_deleted(tmp_path):
    registry, _ = setup(tmp_path)
    foreign = Storage(f"file://{tmp_path}/other-job/shared")
    foreign.write_bytes("f.sst", b"not ours")
    registry.hold("live", [foreign.url_of("f.sst")])  # restored in NO_CLAIM mode
    registry.release("live")
    assert foreign.exists("f.sst")


def test_sweep_deletes_what_no_holder_names(tmp_path):
    registry, url = setup(tmp_path, "kept.sst", "op/0/failed-attempt.lgks")
    registry.hold("checkpoint", [url["kept.sst"]])
    registry.sweep()
    assert exists(url["kept.sst"])
    assert not exists(url["op/0/failed-attempt.lgks"])


def test_sweep_of_a_directory_never_written_does_nothing(tmp_path):
    registry, _ = setup(tmp_path)
    registry.sweep()
    assert not (tmp_path / "shared").exists()
