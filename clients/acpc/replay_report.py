"""The report of an offline replay (:mod:`oppmodel.clients.acpc.replay`): its records, its JSON,
the text table with a legend line per column, and the plot of the running scores.

The methods, in the order of the columns: ``prior`` (MBBR's prior mean, never updated),
``counts`` (Laplace-smoothed frequencies), ``naive-bayes`` (the naive Bayes move model; Kuhn only)
and ``mbbr`` (MBBR's posterior-mean model); :func:`column_legend` says what each column means.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.mbbr.config import MBBRConfig, Posterior

METHODS = ("prior", "counts", "naive-bayes", "mbbr")  # every method; a game scores some of them
HIDDEN_METHODS = ("prior", "counts", "mbbr")  # the ones with a marginal over hidden cards
MAX_PRINTED_INFOSETS = 64  # the text lists the final models of games this small (Kuhn)


@dataclass(frozen=True)
class Score:
    """A method's online predictions: decisions scored, mean log-loss (nats), accuracy."""

    decisions: int
    log_loss: float
    accuracy: float


@dataclass(frozen=True)
class OpponentReport:
    """One opponent in one position: scores per method, final MBBR model and its spread."""

    opponent: str
    position: int
    our_position: int
    scores: dict[str, Score]
    hidden_scores: dict[str, Score]  # decisions with the card never shown (marginal prediction)
    model: dict[str, tuple[float, ...]]  # infostate -> action probabilities (pass, bet in
    # Kuhn, OpenSpiel's strings; fold, call, raise in a limit game, "Ks/Qh:rc/cr" strings)
    effective_sample_size: float  # the posterior's spread: ESS or least concentration


@dataclass(frozen=True)
class Curve:
    """Running means over the scored decisions, sampled after each hand that had one."""

    hands: np.ndarray  # hands replayed so far
    log_loss: dict[str, np.ndarray]
    accuracy: dict[str, np.ndarray]


@dataclass(frozen=True)
class HandScores:
    """Per hand with an opponent decision: the sum of its opponent decisions' log-losses (every
    decision, -ln of the probability of the hand's opponent actions), each method's mean over
    those hands, and MBBR's paired difference to the prior's with its standard error."""

    hands: int
    log_loss: dict[str, float]
    mbbr_minus_prior: float
    standard_error: float


@dataclass(frozen=True)
class ReplayReport:
    """The whole replay: per (opponent, position) rows, overall scores and the curves."""

    name: str
    hands: int
    showdown_hands: int
    scored_decisions: int
    unscored_decisions: int  # opponent decisions whose card NAME never saw
    config: MBBRConfig
    opponents: tuple[OpponentReport, ...]
    overall: dict[str, Score]
    hidden: dict[str, Score]  # the decisions with the cards never shown (HIDDEN_METHODS)
    curve: Curve
    every: dict[str, Score]  # every opponent decision, scored or hidden (HIDDEN_METHODS)
    every_curve: Curve
    methods: tuple[str, ...]  # the columns: the predictors the game scores with the cards shown
    rounds: tuple[dict[str, Score], ...]  # per betting round: the scored decisions
    every_rounds: tuple[dict[str, Score], ...]  # per betting round: every decision
    late_hands: int  # the last hands of the log, scored apart: what the models know by the end
    late: dict[str, Score]  # their scored decisions
    late_every: dict[str, Score]  # their every decision (HIDDEN_METHODS)
    per_hand: HandScores  # every decision, summed per hand (HIDDEN_METHODS)
    session_id: str | None = None

    def as_json(self) -> dict:
        """A JSON-ready dict (curves left out; they are what --plot draws)."""
        return {
            "name": self.name,
            "hands": self.hands,
            "showdown_hands": self.showdown_hands,
            "scored_decisions": self.scored_decisions,
            "unscored_decisions": self.unscored_decisions,
            "scored_on": "opponent decisions in showdown hands by opponents who did not fold",
            "posterior": self.config.posterior,
            "mbbr": self.config.__dict__,
            "columns": column_legend(self.config, self.methods),
            "session_id": self.session_id,
            "overall": {m: s.__dict__ for m, s in self.overall.items()},
            "hidden_card_decisions": {m: s.__dict__ for m, s in self.hidden.items()},
            "every_decision": {m: s.__dict__ for m, s in self.every.items()},
            "per_hand": self.per_hand.__dict__,
            "end_of_log": {
                "hands": self.late_hands,
                "scores": {m: s.__dict__ for m, s in self.late.items()},
                "every_decision": {m: s.__dict__ for m, s in self.late_every.items()},
            },
            "rounds": [
                {
                    "round": k,
                    "scores": {m: s.__dict__ for m, s in scores.items()},
                    "every_decision": {m: s.__dict__ for m, s in every.items()},
                }
                for k, (scores, every) in enumerate(
                    zip(self.rounds, self.every_rounds, strict=True)
                )
            ],
            "opponents": [
                {
                    "opponent": r.opponent,
                    "position": r.position,
                    "our_position": r.our_position,
                    "effective_sample_size": r.effective_sample_size,
                    "scores": {m: s.__dict__ for m, s in r.scores.items()},
                    "hidden_card_scores": {m: s.__dict__ for m, s in r.hidden_scores.items()},
                    "model": {k: list(v) for k, v in r.model.items()},
                }
                for r in self.opponents
            ],
        }


