"""Storage: atomic writes through fsspec, URLs any process can open, read_url, and deletes
that never leave the storage's own tree."""

from __future__ import annotations

import uuid

import pytest

from lockgate.core.fs.storage import Storage, is_writable, read_url


@pytest.fixture
def memory_url():
    url = f"memory://lockgate-tests/{uuid.uuid4().hex}"
    yield url
    Storage(url).remove("")


def all_files(storage: Storage) -> list[str]:
    root = storage.root
    return sorted(path[len(root) + 1 :] for path in storage.fs.find(root))


# Paths and URLs -----------------------------------------------------------------------------------


def test_local_paths_are_turned_into_file_urls(tmp_path):
    storage = Storage(str(tmp_path))
    assert storage.url == str(tmp_path)
    assert storage.root == str(tmp_path)
    assert storage.path("a/b") == f"{tmp_path}/a/b"
    assert storage.path("") == str(tmp_path)
    assert storage.url_of("a/b") == f"file://{tmp_path}/a/b"
    assert storage.url_of("") == f"file://{tmp_path}"


def test_a_file_url_and_a_trailing_slash_give_the_same_root(tmp_path):
    plain, as_url = Storage(f"{tmp_path}/"), Storage(f"file://{tmp_path}")
    assert plain.root == as_url.root == str(tmp_path)
    assert plain.url_of("x") == as_url.url_of("x") == f"file://{tmp_path}/x"


def test_memory_urls(memory_url):
    storage = Storage(memory_url + "/")
    assert storage.url == memory_url
    assert storage.url_of("a/b").startswith("memory://")
    assert storage.url_of("a/b").endswith(memory_url.removeprefix("memory://") + "/a/b")


def test_child_is_a_storage_under_the_parent(memory_url):
    parent = Storage(memory_url)
    child = parent.child("job/chk-1")
    assert child.url == f"{memory_url}/job/chk-1"
    child.write_bytes("_metadata", b"m")
    assert parent.read_bytes("job/chk-1/_metadata") == b"m"
    assert child.url_of("_metadata") == parent.url_of("job/chk-1/_metadata")


# Writes -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["local", "memory"])
def test_write_and_read_bytes_create_parent_directories(kind, tmp_path, memory_url):
    storage = Storage(str(tmp_path) if kind == "local" else memory_url)
    storage.write_bytes("a/b/c/file.bin", b"\x00\x01payload")
    assert storage.read_bytes("a/b/c/file.bin") == b"\x00\x01payload"
    assert storage.exists("a/b/c/file.bin")
    assert storage.exists("a/b")
    assert not storage.exists("a/b/c/other")


@pytest.mark.parametrize("kind", ["local", "memory"])
def test_writes_leave_no_temporary_files(kind, tmp_path, memory_url):
    storage = Storage(str(tmp_path) if kind == "local" else memory_url)
    storage.write_bytes("d/one", b"1")
    storage.write_bytes("d/one", b"11")
    storage.write_json("d/two.json", {"k": [1, 2]})
    assert all_files(storage) == ["d/one", "d/two.json"]
    assert storage.read_bytes("d/one") == b"11"


def test_a_write_goes_to_a_hidden_temporary_name_first(tmp_path, monkeypatch):
    storage = Storage(str(tmp_path))
    moves = []
    real_mv = storage.fs.mv

    def spy(source, target, **kwargs):
        moves.append((source, target, storage.fs.cat_file(source)))
        return real_mv(source, target, **kwargs)

    monkeypatch.setattr(storage.fs, "mv", spy)
    storage.write_bytes("dir/_metadata", b"complete")
    [(source, target, data)] = moves
    assert target == f"{tmp_path}/dir/_metadata"
    assert source.rsplit("/", 1)[0] == f"{tmp_path}/dir"  # same directory: a rename
    assert source.rsplit("/", 1)[1].startswith("._metadata.")
    assert source.endswith(".tmp")
    assert data == b"complete"  # fully written before it becomes visible


def test_a_failed_write_never_exposes_a_partial_file(tmp_path, monkeypatch):
    storage = Storage(str(tmp_path))
    storage.write_bytes("_metadata", b"old and complete")

    def broken_mv(source, target, **kwargs):
        raise OSError("disk went away")

    monkeypatch.setattr(storage.fs, "mv", broken_mv)
    with pytest.raises(OSError, match="disk went away"):
        storage.write_bytes("_metadata", b"new")
    assert storage.read_bytes("_metadata") == b"old and complete"
    visible = [name for name in storage.list("") if not name.startswith(".")]
    assert visible == ["_metadata"]


def test_json_round_trip(memory_url):
    storage = Storage(memory_url)
    value = {"epoch": 3, "acks": [{"vertex": 0, "state": None}], "text": "é"}
    storage.write_json("plan.json", value)
    assert storage.read_json("plan.json") == value
    assert b" " not in storage.read_bytes("plan.json")  # compact


