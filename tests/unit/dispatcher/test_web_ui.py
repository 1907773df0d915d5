"""The Dispatcher's Web UI in a real browser: Debian's Chromium, driven by Playwright, on a
Dispatcher (uvicorn in a thread) whose job store the test writes (no Spark): a running job
with epochs, checkpoints, failures and watermarks, whose driver is this test (it holds the
job's lock), and a finished one.

Each page is checked through its DOM and through its screenshot, which the browser itself
decodes (a canvas of the PNG): the picture must hold the colours of what the page draws
(status badges, chart bars), not one flat colour. Pillow would do the same and is not a
dependency of the project.
"""

from __future__ import annotations

import base64
import contextlib
import os
import re
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from fastapi.testclient import TestClient
from playwright.sync_api import Browser, Page, expect, sync_playwright

from lockgate.common.watermark_strategy import LONG_MAX, LONG_MIN
from lockgate.dispatcher.dispatcher import Dispatcher
from lockgate.dispatcher.home import DispatcherHome
from lockgate.dispatcher.job_store import (
    JobCommand,
    JobFiles,
    JobOutcome,
    JobStore,
    JobSubmission,
    TriggerOutcome,
    now_ms,
    write_record,
)
from lockgate.dispatcher.rest.app import create_app
from lockgate.runtime.jobmaster.job_report import (
    CheckpointCounts,
    CheckpointingReport,
    CheckpointReport,
    EpochReport,
    FailureReport,
    JobReport,
    OperatorReport,
    VertexInput,
    VertexReport,
)

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
RUNNING = "0123456789abcdef0123456789abcdef"
FINISHED = "fedcba9876543210fedcba9876543210"
# user data, which the page must show as text
RUNNING_NAME = 'fraud <i>rules</i> & "alerts"'
TRACE = "Traceback (most recent call last):\n  <script>boom()</script>\nValueError: bad <b>row</b>"
EPOCHS = 6  # epoch n reads 1000 n records in 500 ms: 2000 n records/s
SPARK_UI = "http://127.0.0.1:4040"
EVENT_TIME = 1_700_000_000_000
# colours of style.css that the pages draw: status badges, bars (RGB)
RUNNING_BADGE = (0xDC, 0xF2, 0xE4)
FINISHED_BADGE = (0xDD, 0xE8, 0xF8)
BAR = (0x2F, 0x5F, 0xB3)
FAILED_BAR = (0xC0, 0x39, 0x2B)


def vertices() -> list[VertexReport]:
    """A source chain, a keyed count behind a shuffle, and a sink chained apart by a forward
    edge (so in the count's stage)."""
    return [
        VertexReport(
            0,
            "a" * 32,
            "Source: events -> parse",
            1,
            128,
            [OperatorReport("events", "Source: events"), OperatorReport("parse", "parse")],
            [],
        ),
        VertexReport(
            1,
            "b" * 32,
            "count",
            2,
            128,
            [OperatorReport("count", "count")],
            [VertexInput(0, "HASH")],
        ),
        VertexReport(
            2,
            "c" * 32,
            "Sink: alerts",
            2,
            128,
            [OperatorReport("alerts", "Sink: alerts")],
            [VertexInput(1, "FORWARD")],
        ),
    ]


def checkpoint(number: int, status: str, size: int, written: int) -> CheckpointReport:
    completed = status == "COMPLETED"
    return CheckpointReport(
        number,
        number * 2,
        status,
        now_ms() - 1000,
        30.0 * number,
        size,
        written,
        {"count": size - 1024, "parse": 1024, "alerts": 0} if completed else {},
        f"file:///ck/x/chk-{number}" if completed else None,
        None if completed else "checkpoint 2 expired before it completed",
    )


