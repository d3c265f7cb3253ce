"""Small hand-drawn SVG charts, inlined into the HTML (no JavaScript, no network).

Rules: values are fractions in [0, 1] drawn on a 0-100% axis; every label is XML-escaped; each
chart has a ``<title>`` for accessibility, and its visible title is the caller's (an HTML caption,
which wraps instead of being clipped); a clipped label keeps its full text as a tooltip; colours
come from one fixed palette, by series index. A series of one point is drawn as a labelled marker
in the middle of the x axis (a line needs two points). A line chart's series may carry a band
(x, low, high), e.g. the min/max over seeds, drawn under its line in the same colour, faint.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape

PALETTE = ("#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#be185d", "#4d7c0f")


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    low: float | None = None
    high: float | None = None


def _svg(width: int, height: int, title: str, body: list[str]) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" width="{width}" '
            f'height="{height}" viewBox="0 0 {width} {height}"><title>{escape(title)}</title>'
            + "".join(body) + "</svg>")


def _label(x: float, y: float, text: str, limit: int, anchor: str = "end") -> str:
    """A text label clipped to ``limit`` characters; the full text as its tooltip when clipped."""
    shown = _clip(text, limit)
    tooltip = f"<title>{escape(text)}</title>" if shown != text else ""
    return (f'<text x="{x:.1f}" y="{y:.1f}" class="label" text-anchor="{anchor}">{tooltip}'
            f"{escape(shown)}</text>")


def bar_chart(bars: Sequence[Bar], title: str, *, width: int = 560) -> str:
    """Horizontal bars (0-100%) with 95% interval whiskers, one per row label."""
    left, right, row_h, top = 190, 50, 26, 10
    plot_w = width - left - right
    height = top + row_h * len(bars) + 24
    body = []
    for tick in range(0, 101, 25):
        x = left + plot_w * tick / 100
        body.append(f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{height - 20}" class="grid"/>'
                    f'<text x="{x:.1f}" y="{height - 6}" class="tick" text-anchor="middle">{tick}%</text>')
    for index, bar in enumerate(bars):
        y = top + index * row_h
        colour = PALETTE[index % len(PALETTE)]
        body.append(_label(left - 8, y + 15, bar.label, 28)
                    + f'<rect x="{left}" y="{y + 4}" width="{plot_w * bar.value:.1f}" height="{row_h - 10}" '
                    f'fill="{colour}" opacity="0.8"/>')
        if bar.low is not None and bar.high is not None:
            x1, x2, mid = left + plot_w * bar.low, left + plot_w * bar.high, y + row_h / 2 - 1
            body.append(f'<line x1="{x1:.1f}" y1="{mid}" x2="{x2:.1f}" y2="{mid}" class="whisker"/>'
                        f'<line x1="{x1:.1f}" y1="{mid - 5}" x2="{x1:.1f}" y2="{mid + 5}" class="whisker"/>'
                        f'<line x1="{x2:.1f}" y1="{mid - 5}" x2="{x2:.1f}" y2="{mid + 5}" class="whisker"/>')
        body.append(f'<text x="{left + plot_w * max(bar.value, bar.high or 0) + 6:.1f}" y="{y + 15}" '
                    f'class="value">{100 * bar.value:.1f}</text>')
    return _svg(width, height, title, body)


def line_chart(series: Mapping[str, Sequence[tuple[float, float]]], title: str, *,
               x_label: str = "update", width: int = 560, height: int = 260,
               bands: Mapping[str, Sequence[tuple[float, float, float]]] | None = None) -> str:
    """Lines of (x, rate) points on a 0-100% axis, one per named series, with a legend; a series
    named in ``bands`` also gets its (x, low, high) band shaded under the line."""
    left, right, top, bottom = 48, 140, 12, 40
    plot_w, plot_h = width - left - right, height - top - bottom
    xs = [x for points in series.values() for x, _ in points] or [0.0]
    x_min, x_max = min(xs), max(xs)
    span = x_max - x_min

    def at(x: float, y: float) -> tuple[float, float]:
        share = (x - x_min) / span if span else 0.5  # a single update sits in the middle
        return left + plot_w * share, top + plot_h * (1 - y)

    body = []
    for tick in range(0, 101, 25):
        _, y = at(x_min, tick / 100)
        body.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" class="grid"/>'
                    f'<text x="{left - 6}" y="{y + 4:.1f}" class="tick" text-anchor="end">{tick}%</text>')
    if span:
        body.append(f'<text x="{left}" y="{height - 20}" class="tick">{x_min:g}</text>'
                    f'<text x="{left + plot_w}" y="{height - 20}" class="tick" text-anchor="end">{x_max:g}</text>')
    else:
        body.append(f'<text x="{left + plot_w / 2}" y="{height - 20}" class="tick" text-anchor="middle">{x_min:g}</text>')
    body.append(f'<text x="{left + plot_w / 2}" y="{height - 6}" class="tick" text-anchor="middle">'
                f'{escape(x_label)}{"" if span else " (one evaluation so far)"}</text>')
    for index, (name, points) in enumerate(series.items()):
        colour = PALETTE[index % len(PALETTE)]
        band = (bands or {}).get(name, ())
        if len(band) > 1:
            outline = [at(x, high) for x, _, high in band] + [at(x, low) for x, low, _ in reversed(band)]
            body.append(f'<polygon points="{" ".join(f"{px:.1f},{py:.1f}" for px, py in outline)}" '
                        f'fill="{colour}" opacity="0.15" class="band"/>')
        coords = " ".join(f"{px:.1f},{py:.1f}" for px, py in (at(x, y) for x, y in points))
        if len(points) > 1:
            body.append(f'<polyline points="{coords}" fill="none" stroke="{colour}" stroke-width="2"/>')
        radius = 2.5 if len(points) > 1 else 5
        for x, y in points:
            px, py = at(x, y)
            body.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="{radius}" fill="{colour}">'
                        f"<title>{escape(name)}: {escape(x_label)} {x:g}, {100 * y:.1f}%</title></circle>")
            if len(points) == 1:
                body.append(f'<text x="{px + 9:.1f}" y="{py + 4:.1f}" class="value">{100 * y:.1f}%</text>')
        legend_y = top + 14 + index * 18
        body.append(f'<rect x="{left + plot_w + 12}" y="{legend_y - 9}" width="12" height="3" fill="{colour}"/>'
                    + _label(left + plot_w + 30, legend_y - 4, name, 16, anchor="start"))
    return _svg(width, height, title, body)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
