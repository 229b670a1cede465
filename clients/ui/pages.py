"""The HTML of the web UI: the session list, one session's live panel, the login form. Every
value from the service (labels, game names, information states) is escaped; the page loads only
this UI's own stylesheet and script (``STYLE``, ``SCRIPT``), which poll the panel for updates.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Sequence
from html import escape

import numpy as np
from scipy.stats import beta

from oppmodel.clients.client import OpponentModel
from oppmodel.clients.ui.charts import CREDIBLE, ProbabilityRow, probability_chart, value_chart
from oppmodel.clients.ui.reader import OpponentView, SessionView, WeightsView, Winnings
from oppmodel.v1 import opponent_model_pb2 as pb
from oppmodel.v1 import perfect_info_pb2 as pi

SHOWN_INFOSTATES = 6  # information states per (opponent, position): the most evidence first
_ACTIONS = {2: ("pass", "bet"), 3: ("fold", "call", "raise")}


def page(
    title: str, body: str, *, live: str | None = None, refresh_ms: int = 1000, tag: str = ""
) -> str:
    """A whole page; ``live``: the URL of the fragment that replaces ``#live`` every
    ``refresh_ms`` milliseconds; ``tag``: the entity tag of ``body`` (the fragment is then
    asked for only if it changed)."""
    attributes = (
        f' data-src="{escape(live)}" data-refresh="{refresh_ms}" data-tag="{escape(tag)}"'
        if live
        else ""
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)} · oppmodel</title>"
        '<link rel="stylesheet" href="/static/ui.css"><script src="/static/ui.js" defer></script>'
        '</head><body><header><a href="/" class="brand">oppmodel</a>'
        '<span id="status" class="status"></span><a href="/login" class="login">token</a></header>'
        f'<main><h1>{escape(title)}</h1><div id="live"{attributes}>{body}</div></main>'
        "</body></html>"
    )


def _when(unix_ms: int) -> str:
    moment = datetime.datetime.fromtimestamp(unix_ms / 1000, tz=datetime.UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def _players(config: pb.SessionConfig) -> str:
    return ", ".join(escape(label) for label in (config.our_label, *config.opponent_labels))


def session_list(sessions: Sequence[pb.Session]) -> str:
    """The caller's sessions: game, players (ours first), hands, created."""
    if not sessions:
        return '<p class="empty" id="no-sessions">No sessions for this token.</p>'
    rows = "".join(
        f'<tr data-session="{escape(s.session_id)}">'
        f'<td><a href="/session/{escape(s.session_id)}">{escape(s.session_id[:12])}</a></td>'
        f"<td>{escape(_game_name(s.config.game))}</td><td>{_players(s.config)}</td>"
        f'<td class="num hands">{s.hands_observed}</td><td>{_when(s.created_unix_ms)}</td></tr>'
        for s in sessions
    )
    return (
        '<div class="scroll"><table class="sessions"><thead><tr><th>session</th><th>game</th>'
        "<th>players (us first)</th><th>hands</th><th>created</th></tr></thead>"
        f"<tbody>{rows}</tbody></table></div>"
    )


def _game_name(game: str) -> str:
    """A bundled game's name as is; a game given by its rules as their first line."""
    return game if "\n" not in game else game.split("\n", 1)[0] + " …"


def session_panel(view: SessionView) -> str:
    """One session: who plays, the responses and their value curve, every opponent's model."""
    session = view.session
    config = session.config
    head = (
        f'<p class="facts">game <b>{escape(_game_name(config.game))}</b> · players '
        f"<b>{_players(config)}</b> (us first) · hands observed "
        f'<b id="hands" data-hands="{view.hands}">{view.hands}</b></p>'
    )
    head += _learning(view)
    models = "".join(_opponent_card(o) for o in view.opponents)
    return (
        head + _response_card(view) + _winnings(view.winnings) + f'<div class="grid">{models}</div>'
    )