def report(job_id: str, name: str, status: str, savepoint_dir: str | None) -> JobReport:
    configuration = {"restart-strategy.type": "fixed-delay"}
    if savepoint_dir is not None:
        configuration["execution.checkpointing.savepoint-dir"] = savepoint_dir
    return JobReport(
        job_id=job_id,
        job_name=name,
        status=status,
        start_time_ms=now_ms() - 60_000,
        end_time_ms=None,
        written_ms=now_ms(),
        spark_app_id="local-1",
        spark_ui=SPARK_UI,
        vertices=vertices(),
        epochs=[
            EpochReport(n, now_ms(), 1000 * n, 500.0, 2048 * n, 10 * n, n)
            for n in range(1, EPOCHS + 1)
        ],
        checkpointing=CheckpointingReport(
            500,
            "EXACTLY_ONCE",
            600000,
            0,
            0,
            2,
            "RETAIN_ON_CANCELLATION",
            "file:///ck/x",
            "rocksdb",
            True,
        ),
        checkpoint_counts=CheckpointCounts(2, 1, 0),
        checkpoints=[
            checkpoint(1, "COMPLETED", 2048, 2048),
            checkpoint(2, "FAILED", 0, 0),
            checkpoint(3, "COMPLETED", 4096, 1536),
        ],
        restored_from=None,
        failures=[
            FailureReport(now_ms() - 30_000, "builtins.ValueError", "bad", TRACE),
            FailureReport(now_ms() - 20_000, "builtins.KeyError", "'k'", "KeyError: 'k'"),
        ],
        restarts=1,
        configuration=configuration,
        watermarks={"parse": LONG_MAX, "count": EVENT_TIME, "alerts": LONG_MIN},
        metrics=[],
    )


def add_job(
    store: JobStore, job_id: str, name: str, status: str, attempts: int, savepoint_dir: str | None
) -> JobFiles:
    files = store.create(JobSubmission(job_id, "job.py", [], {}, now_ms() - 61_000), b"pass\n")
    for _ in range(attempts):
        attempt = files.new_attempt(job_id, None)
    write_record(attempt.report_path, report(job_id, name, status, savepoint_dir))
    if status == "FINISHED":
        files.end(JobOutcome("FINISHED", now_ms(), "its input ended"))
    return files


@dataclass
class Served:
    url: str
    token: str
    running: JobFiles
    savepoint_dir: Path


@contextlib.contextmanager
def dispatcher_server(home: DispatcherHome, loopback: bool) -> Iterator[str]:
    """The Dispatcher's app served by uvicorn in a thread, on a free port of 127.0.0.1."""
    app = create_app(
        lambda loop: Dispatcher(home.path, 1 << 20, loop), home.token(), loopback, 1 << 20
    )
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    server = uvicorn.Server(uvicorn.Config(app, log_config=None))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the Dispatcher did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        listener.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: apt-get install chromium (make test installs it)")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("web-ui")
    home = DispatcherHome(root / "home")
    with dispatcher_server(home, loopback=True) as url:
        # written once the Dispatcher has started, so that it resumes none of them
        store = JobStore(home.path)
        running = add_job(store, RUNNING, RUNNING_NAME, "RUNNING", 3, str(root / "sp"))
        lock = running.hold_lock()
        add_job(store, FINISHED, "daily totals", "FINISHED", 1, None)
        try:
            yield Served(url, home.token(), running, root / "sp")
        finally:
            os.close(lock)


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A tab of its own (its own sessionStorage: no token); fails the test on a script error
    or a blocked resource."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    problems: list[str] = []
    tab.on("pageerror", lambda error: problems.append(str(error)))
    tab.on(
        "console",
        lambda message: (
            problems.append(message.text) if "Content Security Policy" in message.text else None
        ),
    )
    yield tab
    context.close()
    assert not problems, problems


# The browser decodes the PNG; the colours of its pixels, counted
DECODE_PNG = """async (data) => {
  const image = new Image();
  image.src = "data:image/png;base64," + data;
  await image.decode();
  const canvas = document.createElement("canvas");
  canvas.width = image.width;
  canvas.height = image.height;
  const context = canvas.getContext("2d");
  context.drawImage(image, 0, 0);
  const rgba = context.getImageData(0, 0, image.width, image.height).data;
  const counts = new Map();
  for (let i = 0; i < rgba.length; i += 4) {
    const key = (rgba[i] << 16) | (rgba[i + 1] << 8) | rgba[i + 2];
    counts.set(key, (counts.get(key) || 0) + 1);
  }
  return { width: image.width, height: image.height, counts: [...counts] };
}"""


