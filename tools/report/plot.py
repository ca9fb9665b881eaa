"""matplotlib, headless (the Agg backend), for every module that draws.

The entry point (__main__.py) imports matplotlib before anything else and
turns its absence into exit status 3; this module only fixes the backend.
"""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker as ticker  # noqa: E402

DPI = 72
COLORS = {"pre": "tab:blue", "post": "tab:red"}
INIT_COLORS = {"gpt2": "tab:blue", "normal": "tab:orange", "xavier": "tab:green", "he": "tab:purple",
               "zero": "tab:gray"}

__all__ = ["plt", "ticker", "DPI", "COLORS", "INIT_COLORS"]
