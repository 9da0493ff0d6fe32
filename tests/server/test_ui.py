"""The web UI in a real browser: Debian's Chromium, headless, driven by Playwright, against a real
``chronomem serve`` on 127.0.0.1 over a real SQLite file, logged in with real keys.

Skipped when Chromium or Playwright is missing, except in CI (``CI=true``), where that fails:
``make test`` installs Chromium (``apt-get install chromium``) on a machine that lacks it.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from chronomem import Memory, SimClock
from chronomem.clock import to_micros
from chronomem.llm.scripted import ScriptedLLM
from chronomem.server.keys import create_key
from chronomem.stores import open_store
from tests.server.service import running

pytestmark = pytest.mark.browser

START = datetime(2025, 3, 1, 9, tzinfo=UTC)
SUPERSEDED = START + timedelta(days=20)
NOW = START + timedelta(days=220)
CHROMIUM = os.environ.get("CHRONOMEM_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"


def _unavailable(what: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI needs {what} for the browser tests")
    pytest.skip(f"no {what}")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright")
    if not Path(CHROMIUM).exists():
        _unavailable(f"Chromium at {CHROMIUM}")
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


def unit(*values: float) -> list[float]:
    norm = math.sqrt(sum(v * v for v in values))
    return [v / norm for v in values]


@dataclass(frozen=True)
class Site:
    url: str
    db: Path
    keys: dict[str, str]  # read, write (space "a"), other (admin of space "b")
    ids: dict[str, str]


def _scene(db: Path) -> dict[str, str]:
    """Space "a": a developer assistant whose install instruction was replaced on day 20, a
    pin rated down, and a drought that led to a riot through rising prices."""
    clock = SimClock(START)
    with Memory.open(db, embedder=None, clock=clock, space="a") as mem:
        npm = mem.remember("Install packages with npm", agent="dev", kind="instruction",
                           importance=6, embedding=unit(1, 0, 0, 0.1)).id  # fmt: skip
        pin = mem.remember("Pin libfoo to 2.1", agent="dev", kind="instruction", importance=5,
                           embedding=unit(0, 0.2, 1, 0)).id  # fmt: skip
        clock.set(SUPERSEDED)
        pnpm = mem.supersede(npm, "Install packages with pnpm, not npm", agent="dev",
                             reason="the monorepo moved to pnpm", actor="ana",
                             embedding=unit(1, 0.05, 0, 0.1)).id  # fmt: skip
        mem.feedback(pin, "harmful", "the pin blocked a security fix")
        drought = mem.add_event("the spring drought", occurred_at=START, embedding=unit(0, 0, 0, 1))
        prices = mem.add_event("grain prices doubled", occurred_at=START + timedelta(days=5),
                               embedding=unit(0, 0, 0.3, 1))  # fmt: skip
        riot = mem.add_event("a riot at the granary", kind="crisis",
                             occurred_at=START + timedelta(days=9),
                             embedding=unit(0, 0.2, 0.3, 1))  # fmt: skip
        mem.link(drought.id, prices.id, 0.8)
        mem.link(prices.id, riot.id, 0.7)
        mem.remember("bread costs twice what it did", agent="tom", event_id=prices.id,
                     embedding=unit(0, 0.6, 1, 0.3))  # fmt: skip
        said = mem.remember_messages(
            [{"role": "user", "content": "I keep bees on the roof."}], agent="dev"
        )[0].id
        extracted = mem.extract(
            "dev",
            llm=ScriptedLLM([
                json.dumps({"memories": [{"op": "ADD", "text": "The user keeps bees",
                                          "turns": [1]}]})
            ]),
        ).applied[0].record_id  # fmt: skip
    with Memory.open(db, embedder=None, clock=SimClock(START), space="b") as other:
        other.remember("a secret of space b", agent="eve", embedding=unit(1, 1, 0, 0))
    return {"npm": str(npm), "pnpm": str(pnpm), "pin": str(pin), "riot": riot.id,
            "prices": prices.id, "drought": drought.id, "turn": str(said),
            "extracted": str(extracted)}  # fmt: skip


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    db = tmp_path / "ui.db"
    ids = _scene(db)
    store = open_store(db)
    keys = {
        "read": create_key(store, space="a", scope="read", label="reader", now=START)[1],
        "write": create_key(store, space="a", scope="write", label="curator", now=START)[1],
        "other": create_key(store, space="b", scope="admin", label="b-admin", now=START)[1],
        "empty": create_key(store, space="c", scope="read", label="c-reader", now=START)[1],
    }
    store.close()
    with running(db, embedder=None) as (url, spaces):
        spaces.admin.set_space_clock("a", to_micros(NOW))
        yield Site(url, db, keys, ids)


def _login(browser: Any, site: Site, key: str, path: str, width: int = 1280) -> Any:
    page = browser.new_page(viewport={"width": width, "height": 800})
    page.goto(f"{site.url}/ui/login?next={path}")
    page.fill("#key", site.keys[key])
    page.click("#login")
    page.wait_for_load_state()
    return page


def _slide(page: Any, at: datetime) -> None:
    """Move the as-of control to ``at`` as a person would (input, then change)."""
    page.eval_on_selector(
        "#as-of",
        "(el, s) => { el.value = s; el.dispatchEvent(new Event('input'));"
        " el.dispatchEvent(new Event('change')); }",
        str(int(at.timestamp())),
    )
    page.wait_for_selector("#timeline[aria-busy='false']")


def _texts(page: Any, selector: str) -> list[str]:
    return [t.strip() for t in page.locator(selector).all_inner_texts()]


def test_the_as_of_control_shows_what_the_agent_knew_then(browser: Any, site: Site) -> None:
    page = _login(browser, site, "read", "/ui/spaces/a?agent=dev")
    shown = "#records li.record .text"
    assert "Install packages with pnpm, not npm" in _texts(page, shown)
    assert "Install packages with npm" not in _texts(page, shown)

    _slide(page, SUPERSEDED - timedelta(days=10))
    assert "Install packages with npm" in _texts(page, shown)
    assert "Install packages with pnpm, not npm" not in _texts(page, shown)
    assert "2025-03-11" in page.inner_text("#as-of-label")
    assert "as_of=2025-03-11" in page.url  # the instant is in the address, to share

    _slide(page, SUPERSEDED + timedelta(days=1))
    assert "Install packages with npm" not in _texts(page, shown)
    assert "1 closed or superseded by then (hidden)" in page.inner_text("#timeline-summary")
    page.check("#history")
    page.wait_for_selector("li.record[data-state='superseded']")
    superseded = page.locator("li.record[data-state='superseded'] .text").all_inner_texts()
    assert superseded == ["Install packages with npm"]
    page.close()


def _slider(page: Any) -> dict[str, Any]:
    """The as-of control as the page shows it: its ends and value (instants), the labels."""
    found = page.eval_on_selector(
        "#as-of",
        """el => ({min: Number(el.min), max: Number(el.max), value: Number(el.value),
                   valuetext: el.getAttribute('aria-valuetext'),
                   first: document.getElementById('as-of-first').textContent,
                   last: document.getElementById('as-of-last').textContent,
                   label: document.getElementById('as-of-label').textContent})""",
    )
    for end in ("min", "max", "value"):
        found[end] = datetime.fromtimestamp(found[end], UTC)
    return found


def _minute(at: datetime) -> str:
    return at.strftime("%Y-%m-%d %H:%M UTC")


def test_the_as_of_control_spans_the_space_s_records_and_names_their_dates(
    browser: Any, site: Site
) -> None:
    """Space "a" was recorded from START (dev's first instructions) to SUPERSEDED (tom's record,
    dev's replacement), and its clock reads NOW, seven months on: the control runs over the
    records (every agent's, tom's being all recorded at SUPERSEDED), not over the months since."""
    page = _login(browser, site, "read", "/ui/spaces/a?agent=tom")
    control = _slider(page)
    first, last = control["min"], control["max"]
    assert START - timedelta(days=1) < first < START  # the first record is seen to appear
    assert SUPERSEDED < last < SUPERSEDED + timedelta(days=1)
    assert (SUPERSEDED - START) / (last - first) > 0.9
    assert control["first"] == _minute(first)
    assert control["last"] == _minute(last)
    assert control["label"] == _minute(NOW) + " (now)"

    page.select_option("#agent", "dev")
    page.wait_for_selector("#timeline[aria-busy='false']")
    assert _slider(page)["min"] == first  # the space's span, whichever agent
    _slide(page, first)
    assert "Nothing recorded by then" in page.inner_text("#records")
    assert _slider(page)["label"] == _slider(page)["valuetext"] == _minute(first)
    _slide(page, START + timedelta(minutes=1))
    assert "Install packages with npm" in _texts(page, "#records li.record .text")
    _slide(page, last)
    assert "Install packages with pnpm, not npm" in _texts(page, "#records li.record .text")
    assert _slider(page)["label"] == _minute(last)
    page.close()


@pytest.mark.parametrize("key", ["other", "empty"])
def test_a_space_of_one_instant_or_none_gets_an_hour_either_side(
    browser: Any, site: Site, key: str
) -> None:
    """Space "b" holds one record, of START, and its clock is the real one (today, far from
    it); space "c" holds nothing: the control spans an hour either side of the one record, or
    of now."""
    page = _login(browser, site, key, "/ui")
    control = _slider(page)
    now = datetime.now(UTC)
    assert control["label"].endswith(" (now)")
    shown = datetime.strptime(control["label"], "%Y-%m-%d %H:%M UTC (now)").replace(tzinfo=UTC)
    assert abs(shown - now) < timedelta(minutes=2)
    if key == "other":
        assert (control["min"], control["max"]) == (START - timedelta(hours=1),
                                                    START + timedelta(hours=1))  # fmt: skip
        assert control["value"] == control["max"]  # today lies beyond the data
    else:
        assert control["min"] < now < control["max"]
        span = control["max"] - control["min"]
        assert timedelta(hours=2) <= span <= timedelta(hours=2, minutes=1)  # to whole minutes
        assert "Nothing recorded by then" in page.inner_text("#records")
    assert control["first"] == _minute(control["min"])
    assert control["last"] == _minute(control["max"])
    page.close()


LONG = "\n".join(
    f"Step {i}: migrate shard {i} of the orders table, then compare its row counts"
    for i in range(40)
)

_FOLD = """li => { const text = li.querySelector('.fold');
    const toggle = li.querySelector('.fold-toggle');
    return {height: text.clientHeight, full: text.scrollHeight,
            line: parseFloat(getComputedStyle(text).lineHeight), id: text.id,
            toggle: toggle && {text: toggle.textContent, expanded: toggle.ariaExpanded,
                               controls: toggle.getAttribute('aria-controls'),
                               focused: document.activeElement === toggle}}; }"""


def test_a_long_record_folds_to_its_first_lines_and_opens_from_the_keyboard(
    browser: Any, site: Site
) -> None:
    clock = SimClock(START + timedelta(days=1))
    with Memory.open(site.db, embedder=None, clock=clock, space="a") as mem:
        long_id = mem.remember(LONG, agent="dev", kind="instruction", embedding=unit(0, 1, 0, 1)).id
    page = _login(browser, site, "read", "/ui/spaces/a?agent=dev")
    item = page.locator(f"li.record[data-id='{long_id}']")
    folded = item.evaluate(_FOLD)
    assert folded["height"] <= 4.5 * folded["line"]  # the first four lines
    assert folded["full"] >= 40 * folded["line"]  # of forty
    assert item.locator(".meta .id").inner_text() == long_id  # which record it is stays in view
    assert item.locator(".meta .when").inner_text() == "2025-03-02 09:00"
    assert item.locator(".meta .kind").inner_text() == "instruction"
    for part in (".meta .id", ".meta .when", ".meta .kind"):
        assert item.locator(part).is_visible()
    assert item.locator(".fold").inner_text().startswith("Step 0: migrate shard 0")
    assert page.locator("li.record .fold-toggle").count() == 1  # short records fold nothing
    assert folded["toggle"] == {"text": "Show more", "expanded": "false",
                                "controls": folded["id"], "focused": False}  # fmt: skip

    item.locator(".fold").focus()  # the record's link, then its toggle, by the keyboard
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    opened = item.evaluate(_FOLD)
    assert opened["height"] == opened["full"] == folded["full"]
    assert opened["toggle"] == {"text": "Show less", "expanded": "true",
                                "controls": folded["id"], "focused": True}  # fmt: skip
    page.keyboard.press("Space")
    assert item.evaluate(_FOLD)["height"] == folded["height"]
    assert page.url.endswith("/ui/spaces/a?agent=dev")  # toggling is not following the link

    _slide(page, SUPERSEDED + timedelta(days=1))  # a list the server sends again folds too
    again = page.locator(f"li.record[data-id='{long_id}']")
    assert again.evaluate(_FOLD)["height"] == folded["height"]
    again.locator(".fold-toggle").click()
    assert again.evaluate(_FOLD)["height"] == folded["full"]

    page.goto(f"{site.url}/ui/spaces/a/explore?q=migrate+shard+orders")
    hit = page.locator("#hits li.hit >> nth=0")
    assert hit.locator(".meta .id").inner_text() == long_id
    assert hit.evaluate(_FOLD)["height"] == folded["height"]
    assert hit.evaluate(_FOLD)["toggle"]["text"] == "Show more"

    page.goto(f"{site.url}/ui/spaces/a/records/{long_id}")  # its own page shows it whole
    whole = page.eval_on_selector("#record-text", "h => [h.clientHeight, h.scrollHeight]")
    assert whole[0] >= whole[1]
    assert page.inner_text("#record-text") == LONG
    assert page.locator("#record-text + .fold-toggle").count() == 0
    assert page.locator("#chain .fold-toggle").count() == 1  # where it is one version of many
    page.close()


def test_the_record_page_shows_the_chain_the_audit_and_the_ratings(
    browser: Any, site: Site
) -> None:
    page = _login(browser, site, "read", f"/ui/spaces/a/records/{site.ids['npm']}")
    assert page.inner_text("#record-text") == "Install packages with npm"
    assert _texts(page, "#chain li a") == [
        "Install packages with npm",
        "Install packages with pnpm, not npm",
    ]
    audit = page.inner_text("#audit")
    assert "supersede" in audit
    assert "by ana" in audit
    assert "the monorepo moved to pnpm" in audit
    page.click("#chain li >> nth=1 >> a")
    page.wait_for_load_state()
    assert page.inner_text("#record-text") == "Install packages with pnpm, not npm"
    assert "the monorepo moved to pnpm" in page.inner_text("#audit")  # the chain's story

    page.goto(f"{site.url}/ui/spaces/a/records/{site.ids['pin']}")
    assert "the pin blocked a security fix" in page.inner_text("main")
    assert page.inner_text("#fields").count("feedback_score") == 1
    page.close()


def test_an_extracted_memory_shows_where_it_came_from(browser: Any, site: Site) -> None:
    page = _login(browser, site, "read", f"/ui/spaces/a/records/{site.ids['extracted']}")
    assert page.inner_text("#record-text") == "The user keeps bees"
    assert "Extracted by scripted from the conversation turn it cites" in page.inner_text(
        "#provenance"
    )
    page.click("text=I keep bees on the roof.")
    page.wait_for_load_state()
    assert page.inner_text("#record-text") == "I keep bees on the roof."
    assert "The user keeps bees" in page.inner_text("main")  # cited by
    page.close()


def test_korean_japanese_and_chinese_records_carry_their_language(browser: Any, site: Site) -> None:
    """A record written beside the running service (a second handle on the file) shows in the
    timeline and on its page with its ``lang``, so the browser draws Japanese kanji as Japanese
    and Chinese hanzi as Chinese; the explorer finds it by a Korean question."""
    texts = {"ko": "회의는 매주 화요일 오전 10시에 열린다", "ja": "会議は毎週火曜日に開かれる",
             "zh": "例会定在每周二上午"}  # fmt: skip
    with Memory.open(site.db, embedder=None, clock=SimClock(START), space="a") as mem:
        ids = {lang: mem.remember(text, agent="민수", embedding=unit(0, 1, 1, 1)).id
               for lang, text in texts.items()}  # fmt: skip
    page = _login(browser, site, "read", "/ui/spaces/a?agent=민수")
    shown = page.eval_on_selector_all(
        "#records li.record .text", "items => items.map(a => [a.lang, a.textContent.trim()])"
    )
    assert sorted(shown) == sorted([lang, text] for lang, text in texts.items())
    page.goto(f"{site.url}/ui/spaces/a/records/{ids['ja']}")
    assert page.get_attribute("#record-text", "lang") == "ja"
    assert page.inner_text("#record-text") == texts["ja"]
    page.goto(f"{site.url}/ui/spaces/a/explore")
    page.fill("#q", "회의는 언제 열려?")
    page.click("#ask")
    page.wait_for_selector("#hits li.hit")
    assert page.inner_text("#hits li.hit >> nth=0 >> a") == texts["ko"]
    page.close()


def test_the_explorer_bars_add_up_to_each_score(browser: Any, site: Site) -> None:
    page = _login(browser, site, "read", "/ui/spaces/a/explore")
    page.fill("#q", "install packages with pnpm")
    page.click("#ask")
    page.wait_for_selector("#hits li.hit")
    hits = page.eval_on_selector_all(
        "#hits li.hit",
        """items => items.map(li => ({
            score: Number(li.dataset.score),
            parts: [...li.querySelectorAll('.bars .bar')].map(b => Number(b.dataset.value)),
            text: li.querySelector('a').textContent }))""",
    )
    assert hits[0]["text"] == "Install packages with pnpm, not npm"
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    for hit in hits:
        assert hit["parts"], hit
        assert sum(hit["parts"]) == pytest.approx(hit["score"], rel=1e-9, abs=1e-12), hit
    assert "relevance" in page.inner_text("#hits li.hit >> nth=0")
    page.close()


def test_the_explorer_legend_names_every_bar_in_its_colour(browser: Any, site: Site) -> None:
    page = _login(browser, site, "read", "/ui/spaces/a/explore?q=install+packages+with+pnpm")
    page.wait_for_selector("#hits li.hit")
    legend = page.eval_on_selector_all(
        "#legend li[data-part]",
        """items => items.map(li => ({part: li.dataset.part, text: li.textContent.trim(),
            colour: getComputedStyle(li.querySelector('.swatch')).backgroundColor,
            size: [li.querySelector('.swatch').offsetWidth,
                   li.querySelector('.swatch').offsetHeight]}))""",
    )
    bars = page.eval_on_selector_all(
        "#hits li.hit .bars",
        """boxes => boxes.map(box => ({label: box.getAttribute('aria-label'),
            role: box.getAttribute('role'),
            bars: [...box.querySelectorAll('.bar')].map(b => ({part: b.dataset.part,
                value: Number(b.dataset.value),
                colour: getComputedStyle(b).backgroundColor}))}))""",
    )
    drawn = {bar["part"] for box in bars for bar in box["bars"]}
    assert {"relevance", "recency", "importance"} <= drawn
    assert [entry["part"] for entry in legend] == [
        name for name in ["relevance", "recency", "importance", "causal boost", "newer version",
                          "latest in its band"] if name in drawn
    ]  # fmt: skip
    colours = {entry["part"]: entry["colour"] for entry in legend}
    assert len(set(colours.values())) == len(colours)  # each part its own colour
    for entry in legend:
        assert entry["size"][0] > 0
        assert entry["size"][1] > 0
        assert entry["text"].startswith(entry["part"] + ":")  # named in words, with a meaning
        assert len(entry["text"]) > len(entry["part"]) + 10
    for box in bars:
        assert box["role"] == "img"  # the bars say in text what they show
        for bar in box["bars"]:
            assert bar["colour"] == colours[bar["part"]]
            assert f"{bar['part']} {bar['value']:.4f}" in box["label"]
    assert "add up to its score" in page.inner_text("#legend")
    above = page.eval_on_selector(
        "#legend", "l => l.getBoundingClientRect().bottom <= "
        "document.querySelector('#hits li.hit').getBoundingClientRect().top"
    )  # fmt: skip
    assert above  # read before the bars, not after the last hit
    page.close()


def test_the_causal_view_lights_the_crisis_and_its_ancestors(browser: Any, site: Site) -> None:
    page = _login(browser, site, "read", f"/ui/spaces/a/causal?crisis={site.ids['riot']}")
    page.wait_for_selector("#graph[data-ready='true']")
    drawn = page.eval_on_selector(
        "#graph",
        """box => ({
            crisis: box.cytoscape.$('node.crisis').map(n => n.id()),
            ancestors: box.cytoscape.$('node.ancestor').map(n => n.id()).sort(),
            path: box.cytoscape.$('edge.path').length,
            edges: box.cytoscape.edges().length })""",
    )
    assert drawn["crisis"] == [site.ids["riot"]]
    assert drawn["ancestors"] == sorted([site.ids["prices"], site.ids["drought"]])
    assert drawn["path"] == drawn["edges"] == 2
    listed = _texts(page, "#ancestors > li")
    assert "grain prices doubled" in listed[0]
    assert "depth 1" in listed[0]
    assert "the spring drought" in listed[1]
    assert "depth 2" in listed[1]
    witnesses = _texts(page, "#ancestors li[data-id] .witnesses li a")
    assert witnesses == ["bread costs twice what it did"]  # tied to the prices by event_id
    assert "bread costs twice what it did" in page.inner_text("#context")
    page.close()


def test_approving_a_proposal_applies_it_and_audits_the_key(browser: Any, site: Site) -> None:
    page = _login(browser, site, "write", "/ui/spaces/a/review")
    close = page.locator("li.proposal[data-action='close']")
    assert "Pin libfoo to 2.1" in close.inner_text()
    close.locator("button.approve").click()
    page.wait_for_selector("#note")
    assert page.inner_text("#note") == "approved"
    assert page.locator("li.proposal[data-action='close']").count() == 0
    with Memory.open(site.db, embedder=None, space="a") as mem:
        record = mem.get(site.ids["pin"])
        entries = [e for e in mem.audit(record.id) if e.action == "close"]
    assert record.status.value == "closed"
    assert len(entries) == 1
    assert entries[0].actor is not None
    assert entries[0].actor.startswith("key:")
    page.close()


def test_a_read_key_sees_the_queue_but_cannot_approve(browser: Any, site: Site) -> None:
    page = _login(browser, site, "read", "/ui/spaces/a/review")
    assert page.locator("li.proposal").count() == 0  # reviewing queues proposals: a write key
    assert "write key" in page.inner_text("#read-only")
    _login(browser, site, "write", "/ui/spaces/a/review").close()  # a curator reviews
    page.reload()
    page.locator("li.proposal[data-action='close'] button.approve").click()
    page.wait_for_load_state()
    assert "write" in page.inner_text("#error")
    with Memory.open(site.db, embedder=None, space="a") as mem:
        assert mem.get(site.ids["pin"]).status.value == "open"
    page.close()


_NAV = """() => [...document.querySelectorAll('header nav a, header .brand, header .logout button')]
    .map(a => { const r = a.getBoundingClientRect();
        const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
        return {text: a.textContent.trim(), left: r.left, right: r.right, width: r.width,
                height: r.height, reached: a === hit || a.contains(hit)}; })"""


@pytest.mark.parametrize(
    "path",
    ["/ui/spaces/a?agent=dev", "/ui/spaces/a/explore?q=install+packages+see",
     "/ui/spaces/a/causal?crisis={riot}", "/ui/spaces/a/review", "/ui/spaces/a/records/{url}"],
)  # fmt: skip
def test_at_400_px_nothing_overflows_and_every_link_of_the_navigation_works(
    browser: Any, site: Site, path: str
) -> None:
    """A phone's width: the page scrolls down, never sideways, and the navigation wraps with
    every link in view and the one a tap at its middle reaches — even beside a record of one
    unbroken 180-character word, or an event whose name is wider than the screen."""
    with Memory.open(site.db, embedder=None, clock=SimClock(START), space="a") as mem:
        url = mem.remember("see https://example.org/" + "x" * 160, agent="dev",
                           embedding=unit(1, 1, 1, 0)).id  # fmt: skip
        mem.add_event("the harvest festival, " * 8, occurred_at=START)  # a wide choice
    page = _login(browser, site, "write", path.format(url=url, **site.ids), width=400)
    if "causal" in path:
        page.wait_for_selector("#graph[data-ready='true']")
    assert page.evaluate("document.documentElement.scrollWidth") <= 400
    links = page.evaluate(_NAV)
    assert [link["text"] for link in links] == [
        "chronomem", "Timeline", "Recall explorer", "Causes", "Review", "Log out"
    ]  # fmt: skip
    for link in links:
        assert 0 <= link["left"] < link["right"] <= 400, link
        assert link["width"] > 0, link
        assert link["height"] > 0, link
        assert link["reached"], link
    if path.startswith("/ui/spaces/a?"):  # and a tap on each goes where it says
        for name, target in [("Recall explorer", "/explore"), ("Causes", "/causal"),
                             ("Review", "/review"), ("Timeline", "/ui/spaces/a")]:  # fmt: skip
            page.click(f"header nav >> text={name}")
            page.wait_for_load_state()
            assert page.url.endswith(target)
            assert page.evaluate("document.documentElement.scrollWidth") <= 400
    page.close()


@pytest.mark.parametrize(
    "path",
    ["/ui/spaces/a", "/ui/spaces/a/timeline?agent=dev", "/ui/spaces/a/explore?q=install",
     "/ui/spaces/a/causal", "/ui/spaces/a/review", "/ui/spaces/a/records/{npm}"],
)  # fmt: skip
def test_a_key_of_another_space_sees_nothing_of_it(browser: Any, site: Site, path: str) -> None:
    page = _login(browser, site, "other", "/ui")
    assert page.url.endswith("/ui/spaces/b")  # a space's key lands on its own space
    assert "a secret of space b" in page.inner_text("main")
    response = page.goto(site.url + path.format(**site.ids))
    assert response is not None
    assert response.status == 404
    body = page.inner_text("body")
    for text in ("Install packages", "Pin libfoo", "riot", "grain", "dev"):
        assert text not in body
    page.close()


def test_without_a_key_every_page_asks_for_one(browser: Any, site: Site) -> None:
    page = browser.new_page()
    page.goto(f"{site.url}/ui/spaces/a/records/{site.ids['npm']}")
    assert "/ui/login" in page.url
    assert "Install packages" not in page.inner_text("body")
    page.fill("#key", "cmk_not_a_key")
    page.click("#login")
    page.wait_for_load_state()
    assert "unknown or revoked key" in page.inner_text("main")
    page.fill("#key", site.keys["read"])
    page.click("#login")
    page.wait_for_load_state()
    assert page.inner_text("#record-text") == "Install packages with npm"  # back where it began
    cookie = next(c for c in page.context.cookies() if c["name"] == "chronomem_key")
    assert cookie["httpOnly"]
    assert cookie["sameSite"] == "Strict"
    page.close()


def test_the_timeline_follows_the_change_feed_without_reloading(browser: Any, site: Site) -> None:
    """At "now" the list redraws from the space's change feed as writes commit — made here by
    another handle on the file, as another process would — and the page is never reloaded; once
    an instant in the past is chosen, the list stays as it was and a line says what changed."""
    page = _login(browser, site, "read", "/ui/spaces/a?agent=dev")
    page.evaluate("window.__drawn = 'once'")
    shown = "#records li.record .text"
    with Memory.open(site.db, embedder=None, clock=SimClock(NOW), space="a") as other:
        other.remember("Run the tests before every push", agent="dev", kind="instruction",
                       embedding=unit(0, 1, 0, 0))  # fmt: skip
        page.wait_for_function(
            "() => [...document.querySelectorAll('#records li.record .text')]"
            ".some(e => e.textContent.includes('Run the tests before every push'))",
            timeout=10_000,
        )
        assert page.evaluate("window.__drawn") == "once"  # redrawn in place, not reloaded
        assert "Updated" in page.inner_text("#live")
        assert "as_of" not in page.url  # still following now

        _slide(page, SUPERSEDED + timedelta(days=1))
        before = _texts(page, shown)
        other.remember("Tag every release", agent="dev", embedding=unit(0, 1, 1, 0))
        page.wait_for_function(
            "() => document.getElementById('live').textContent.includes('1 change since')",
            timeout=10_000,
        )
        assert _texts(page, shown) == before
        assert page.evaluate("window.__drawn") == "once"
    page.close()