def check_screenshot(
    browser: Browser, page: Page, path: Path, colours: list[tuple[int, int, int]]
) -> None:
    """The page's screenshot, saved at ``path``, is the whole page and shows ``colours``
    (areas of at least 200 pixels each) among many others."""
    png = page.screenshot(path=str(path), full_page=True)
    decoder = browser.new_page()
    try:
        picture: dict[str, Any] = decoder.evaluate(DECODE_PNG, base64.b64encode(png).decode())
    finally:
        decoder.close()
    size = page.evaluate(
        "[document.documentElement.scrollWidth, document.documentElement.scrollHeight]"
    )
    assert [picture["width"], picture["height"]] == size
    counts: dict[int, int] = dict(picture["counts"])
    assert len(counts) > 50, f"{path.name} has {len(counts)} colours: a blank page?"
    for colour in colours:
        red, green, blue = colour
        found = counts.get(red << 16 | green << 8 | blue, 0)
        assert found >= 200, f"{path.name} has {found} pixels of {colour}"


def use_token(page: Page, token: str) -> None:
    page.fill("#token", token)
    page.click("#token-form button[type=submit]")
    expect(page.locator("#token-state")).to_have_text("set for this tab")


def test_the_job_list_shows_each_job_and_its_state(
    served: Served, browser: Browser, page: Page, tmp_path: Path
) -> None:
    page.goto(f"{served.url}/")
    expect(page.locator("#jobs tr.job")).to_have_count(2)
    running = page.locator(f'#jobs tr[data-jid="{RUNNING}"]')
    expect(running.locator("a")).to_have_text(RUNNING_NAME)
    expect(running.locator(".status")).to_have_text("RUNNING")
    expect(page.locator(f'#jobs tr[data-jid="{FINISHED}"] .status')).to_have_text("FINISHED")
    expect(page.locator("#jobs i")).to_have_count(0)  # the name's markup stayed text
    expect(page.locator("#overview")).to_have_text(
        "1 running · 1 finished · 0 cancelled · 0 failed"
    )
    check_screenshot(browser, page, tmp_path / "jobs.png", [RUNNING_BADGE, FINISHED_BADGE])
    running.locator("a").click()
    expect(page).to_have_url(f"{served.url}/#/jobs/{RUNNING}")
    expect(page.locator("#job-name")).to_have_text(RUNNING_NAME)


