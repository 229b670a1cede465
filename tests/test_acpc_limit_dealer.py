"""The project's dealer on multi-round limit games (Leduc), over real loopback TCP.

Known answers: the reference dealer's seed-42 Leduc logs (``tests/data/acpc``, example players).
Our dealer must deal the same cards and, replaying the logged actions, write each log byte for
byte: rounds, board cards, ties and split pots (``2.5``) included.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from acpc_support import DATA, ScriptedClient, SeatsInOneThread, run_dealer

from oppmodel.clients.acpc.deal import CardDealer
from oppmodel.clients.acpc.dealer import DealerConfig
from oppmodel.clients.acpc.log import check_log, parse_log, read_log
from oppmodel.clients.commands import dealer_cmd
from oppmodel.modeling.errors import UnknownGameError
from oppmodel.modeling.games.acpc.betting import HandState
from oppmodel.modeling.games.acpc.gamedef import parse_game_def, read_game_def
from oppmodel.modeling.games.acpc.matchstate import MatchState
from oppmodel.server.app import free_ports

LEDUC = {
    2: ("leduc.limit.2p.game", "leduc2p-seed42-example-players.log", ("Alice", "Bob")),
    3: ("leduc.limit.3p.game", "leduc3p-seed42-example-players.log", ("Alice", "Bob", "Carol")),
}


def replayer(log_file: str):
    """on_act playing the action the reference match's player took at this point."""
    betting = [h.betting for h in read_log(DATA / log_file).hands]

    def on_act(line: str, state: MatchState, hand: HandState, decision: int) -> list[str]:
        return [f"{line}:{betting[state.hand][len(state.betting)]}\n"]

    return on_act


@pytest.mark.parametrize("players", [2, 3])
def test_seed_42_deals_the_cards_of_the_reference_logs(players: int) -> None:
    game_file, log_file, _ = LEDUC[players]
    game = read_game_def(DATA / game_file)
    dealer = CardDealer(game, 42)
    hands = read_log(DATA / log_file).hands
    assert len(hands) == 3000
    for logged in hands:
        deal = dealer.deal()
        rounds = HandState.from_betting(game, logged.betting).round + 1
        # the log shows every hole card and the board of each round reached
        assert (deal.hole, deal.board[1:rounds]) == (logged.hole, logged.board), logged.hand
    reached = {len(h.board) for h in hands}
    assert reached == {0, 1}  # hands that end in round 0 still draw their board card


