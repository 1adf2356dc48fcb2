"""The anywidget front end (`display/_static/view.js`) in Debian's Chromium, against a fake model:
what it sends, and what a redraw keeps (focus, typed text, sideways scroll, an opened "show all").

No Jupyter here: the module is imported into a blank page from a Blob URL and given a model that
records what is sent, so each behaviour of the 120 lines is checked on its own and fast.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import evalbook as eb
from _chromium import chromium

pytestmark = pytest.mark.browser

VIEW_JS = Path(eb.__file__).parent / "display" / "_static" / "view.js"

# The page's fake anywidget model: `sent` holds what the view sent, `answer(html)` plays the
# kernel's message. The module is the shipped file itself, imported from a Blob URL.
_BOOT = """async (src) => {
  const handlers = {};
  window.sent = [];
  const model = {
    send: (msg) => window.sent.push(msg),
    on: (name, cb) => { handlers[name] = cb; },
    off: (name) => { delete handlers[name]; },
  };
  window.answer = (html) => handlers["msg:custom"]({ html });
  const url = URL.createObjectURL(new Blob([src], { type: "text/javascript" }));
  const mod = await import(url);
  const el = document.createElement("div");
  document.body.appendChild(el);
  window.cleanup = mod.default.render({ model, el });
}"""

_DETAILS = (
    '<details data-evalbook="whole"><summary>show all 900 characters</summary>{text}</details>'
)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as b:
        yield b


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    p = browser.new_page()
    p.set_content("<!doctype html><html><body></body></html>")
    p.evaluate(_BOOT, VIEW_JS.read_text(encoding="utf-8"))
    yield p
    p.close()


def _answer(page: Any, html: str) -> None:
    page.evaluate(f"window.answer({json.dumps(html)})")


def _sent(page: Any) -> list[dict[str, str]]:
    sent: list[dict[str, str]] = page.evaluate("window.sent")
    return sent


def test_the_view_says_hello_once_drawn_and_a_click_sends_its_action_and_value(page: Any) -> None:
    assert _sent(page) == [{"action": "hello", "value": ""}]
    _answer(page, '<button data-eb-action="tab" data-eb-value="3">Cases</button>')
    page.click("button")
    assert _sent(page)[-1] == {"action": "tab", "value": "3"}


def test_an_opened_show_all_stays_open_across_a_redraw_of_the_same_text_only(page: Any) -> None:
    first = _DETAILS.format(text="A" * 900)
    other = _DETAILS.format(text="B" * 900)
    _answer(page, f'<div>{first}</div><button data-eb-action="tab" data-eb-value="1">x</button>')
    page.click("summary")
    assert page.evaluate("document.querySelector('details').open") is True
    _answer(page, f"<p>redrawn</p><div>{first}</div><div>{other}</div>")
    opened = page.evaluate("Array.from(document.querySelectorAll('details')).map(d => d.open)")
    assert opened == [True, False]  # the same text reopened; another text in its place did not
    _answer(page, f"<div>{other}</div>")
    assert page.evaluate("document.querySelector('details').open") is False


def test_a_redraw_keeps_sideways_scroll_focus_and_the_text_being_typed(page: Any) -> None:
    wide = (
        '<div data-eb-scroll="table" style="width: 200px; overflow-x: auto">'
        '<div style="width: 2000px">wide</div></div>'
        '<input type="search" data-eb-action="explorer.search" value="">'
    )
    _answer(page, wide)
    page.evaluate("document.querySelector('[data-eb-scroll]').scrollLeft = 300")
    # a redraw while the reader types, before the typing pause sends the text: in one turn of
    # the page's event loop, so that a slow machine cannot let the pause pass in between
    page.evaluate(
        """(html) => {
          const box = document.querySelector("input");
          box.focus();
          box.value = "abc";
          box.dispatchEvent(new Event("input", { bubbles: true }));
          window.answer(html);
        }""",
        wide,
    )
    assert page.evaluate("document.querySelector('[data-eb-scroll]').scrollLeft") == 300
    assert page.evaluate("document.activeElement.value") == "abc"
    assert page.evaluate("document.activeElement.getAttribute('data-eb-action')") == (
        "explorer.search"
    )
    page.wait_for_function("window.sent.length > 1")  # the typing pause sends the text once
    page.wait_for_timeout(400)
    searches = [m for m in _sent(page) if m["action"] == "explorer.search"]
    assert searches == [{"action": "explorer.search", "value": "abc"}]
