"""The study report (run as a folder: python3 tools/report OUT; see __main__.py).

Modules: load (study.json, metrics, shards, baselines), stats (smoothing,
spikes, rank correlation, number formats), document (Markdown + HTML
blocks), plot (matplotlib, headless), common (what several sections share:
run descriptions, the training table, loss plots) and sections/ (one module
per report section; a new study preset adds one there).
"""
