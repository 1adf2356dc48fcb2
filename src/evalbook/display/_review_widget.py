"""The labelling view of `eb.review` (an anywidget, as `eb.show`'s; imported only by `eb.review`).

One sample at a time: a button per value when the score's raw scale is a few integers (a
1-5 judge), else a number field and "save"; "skip"; a note sent with the label. Each click
keeps the label at once (`give_label`: a line of `labels.jsonl`, or memory for a run without
a store) and shows the next sample; what was already labelled by this labeller is skipped, so
calling `eb.review` again on the same run goes on where it stopped. Each label keeps the draw
of its sample (`DRAW_KEYS`), for `eb.agreement`'s interval.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .._model._labels import Label
from .._model._run_data import RunData
from .._render._review_html import review_sample_html
from .._render._style import MUTED, esc, root
from .._store._labels import give_label, given_labels
from ._controls import Button, HTMLBox, Number, Text
from ._widget_base import Actions, View

__all__ = ["ReviewView"]

_BUTTONS_MAX = 11  # a scale of at most this many integers gets a button per value


class ReviewView(View):
    """The review of `rows` (rows of `run.cases`, in the order shown) for `score`."""

    def __init__(
        self,
        run: RunData,
        *,
        score: str,
        rows: Sequence[int],
        raw: Sequence[float | None],
        draws: Sequence[Mapping[str, Any]],
        scale: tuple[float, float],
        blind: bool,
        labeler: str | None,
    ) -> None:
        super().__init__()
        self.run, self.score, self.blind, self.labeler = run, score, blind, labeler
        self.rows, self.raw, self.scale = [int(r) for r in rows], list(raw), scale
        self.draws = [dict(d) for d in draws]  # each row's draw, kept with its label
        cases = run.cases
        ids, epochs = cases["case_id"].astype(str).to_numpy(), cases["epoch"].to_numpy()
        self.sample_keys = [(str(ids[r]), int(epochs[r])) for r in self.rows]
        done = {
            (x.case_id, x.epoch)
            for x in given_labels(run)
            if x.score == score and x.labeler == labeler
        }
        self.done = [key in done for key in self.sample_keys]
        pane = Actions("review")
        self.sample = HTMLBox()
        self.note = pane.add(
            Text("review.note", description="note",
                 placeholder="note (optional, kept with the label)")
        )  # fmt: skip
        low, high = scale
        self.buttons: list[Any] = []
        self.number: Number | None = None
        if float(low).is_integer() and float(high).is_integer() and high - low < _BUTTONS_MAX:
            for v in np.arange(low, high + 1):
                button = pane.add(Button(f"review.value.{int(v)}", f"{int(v)}",
                                         style="min-width: 48px"))  # fmt: skip
                button.on_click(self._giver(float(v)))
                self.buttons.append(button)
        else:
            number = self.number = pane.add(
                Number("review.number", low, bounds=(low, high), description="label")
            )
            save = pane.add(Button("review.save", "save"))
            save.on_click(lambda: self.give(float(number.value)))
            self.buttons += [number, save]
        self.skip_button = pane.add(Button("review.skip", "skip"))
        self.skip_button.on_click(lambda: self.give(None))
        self.status = HTMLBox()
        self.connect(None, [pane])
        self._draw()

    def _giver(self, value: float) -> Callable[[], Label | None]:
        return lambda: self.give(value)

    def header_html(self) -> str:
        controls = "".join(c.html() for c in [*self.buttons, self.skip_button])
        return (
            f'{self.sample.value}<div style="display: flex; flex-wrap: wrap; gap: 4px; '
            f'align-items: center; margin: 6px 0">{controls}</div>'
            f"<div>{self.note.html()}</div>{self.status.value}"
        )

    @property
    def position(self) -> int | None:
        """The index (into the rows) of the sample shown: the first not yet labelled."""
        return next((i for i, d in enumerate(self.done) if not d), None)

    @property
    def progress(self) -> str:
        return f"{sum(self.done)} of {len(self.rows)} labelled"

    def give(self, value: float | None) -> Label | None:
        """Keep `value` (None: a skip) as the shown sample's label and show the next one."""
        i = self.position
        if i is None:
            return None
        case_id, epoch = self.sample_keys[i]
        note = self.note.value or None
        label = give_label(
            self.run,
            Label(case_id, epoch, self.score, value, labeler=self.labeler, note=note,
                  skipped=value is None, **self.draws[i]),
        )  # fmt: skip
        self.done[i] = True
        self.note.value = ""
        self._draw()
        return label

    def _draw(self) -> None:
        i = self.position
        self._static_text = f"eb.review of {self.score}: {self.progress}"
        if i is None:
            where = (
                "labels.jsonl" if self.run.path is not None else "memory (a run without a store)"
            )
            self.sample.value = root(
                f"<div><b>{esc(self.progress)}</b> · kept in {esc(where)}. Next: "
                f"<code>eb.agreement(run, labels=run.labels(), score={esc(repr(self.score))})"
                "</code></div>",
                "review",
            )
            for b in [*self.buttons, self.skip_button]:
                if isinstance(b, Button):
                    b.disabled = True
        else:
            raw = self.raw[i]
            self.sample.value = review_sample_html(
                self.run, self.rows[i], score=self.score, raw=raw, blind=self.blind,
                progress=f"{self.progress} · sample {i + 1} of {len(self.rows)}",
            )  # fmt: skip
        self._static_html = root(
            f'<div style="{MUTED}">eb.review of {esc(self.score)}: {esc(self.progress)} '
            "(labelling needs a running kernel)</div>",
            "review",
        )
