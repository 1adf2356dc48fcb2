"""The static renderers: the HTML of every card and the figure builders
(docs/architecture.md, "Layers").

A leaf layer just above `_util`: `_model`, `_compare`, `display`, `_api` and `_cli` import it
downward, so an object's `_repr_html_` is an ordinary call, never a lazy upward import. What a
renderer reads of a run, a headline, a score definition or a comparison is a Protocol of
`_protocols.py`: nothing here imports `_model`. plotly (optional) is imported in one function,
`_figure.plotly_modules`.
"""
