"""The page's charts as inline SVG, drawn here so the browser fetches nothing: the modeled action
probabilities against the prior's with credible intervals, and a value curve over hands.

Every chart has labelled axes with units and a legend; its width follows the page (a viewBox),
so it reads the same at 1280 px and on a phone: its viewBox is about a phone's width (its text
about 10 px there, the page's CSS caps a chart at 520 px: 16 px), and its title is HTML above it,
which wraps.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

_WIDTH = 340  # viewBox units; the SVG scales to the width of its box (at most 520 px: CSS)
_LEFT = 60  # room for the row labels (more for long ones, up to _WIDTH / 2)
_CHAR = 6.0  # viewBox units per character of a row label (10.5 px text)
_RIGHT = 16
_ROW = 18
_MODEL = "#2f6db5"
_PRIOR = "#e07b00"
_INTERVAL = "#17324f"
CREDIBLE = 0.90  # the credible intervals' mass


@dataclass(frozen=True)
class ProbabilityRow:
    """One action at one information state: the modeled probability, its credible interval
    (None: unknown) and the prior's probability (None: unknown)."""

    label: str
    model: float
    interval: tuple[float, float] | None
    prior: float | None


def _scale(left: float) -> Callable[[float], float]:
    """Probability -> x, the axis from ``left`` to the right margin."""
    return lambda p: left + p * (_WIDTH - left - _RIGHT)


def probability_chart(
    rows: Sequence[ProbabilityRow], *, title: str, level: float = CREDIBLE, axis: str = "action"
) -> str:
    """Horizontal bars of the modeled probabilities, whiskers for their ``level`` credible
    intervals and a diamond for the prior's, one row per (information state, action), or per
    model of a perfect-information opponent (``axis``: what the probability is of)."""
    top = 50
    height = top + _ROW * len(rows) + 34
    longest = max((len(row.label) for row in rows), default=0)
    left = min(max(_LEFT, _CHAR * longest + 10), _WIDTH / 2)
    _x = _scale(left)
    parts = [_svg(title, _WIDTH, height, caption=False), _legend(level)]
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        x = _x(tick)
        bottom = top + _ROW * len(rows)
        parts.append(
            f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{bottom}" class="grid"/>'
            f'<text x="{x:.1f}" y="{bottom + 13}" class="tick">{tick:g}</text>'
        )
    for i, row in enumerate(rows):
        y = top + i * _ROW
        parts.append(
            f'<text x="{left - 6:.1f}" y="{y + 13}" class="rowlabel">{escape(row.label)}</text>'
            f'<rect x="{_x(0):.1f}" y="{y + 4}" width="{_x(row.model) - _x(0):.1f}" '
            f'height="{_ROW - 8}" fill="{_MODEL}"/>'
        )
        if row.interval is not None:
            lo, hi = (_x(v) for v in row.interval)
            mid = y + _ROW / 2
            parts.append(
                f'<path d="M{lo:.1f} {mid - 4}V{mid + 4}M{lo:.1f} {mid}H{hi:.1f}'
                f'M{hi:.1f} {mid - 4}V{mid + 4}" stroke="{_INTERVAL}" stroke-width="1.5"/>'
            )
        if row.prior is not None:
            px, mid = _x(row.prior), y + _ROW / 2
            parts.append(
                f'<path d="M{px:.1f} {mid - 5}L{px + 5:.1f} {mid}L{px:.1f} {mid + 5}'
                f'L{px - 5:.1f} {mid}Z" fill="{_PRIOR}" stroke="#fff" stroke-width="0.8"/>'
            )
    parts.append(
        f'<text x="{_x(0.5):.1f}" y="{height - 4}" class="axis">'
        f"probability of the {escape(axis)} (0 to 1)</text></svg></figure>"
    )
    return "".join(parts)


def _svg(title: str, width: int, height: int, *, caption: bool = True) -> str:
    """A chart's start: its title above it (HTML, which wraps; ``caption`` False: where the
    page heads the chart with it already), then the SVG's."""
    shown = f"<figcaption>{escape(title)}</figcaption>" if caption else ""
    return (
        f'<figure class="chart">{shown}'
        f'<svg viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">'
        f"<title>{escape(title)}</title>"
    )


