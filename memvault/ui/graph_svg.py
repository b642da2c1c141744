"""An entity's neighbourhood as a picture: the entity in the middle, each hop on a ring around it.

Pure layout (coordinates only); the template draws it as SVG, every name and fact escaped there."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

SIZE = 640
MARGIN = 60  # room for the outer ring's circles and names
MAX_EDGES = 60  # a picture, not the whole graph: the list below it names every fact


@dataclass
class Drawing:
    size: int
    nodes: list[dict] = field(default_factory=list)
    edges: list[dict] = field(default_factory=list)
    cut: int = 0  # relations left out of the picture


def layout(neighbourhood) -> Drawing:
    """Node positions by hop (the entity at the centre), and one line per relation."""
    centre = SIZE / 2
    relations = neighbourhood.relations[:MAX_EDGES]
    depth = {neighbourhood.entity: 0}
    for relation in relations:
        for key in (relation.source, relation.destination):
            depth.setdefault(key, relation.depth)
    rings: dict[int, list[str]] = {}
    for key, hop in depth.items():
        rings.setdefault(hop, []).append(key)
    where: dict[str, tuple[float, float]] = {}
    drawing = Drawing(SIZE, cut=len(neighbourhood.relations) - len(relations))
    ring = (centre - MARGIN) / max(rings)  if max(rings) else 0.0  # the outermost hop at the edge
    for hop, keys in sorted(rings.items()):
        radius = hop * ring
        for i, key in enumerate(sorted(keys)):
            angle = 2 * math.pi * i / len(keys) + hop * 0.4
            x, y = centre + radius * math.cos(angle), centre + radius * math.sin(angle)
            where[key] = (round(x, 1), round(y, 1))
            drawing.nodes.append({"key": key, "x": where[key][0], "y": where[key][1], "centre": hop == 0})
    for relation in relations:
        (x1, y1), (x2, y2) = where[relation.source], where[relation.destination]
        drawing.edges.append({"x1": x1, "y1": y1, "x2": x2, "y2": y2, "mx": round((x1 + x2) / 2, 1),
                              "my": round((y1 + y2) / 2, 1), "label": relation.relationship,
                              "memory_id": relation.memory_id, "text": relation.text})
    return drawing