def posterior_description(config: MBBRConfig) -> str:
    """One line naming MBBR's posterior and the parameters it uses."""
    common = (
        f"prior={config.prior} epsilon={config.epsilon} eta={config.informed_eta()} "
        f"H={config.hands_default} change_hazard={config.change_hazard:g} seed={config.seed}"
    )
    if config.posterior == Posterior.SAMPLES:
        return f"MBBR with the samples posterior (Ganzfried et al. 2024): k={config.k} {common}"
    return f"MBBR with the dirichlet posterior (the default; variational Bayes): {common}"


def spread_column(config: MBBRConfig) -> str:
    """The header of the last column: what the posterior reports about its own certainty."""
    return "ESS" if config.posterior == Posterior.SAMPLES else "conc"


def column_legend(config: MBBRConfig, methods: tuple[str, ...] = METHODS) -> dict[str, str]:
    """What each column of the report means, by header, in the order of the table (the
    predictor columns: ``methods``)."""
    predictors = {
        "prior": "predictor: MBBR's prior mean alone, never updated (N3 in Kuhn, the bundled "
        "CFR strategy in Leduc, the bundled blueprint in hold'em, clipped to [epsilon, "
        "1 - epsilon]; uniform with the "
        "uninformed prior; with the mixture prior its types' mean at their prior weights)",
        "counts": "predictor: Laplace-smoothed frequencies of the opponent's actions per "
        "position and information state, (n_a + 1) / (n + L) over its L legal actions, from "
        "the decisions seen so far",
        "naive-bayes": "predictor: the naive Bayes move model (oppmodel.modeling.movepred.kuhn), "
        "retrained after each hand on the same decisions",
        "mbbr": f"predictor: MBBR's model of the opponent in that position ({config.posterior} "
        "posterior, its posterior mean given every earlier hand, folds included)",
    }
    if config.posterior == Posterior.SAMPLES:
        spread = (
            "effective sample size of MBBR's posterior over this opponent's k samples, "
            f"1 / sum w^2: 1 = collapsed onto one sample (learning has stopped), k = {config.k} "
            "= as spread as the prior"
        )
    else:
        spread = (
            "smallest Dirichlet concentration (alpha summed over the actions) over this opponent's "
            "information sets in that position: the prior's weight plus the expected visits of "
            "the least-seen one, the hands MBBR's model rests on there"
        )
    return {
        "opponent": "the opponent modelled (its name in the log); 'all' = every row together; "
        "'round r' = every opponent's decisions in betting round r (0 first; games of more "
        "than one round)",
        "pos": "the position the opponent sat in (0 acts first)",
        "n": "opponent decisions scored: in showdown hands, by opponents who did not fold",
        **{m: predictors[m] for m in methods},
        "mean log-loss (nats)": "-ln P(action taken) under each predictor, averaged; lower is "
        "better, ln 2 = 0.693 is a coin flip",
        "accuracy": "share of decisions where each predictor's most probable action (ties: the "
        "first of pass, bet or of fold, call, raise) was the action taken; higher is better",
        spread_column(config): spread,
    }