def _response_card(view: SessionView) -> str:
    """Our response in each position and the value curve; a note where the game has none."""
    if not view.responses:  # GetModels answers no response where the game has no table
        return (
            '<section class="card" id="no-response-table"><h2>Our response</h2><p class="note">'
            "This game's model has no response table: the service makes the response at each "
            "decision (GetAction; 3-player hold'em), so there is no best response or played "
            "policy to show, only the models.</p></section>"
        )
    responses = "".join(
        f'<tr><td>{r.our_position}</td><td class="num ev" data-position="{r.our_position}">'
        f'{r.expected_value:+.4f}</td><td class="num played" data-position="{r.our_position}">'
        f'{r.played_expected_value:+.4f}</td><td class="num">{r.held_back} of {r.infostates}'
        "</td></tr>"
        for r in view.responses
    )
    return (
        '<section class="card"><h2>Our response</h2><p class="note">The best response to the '
        "posterior-mean models and what is played (the policy the service's GetAction draws "
        "from: the default strategy for the first H hands, then the best response mixed with "
        "the default as far as the safety bankroll allows), each with its expected value "
        "against the models in chips per hand, and the information states where what is played "
        "is not the best response.</p>"
        '<div class="pair"><div class="scroll"><table><thead><tr><th>our position</th>'
        "<th>best response</th><th>played</th><th>held back at</th></tr></thead>"
        f"<tbody>{responses}</tbody></table></div>"
        + value_chart(
            [
                ("best response", [(h, best) for h, best, _ in view.values]),
                ("played", [(h, played) for h, _, played in view.values]),
            ],
            title="expected value against the models, mean over our positions",
            unit="chips per hand",
        )
        + "</div></section>"
    )


def _winnings(won: Winnings) -> str:
    """Our cumulative chips over the hands, and the win rate in the game's unit."""
    if not won.hands:
        return '<section class="card"><h2>Our winnings</h2><p class="empty">no hands</p></section>'
    return (
        f'<section class="card winnings" data-last="{won.curve[-1][1]!r}"><h2>Our winnings</h2>'
        f'<div class="pair"><p class="facts">won <b id="winnings" data-chips="{won.chips!r}" '
        f'data-hands="{won.hands}">{won.chips:+g}</b> chips over {won.hands} hands: '
        f"<b>{won.rate():+.1f} {escape(won.unit_label)}</b> (1000 x chips per hand / "
        f"{won.unit_chips} chip{'s' if won.unit_chips != 1 else ''}), by the game's payoffs "
        "of what our seat saw of each hand</p>"
        + value_chart(
            [("chips won", list(won.curve))],
            title="our winnings, cumulative over the hands",
            unit="chips",
        )
        + "</div></section>"
    )


def _learning(view: SessionView) -> str:
    """What bounds the learning: default play, change detection's run, the safety bankroll."""
    mbbr = view.session.config.mbbr
    parts = []
    if view.hands < mbbr.hands_default:
        parts.append(f"playing the default strategy until hand {mbbr.hands_default}")
    first = view.opponents[0].model if view.opponents else None
    if first is not None and mbbr.change_hazard > 0:
        run = view.hands - first.run_start
        parts.append(
            f'change detection: the models rest on the last <b id="run-length">{run}</b> hands '
            f"(since hand {first.run_start})"
        )
    else:
        parts.append("change detection off")
    budget = mbbr.safety_budget if mbbr.HasField("safety_budget") else None
    if budget is None or math.isinf(budget):
        parts.append("no safety budget")
    elif first is not None and first.safety_bankroll is not None:
        parts.append(
            f'safety bankroll <b id="bankroll">{first.safety_bankroll:+.4f}</b> chips '
            f"(budget {budget:g} thousandths of the game's unit a hand)"
        )
    else:
        parts.append("safety budget: every guard hypothesis ruled out, it no longer binds")
    return f'<p class="facts">{" · ".join(parts)}</p>'


def _interval(p: float, concentration: float) -> tuple[float, float] | None:
    """The central CREDIBLE interval of the Beta(c p, c (1 - p)) marginal of a Dirichlet with
    mean ``p`` and total concentration ``c`` (None when there is none)."""
    if concentration <= 0 or not 0.0 < p < 1.0:
        return None
    a, b = concentration * p, concentration * (1.0 - p)
    tail = (1.0 - CREDIBLE) / 2
    lo, hi = beta.ppf([tail, 1.0 - tail], a, b)
    return float(lo), float(hi)


def _deviation(model: np.ndarray, prior: np.ndarray) -> float:
    """Total-variation distance between two action distributions."""
    return 0.5 * float(np.abs(model - prior).sum())