# Listing and removal ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["local", "memory"])
def test_list_gives_sorted_names_and_nothing_for_a_missing_directory(kind, tmp_path, memory_url):
    storage = Storage(str(tmp_path) if kind == "local" else memory_url)
    for name in ["chk-2/_metadata", "chk-10/_metadata", "shared/x", "taskowned/.keep"]:
        storage.write_bytes(name, b"")
    assert storage.list("") == ["chk-10", "chk-2", "shared", "taskowned"]
    assert storage.list("chk-2") == ["_metadata"]
    assert storage.list("missing") == []


@pytest.mark.parametrize("kind", ["local", "memory"])
def test_remove_files_and_trees_and_ignore_missing(kind, tmp_path, memory_url):
    storage = Storage(str(tmp_path) if kind == "local" else memory_url)
    storage.write_bytes("tree/a/b", b"1")
    storage.write_bytes("tree/c", b"2")
    storage.write_bytes("keep", b"3")
    storage.remove("tree/c")
    assert not storage.exists("tree/c")
    assert storage.exists("tree/a/b")
    storage.remove("tree")
    assert not storage.exists("tree")
    storage.remove("tree")  # already gone: no error
    storage.remove("never-existed")
    assert storage.list("") == ["keep"]


@pytest.mark.parametrize("kind", ["local", "memory"])
def test_read_url_and_discard_take_url_of(kind, tmp_path, memory_url):
    storage = Storage(str(tmp_path) if kind == "local" else memory_url)
    storage.write_bytes("chk-1/_metadata", b"meta")
    storage.write_bytes("chk-1/own", b"own")
    assert read_url(storage.url_of("chk-1/_metadata")) == b"meta"
    storage.discard(storage.url_of("chk-1/own"))
    assert storage.list("chk-1") == ["_metadata"]
    storage.discard(storage.url_of("chk-1/own"))  # idempotent
    with pytest.raises(FileNotFoundError):
        read_url(storage.url_of("chk-1/own"))


def test_discarding_the_last_file_of_a_directory_removes_the_directory(tmp_path):
    """Per-version directories go with their last file: a job that runs for a month must
    not leave one empty directory per epoch behind."""
    storage = Storage(f"file://{tmp_path}/shared")
    storage.write_bytes("op/0/e1-a1/MANIFEST", b"m")
    storage.write_bytes("op/0/e1-a1/OPTIONS", b"o")
    storage.write_bytes("op/0/e2-a2/MANIFEST", b"m")
    storage.discard(storage.url_of("op/0/e1-a1/MANIFEST"))
    assert storage.list("op/0") == ["e1-a1", "e2-a2"]  # OPTIONS is still there
    storage.discard(storage.url_of("op/0/e1-a1/OPTIONS"))
    assert storage.list("op/0") == ["e2-a2"]
    storage.prune("op/0")  # not empty: kept
    assert storage.list("op") == ["0"]
    storage.prune("")  # never the tree itself
    assert (tmp_path / "shared").is_dir()


def test_read_url_accepts_a_plain_local_path(tmp_path):
    (tmp_path / "f").write_bytes(b"plain")
    assert read_url(str(tmp_path / "f")) == b"plain"


@pytest.mark.parametrize(
    "outside",
    [
        "{tmp}/other/f",
        "{tmp}/shared-but-not-under/f",
        "{tmp}/shared",
        "memory://{tmp}/shared/f",
        "{tmp}/shared/../other/f",
        "file://{tmp}/shared/op/../../other/f",
        "file://{tmp}/shared/op/../f",  # inside by its letters; a link 'op' leads elsewhere
        "file://{tmp}/shared/./f",
    ],
)
def test_discard_refuses_urls_outside_its_tree(tmp_path, outside):
    storage = Storage(f"file://{tmp_path}/shared")
    victim = tmp_path / "other" / "f"
    victim.parent.mkdir()
    victim.write_text("not the job's")
    url = outside.format(tmp=tmp_path)
    assert storage.relative_of(url) is None
    with pytest.raises(ValueError, match="not deleting"):
        storage.discard(url)
    assert victim.exists()


def test_is_writable(tmp_path, memory_url):
    assert is_writable(str(tmp_path / "new" / "dir"))
    assert [p.name for p in (tmp_path / "new" / "dir").iterdir()] == []  # probe removed
    assert is_writable(memory_url)
    blocker = tmp_path / "a-file"
    blocker.write_bytes(b"")
    assert not is_writable(str(blocker / "below"))


def test_the_writability_probe_removes_only_its_own_file(tmp_path):
    other = tmp_path / ".probe-of-another-process"
    other.write_text("")
    assert is_writable(str(tmp_path))
    assert [p.name for p in tmp_path.iterdir()] == [other.name]


def test_a_url_is_inside_whatever_thread_made_the_storage(tmp_path):
    """fsspec makes one instance of a file system per thread: they are one file system."""
    import threading

    made: list[Storage] = []
    thread = threading.Thread(target=lambda: made.append(Storage(f"file://{tmp_path}/out")))
    thread.start()
    thread.join()
    assert made[0].relative_of(f"file://{tmp_path}/out/part-0") == "part-0"
