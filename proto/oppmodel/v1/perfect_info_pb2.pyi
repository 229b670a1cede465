from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class OpponentModels(_message.Message):
    __slots__ = ("label", "models", "alpha")
    LABEL_FIELD_NUMBER: _ClassVar[int]
    MODELS_FIELD_NUMBER: _ClassVar[int]
    ALPHA_FIELD_NUMBER: _ClassVar[int]
    label: str
    models: _containers.RepeatedScalarFieldContainer[str]
    alpha: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, label: _Optional[str] = ..., models: _Optional[_Iterable[str]] = ..., alpha: _Optional[_Iterable[float]] = ...) -> None: ...

class GibbsSettings(_message.Message):
    __slots__ = ("sweeps", "burn_in", "chains", "level")
    SWEEPS_FIELD_NUMBER: _ClassVar[int]
    BURN_IN_FIELD_NUMBER: _ClassVar[int]
    CHAINS_FIELD_NUMBER: _ClassVar[int]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    sweeps: int
    burn_in: int
    chains: int
    level: float
    def __init__(self, sweeps: _Optional[int] = ..., burn_in: _Optional[int] = ..., chains: _Optional[int] = ..., level: _Optional[float] = ...) -> None: ...

class PerfectInfoSessionConfig(_message.Message):
    __slots__ = ("game", "opponents", "gibbs", "seed")
    GAME_FIELD_NUMBER: _ClassVar[int]
    OPPONENTS_FIELD_NUMBER: _ClassVar[int]
    GIBBS_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    game: str
    opponents: _containers.RepeatedCompositeFieldContainer[OpponentModels]
    gibbs: GibbsSettings
    seed: int
    def __init__(self, game: _Optional[str] = ..., opponents: _Optional[_Iterable[_Union[OpponentModels, _Mapping]]] = ..., gibbs: _Optional[_Union[GibbsSettings, _Mapping]] = ..., seed: _Optional[int] = ...) -> None: ...

class PerfectInfoSession(_message.Message):
    __slots__ = ("session_id", "config", "choices_observed", "created_unix_ms")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    CHOICES_OBSERVED_FIELD_NUMBER: _ClassVar[int]
    CREATED_UNIX_MS_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    config: PerfectInfoSessionConfig
    choices_observed: int
    created_unix_ms: int
    def __init__(self, session_id: _Optional[str] = ..., config: _Optional[_Union[PerfectInfoSessionConfig, _Mapping]] = ..., choices_observed: _Optional[int] = ..., created_unix_ms: _Optional[int] = ...) -> None: ...

class ModelValues(_message.Message):
    __slots__ = ("values",)
    VALUES_FIELD_NUMBER: _ClassVar[int]
    values: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, values: _Optional[_Iterable[float]] = ...) -> None: ...

class ChoiceUtilities(_message.Message):
    __slots__ = ("children", "chosen", "epsilon")
    CHILDREN_FIELD_NUMBER: _ClassVar[int]
    CHOSEN_FIELD_NUMBER: _ClassVar[int]
    EPSILON_FIELD_NUMBER: _ClassVar[int]
    children: _containers.RepeatedCompositeFieldContainer[ModelValues]
    chosen: int
    epsilon: float
    def __init__(self, children: _Optional[_Iterable[_Union[ModelValues, _Mapping]]] = ..., chosen: _Optional[int] = ..., epsilon: _Optional[float] = ...) -> None: ...

class ChoiceObservation(_message.Message):
    __slots__ = ("sequence", "opponent", "likelihoods", "utilities")
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    OPPONENT_FIELD_NUMBER: _ClassVar[int]
    LIKELIHOODS_FIELD_NUMBER: _ClassVar[int]
    UTILITIES_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    opponent: str
    likelihoods: ModelValues
    utilities: ChoiceUtilities
    def __init__(self, sequence: _Optional[int] = ..., opponent: _Optional[str] = ..., likelihoods: _Optional[_Union[ModelValues, _Mapping]] = ..., utilities: _Optional[_Union[ChoiceUtilities, _Mapping]] = ...) -> None: ...

