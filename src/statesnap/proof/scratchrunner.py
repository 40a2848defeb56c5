"""The side-by-side runners, as the proof layer's modules imported them before they moved down
to :mod:`statesnap.replay.scratchrunner` (so that the hunt, beside this layer, builds the same
ones): re-exported until every importer names the new place.
"""

from statesnap.replay.scratchrunner import RunnerKit, ScratchRunner

__all__ = ["RunnerKit", "ScratchRunner"]
