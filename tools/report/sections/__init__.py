"""One module per report section.

A preset's section is a module here with PRESET (its name in study.json),
TITLE (its heading) and draw(doc, study, findings), listed in PRESET_SECTIONS:
the sections this report knows. A report shows them in the order study.json
lists its presets, which gpt2lab writes from its one preset table
(src/study/plan.cpp). Text samples (samples), Fluency (fluency) and
Divergence and loss spikes (divergence) follow them, for every study.
"""
from . import atlas, depth, divergence, fluency, grad_at_init, init, lr_edge, norm, samples, translation

PRESET_SECTIONS = [grad_at_init, lr_edge, norm, init, depth, translation, atlas]
BY_PRESET = {m.PRESET: m for m in PRESET_SECTIONS}

__all__ = ["BY_PRESET", "PRESET_SECTIONS", "divergence", "fluency", "samples"]
