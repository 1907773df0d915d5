"""commit_part: FileSink's committer makes a pending part visible, can be repeated, and never
replaces a file."""

from __future__ import annotations

import uuid
from pathlib import Path

import fsspec
import pytest

from lockgate.connectors.file.committable import PartCommittable, commit_part
from lockgate.connectors.file.committer import FileCommitter
from lockgate.connectors.file.sink import SinkError


def local(tmp_path, name: str = "part-6f1c2a3e-3", bucket: str = ""):
    directory = tmp_path / bucket if bucket else tmp_path
    directory.mkdir(parents=True, exist_ok=True)
    pending = directory / f".{name}.inprogress.{uuid.uuid4().hex}"
    final = directory / name
    return pending, final


def committable(pending, final, data: bytes, epoch: int = 1, to=str) -> PartCommittable:
    return PartCommittable(epoch, to(pending), to(final), len(data))


@pytest.mark.parametrize("as_url", [True, False])
def test_commit_moves_the_pending_file_to_its_final_name(tmp_path, as_url):
    pending, final = local(tmp_path)
    pending.write_bytes(b"1\n2\n3\n")
    to = (lambda p: f"file://{p}") if as_url else str
    commit_part(committable(pending, final, b"1\n2\n3\n", to=to))
    assert final.read_bytes() == b"1\n2\n3\n"
    assert not pending.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["part-6f1c2a3e-3"]


def test_commit_is_idempotent_when_already_committed(tmp_path):
    pending, final = local(tmp_path, bucket="2024-01-01--10")
    pending.write_bytes(b"data\n")
    part = committable(pending, final, b"data\n", epoch=2)
    commit_part(part)
    commit_part(part)
    FileCommitter(str(tmp_path)).commit(part.to_json())  # as the driver does, from the checkpoint
    assert final.read_bytes() == b"data\n"
    assert not pending.exists()


def test_a_recommit_after_the_link_but_before_the_unlink_removes_the_pending_file(tmp_path):
    pending, final = local(tmp_path)
    pending.write_bytes(b"same\n")
    final.write_bytes(b"same\n")  # committed, and the process died before removing pending
    commit_part(committable(pending, final, b"same\n"))
    assert final.read_bytes() == b"same\n"
    assert not pending.exists()


def test_a_recommit_after_a_partial_copy_takes_the_pending_file(tmp_path):
    pending, final = local(tmp_path)
    pending.write_bytes(b"complete\n")
    final.write_bytes(b"compl")  # an earlier, interrupted commit on a copying file system
    commit_part(committable(pending, final, b"complete\n"))
    assert final.read_bytes() == b"complete\n"
    assert not pending.exists()


def test_a_final_name_holding_other_content_is_never_replaced(tmp_path):
    pending, final = local(tmp_path)
    pending.write_bytes(b"new output\n")
    final.write_bytes(b"committed by another run\n")
    with pytest.raises(SinkError) as info:
        commit_part(committable(pending, final, b"new output\n"))
    message = str(info.value)
    assert str(final) in message and "never replaced" in message, message
    assert final.read_bytes() == b"committed by another run\n"
    assert pending.exists(), "the pending file stays for the user to inspect"


def test_a_committed_file_of_another_size_is_not_taken_for_this_part(tmp_path):
    pending, final = local(tmp_path)
    final.write_bytes(b"somebody else's part\n")
    with pytest.raises(SinkError, match="other content"):
        commit_part(committable(pending, final, b"short\n"))


def test_a_missing_pending_and_final_file_raise_sink_error_naming_both(tmp_path):
    pending, final = local(tmp_path)
    with pytest.raises(SinkError) as info:
        commit_part(committable(pending, final, b"", to=lambda p: f"file://{p}"))
    assert str(info.value) == (
        f"FileSink cannot commit file://{final}: its pending file file://{pending} is gone"
    )
    assert not final.exists()


@pytest.mark.parametrize(
    "raw", [[1, "a", "b"], {"epoch": 1, "pending": "a"}, {"epoch": "x", "pending": "a"}, None]
)
def test_a_damaged_committable_is_a_sink_error_naming_it(raw, tmp_path):
    with pytest.raises(SinkError, match="not a FileSink committable"):
        FileCommitter(str(tmp_path)).commit(raw)


def test_sink_error_is_a_runtime_error():
    assert issubclass(SinkError, RuntimeError)


def test_the_committer_names_the_staged_file_of_a_committable(tmp_path):
    pending, final = local(tmp_path)
    part = committable(pending, final, b"x")
    assert FileCommitter(str(tmp_path)).staged_files(part.to_json()) == [str(pending)]


def test_commit_on_a_memory_file_system():
    fs = fsspec.filesystem("memory")
    root = f"/lockgate-tests/{uuid.uuid4().hex}"
    pending, final = f"memory://{root}/.part-a-0.inprogress.x", f"memory://{root}/part-a-0"
    part = PartCommittable(1, pending, final, len(b"memory\n"))
    try:
        fs.pipe(pending, b"memory\n")
        commit_part(part)
        assert fs.cat(final) == b"memory\n"
        assert not fs.exists(pending)
        commit_part(part)  # again: nothing to do
        fs.rm(final)
        with pytest.raises(SinkError, match="part-a-0"):
            commit_part(part)
    finally:
        if fs.exists(root):
            fs.rm(root, recursive=True)


def test_several_committables_commit_independently(tmp_path):
    parts = [local(tmp_path, f"part-6f1c2a3e-{n}") for n in range(3)]
    for n, (pending, _) in enumerate(parts):
        pending.write_text(f"{n}\n")
    committables = [committable(p, f, f"{n}\n".encode()) for n, (p, f) in enumerate(parts)]
    commit_part(committables[1])  # one committed before a failure
    for part in committables:  # recovery commits all again
        commit_part(part)
    assert [f.read_text() for _, f in parts] == ["0\n", "1\n", "2\n"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"part-6f1c2a3e-{n}" for n in range(3)]


@pytest.mark.parametrize(
    ("pending", "final"),
    [
        ("{out}/.part-0.inprogress.1", "{elsewhere}/part-0"),  # outside the base path
        ("{elsewhere}/.part-0.inprogress.1", "{out}/part-0"),
        ("{out}/.part-0.inprogress.1", "{out}/../elsewhere/part-0"),
        ("{out}/a/.part-0.inprogress.1", "{out}/b/part-0"),  # another directory
        ("{out}/.other.inprogress.1", "{out}/part-0"),  # not this part's pending file
        ("{out}/part-1", "{out}/part-0"),  # a committed file as the pending one
        ("{out}/..part-0.inprogress.1", "{out}/.part-0"),  # a hidden final name
    ],
)
def test_a_committable_naming_files_outside_the_sink_commits_nothing(tmp_path, pending, final):
    """Committables come from a checkpoint: one crafted to move files the sink does not own
    is refused, naming both files, and nothing moves."""
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    for directory in (out / "a", out / "b", elsewhere):
        directory.mkdir(parents=True)
    pending, final = (
        pending.format(out=out, elsewhere=elsewhere),
        final.format(out=out, elsewhere=elsewhere),
    )
    Path(pending).write_bytes(b"x")
    part = PartCommittable(1, pending, final, 1)

    with pytest.raises(SinkError, match="not committed"):
        FileCommitter(str(out)).commit(part.to_json())

    assert Path(pending).read_bytes() == b"x"
    assert not Path(final).exists()