def _legend(level: float) -> str:
    """Two rows: the bar and the diamond, then the whisker."""
    return (
        f'<rect x="4" y="6" width="14" height="9" fill="{_MODEL}"/>'
        '<text x="22" y="14" class="legend">modeled (posterior mean)</text>'
        f'<path d="M219 5L224 10L219 15L214 10Z" fill="{_PRIOR}"/>'
        '<text x="229" y="14" class="legend">prior mean</text>'
        f'<path d="M4 28H18M4 24V32M18 24V32" stroke="{_INTERVAL}" stroke-width="1.5"/>'
        f'<text x="22" y="32" class="legend">{level:.0%} credible interval</text>'
    )


_SERIES = (_MODEL, _PRIOR)  # the lines' colours, in order
_DOTS = 60  # a line of more points is drawn without a dot per point


def value_chart(
    series: Sequence[tuple[str, Sequence[tuple[int, float]]]], *, title: str, unit: str
) -> str:
    """Lines of ``(hands, value)`` points, one per named series (at most two: a legend names
    each), with labelled axes (hands; ``unit``)."""
    width, height, left, bottom = _WIDTH, 180, 52, 140
    points = [point for _, line in series for point in line]
    if not points:
        return f'<p class="empty">{escape(title)}: no points yet</p>'
    xs = [h for h, _ in points]
    ys = [v for _, v in points]
    x0, x1 = min(xs), max(max(xs), min(xs) + 1)
    y0, y1 = min(*ys, 0.0), max(*ys, 0.0)
    if y1 - y0 < 1e-9:
        y0, y1 = y0 - 1.0, y1 + 1.0

    def sx(h: float) -> float:
        return left + (h - x0) / (x1 - x0) * (width - left - _RIGHT)

    def sy(v: float) -> float:
        return bottom - (v - y0) / (y1 - y0) * (bottom - 28)

    lines, legend = [], []
    for i, ((name, line), colour) in enumerate(zip(series, _SERIES, strict=False)):
        path = " ".join(f"{sx(h):.1f},{sy(v):.1f}" for h, v in line)
        lines.append(
            f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>'
            + "".join(  # a dot per point while they are few enough to tell apart
                f'<circle cx="{sx(h):.1f}" cy="{sy(v):.1f}" r="2.5" fill="{colour}"/>'
                for h, v in (line if len(line) <= _DOTS else ())
            )
        )
        x = left + 8 + i * (width - left) / 2
        legend.append(
            f'<rect x="{x:.0f}" y="6" width="14" height="4" fill="{colour}"/>'
            f'<text x="{x + 18:.0f}" y="12" class="legend">{escape(name)}</text>'
        )
    return (
        _svg(title, width, height)
        + f'<line x1="{left}" y1="{sy(0.0):.1f}" x2="{width - _RIGHT}" y2="{sy(0.0):.1f}" '
        'class="grid"/>'
        f'<line x1="{left}" y1="28" x2="{left}" y2="{bottom}" class="frame"/>'
        f'<line x1="{left}" y1="{bottom}" x2="{width - _RIGHT}" y2="{bottom}" class="frame"/>'
        + "".join(lines)
        + f'<text x="{left - 6}" y="32" class="tick end">{y1:.3g}</text>'
        f'<text x="{left - 6}" y="{bottom}" class="tick end">{y0:.3g}</text>'
        f'<text x="{left}" y="{bottom + 14}" class="tick">{x0}</text>'
        f'<text x="{width - _RIGHT}" y="{bottom + 14}" class="tick end">{x1}</text>'
        f'<text x="{(left + width) / 2:.0f}" y="{height - 6}" class="axis">hands observed</text>'
        f'<text x="14" y="{(bottom + 28) / 2:.0f}" class="axis" '
        f'transform="rotate(-90 14 {(bottom + 28) / 2:.0f})">{escape(unit)}</text>'
        + "".join(legend)
        + "</svg></figure>"
    )