def shown_infostates(model: OpponentModel) -> list[int]:
    """The rows to show: the SHOWN_INFOSTATES with the most evidence (the highest
    concentration; all alike without one), the largest deviations from the prior first."""
    rows = list(range(len(model.strategy.infostates)))
    if model.concentration:
        rows.sort(key=lambda i: -model.concentration[i])
    rows = rows[:SHOWN_INFOSTATES]
    probabilities, prior = model.strategy.probabilities, model.prior.probabilities
    if len(prior):
        rows.sort(key=lambda i: -_deviation(probabilities[i], prior[i]))
    return rows


def _opponent_card(opponent: OpponentView) -> str:
    model = opponent.model
    chart_rows, table_rows = [], []
    for i in shown_infostates(model):
        state, probabilities = model.strategy.infostates[i], model.strategy.probabilities[i]
        names = _ACTIONS.get(len(probabilities), tuple(str(a) for a in range(len(probabilities))))
        c = model.concentration[i] if model.concentration else 0.0
        for a, p in enumerate(probabilities.tolist()):
            prior = float(model.prior.probabilities[i, a]) if len(model.prior.infostates) else None
            interval = _interval(p, c)
            chart_rows.append(ProbabilityRow(f"{state} {names[a]}", p, interval, prior))
            shown = "–" if interval is None else f"{interval[0]:.3f}–{interval[1]:.3f}"
            table_rows.append(
                f'<tr><td>{escape(state)}</td><td>{names[a]}</td><td class="num p" '
                f'data-infostate="{escape(state)}" data-action="{a}">{p:.3f}</td>'
                f'<td class="num">{shown}</td><td class="num">'
                f"{'–' if prior is None else f'{prior:.3f}'}</td></tr>"
            )
    title = f"{opponent.label} in position {opponent.position} (we sit in {model.our_position})"
    return (
        f'<section class="card opponent" data-label="{escape(opponent.label)}" '
        f'data-position="{opponent.position}"><h2>{escape(title)}</h2>'
        f'<p class="note">spread {model.effective_sample_size:.3g} (least-seen information '
        "set's concentration, or the samples' ESS)</p>"
        + probability_chart(chart_rows, title=title)
        + '<details><summary>numbers</summary><div class="scroll"><table><thead><tr>'
        "<th>information state</th><th>action</th><th>modeled</th>"
        f"<th>{CREDIBLE:.0%} interval</th><th>prior</th></tr></thead><tbody>"
        + "".join(table_rows)
        + "</tbody></table></div></details></section>"
    )


def weights_panel(view: WeightsView) -> str:
    """A perfect-information session: each opponent's model weights (posterior mean, credible
    interval, the prior's mean) after the choices seen (GetModelWeights)."""
    config = view.session.config
    head = (
        f'<p class="facts">game <b>{escape(config.game)}</b> · choices observed '
        f'<b id="choices" data-choices="{view.version}">{view.version}</b></p>'
    )
    priors = {o.label: o for o in config.opponents}
    cards = "".join(_weights_card(w, priors.get(w.opponent)) for w in view.weights)
    return head + f'<div class="grid">{cards}</div>'


def _prior_mean(opponent: pi.OpponentModels | None, models: int) -> list[float] | None:
    """The mean of the Dirichlet(alpha) prior over an opponent's model weights."""
    if opponent is None:
        return None
    alpha = list(opponent.alpha) or [1.0]
    alpha = alpha * models if len(alpha) == 1 else alpha
    return [a / sum(alpha) for a in alpha]


def _weights_card(weights: pi.ModelWeights, opponent: pi.OpponentModels | None) -> str:
    prior = _prior_mean(opponent, len(weights.models))
    rows = [
        ProbabilityRow(name, mean, (lower, upper), None if prior is None else prior[j])
        for j, (name, mean, lower, upper) in enumerate(
            zip(weights.models, weights.mean, weights.lower, weights.upper, strict=True)
        )
    ]
    numbers = "".join(
        f'<tr><td>{escape(name)}</td><td class="num w" data-model="{escape(name)}">{mean:.3f}'
        f'</td><td class="num">{lower:.3f}–{upper:.3f}</td><td class="num">{rhat:.3f}</td></tr>'
        for name, mean, lower, upper, rhat in zip(
            weights.models, weights.mean, weights.lower, weights.upper, weights.rhat, strict=True
        )
    )
    title = f"{weights.opponent}: model weights after {weights.choices} choices"
    return (
        f'<section class="card weights" data-label="{escape(weights.opponent)}">'
        f"<h2>{escape(title)}</h2>"
        + probability_chart(rows, title=title, level=weights.level, axis="model")
        + '<div class="scroll"><table><thead><tr><th>model</th><th>weight</th>'
        f"<th>{weights.level:.0%} interval</th><th>R-hat</th></tr></thead><tbody>{numbers}"
        "</tbody></table></div></section>"
    )


