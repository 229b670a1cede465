"""The clients' one outbox: hands numbered in order, what is unacknowledged resent from the first
hand the service has not acknowledged, and (kept) every hand again for a new session."""

from __future__ import annotations

from oppmodel.clients.outbox import Outbox, observation_message
from oppmodel.modeling.observation import HandObservation, LimitObservation

HANDS = [
    HandObservation(0, "pp", (1, 0)),
    LimitObservation(1, "rc", ("Ks", "Qs"), ("",)),
    "MATCHSTATE:0:2:cc:Ks|Qs",
    HandObservation(1, "bp", (None, 2)),
]


def test_unacknowledged_hands_are_numbered_and_resent_from_the_first_missing() -> None:
    outbox = Outbox(first_sequence=5)
    assert [outbox.add(h) for h in HANDS] == [5, 6, 7, 8]
    assert len(outbox) == 4 and outbox.next_sequence == 9
    outbox.acknowledge(6)
    assert len(outbox) == 2 and outbox.unacknowledged() == HANDS[2:]
    assert outbox.messages() == [observation_message(7, HANDS[2]), observation_message(8, HANDS[3])]
    outbox.acknowledge(5)  # a late, older acknowledgement takes nothing back
    assert outbox.unacknowledged(limit=1) == [HANDS[2]] and outbox.acknowledged == 6
    outbox.acknowledge(8)
    assert len(outbox) == 0 and outbox.messages() == []
    assert outbox.add(HANDS[0]) == 9 and outbox.unacknowledged() == [HANDS[0]]


def test_a_kept_outbox_sends_every_hand_again_to_a_new_session() -> None:
    outbox = Outbox(keep=True)
    for hand in HANDS:
        outbox.add(hand)
    outbox.acknowledge(3)
    assert outbox.unacknowledged() == HANDS[3:]
    outbox.rewind()  # the server lost the session: a new one takes them all from 1
    assert len(outbox) == 4 and outbox.unacknowledged(limit=2) == HANDS[:2]
    assert [m.sequence for m in outbox.messages()] == [1, 2, 3, 4]


def test_each_hand_travels_in_its_own_fields() -> None:
    kuhn, limit, line, _ = (observation_message(1, h) for h in HANDS)
    assert (kuhn.position, kuhn.our_card, kuhn.history) == (0, 1, "pp")
    assert [(r.position, r.card) for r in kuhn.revealed] == [(1, 0)]
    assert limit.matchstate == "MATCHSTATE:1:0:rc:Ks|Qs" and line.matchstate == HANDS[2]
