"""The study report (run as a folder: python3 tools/report OUT; see __main__.py).

Modules: load (study.json, metrics, shards, baselines), stats (smoothing,
spikes, rank correlation, number formats), document (Markdown + HTML
blocks), plot (matplotlib, headless), common (what several sections share:
run descriptions, the training table, loss plots), precision (the
precision a study trained in, and which verdicts of a bf16 study no control
allows) and sections/ (one module per report section; a new study preset
adds one there).
"""
