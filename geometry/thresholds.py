"""Every named tolerance and degeneracy threshold of the NoReGeo generators and grader.

Generators raise `Degenerate` when a draw violates one; a bounded, seeded loop redraws.
"""

from __future__ import annotations

from decimal import Decimal

# Grading (paper): a number or each point coordinate is right within +-0.5, inclusive.
ANSWER_TOLERANCE = Decimal("0.5")

# The coordinate grid every point lies on.
GRID_MIN = -20
GRID_MAX = 20