def login_form(back: str, message: str = "") -> str:
    """The form that stores the browser user's bearer token (a cookie of this site only), then
    returns to the page ``back``."""
    note = f'<p class="error">{escape(message)}</p>' if message else ""
    return (
        f'{note}<form method="post" action="/login" class="card">'
        f'<input type="hidden" name="next" value="{escape(back)}"><label>Bearer token of the '
        'service (oppmodel serve --auth-tokens)<input type="password" name="token" '
        'autocomplete="current-password" required></label><button type="submit">Use this '
        'token</button></form><p class="note">The token is kept in a cookie of this page and '
        "sent to the service with each call; the page shows only that token's sessions.</p>"
    )


STYLE = """
*{box-sizing:border-box}body{margin:0;font:15px/1.4 system-ui,sans-serif;color:#1b1f24;
background:#f4f6f8}header{display:flex;gap:1em;align-items:center;padding:.6em 1em;
background:#17324f;color:#fff}header a{color:#fff;text-decoration:none}.brand{font-weight:700}
.status{flex:1;font-size:.85em;opacity:.85}main{padding:0 1em 2em;max-width:1400px;margin:auto}
h1{font-size:1.3em;word-break:break-all}h2{font-size:1.05em;margin:.2em 0}
.card{background:#fff;border-radius:6px;padding:.8em;margin:.8em 0;box-shadow:0 1px 2px #0002}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,520px),1fr));gap:0 1em}
.pair{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,340px),1fr));
gap:1em;align-items:start}.scroll{overflow-x:auto}table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:.25em .5em;border-bottom:1px solid #e3e7eb;white-space:nowrap}
th{white-space:normal;vertical-align:bottom}
.num{text-align:right;font-variant-numeric:tabular-nums}.note,.empty{color:#5b6670;
font-size:.9em}.error{color:#b00020}.chart{max-width:520px;margin:0}
.chart svg{width:100%;height:auto;display:block}.chart figcaption{font-size:.95em}
.chart .grid{stroke:#d5dbe1}.chart .frame{stroke:#5b6670}.chart text{font-size:10.5px;
fill:#1b1f24}.chart .tick{text-anchor:middle;fill:#5b6670}.chart .end{text-anchor:end}
.chart .rowlabel{text-anchor:end}.chart .axis{text-anchor:middle;font-size:11px}
form label{display:block}input{display:block;width:100%;margin:.4em 0;padding:.4em}
input[type=hidden]{display:none}
button{padding:.4em 1em}
"""

SCRIPT = """
"use strict";
(function () {
  const live = document.getElementById("live");
  const status = document.getElementById("status");
  if (!live || !live.dataset.src) return;
  const every = Number(live.dataset.refresh) || 1000;
  async function refresh() {
    try {
      const headers = live.dataset.tag ? {"If-None-Match": live.dataset.tag} : {};
      const reply = await fetch(live.dataset.src,
        {cache: "no-store", credentials: "same-origin", headers: headers});
      if (reply.ok || reply.status === 304) {  // 304: the page holds the current fragment
        if (reply.ok) {
          const text = await reply.text();
          live.dataset.tag = reply.headers.get("ETag") || "";
          if (text !== live.dataset.last) {
            const key = (d) => d.parentElement.dataset.label + d.parentElement.dataset.position;
            const open = new Set(Array.from(live.querySelectorAll("details[open]"), key));
            live.innerHTML = text;
            live.dataset.last = text;
            live.querySelectorAll("details").forEach((d) => { d.open = open.has(key(d)); });
          }
        }
        status.textContent = "live · " + new Date().toLocaleTimeString();
      } else {
        const text = await reply.text();
        status.textContent = "the service answered " + reply.status + ": " + text.slice(0, 120);
      }
    } catch (error) {
      status.textContent = "not reachable: " + error;
    }
    setTimeout(refresh, every);
  }
  setTimeout(refresh, every);
})();
"""
