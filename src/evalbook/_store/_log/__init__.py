"""The event log, `events.jsonl`, in one place: its format, its writing and its reading.

`_format`: the versions, the checksum and the checked reading of lines; `_write`: the events
written on those lines; `_read`: the replay of lines into `Results`; `_file`: the append-only,
locked file behind them. The format is documented in docs/file-formats.md.
"""