def format_report(report: ReplayReport) -> str:
    """The text table: per opponent and position, log-loss and accuracy per method, the
    posterior's spread, and a legend line per column."""
    spread = spread_column(report.config)
    methods = report.methods
    width = 12 * len(methods)
    lines = [
        f"replay as {report.name}: {report.hands} hands, {report.showdown_hands} with an "
        f"opponent card shown; {report.scored_decisions} opponent decisions scored "
        f"(showdown, card known), {report.unscored_decisions} not scored (card never shown)",
        posterior_description(report.config)
        + (f"; session {report.session_id}" if report.session_id else ""),
        "",
        "online prediction of each next opponent action (before updating on its hand)",
        f"{'opponent':<12}{'pos':>4}{'n':>6} | "
        + "".join(f"{m:>12}" for m in methods)
        + " | "
        + "".join(f"{m:>12}" for m in methods)
        + f" | {spread:>6}",
        f"{'':<22} | {'mean log-loss (nats)':^{width}} | {'accuracy':^{width}} |",
    ]
    for r in report.opponents:
        lines.append(
            _row(r.opponent, str(r.position), r.scores, methods, f"{r.effective_sample_size:6.2f}")
        )
    lines.append(_row("all", "", report.overall, methods, ""))
    if len(report.rounds) > 1:
        lines.extend(
            _row(f"round {k}", "", scores, methods, "") for k, scores in enumerate(report.rounds)
        )
    lines.append("")
    lines.append("columns:")
    legend = column_legend(report.config, methods)
    width = max(len(name) for name in legend)
    lines.extend(f"  {name:<{width}}  {text}" for name, text in legend.items())
    hidden, every = report.hidden, report.every
    lines.append(
        f"\n{hidden['mbbr'].decisions} decisions with the cards never shown, predicted by each "
        "method's marginal over the unseen cards given the public history and the board so far "
        "(naive Bayes needs the card):"
    )
    for m in HIDDEN_METHODS:
        lines.append(
            f"  {m:<6} mean log-loss {hidden[m].log_loss:.4f}, accuracy {hidden[m].accuracy:.3f}"
        )
    lines.append(
        f"\nevery opponent decision ({every['mbbr'].decisions}: the scored ones and those; "
        "free of the showdown sample's bias, which never holds a fold):"
    )
    for m in HIDDEN_METHODS:
        lines.append(
            f"  {m:<6} mean log-loss {every[m].log_loss:.4f}, accuracy {every[m].accuracy:.3f}"
        )
    if len(report.every_rounds) > 1:
        for k, scores in enumerate(report.every_rounds):
            lines.append(f"  round {k}: {scores['mbbr'].decisions} decisions; {_cells(scores)}")
    hand = report.per_hand
    lines.append(
        f"per hand ({hand.hands} hands with an opponent decision; the sum of their log-losses): "
        + ", ".join(f"{m} {hand.log_loss[m]:.4f}" for m in HIDDEN_METHODS)
        + f"; mbbr - prior {hand.mbbr_minus_prior:+.4f} +- {hand.standard_error:.4f} (paired)"
    )
    lines.append(
        f"\nby the end of the log (its last {report.late_hands} hands): scored decisions "
        f"{_cells(report.late, methods)}; every decision {_cells(report.late_every)} "
        "(mean log-loss / accuracy)"
    )
    lines.append("")
    largest = max(len(r.model) for r in report.opponents)
    if largest > MAX_PRINTED_INFOSETS:
        lines.append(
            f"final MBBR models: up to {largest} information states per opponent and position "
            "(--json lists every one, with its action probabilities)"
        )
        return "\n".join(lines)
    lines.append("final MBBR models, P(bet) per information state (card, history):")
    for r in report.opponents:
        cells = " ".join(f"{k}:{v[-1]:.2f}" for k, v in r.model.items())
        lines.append(f"  {r.opponent} @ {r.position}: {cells}")
    return "\n".join(lines)


def _cells(scores: dict[str, Score], methods: tuple[str, ...] = HIDDEN_METHODS) -> str:
    return ", ".join(f"{m} {scores[m].log_loss:.4f} / {scores[m].accuracy:.3f}" for m in methods)


def _row(
    label: str, position: str, scores: dict[str, Score], methods: tuple[str, ...], ess: str
) -> str:
    n = scores[methods[0]].decisions
    return (
        f"{label:<12}{position:>4}{n:>6} | "
        + "".join(f"{scores[m].log_loss:>12.4f}" for m in methods)
        + " | "
        + "".join(f"{scores[m].accuracy:>12.3f}" for m in methods)
        + f" | {ess:>6}"
    )


def check_plot_path(path: str) -> None:
    """InvalidArgumentError naming ``plot`` unless :func:`plot_curves` can write ``path``:
    matplotlib installed, an extension it writes (none: PNG), an existing writable folder.
    Checked before a replay, which may take minutes, rather than after it."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
    except ImportError as exc:
        raise InvalidArgumentError(
            "plot", "needs matplotlib (pip install 'oppmodel[plot]')"
        ) from exc
    file = Path(path).expanduser()
    formats = FigureCanvasAgg.get_supported_filetypes()
    extension = file.suffix.lower().lstrip(".")
    if extension and extension not in formats:
        raise InvalidArgumentError(
            "plot", f"{path}: cannot draw a .{extension} file; use {', '.join(sorted(formats))}"
        )
    folder = file.parent
    if not folder.is_dir():
        raise InvalidArgumentError("plot", f"{path}: no folder {folder}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InvalidArgumentError("plot", f"{path}: cannot write in {folder}")


def plot_curves(report: ReplayReport, path: str) -> None:
    """Running mean log-loss and accuracy over hands, one colour per method (solid over the
    showdown decisions, dashed over every decision), as a PNG (or the format ``path`` names:
    :func:`check_plot_path`)."""
    check_plot_path(path)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 7), sharex=True)
    for m in report.methods:  # solid: showdown decisions; dashed: every decision
        (line,) = top.plot(report.curve.hands, report.curve.log_loss[m], label=m)
        bottom.plot(report.curve.hands, report.curve.accuracy[m], color=line.get_color())
        if m in report.every_curve.log_loss:
            every = report.every_curve
            style = {"color": line.get_color(), "linestyle": "--"}
            top.plot(every.hands, every.log_loss[m], label=f"{m}, every decision", **style)
            bottom.plot(every.hands, every.accuracy[m], **style)
    top.set_ylabel("running mean log-loss (nats)")
    bottom.set_ylabel("running accuracy")
    bottom.set_xlabel(f"hands replayed as {report.name}")
    top.set_title(
        "online prediction of opponent actions\n(solid: showdown decisions, cards known; "
        "dashed: every decision)"
    )
    top.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