class ModelWeights(_message.Message):
    __slots__ = ("opponent", "models", "mean", "std_error", "lower", "upper", "level", "rhat", "ess", "choices")
    OPPONENT_FIELD_NUMBER: _ClassVar[int]
    MODELS_FIELD_NUMBER: _ClassVar[int]
    MEAN_FIELD_NUMBER: _ClassVar[int]
    STD_ERROR_FIELD_NUMBER: _ClassVar[int]
    LOWER_FIELD_NUMBER: _ClassVar[int]
    UPPER_FIELD_NUMBER: _ClassVar[int]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    RHAT_FIELD_NUMBER: _ClassVar[int]
    ESS_FIELD_NUMBER: _ClassVar[int]
    CHOICES_FIELD_NUMBER: _ClassVar[int]
    opponent: str
    models: _containers.RepeatedScalarFieldContainer[str]
    mean: _containers.RepeatedScalarFieldContainer[float]
    std_error: _containers.RepeatedScalarFieldContainer[float]
    lower: _containers.RepeatedScalarFieldContainer[float]
    upper: _containers.RepeatedScalarFieldContainer[float]
    level: float
    rhat: _containers.RepeatedScalarFieldContainer[float]
    ess: _containers.RepeatedScalarFieldContainer[float]
    choices: int
    def __init__(self, opponent: _Optional[str] = ..., models: _Optional[_Iterable[str]] = ..., mean: _Optional[_Iterable[float]] = ..., std_error: _Optional[_Iterable[float]] = ..., lower: _Optional[_Iterable[float]] = ..., upper: _Optional[_Iterable[float]] = ..., level: _Optional[float] = ..., rhat: _Optional[_Iterable[float]] = ..., ess: _Optional[_Iterable[float]] = ..., choices: _Optional[int] = ...) -> None: ...

class SpadesPosition(_message.Message):
    __slots__ = ("hands", "trick", "leader", "turn", "tricks", "bids")
    HANDS_FIELD_NUMBER: _ClassVar[int]
    TRICK_FIELD_NUMBER: _ClassVar[int]
    LEADER_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    TRICKS_FIELD_NUMBER: _ClassVar[int]
    BIDS_FIELD_NUMBER: _ClassVar[int]
    hands: _containers.RepeatedScalarFieldContainer[str]
    trick: _containers.RepeatedScalarFieldContainer[str]
    leader: int
    turn: int
    tricks: _containers.RepeatedScalarFieldContainer[int]
    bids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, hands: _Optional[_Iterable[str]] = ..., trick: _Optional[_Iterable[str]] = ..., leader: _Optional[int] = ..., turn: _Optional[int] = ..., tricks: _Optional[_Iterable[int]] = ..., bids: _Optional[_Iterable[int]] = ...) -> None: ...

class CreatePerfectInfoSessionRequest(_message.Message):
    __slots__ = ("config",)
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    config: PerfectInfoSessionConfig
    def __init__(self, config: _Optional[_Union[PerfectInfoSessionConfig, _Mapping]] = ...) -> None: ...

class CreatePerfectInfoSessionResponse(_message.Message):
    __slots__ = ("session",)
    SESSION_FIELD_NUMBER: _ClassVar[int]
    session: PerfectInfoSession
    def __init__(self, session: _Optional[_Union[PerfectInfoSession, _Mapping]] = ...) -> None: ...

class GetPerfectInfoSessionRequest(_message.Message):
    __slots__ = ("session_id",)
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class GetPerfectInfoSessionResponse(_message.Message):
    __slots__ = ("session",)
    SESSION_FIELD_NUMBER: _ClassVar[int]
    session: PerfectInfoSession
    def __init__(self, session: _Optional[_Union[PerfectInfoSession, _Mapping]] = ...) -> None: ...

class DeletePerfectInfoSessionRequest(_message.Message):
    __slots__ = ("session_id",)
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class DeletePerfectInfoSessionResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ObserveChoicesRequest(_message.Message):
    __slots__ = ("session_id", "observations")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    OBSERVATIONS_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    observations: _containers.RepeatedCompositeFieldContainer[ChoiceObservation]
    def __init__(self, session_id: _Optional[str] = ..., observations: _Optional[_Iterable[_Union[ChoiceObservation, _Mapping]]] = ...) -> None: ...

class ChoiceAck(_message.Message):
    __slots__ = ("sequence", "duplicate")
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    duplicate: bool
    def __init__(self, sequence: _Optional[int] = ..., duplicate: _Optional[bool] = ...) -> None: ...

class ObserveChoicesResponse(_message.Message):
    __slots__ = ("session_id", "acks", "choices_observed", "weights")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    ACKS_FIELD_NUMBER: _ClassVar[int]
    CHOICES_OBSERVED_FIELD_NUMBER: _ClassVar[int]
    WEIGHTS_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    acks: _containers.RepeatedCompositeFieldContainer[ChoiceAck]
    choices_observed: int
    weights: _containers.RepeatedCompositeFieldContainer[ModelWeights]
    def __init__(self, session_id: _Optional[str] = ..., acks: _Optional[_Iterable[_Union[ChoiceAck, _Mapping]]] = ..., choices_observed: _Optional[int] = ..., weights: _Optional[_Iterable[_Union[ModelWeights, _Mapping]]] = ...) -> None: ...

class GetModelWeightsRequest(_message.Message):
    __slots__ = ("session_id", "opponent")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    OPPONENT_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    opponent: str
    def __init__(self, session_id: _Optional[str] = ..., opponent: _Optional[str] = ...) -> None: ...

