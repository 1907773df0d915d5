"""commit_part: FileSink's committer makes a pending part visible, and can be repeated."""

from __future__ import annotations

import uuid

import fsspec
import pytest

from lockgate.connectors.file_sink import SinkError, commit_part


def local(tmp_path, name: str = "part-sink-0-3", bucket: str = ""):
    directory = tmp_path / bucket if bucket else tmp_path
    directory.mkdir(parents=True, exist_ok=True)
    pending = directory / f".{name}.inprogress.{uuid.uuid4().hex}"
    final = directory / name
    return pending, final


@pytest.mark.parametrize("as_url", [True, False])
def test_commit_moves_the_pending_file_to_its_final_name(tmp_path, as_url):
    pending, final = local(tmp_path)
    pending.write_bytes(b"1\n2\n3\n")
    to = (lambda p: f"file://{p}") if as_url else str
    commit_part([4, to(pending), to(final)])
    assert final.read_bytes() == b"1\n2\n3\n"
    assert not pending.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["part-sink-0-3"]


def test_commit_is_idempotent_when_already_committed(tmp_path):
    pending, final = local(tmp_path, bucket="2024-01-01--10")
    pending.write_bytes(b"data\n")
    committable = [2, f"file://{pending}", f"file://{final}"]
    commit_part(committable)
    commit_part(committable)
    commit_part(list(committable))
    assert final.read_bytes() == b"data\n"
    assert not pending.exists()


def test_a_recommit_after_a_partial_copy_takes_the_pending_file(tmp_path):
    pending, final = local(tmp_path)
    pending.write_bytes(b"complete\n")
    final.write_bytes(b"compl")  # an earlier, interrupted commit on a copying file system
    commit_part([1, str(pending), str(final)])
    assert final.read_bytes() == b"complete\n"
    assert not pending.exists()


def test_a_missing_pending_and_final_file_raise_sink_error_naming_both(tmp_path):
    pending, final = local(tmp_path)
    with pytest.raises(SinkError) as info:
        commit_part([7, f"file://{pending}", f"file://{final}"])
    assert str(info.value) == (
        f"FileSink cannot commit file://{final}: its pending file file://{pending} is gone"
    )
    assert not final.exists()


def test_sink_error_is_a_runtime_error():
    assert issubclass(SinkError, RuntimeError)


def test_commit_on_a_memory_file_system():
    fs = fsspec.filesystem("memory")
    root = f"/lockgate-tests/{uuid.uuid4().hex}"
    pending, final = f"memory://{root}/.part-a-0-0.inprogress.x", f"memory://{root}/part-a-0-0"
    try:
        fs.pipe(pending, b"memory\n")
        commit_part([1, pending, final])
        assert fs.cat(final) == b"memory\n"
        assert not fs.exists(pending)
        commit_part([1, pending, final])  # again: nothing to do
        fs.rm(final)
        with pytest.raises(SinkError, match="part-a-0-0"):
            commit_part([1, pending, final])
    finally:
        if fs.exists(root):
            fs.rm(root, recursive=True)


def test_several_committables_commit_independently(tmp_path):
    parts = [local(tmp_path, f"part-s-0-{n}") for n in range(3)]
    for n, (pending, _) in enumerate(parts):
        pending.write_text(f"{n}\n")
    committables = [[1, str(p), str(f)] for p, f in parts]
    commit_part(committables[1])  # one committed before a failure
    for committable in committables:  # recovery commits all again
        commit_part(committable)
    assert [f.read_text() for _, f in parts] == ["0\n", "1\n", "2\n"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"part-s-0-{n}" for n in range(3)]