@pytest.mark.parametrize("players", [2, 3])
def test_oppmodel_dealer_replaying_the_leduc_logs_writes_them_byte_for_byte(
    players: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    game_file, log_file, names = LEDUC[players]
    reference = DATA / log_file
    match = reference.read_text().split(" ")[2]  # the header's match name
    monkeypatch.chdir(tmp_path)
    (tmp_path / game_file).write_text((DATA / game_file).read_text())
    ports = free_ports(players)
    parser = argparse.ArgumentParser()
    dealer_cmd.register(parser.add_subparsers())
    args = parser.parse_args(
        [
            *("dealer", match, game_file, "3000", "42", *names, "-q"),
            *("-p", ",".join(map(str, ports)), "--start_timeout", "10000"),
        ]
    )
    clients = SeatsInOneThread(tuple(ports), replayer(log_file), game=read_game_def(game_file))
    assert args.func(args) == 0
    clients.join()
    ours = (tmp_path / f"{match}.log").read_bytes()
    assert ours == reference.read_bytes()
    score = reference.read_text().splitlines()[-1]
    out = capsys.readouterr()
    assert out.out.splitlines() == [" ".join(map(str, ports)), score]
    assert out.err.splitlines() == [*reference.read_text().splitlines()[:4], score]


LEDUC3P = read_game_def(DATA / LEDUC[3][0])
# Hand 0 of the 3p log, crcrcc/crfrc with Ks|Kh|Js/Qs: every message the reference sends, seat by
# seat (seat = position in hand 0). The board appears once round 1 starts; at the end the folder
# (position 2) is shown the two live hands, and the live players never see the folded Js.
HAND_0 = [
    *("MATCHSTATE:0:0::Ks||", "MATCHSTATE:1:0::|Kh|", "MATCHSTATE:2:0::||Js"),
    *("MATCHSTATE:0:0:c:Ks||", "MATCHSTATE:1:0:c:|Kh|", "MATCHSTATE:2:0:c:||Js"),
    *("MATCHSTATE:0:0:cr:Ks||", "MATCHSTATE:1:0:cr:|Kh|", "MATCHSTATE:2:0:cr:||Js"),
    *("MATCHSTATE:0:0:crc:Ks||", "MATCHSTATE:1:0:crc:|Kh|", "MATCHSTATE:2:0:crc:||Js"),
    *("MATCHSTATE:0:0:crcr:Ks||", "MATCHSTATE:1:0:crcr:|Kh|", "MATCHSTATE:2:0:crcr:||Js"),
    *("MATCHSTATE:0:0:crcrc:Ks||", "MATCHSTATE:1:0:crcrc:|Kh|", "MATCHSTATE:2:0:crcrc:||Js"),
    *("MATCHSTATE:0:0:crcrcc/:Ks||/Qs", "MATCHSTATE:1:0:crcrcc/:|Kh|/Qs"),
    "MATCHSTATE:2:0:crcrcc/:||Js/Qs",
    *("MATCHSTATE:0:0:crcrcc/c:Ks||/Qs", "MATCHSTATE:1:0:crcrcc/c:|Kh|/Qs"),
    "MATCHSTATE:2:0:crcrcc/c:||Js/Qs",
    *("MATCHSTATE:0:0:crcrcc/cr:Ks||/Qs", "MATCHSTATE:1:0:crcrcc/cr:|Kh|/Qs"),
    "MATCHSTATE:2:0:crcrcc/cr:||Js/Qs",
    *("MATCHSTATE:0:0:crcrcc/crf:Ks||/Qs", "MATCHSTATE:1:0:crcrcc/crf:|Kh|/Qs"),
    "MATCHSTATE:2:0:crcrcc/crf:||Js/Qs",
    *("MATCHSTATE:0:0:crcrcc/crfr:Ks||/Qs", "MATCHSTATE:1:0:crcrcc/crfr:|Kh|/Qs"),
    "MATCHSTATE:2:0:crcrcc/crfr:||Js/Qs",
    *("MATCHSTATE:0:0:crcrcc/crfrc:Ks|Kh|/Qs", "MATCHSTATE:1:0:crcrcc/crfrc:Ks|Kh|/Qs"),
    "MATCHSTATE:2:0:crcrcc/crfrc:Ks|Kh|Js/Qs",
]


def test_every_seat_sees_the_board_from_round_two_and_the_showdown_cards_at_the_end(
    tmp_path: Path,
) -> None:
    play = {"on_act": replayer(LEDUC[3][1]), "game": LEDUC3P}
    captured, clients = run_dealer(
        tmp_path,
        hands=3,
        game=LEDUC3P,
        fixed_seats=True,
        clients=lambda ports: [ScriptedClient(p, **play).start() for p in ports],
    )
    assert captured.result.status == 0 and all(c.error is None for c in clients)
    received = [line.rstrip("\r\n") for c in clients for line in c.received]
    seat_of = {line: int(line.split(":")[1]) for line in HAND_0}
    for seat, client in enumerate(clients):
        hand_0 = [line.rstrip("\r\n") for line in client.received if line.split(":")[2] == "0"]
        assert hand_0 == [line for line in HAND_0 if seat_of[line] == seat]
    assert all(line.endswith("\r\n") for c in clients for line in c.received)
    log = parse_log(captured.log)
    assert len(received) == 3 * sum(len(h.betting.replace("/", "")) + 1 for h in log.hands)
    assert check_log(LEDUC3P, log) == []
    assert (
        captured.log.splitlines()[4]
        == "STATE:0:crcrcc/crfrc:Ks|Kh|Js/Qs:2.5|2.5|-5:Alice|Bob|Carol"
    )


def test_a_game_the_dealer_cannot_deal_is_refused_naming_what() -> None:
    text = (DATA / LEDUC[2][0]).read_text()
    flop_first = parse_game_def(text.replace("numBoardCards = 0 1", "numBoardCards = 1 1"))
    with pytest.raises(UnknownGameError, match="board card"):
        DealerConfig("m", "g", flop_first, 1, 42, ("a", "b")).validate()
    nolimit = parse_game_def(text.replace("limit", "nolimit", 1))
    with pytest.raises(UnknownGameError, match="no-limit"):
        DealerConfig("m", "g", nolimit, 1, 42, ("a", "b")).validate()
