"""The one threshold of a small slice, shared by the statistics and every view of them."""

from __future__ import annotations

__all__ = ["SMALL"]

# A slice (or a compared (slice, score) row) with fewer counted cases than this, or fewer
# clusters with `cluster=`, is flagged `small`: its interval is wide and its estimate unstable.
# The one threshold of the summary, the comparison, the CLI, the magics and the displays; here,
# below `_model` and `_render`, so that the cards that say "fewer than 10" read the same number.
SMALL = 10