def test_the_job_page_shows_tasks_epochs_checkpoints_state_watermarks_and_failures(
    served: Served, browser: Browser, page: Page, tmp_path: Path
) -> None:
    page.goto(f"{served.url}/#/jobs/{RUNNING}")
    expect(page.locator("#job-name")).to_have_text(RUNNING_NAME)
    expect(page.locator("#job-head .status")).to_have_text("RUNNING")
    spark = page.locator("#spark-ui")
    expect(spark).to_have_attribute("href", SPARK_UI)
    expect(spark).to_have_attribute("target", "_blank")

    tasks = page.locator("#task-graph g.task")
    expect(tasks).to_have_count(3)
    shown = [tasks.nth(i).locator("text").all_text_contents() for i in range(3)]
    assert shown == [
        [
            "Source: events -> parse",
            "parallelism 1 · max 128 · stage 1",
            "Source: events",
            "events",
            "parse",
            "parse",
        ],
        ["count", "parallelism 2 · max 128 · stage 2", "count", "count"],
        ["Sink: alerts", "parallelism 2 · max 128 · stage 2", "Sink: alerts", "alerts"],
    ]
    expect(page.locator("#task-graph path.edge")).to_have_count(2)
    expect(page.locator("#task-graph path.edge.shuffle")).to_have_count(1)
    assert page.locator("#task-graph .edge-label").all_text_contents() == ["HASH", "FORWARD"]

    rates = page.locator("#throughput-chart rect.bar title")
    expect(rates).to_have_count(EPOCHS)
    assert rates.all_text_contents() == [
        f"epoch {n}: records/s {2 * n}K" for n in range(1, EPOCHS + 1)
    ]
    latencies = page.locator("#latency-chart circle.point title")
    expect(latencies).to_have_count(EPOCHS)
    assert set(latencies.all_text_contents()) == {
        f"epoch {n}: duration 500 ms" for n in range(1, EPOCHS + 1)
    }

    rows = page.locator("#checkpoint-table tbody tr")
    expect(rows).to_have_count(3)
    assert [rows.nth(i).get_attribute("data-id") for i in range(3)] == ["3", "2", "1"]
    newest = rows.nth(0).locator("td").all_text_contents()
    assert newest == [
        "3",
        "6",
        "COMPLETED",
        newest[3],
        "90 ms",
        "4.00 KiB",
        "1.50 KiB",
        "file:///ck/x/chk-3",
    ]
    expect(rows.nth(1)).to_have_class("checkpoint failed")
    expect(rows.nth(1)).to_contain_text("checkpoint 2 expired before it completed")
    expect(page.locator("#checkpoint-duration-chart rect.bar")).to_have_count(3)
    expect(page.locator("#checkpoint-duration-chart rect.bar.failed")).to_have_count(1)
    expect(page.locator("#checkpoint-size-chart rect.bar")).to_have_count(6)

    state = page.locator("#state-table tbody tr")
    expect(state).to_have_count(2)
    assert [
        (state.nth(i).get_attribute("data-uid"), state.nth(i).locator("td").nth(3).inner_text())
        for i in range(2)
    ] == [("count", "3.00 KiB"), ("parse", "1.00 KiB")]
    expect(page.locator("#state")).to_contain_text("In checkpoint 3 (epoch 6)")

    watermarks = {
        row.get_attribute("data-uid"): row.locator("td").all_text_contents()[3:]
        for row in page.locator("#watermark-table tbody tr").all()
    }
    assert watermarks.keys() == {"events", "parse", "count", "alerts"}
    assert watermarks["events"] == ["none yet", ""]
    assert watermarks["alerts"] == ["none yet", ""]
    assert watermarks["parse"] == ["end of event time", ""]
    assert re.fullmatch(r"2023-11-1[45] \d\d:\d\d:20\.000", watermarks["count"][0])
    assert watermarks["count"][1] == str(EVENT_TIME)

    expect(page.locator("#restarts")).to_have_text(
        "Restarts: 3 (1 by the job's restart strategy in its current driver, 2 with a new "
        "driver; 3 driver attempts)."
    )
    failures = page.locator("#exceptions li.exception")
    expect(failures).to_have_count(2)
    assert failures.locator("strong").all_text_contents() == [
        "builtins.KeyError",
        "builtins.ValueError",
    ]
    expect(failures.nth(1).locator("summary")).to_have_text("ValueError: bad <b>row</b>")
    assert failures.nth(1).locator("pre").text_content() == TRACE
    expect(page.locator("#exceptions script, #exceptions b")).to_have_count(0)

    check_screenshot(browser, page, tmp_path / "job.png", [RUNNING_BADGE, BAR, FAILED_BAR])


def test_savepoint_and_stop_need_the_token_and_reach_the_jobs_driver(
    served: Served, page: Page
) -> None:
    attempt = served.running.latest_attempt()
    assert attempt is not None
    page.goto(f"{served.url}/#/jobs/{RUNNING}")
    expect(page.locator("#job-name")).to_have_text(RUNNING_NAME)
    latest = page.locator("#operations li").first

    page.click("#savepoint")
    expect(latest).to_contain_text("Savepoint: 401: missing token")
    expect(latest).to_have_class("error")
    use_token(page, "wrong")
    page.click("#savepoint")
    expect(latest).to_contain_text("Savepoint: 401: missing or wrong token")
    expect(page.locator("#operations li")).to_have_count(2)
    assert not list(attempt.commands.iterdir())

    use_token(page, served.token)
    page.click("#savepoint")
    expect(latest).to_contain_text("Savepoint: in progress")
    [path] = list(attempt.commands.iterdir())
    command = JobCommand.decode(path.read_bytes(), str(path))
    assert (command.kind, command.target_directory) == ("savepoint", str(served.savepoint_dir))
    write_record(
        attempt.triggers / f"{command.trigger_id}.json",
        TriggerOutcome(command.trigger_id, "COMPLETED", "file:///sp/savepoint-1", None),
    )
    expect(latest).to_contain_text("Savepoint: completed: file:///sp/savepoint-1")
    expect(latest).to_have_class("ok")

    target = served.savepoint_dir.parent / "stopped"
    page.fill("#target-directory", str(target))
    page.check("#drain")
    page.click("#stop")  # the confirmation, dismissed: nothing is sent
    expect(page.locator("#operations li")).to_have_count(3)
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#stop")
    expect(latest).to_contain_text("Stop with savepoint: in progress")
    [stop] = [
        JobCommand.decode(p.read_bytes(), str(p))
        for p in attempt.commands.iterdir()
        if p.stem != command.trigger_id
    ]
    assert (stop.kind, stop.target_directory, stop.drain) == ("stop", str(target), True)
    write_record(
        attempt.triggers / f"{stop.trigger_id}.json",
        TriggerOutcome(stop.trigger_id, "FAILED", None, "the checkpoint of its epoch failed"),
    )
    expect(latest).to_contain_text(
        "failed: java.lang.RuntimeException: the checkpoint of its epoch failed"
    )
    expect(latest).to_have_class("error")


