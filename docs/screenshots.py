"""Screenshots of every page of the web UI, for docs/ui.md and the README.

Builds a small store in simulated time (a developer assistant whose instructions changed, a
town whose drought led to a riot, a few stale and pushed-down records), serves it with
``chronomem serve``'s application on 127.0.0.1, opens each page in Debian's Chromium (headless,
through Playwright) and writes ``docs/img/ui-*.png``.

    python docs/screenshots.py [--chromium /usr/bin/chromium]      # or: make screenshots
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from tests.server.service import running  # noqa: E402

from chronomem import Memory, ReadOptions, SimClock  # noqa: E402
from chronomem.clock import to_micros  # noqa: E402

START = datetime(2025, 3, 1, 9, tzinfo=UTC)


def unit(*values: float) -> list[float]:
    """A unit vector in six dimensions: the first three for the developer's world, the last
    three for the town's, so the two scenes are not similar to each other."""
    padded = [*values, *[0.0] * (6 - len(values))]
    norm = sum(v * v for v in padded) ** 0.5
    return [v / norm for v in padded]


def populate(db: Path) -> dict[str, str]:
    """The scene the screenshots show; returns the ids the pages are opened on."""
    clock = SimClock(START)
    with Memory.open(db, embedder=None, clock=clock, space="demo") as mem:
        mem.set_access_log(True)

        def dev(text: str, kind: str, importance: float, *direction: float, **more: str) -> str:
            written = mem.remember(text, agent="dev", kind=kind, importance=importance,
                                   embedding=unit(*direction), **more)  # fmt: skip
            return str(written.id)

        npm = dev("Install packages with npm", "instruction", 6, 1, 0, 0.1)
        dev("Run the tests with make test before every push", "instruction", 7, 0.2, 1, 0)
        pin = dev("Pin libfoo to 2.1: 2.2 breaks date parsing", "instruction", 5, 0, 0.2, 1)
        dev("The deploy window is Friday afternoon", "fact", 4, 0.1, 0.6, 0.5, domain="deploys")
        clock.advance(days=20)
        pnpm = mem.supersede(npm, "Install packages with pnpm, not npm", agent="dev",
                             reason="the monorepo moved to pnpm", actor="ana",
                             embedding=unit(1, 0.05, 0.1)).id  # fmt: skip
        dev("Deploys happen on Thursday mornings now", "fact", 5, 0.3, 0.3, 0.8,
            domain="deploys")  # fmt: skip
        mem.feedback(pin, "harmful", "libfoo 2.2.1 fixed it; the pin blocked a security fix")
        drought = mem.add_event("the spring drought", occurred_at=START, scope="valley",
                                embedding=unit(0, 0, 0, 1))  # fmt: skip
        prices = mem.add_event("grain prices doubled", occurred_at=START + timedelta(days=5),
                               embedding=unit(0, 0, 0, 0.3, 1))  # fmt: skip
        riot = mem.add_event("a riot at the granary", kind="crisis", scope="valley",
                             occurred_at=START + timedelta(days=9),
                             embedding=unit(0, 0, 0, 0.2, 0.3, 1))  # fmt: skip
        mem.link(drought.id, prices.id, 0.8)
        mem.link(prices.id, riot.id, 0.7)
        mem.remember("I saw the wells run dry", agent="tom", event_id=drought.id,
                     embedding=unit(0, 0, 0, 1, 0.1))  # fmt: skip
        mem.remember("bread costs twice what it did", agent="tom", event_id=prices.id,
                     embedding=unit(0, 0, 0, 0.1, 1, 0.2))  # fmt: skip
        mem.remember("the wells in the valley ran dry", agent="tom",
                     embedding=unit(0, 0, 0, 1, 0.12))  # fmt: skip
        clock.advance(days=200)
        mem.peek("how do I install packages?", options=ReadOptions(agents=("dev",), actor="ana"),
                 query_embedding=unit(1, 0, 0))  # fmt: skip
        return {"pnpm": str(pnpm), "riot": riot.id, "now": clock.now().isoformat()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--out", type=Path, default=HERE / "img")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    args.out.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "ui.db"
        ids = populate(db)
        with running(db, embedder=None) as (url, spaces), sync_playwright() as p:
            spaces.admin.set_space_clock("demo", to_micros(datetime.fromisoformat(ids["now"])))
            browser = p.chromium.launch(executable_path=args.chromium, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1280, "height": 820})
            shots = {
                "timeline": "/ui/spaces/demo?agent=dev&history=true",
                "record": f"/ui/spaces/demo/records/{ids['pnpm']}",
                "explorer": "/ui/spaces/demo/explore?q=how+do+I+install+packages%3F&agent=dev",
                "causal": f"/ui/spaces/demo/causal?crisis={ids['riot']}",
                "review": "/ui/spaces/demo/review",
            }
            for name, path in shots.items():
                page.goto(url + path)
                if name == "causal":
                    page.wait_for_selector("#graph[data-ready='true']")
                page.screenshot(path=str(args.out / f"ui-{name}.png"), full_page=True)
                print(args.out / f"ui-{name}.png")
            browser.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
