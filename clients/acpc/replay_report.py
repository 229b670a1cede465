"""The report of an offline replay (:mod:`oppmodel.clients.acpc.replay`): its records, its JSON,
the text table with a legend line per column, and the plot of the running scores.

The methods, in the order of the columns: ``prior`` (MBBR's prior mean, never updated),
``counts`` (Laplace-smoothed frequencies), ``naive-bayes`` (the naive Bayes move model) and
``mbbr`` (MBBR's posterior-mean model); :func:`column_legend` says what each column means.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.mbbr.config import MBBRConfig, Posterior

METHODS = ("prior", "counts", "naive-bayes", "mbbr")
HIDDEN_METHODS = ("prior", "mbbr")  # the only ones that can predict without the card


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
    model: dict[str, tuple[float, float]]  # OpenSpiel infostate -> (P(pass), P(bet))
    effective_sample_size: float  # the posterior's spread: ESS or least concentration


@dataclass(frozen=True)
class Curve:
    """Running means over the scored decisions, sampled after each hand that had one."""

    hands: np.ndarray  # hands replayed so far
    log_loss: dict[str, np.ndarray]
    accuracy: dict[str, np.ndarray]


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
    hidden: dict[str, Score]
    curve: Curve
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
            "columns": column_legend(self.config),
            "session_id": self.session_id,
            "overall": {m: s.__dict__ for m, s in self.overall.items()},
            "hidden_card_decisions": {m: s.__dict__ for m, s in self.hidden.items()},
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
        f"prior={config.prior} epsilon={config.epsilon} eta={config.eta} "
        f"H={config.hands_default} change_hazard={config.change_hazard:g} seed={config.seed}"
    )
    if config.posterior == Posterior.SAMPLES:
        return f"MBBR with the samples posterior (Ganzfried et al. 2024): k={config.k} {common}"
    return f"MBBR with the dirichlet posterior (the default; variational Bayes): {common}"


def spread_column(config: MBBRConfig) -> str:
    """The header of the last column: what the posterior reports about its own certainty."""
    return "ESS" if config.posterior == Posterior.SAMPLES else "conc"


def column_legend(config: MBBRConfig) -> dict[str, str]:
    """What each column of the report means, by header, in the order of the table."""
    predictors = {
        "prior": "predictor: MBBR's prior mean alone, never updated (N3 clipped to "
        "[epsilon, 1 - epsilon]; uniform with the uninformed prior)",
        "counts": "predictor: Laplace-smoothed frequencies of the opponent's actions per "
        "position and information state, (n_a + 1) / (n + 2), from the decisions seen so far",
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
            "smallest Dirichlet concentration alpha_0 + alpha_1 over this opponent's information "
            "sets in that position: the prior's weight plus the expected visits of the least-seen "
            "one, the hands MBBR's model rests on there"
        )
    return {
        "opponent": "the opponent modelled (its name in the log); 'all' = every row together",
        "pos": "the position the opponent sat in (0 acts first)",
        "n": "opponent decisions scored: in showdown hands, by opponents who did not fold",
        **predictors,
        "mean log-loss (nats)": "-ln P(action taken) under each predictor, averaged; lower is "
        "better, ln 2 = 0.693 is a coin flip",
        "accuracy": "share of decisions where each predictor's more probable action (ties: pass) "
        "was the action taken; higher is better",
        spread_column(config): spread,
    }


def format_report(report: ReplayReport) -> str:
    """The text table: per opponent and position, log-loss and accuracy per method, the
    posterior's spread, and a legend line per column."""
    spread = spread_column(report.config)
    lines = [
        f"replay as {report.name}: {report.hands} hands, {report.showdown_hands} with an "
        f"opponent card shown; {report.scored_decisions} opponent decisions scored "
        f"(showdown, card known), {report.unscored_decisions} not scored (card never shown)",
        posterior_description(report.config)
        + (f"; session {report.session_id}" if report.session_id else ""),
        "",
        "online prediction of each next opponent action (before updating on its hand)",
        f"{'opponent':<12}{'pos':>4}{'n':>6} | "
        + "".join(f"{m:>12}" for m in METHODS)
        + " | "
        + "".join(f"{m:>12}" for m in METHODS)
        + f" | {spread:>6}",
        f"{'':<22} | {'mean log-loss (nats)':^48} | {'accuracy':^48} |",
    ]
    for r in report.opponents:
        lines.append(_row(r.opponent, str(r.position), r.scores, f"{r.effective_sample_size:6.2f}"))
    lines.append(_row("all", "", report.overall, ""))
    lines.append("")
    lines.append("columns:")
    legend = column_legend(report.config)
    width = max(len(name) for name in legend)
    lines.extend(f"  {name:<{width}}  {text}" for name, text in legend.items())
    hidden = report.hidden
    lines.append(
        f"\n{hidden['mbbr'].decisions} decisions with the card never shown, predicted by the "
        "marginal over the unseen cards given the public history (counts and naive Bayes need "
        "the card):"
    )
    for m in HIDDEN_METHODS:
        lines.append(
            f"  {m:<6} mean log-loss {hidden[m].log_loss:.4f}, accuracy {hidden[m].accuracy:.3f}"
        )
    lines.append("")
    lines.append("final MBBR models, P(bet) per information state (card, history):")
    for r in report.opponents:
        cells = " ".join(f"{k}:{v[1]:.2f}" for k, v in r.model.items())
        lines.append(f"  {r.opponent} @ {r.position}: {cells}")
    return "\n".join(lines)


def _row(label: str, position: str, scores: dict[str, Score], ess: str) -> str:
    n = scores[METHODS[0]].decisions
    return (
        f"{label:<12}{position:>4}{n:>6} | "
        + "".join(f"{scores[m].log_loss:>12.4f}" for m in METHODS)
        + " | "
        + "".join(f"{scores[m].accuracy:>12.3f}" for m in METHODS)
        + f" | {ess:>6}"
    )


def plot_curves(report: ReplayReport, path: str) -> None:
    """Running mean log-loss and accuracy over hands, one line per method, as a PNG."""
    try:
        import matplotlib
    except ImportError as exc:
        raise InvalidArgumentError(
            "plot", "needs matplotlib (pip install 'oppmodel[plot]')"
        ) from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 7), sharex=True)
    for m in METHODS:
        top.plot(report.curve.hands, report.curve.log_loss[m], label=m)
        bottom.plot(report.curve.hands, report.curve.accuracy[m], label=m)
    top.set_ylabel("running mean log-loss (nats)")
    bottom.set_ylabel("running accuracy")
    bottom.set_xlabel(f"hands replayed as {report.name}")
    top.set_title("online prediction of opponent actions (showdown decisions, card known)")
    top.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
