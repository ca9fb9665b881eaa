"""One module per report section.

A preset's section is a module here with PRESET (its name in study.json),
TITLE (its heading) and draw(doc, study, findings), listed in PRESET_SECTIONS
in the order the report shows them. Text samples (samples) and Divergence
and loss spikes (divergence) follow them, for every study.
"""
from . import atlas, depth, divergence, grad_at_init, init, lr_edge, norm, samples, translation

PRESET_SECTIONS = [grad_at_init, lr_edge, norm, init, depth, translation, atlas]
BY_PRESET = {m.PRESET: m for m in PRESET_SECTIONS}

__all__ = ["BY_PRESET", "PRESET_SECTIONS", "in_report_order", "divergence", "samples"]


def in_report_order(presets):
    """presets reordered: those with a section in PRESET_SECTIONS' order, then the rest as given."""
    return [m.PRESET for m in PRESET_SECTIONS if m.PRESET in presets] + [p for p in presets if p not in BY_PRESET]