def test_cancelling_a_finished_job_shows_the_dispatchers_refusal(
    served: Served, browser: Browser, page: Page, tmp_path: Path
) -> None:
    page.goto(f"{served.url}/#/jobs/{FINISHED}")
    expect(page.locator("#job-name")).to_have_text("daily totals")
    expect(page.locator("#job-head")).to_contain_text(f"{SPARK_UI} (gone with the job's driver)")
    expect(page.locator("#spark-ui")).to_have_count(0)
    use_token(page, served.token)
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#cancel")
    latest = page.locator("#operations li").first
    expect(latest).to_contain_text(f"Cancel: 409: job {FINISHED} is not running: it is FINISHED")
    expect(latest).to_have_class("error")
    check_screenshot(browser, page, tmp_path / "finished.png", [FINISHED_BADGE, BAR])


def test_off_loopback_the_page_asks_for_the_token_and_then_reads_with_it(
    browser: Browser, page: Page, tmp_path: Path
) -> None:
    home = DispatcherHome(tmp_path / "home")
    with dispatcher_server(home, loopback=False) as url:
        add_job(JobStore(home.path), FINISHED, "daily totals", "FINISHED", 1, None)
        page.goto(f"{url}/")
        expect(page.locator("#banner")).to_contain_text("401: missing token")
        expect(page.locator("#jobs tr.job")).to_have_count(0)
        use_token(page, home.token())
        expect(page.locator("#jobs tr.job")).to_have_count(1)
        expect(page.locator("#banner")).to_be_hidden()


def test_the_page_and_its_files_are_served_without_the_token_under_a_strict_policy(
    tmp_path: Path,
) -> None:
    home = DispatcherHome(tmp_path / "home")
    app = create_app(lambda loop: Dispatcher(home.path, 1 << 20, loop), home.token(), False, 4096)
    with TestClient(app) as client:
        index = client.get("/")
        assert index.status_code == 200
        assert index.headers["content-type"] == "text/html; charset=utf-8"
        policy = index.headers["content-security-policy"]
        assert "script-src 'self'" in policy and "connect-src 'self'" in policy
        assert '<script src="web/app.js"' in index.text
        script = client.get("/web/app.js")
        assert script.headers["content-type"].startswith("text/javascript")
        assert client.get("/web/style.css").headers["content-type"].startswith("text/css")
        for path in ("/web/__init__.py", "/web/index.html", "/web/", "/web/x/app.js"):
            missing = client.get(path)
            assert missing.status_code == 404, path
            assert missing.json() == {"errors": [f"Not found: {path}"]}
        assert client.get("/v1/jobs/overview").status_code == 401  # the API still needs it
        paths = set(
            client.get("/openapi.json", headers={"Authorization": f"Bearer {home.token()}"}).json()[
                "paths"
            ]
        )
        assert not {"/", "/web/{name}"} & paths
    # every string reaches the page as text: the script never parses markup
    for parser in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert parser not in script.text, parser
