"""Chart geometry for server-rendered SVG: rectangles and labels, drawn by a template macro.

No script and no inline style: colours are SVG ``fill`` attributes, so the page's
Content-Security-Policy stays strict.
"""

from __future__ import annotations

from typing import Any

from memd import kinds

WIDTH = 640
HEIGHT = 180
PAD_LEFT = 40
PAD_BOTTOM = 28
PALETTE = {**{k.name: k.colour for k in kinds.KINDS}, "all": "#4e79a7"}


def colour(name: str) -> str:
    return PALETTE.get(name, "#888888")


def stacked(data: dict[str, Any]) -> dict[str, Any]:
    """Stacked bars, one per week, one colour per series (``{"weeks": [...], "series": {...}}``)."""
    weeks: list[str] = list(data.get("weeks") or [])
    series: dict[str, list[int]] = dict(data.get("series") or {})
    chart: dict[str, Any] = {"width": WIDTH, "height": HEIGHT, "rects": [], "labels": []}
    chart["legend"] = [{"name": n, "fill": colour(n), "total": sum(v)} for n, v in series.items()]
    if not weeks:
        return chart
    totals = [sum(values[i] for values in series.values()) for i in range(len(weeks))]
    top = max(totals) or 1
    chart["max"] = top
    plot_w = WIDTH - PAD_LEFT - 4
    plot_h = HEIGHT - PAD_BOTTOM - 8
    step = plot_w / len(weeks)
    bar_w = max(1.0, step * 0.8)
    for i, week in enumerate(weeks):
        x = PAD_LEFT + i * step
        y = float(HEIGHT - PAD_BOTTOM)
        for name, values in series.items():
            if not values[i]:
                continue
            h = values[i] / top * plot_h
            y -= h
            chart["rects"].append(
                {
                    "x": round(x, 1),
                    "y": round(y, 1),
                    "w": round(bar_w, 1),
                    "h": round(h, 1),
                    "fill": colour(name),
                    "title": f"week of {week}: {values[i]} {name}",
                }
            )
        every = max(1, len(weeks) // 6)
        if i % every == 0:
            chart["labels"].append({"x": round(x, 1), "text": week[5:]})
    return chart


def bars(buckets: list[dict[str, Any]]) -> dict[str, Any]:
    """Plain bars with a label under each (``[{"label", "count"}]``)."""
    data = {
        "weeks": [b["label"] for b in buckets],
        "series": {"all": [int(b["count"]) for b in buckets]},
    }
    chart = stacked(data)
    chart["labels"] = []
    step = (WIDTH - PAD_LEFT - 4) / max(1, len(buckets))
    for i, b in enumerate(buckets):
        chart["labels"].append({"x": round(PAD_LEFT + i * step, 1), "text": f"{b['label']} hits"})
    for rect, b in zip(chart["rects"], [b for b in buckets if b["count"]], strict=False):
        rect["title"] = f"{b['count']} memories with {b['label']} hits"
    return chart
