"""Tests of the harness adapters, and the scorers they share."""

from scorers import Scorer, text_field


class OnlyCapitals(Scorer):
    """Skips (score None) any question that does not start with "Capital": how each harness shows a skip."""

    fields = (text_field("output"), text_field("input"))

    def _score(self, *, output, input):
        if not input.startswith("Capital"):
            return self.make_score(None, reason="not a capital question")
        return self.make_score(1.0)