class GetModelWeightsResponse(_message.Message):
    __slots__ = ("weights", "choices_observed")
    WEIGHTS_FIELD_NUMBER: _ClassVar[int]
    CHOICES_OBSERVED_FIELD_NUMBER: _ClassVar[int]
    weights: _containers.RepeatedCompositeFieldContainer[ModelWeights]
    choices_observed: int
    def __init__(self, weights: _Optional[_Iterable[_Union[ModelWeights, _Mapping]]] = ..., choices_observed: _Optional[int] = ...) -> None: ...

class GetProbMaxnMoveRequest(_message.Message):
    __slots__ = ("position", "searcher", "true_model", "epsilon", "session_id", "given", "searcher_weights")
    POSITION_FIELD_NUMBER: _ClassVar[int]
    SEARCHER_FIELD_NUMBER: _ClassVar[int]
    TRUE_MODEL_FIELD_NUMBER: _ClassVar[int]
    EPSILON_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    GIVEN_FIELD_NUMBER: _ClassVar[int]
    SEARCHER_WEIGHTS_FIELD_NUMBER: _ClassVar[int]
    position: SpadesPosition
    searcher: int
    true_model: str
    epsilon: float
    session_id: str
    given: GivenWeights
    searcher_weights: ModelValues
    def __init__(self, position: _Optional[_Union[SpadesPosition, _Mapping]] = ..., searcher: _Optional[int] = ..., true_model: _Optional[str] = ..., epsilon: _Optional[float] = ..., session_id: _Optional[str] = ..., given: _Optional[_Union[GivenWeights, _Mapping]] = ..., searcher_weights: _Optional[_Union[ModelValues, _Mapping]] = ...) -> None: ...

class GivenWeights(_message.Message):
    __slots__ = ("seats",)
    SEATS_FIELD_NUMBER: _ClassVar[int]
    seats: _containers.RepeatedCompositeFieldContainer[ModelValues]
    def __init__(self, seats: _Optional[_Iterable[_Union[ModelValues, _Mapping]]] = ...) -> None: ...

class GetProbMaxnMoveResponse(_message.Message):
    __slots__ = ("mover", "move", "weights", "bids", "utility", "u_true", "moves", "multiplicities", "prob_choice", "child_u_true", "n_cards", "nodes", "child_mover_utility", "epsilon")
    MOVER_FIELD_NUMBER: _ClassVar[int]
    MOVE_FIELD_NUMBER: _ClassVar[int]
    WEIGHTS_FIELD_NUMBER: _ClassVar[int]
    BIDS_FIELD_NUMBER: _ClassVar[int]
    UTILITY_FIELD_NUMBER: _ClassVar[int]
    U_TRUE_FIELD_NUMBER: _ClassVar[int]
    MOVES_FIELD_NUMBER: _ClassVar[int]
    MULTIPLICITIES_FIELD_NUMBER: _ClassVar[int]
    PROB_CHOICE_FIELD_NUMBER: _ClassVar[int]
    CHILD_U_TRUE_FIELD_NUMBER: _ClassVar[int]
    N_CARDS_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    CHILD_MOVER_UTILITY_FIELD_NUMBER: _ClassVar[int]
    EPSILON_FIELD_NUMBER: _ClassVar[int]
    mover: int
    move: str
    weights: _containers.RepeatedCompositeFieldContainer[ModelValues]
    bids: _containers.RepeatedScalarFieldContainer[int]
    utility: _containers.RepeatedCompositeFieldContainer[ModelValues]
    u_true: float
    moves: _containers.RepeatedScalarFieldContainer[str]
    multiplicities: _containers.RepeatedScalarFieldContainer[int]
    prob_choice: _containers.RepeatedScalarFieldContainer[float]
    child_u_true: _containers.RepeatedScalarFieldContainer[float]
    n_cards: int
    nodes: int
    child_mover_utility: _containers.RepeatedCompositeFieldContainer[ModelValues]
    epsilon: float
    def __init__(self, mover: _Optional[int] = ..., move: _Optional[str] = ..., weights: _Optional[_Iterable[_Union[ModelValues, _Mapping]]] = ..., bids: _Optional[_Iterable[int]] = ..., utility: _Optional[_Iterable[_Union[ModelValues, _Mapping]]] = ..., u_true: _Optional[float] = ..., moves: _Optional[_Iterable[str]] = ..., multiplicities: _Optional[_Iterable[int]] = ..., prob_choice: _Optional[_Iterable[float]] = ..., child_u_true: _Optional[_Iterable[float]] = ..., n_cards: _Optional[int] = ..., nodes: _Optional[int] = ..., child_mover_utility: _Optional[_Iterable[_Union[ModelValues, _Mapping]]] = ..., epsilon: _Optional[float] = ...) -> None: ...
