"""Generator options: every place where our items may follow the paper's wording or differ.

Defaults follow the NoReGeo paper where it is explicit (docs/items.md, "Where our items
differ from the paper"). Each option changes items for a fixed seed, so `generate` records
all of them in `manifest.json` and `evaluate` refuses to mix item sets with different ones
in one results folder.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

Variants = Literal["paper", "extended"]
SemicirclePrompt = Literal["paper", "diameter"]
SemicircleFigure = Literal["arc", "triangle"]

VARIANTS: tuple[Variants, ...] = ("paper", "extended")
SEMICIRCLE_PROMPTS: tuple[SemicirclePrompt, ...] = ("paper", "diameter")
SEMICIRCLE_FIGURES: tuple[SemicircleFigure, ...] = ("arc", "triangle")
# The paper ties its 0.5 answer tolerance to "the grid step in visualizations" (0.5);
# a unit grid (1) is what our images drew before the option existed.
GRID_STEPS: tuple[float, ...] = (0.5, 1.0)

# Table 1 of the paper: "Reflect point P across X-axis", "Rotate point P 90 degrees about
# origin". `extended` asks every axis and every quarter turn (our items before the option).
REFLECTION_AXES: dict[Variants, tuple[str, ...]] = {
    "paper": ("x",),
    "extended": ("x", "y", "y=x", "y=-x"),
}
ROTATION_ANGLES: dict[Variants, tuple[int, ...]] = {
    "paper": (90,),
    "extended": (90, 180, 270),
}


@dataclass(frozen=True)
class GeneratorOptions:
    """How items are written where the paper leaves a choice; the defaults are the paper's.

    - `variants`: `paper` reflects across the x-axis and rotates by 90 degrees only;
      `extended` also uses the y-axis, y=x, y=-x and 180/270 degrees.
    - `semicircle_prompt`: `paper` asks "Is triangle ABC inscribed in a semicircle?";
      `diameter` adds "with diameter AB".
    - `semicircle_figure`: the `full` image of semicircle_triangle draws the semicircle on
      AB (`arc`) or the triangle only (`triangle`).
    - `grid_step`: grid line spacing of the images in grid units (0.5 or 1).
    """

    variants: Variants = "paper"
    semicircle_prompt: SemicirclePrompt = "paper"
    semicircle_figure: SemicircleFigure = "arc"
    grid_step: float = 0.5

    def __post_init__(self) -> None:
        """Refuse a value outside each option's choices, naming the option."""
        for name, valid in (
            ("variants", VARIANTS),
            ("semicircle_prompt", SEMICIRCLE_PROMPTS),
            ("semicircle_figure", SEMICIRCLE_FIGURES),
            ("grid_step", GRID_STEPS),
        ):
            value = getattr(self, name)
            if value not in valid:
                shown = ", ".join(f"{v:g}" if isinstance(v, float) else v for v in valid)
                raise ValueError(f"{name}={value!r}; valid: {shown}")
        object.__setattr__(self, "grid_step", float(self.grid_step))

    def as_dict(self) -> dict[str, Any]:
        """The options as plain JSON values, keyed by field name (the manifest's `options`)."""
        return asdict(self)


DEFAULT_OPTIONS = GeneratorOptions()
