from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Method(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    METHOD_UNSPECIFIED: _ClassVar[Method]
    METHOD_MBBR: _ClassVar[Method]

class Prior(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PRIOR_UNSPECIFIED: _ClassVar[Prior]
    PRIOR_INFORMED: _ClassVar[Prior]
    PRIOR_UNINFORMED: _ClassVar[Prior]
    PRIOR_TYPED: _ClassVar[Prior]
    PRIOR_MIXTURE: _ClassVar[Prior]
    PRIOR_ETA_MIXTURE: _ClassVar[Prior]
    PRIOR_POPULATION: _ClassVar[Prior]
    PRIOR_TILTED: _ClassVar[Prior]

class Posterior(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    POSTERIOR_UNSPECIFIED: _ClassVar[Posterior]
    POSTERIOR_SAMPLES: _ClassVar[Posterior]
    POSTERIOR_DIRICHLET: _ClassVar[Posterior]

class ResponseKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RESPONSE_KIND_UNSPECIFIED: _ClassVar[ResponseKind]
    RESPONSE_KIND_MEAN: _ClassVar[ResponseKind]
    RESPONSE_KIND_BAYES: _ClassVar[ResponseKind]

class PopulationKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    POPULATION_KIND_UNSPECIFIED: _ClassVar[PopulationKind]
    POPULATION_KIND_TYPES: _ClassVar[PopulationKind]
    POPULATION_KIND_DIRICHLET: _ClassVar[PopulationKind]
METHOD_UNSPECIFIED: Method
METHOD_MBBR: Method
PRIOR_UNSPECIFIED: Prior
PRIOR_INFORMED: Prior
PRIOR_UNINFORMED: Prior
PRIOR_TYPED: Prior
PRIOR_MIXTURE: Prior
PRIOR_ETA_MIXTURE: Prior
PRIOR_POPULATION: Prior
PRIOR_TILTED: Prior
POSTERIOR_UNSPECIFIED: Posterior
POSTERIOR_SAMPLES: Posterior
POSTERIOR_DIRICHLET: Posterior
RESPONSE_KIND_UNSPECIFIED: ResponseKind
RESPONSE_KIND_MEAN: ResponseKind
RESPONSE_KIND_BAYES: ResponseKind
POPULATION_KIND_UNSPECIFIED: PopulationKind
POPULATION_KIND_TYPES: PopulationKind
POPULATION_KIND_DIRICHLET: PopulationKind

class InfosetPolicy(_message.Message):
    __slots__ = ("infostate", "probabilities")
    INFOSTATE_FIELD_NUMBER: _ClassVar[int]
    PROBABILITIES_FIELD_NUMBER: _ClassVar[int]
    infostate: str
    probabilities: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, infostate: _Optional[str] = ..., probabilities: _Optional[_Iterable[float]] = ...) -> None: ...

class PositionStrategy(_message.Message):
    __slots__ = ("position", "infosets")
    POSITION_FIELD_NUMBER: _ClassVar[int]
    INFOSETS_FIELD_NUMBER: _ClassVar[int]
    position: int
    infosets: _containers.RepeatedCompositeFieldContainer[InfosetPolicy]
    def __init__(self, position: _Optional[int] = ..., infosets: _Optional[_Iterable[_Union[InfosetPolicy, _Mapping]]] = ...) -> None: ...

class MbbrParams(_message.Message):
    __slots__ = ("epsilon", "k", "hands_default", "eta", "prior", "response", "prior_mean", "posterior", "safety_budget", "change_hazard", "prior_mean_json", "default_strategy", "default_strategy_json", "mixture_eta", "weak_eta")
    EPSILON_FIELD_NUMBER: _ClassVar[int]
    K_FIELD_NUMBER: _ClassVar[int]
    HANDS_DEFAULT_FIELD_NUMBER: _ClassVar[int]
    ETA_FIELD_NUMBER: _ClassVar[int]
    PRIOR_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    PRIOR_MEAN_FIELD_NUMBER: _ClassVar[int]
    POSTERIOR_FIELD_NUMBER: _ClassVar[int]
    SAFETY_BUDGET_FIELD_NUMBER: _ClassVar[int]
    CHANGE_HAZARD_FIELD_NUMBER: _ClassVar[int]
    PRIOR_MEAN_JSON_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_STRATEGY_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_STRATEGY_JSON_FIELD_NUMBER: _ClassVar[int]
    MIXTURE_ETA_FIELD_NUMBER: _ClassVar[int]
    WEAK_ETA_FIELD_NUMBER: _ClassVar[int]
    epsilon: float
    k: int
    hands_default: int
    eta: float
    prior: Prior
    response: ResponseKind
    prior_mean: _containers.RepeatedCompositeFieldContainer[PositionStrategy]
    posterior: Posterior
    safety_budget: float
    change_hazard: float
    prior_mean_json: str
    default_strategy: _containers.RepeatedCompositeFieldContainer[PositionStrategy]
    default_strategy_json: str
    mixture_eta: float
    weak_eta: float
    def __init__(self, epsilon: _Optional[float] = ..., k: _Optional[int] = ..., hands_default: _Optional[int] = ..., eta: _Optional[float] = ..., prior: _Optional[_Union[Prior, str]] = ..., response: _Optional[_Union[ResponseKind, str]] = ..., prior_mean: _Optional[_Iterable[_Union[PositionStrategy, _Mapping]]] = ..., posterior: _Optional[_Union[Posterior, str]] = ..., safety_budget: _Optional[float] = ..., change_hazard: _Optional[float] = ..., prior_mean_json: _Optional[str] = ..., default_strategy: _Optional[_Iterable[_Union[PositionStrategy, _Mapping]]] = ..., default_strategy_json: _Optional[str] = ..., mixture_eta: _Optional[float] = ..., weak_eta: _Optional[float] = ...) -> None: ...

class SessionConfig(_message.Message):
    __slots__ = ("game", "our_label", "opponent_labels", "method", "mbbr", "seed")
    GAME_FIELD_NUMBER: _ClassVar[int]
    OUR_LABEL_FIELD_NUMBER: _ClassVar[int]
    OPPONENT_LABELS_FIELD_NUMBER: _ClassVar[int]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    MBBR_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    game: str
    our_label: str
    opponent_labels: _containers.RepeatedScalarFieldContainer[str]
    method: Method
    mbbr: MbbrParams
    seed: int
    def __init__(self, game: _Optional[str] = ..., our_label: _Optional[str] = ..., opponent_labels: _Optional[_Iterable[str]] = ..., method: _Optional[_Union[Method, str]] = ..., mbbr: _Optional[_Union[MbbrParams, _Mapping]] = ..., seed: _Optional[int] = ...) -> None: ...

class Session(_message.Message):
    __slots__ = ("session_id", "config", "hands_observed", "created_unix_ms", "population_version")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    HANDS_OBSERVED_FIELD_NUMBER: _ClassVar[int]
    CREATED_UNIX_MS_FIELD_NUMBER: _ClassVar[int]
    POPULATION_VERSION_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    config: SessionConfig
    hands_observed: int
    created_unix_ms: int
    population_version: int
    def __init__(self, session_id: _Optional[str] = ..., config: _Optional[_Union[SessionConfig, _Mapping]] = ..., hands_observed: _Optional[int] = ..., created_unix_ms: _Optional[int] = ..., population_version: _Optional[int] = ...) -> None: ...

class CreateSessionRequest(_message.Message):
    __slots__ = ("config",)
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    config: SessionConfig
    def __init__(self, config: _Optional[_Union[SessionConfig, _Mapping]] = ...) -> None: ...

class CreateSessionResponse(_message.Message):
    __slots__ = ("session",)
    SESSION_FIELD_NUMBER: _ClassVar[int]
    session: Session
    def __init__(self, session: _Optional[_Union[Session, _Mapping]] = ...) -> None: ...

class GetSessionRequest(_message.Message):
    __slots__ = ("session_id",)
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class GetSessionResponse(_message.Message):
    __slots__ = ("session",)
    SESSION_FIELD_NUMBER: _ClassVar[int]
    session: Session
    def __init__(self, session: _Optional[_Union[Session, _Mapping]] = ...) -> None: ...

class ListSessionsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListSessionsResponse(_message.Message):
    __slots__ = ("sessions",)
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    sessions: _containers.RepeatedCompositeFieldContainer[Session]
    def __init__(self, sessions: _Optional[_Iterable[_Union[Session, _Mapping]]] = ...) -> None: ...

class DeleteSessionRequest(_message.Message):
    __slots__ = ("session_id",)
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class DeleteSessionResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class FitPopulationRequest(_message.Message):
    __slots__ = ("game", "kind")
    GAME_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    game: str
    kind: PopulationKind
    def __init__(self, game: _Optional[str] = ..., kind: _Optional[_Union[PopulationKind, str]] = ...) -> None: ...

class FitPopulationResponse(_message.Message):
    __slots__ = ("version", "opponents", "sessions", "fitted_infosets", "types", "kind")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    OPPONENTS_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    FITTED_INFOSETS_FIELD_NUMBER: _ClassVar[int]
    TYPES_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    version: int
    opponents: int
    sessions: int
    fitted_infosets: int
    types: int
    kind: PopulationKind
    def __init__(self, version: _Optional[int] = ..., opponents: _Optional[int] = ..., sessions: _Optional[int] = ..., fitted_infosets: _Optional[int] = ..., types: _Optional[int] = ..., kind: _Optional[_Union[PopulationKind, str]] = ...) -> None: ...

class RevealedCard(_message.Message):
    __slots__ = ("position", "card")
    POSITION_FIELD_NUMBER: _ClassVar[int]
    CARD_FIELD_NUMBER: _ClassVar[int]
    position: int
    card: int
    def __init__(self, position: _Optional[int] = ..., card: _Optional[int] = ...) -> None: ...

class Observation(_message.Message):
    __slots__ = ("sequence", "position", "our_card", "history", "acpc_betting", "revealed", "matchstate")
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    OUR_CARD_FIELD_NUMBER: _ClassVar[int]
    HISTORY_FIELD_NUMBER: _ClassVar[int]
    ACPC_BETTING_FIELD_NUMBER: _ClassVar[int]
    REVEALED_FIELD_NUMBER: _ClassVar[int]
    MATCHSTATE_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    position: int
    our_card: int
    history: str
    acpc_betting: str
    revealed: _containers.RepeatedCompositeFieldContainer[RevealedCard]
    matchstate: str
    def __init__(self, sequence: _Optional[int] = ..., position: _Optional[int] = ..., our_card: _Optional[int] = ..., history: _Optional[str] = ..., acpc_betting: _Optional[str] = ..., revealed: _Optional[_Iterable[_Union[RevealedCard, _Mapping]]] = ..., matchstate: _Optional[str] = ...) -> None: ...

class ObserveRequest(_message.Message):
    __slots__ = ("session_id", "observation")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    OBSERVATION_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    observation: Observation
    def __init__(self, session_id: _Optional[str] = ..., observation: _Optional[_Union[Observation, _Mapping]] = ...) -> None: ...

class ObserveResponse(_message.Message):
    __slots__ = ("session_id", "sequence", "duplicate", "hands_observed")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    HANDS_OBSERVED_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    sequence: int
    duplicate: bool
    hands_observed: int
    def __init__(self, session_id: _Optional[str] = ..., sequence: _Optional[int] = ..., duplicate: _Optional[bool] = ..., hands_observed: _Optional[int] = ...) -> None: ...

class ObserveBatchRequest(_message.Message):
    __slots__ = ("session_id", "observations")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    OBSERVATIONS_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    observations: _containers.RepeatedCompositeFieldContainer[Observation]
    def __init__(self, session_id: _Optional[str] = ..., observations: _Optional[_Iterable[_Union[Observation, _Mapping]]] = ...) -> None: ...

class ObserveBatchResponse(_message.Message):
    __slots__ = ("acks", "hands_observed")
    ACKS_FIELD_NUMBER: _ClassVar[int]
    HANDS_OBSERVED_FIELD_NUMBER: _ClassVar[int]
    acks: _containers.RepeatedCompositeFieldContainer[ObserveResponse]
    hands_observed: int
    def __init__(self, acks: _Optional[_Iterable[_Union[ObserveResponse, _Mapping]]] = ..., hands_observed: _Optional[int] = ...) -> None: ...

class GetModelRequest(_message.Message):
    __slots__ = ("session_id", "opponent_label", "opponent_position")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    OPPONENT_LABEL_FIELD_NUMBER: _ClassVar[int]
    OPPONENT_POSITION_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    opponent_label: str
    opponent_position: int
    def __init__(self, session_id: _Optional[str] = ..., opponent_label: _Optional[str] = ..., opponent_position: _Optional[int] = ...) -> None: ...

class GetModelResponse(_message.Message):
    __slots__ = ("infosets", "effective_sample_size", "our_position", "hands_observed", "prior", "concentration", "run_start", "safety_bankroll")
    INFOSETS_FIELD_NUMBER: _ClassVar[int]
    EFFECTIVE_SAMPLE_SIZE_FIELD_NUMBER: _ClassVar[int]
    OUR_POSITION_FIELD_NUMBER: _ClassVar[int]
    HANDS_OBSERVED_FIELD_NUMBER: _ClassVar[int]
    PRIOR_FIELD_NUMBER: _ClassVar[int]
    CONCENTRATION_FIELD_NUMBER: _ClassVar[int]
    RUN_START_FIELD_NUMBER: _ClassVar[int]
    SAFETY_BANKROLL_FIELD_NUMBER: _ClassVar[int]
    infosets: _containers.RepeatedCompositeFieldContainer[InfosetPolicy]
    effective_sample_size: float
    our_position: int
    hands_observed: int
    prior: _containers.RepeatedCompositeFieldContainer[InfosetPolicy]
    concentration: _containers.RepeatedScalarFieldContainer[float]
    run_start: int
    safety_bankroll: float
    def __init__(self, infosets: _Optional[_Iterable[_Union[InfosetPolicy, _Mapping]]] = ..., effective_sample_size: _Optional[float] = ..., our_position: _Optional[int] = ..., hands_observed: _Optional[int] = ..., prior: _Optional[_Iterable[_Union[InfosetPolicy, _Mapping]]] = ..., concentration: _Optional[_Iterable[float]] = ..., run_start: _Optional[int] = ..., safety_bankroll: _Optional[float] = ...) -> None: ...

class GetResponseRequest(_message.Message):
    __slots__ = ("session_id", "our_position", "kind", "include_played")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    OUR_POSITION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_PLAYED_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    our_position: int
    kind: ResponseKind
    include_played: bool
    def __init__(self, session_id: _Optional[str] = ..., our_position: _Optional[int] = ..., kind: _Optional[_Union[ResponseKind, str]] = ..., include_played: _Optional[bool] = ...) -> None: ...

class GetResponseResponse(_message.Message):
    __slots__ = ("infosets", "expected_value", "kind", "hands_observed", "played", "played_expected_value")
    INFOSETS_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_VALUE_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    HANDS_OBSERVED_FIELD_NUMBER: _ClassVar[int]
    PLAYED_FIELD_NUMBER: _ClassVar[int]
    PLAYED_EXPECTED_VALUE_FIELD_NUMBER: _ClassVar[int]
    infosets: _containers.RepeatedCompositeFieldContainer[InfosetPolicy]
    expected_value: float
    kind: ResponseKind
    hands_observed: int
    played: _containers.RepeatedCompositeFieldContainer[InfosetPolicy]
    played_expected_value: float
    def __init__(self, infosets: _Optional[_Iterable[_Union[InfosetPolicy, _Mapping]]] = ..., expected_value: _Optional[float] = ..., kind: _Optional[_Union[ResponseKind, str]] = ..., hands_observed: _Optional[int] = ..., played: _Optional[_Iterable[_Union[InfosetPolicy, _Mapping]]] = ..., played_expected_value: _Optional[float] = ...) -> None: ...

class InfoState(_message.Message):
    __slots__ = ("position", "card", "history", "acpc_betting")
    POSITION_FIELD_NUMBER: _ClassVar[int]
    CARD_FIELD_NUMBER: _ClassVar[int]
    HISTORY_FIELD_NUMBER: _ClassVar[int]
    ACPC_BETTING_FIELD_NUMBER: _ClassVar[int]
    position: int
    card: int
    history: str
    acpc_betting: str
    def __init__(self, position: _Optional[int] = ..., card: _Optional[int] = ..., history: _Optional[str] = ..., acpc_betting: _Optional[str] = ...) -> None: ...

class GetActionRequest(_message.Message):
    __slots__ = ("session_id", "info_state", "matchstate", "draw")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    INFO_STATE_FIELD_NUMBER: _ClassVar[int]
    MATCHSTATE_FIELD_NUMBER: _ClassVar[int]
    DRAW_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    info_state: InfoState
    matchstate: str
    draw: int
    def __init__(self, session_id: _Optional[str] = ..., info_state: _Optional[_Union[InfoState, _Mapping]] = ..., matchstate: _Optional[str] = ..., draw: _Optional[int] = ...) -> None: ...

class GetActionResponse(_message.Message):
    __slots__ = ("action", "acpc_action", "probabilities", "infostate", "default_policy", "hands_observed")
    ACTION_FIELD_NUMBER: _ClassVar[int]
    ACPC_ACTION_FIELD_NUMBER: _ClassVar[int]
    PROBABILITIES_FIELD_NUMBER: _ClassVar[int]
    INFOSTATE_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_POLICY_FIELD_NUMBER: _ClassVar[int]
    HANDS_OBSERVED_FIELD_NUMBER: _ClassVar[int]
    action: int
    acpc_action: str
    probabilities: _containers.RepeatedScalarFieldContainer[float]
    infostate: str
    default_policy: bool
    hands_observed: int
    def __init__(self, action: _Optional[int] = ..., acpc_action: _Optional[str] = ..., probabilities: _Optional[_Iterable[float]] = ..., infostate: _Optional[str] = ..., default_policy: _Optional[bool] = ..., hands_observed: _Optional[int] = ...) -> None: ...

class GetActionsRequest(_message.Message):
    __slots__ = ("request",)
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    request: GetActionRequest
    def __init__(self, request: _Optional[_Union[GetActionRequest, _Mapping]] = ...) -> None: ...

class GetActionsResponse(_message.Message):
    __slots__ = ("response",)
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    response: GetActionResponse
    def __init__(self, response: _Optional[_Union[GetActionResponse, _Mapping]] = ...) -> None: ...

class GetModelsRequest(_message.Message):
    __slots__ = ("session_id", "kind", "include_played")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_PLAYED_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    kind: ResponseKind
    include_played: bool
    def __init__(self, session_id: _Optional[str] = ..., kind: _Optional[_Union[ResponseKind, str]] = ..., include_played: _Optional[bool] = ...) -> None: ...

class GetModelsResponse(_message.Message):
    __slots__ = ("models", "responses", "hands_observed", "players")
    MODELS_FIELD_NUMBER: _ClassVar[int]
    RESPONSES_FIELD_NUMBER: _ClassVar[int]
    HANDS_OBSERVED_FIELD_NUMBER: _ClassVar[int]
    PLAYERS_FIELD_NUMBER: _ClassVar[int]
    models: _containers.RepeatedCompositeFieldContainer[GetModelResponse]
    responses: _containers.RepeatedCompositeFieldContainer[GetResponseResponse]
    hands_observed: int
    players: int
    def __init__(self, models: _Optional[_Iterable[_Union[GetModelResponse, _Mapping]]] = ..., responses: _Optional[_Iterable[_Union[GetResponseResponse, _Mapping]]] = ..., hands_observed: _Optional[int] = ..., players: _Optional[int] = ...) -> None: ...

class GetWinningsRequest(_message.Message):
    __slots__ = ("session_id", "after_hand", "max_hands")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    AFTER_HAND_FIELD_NUMBER: _ClassVar[int]
    MAX_HANDS_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    after_hand: int
    max_hands: int
    def __init__(self, session_id: _Optional[str] = ..., after_hand: _Optional[int] = ..., max_hands: _Optional[int] = ...) -> None: ...

class GetWinningsResponse(_message.Message):
    __slots__ = ("chips", "hands_observed", "unit_chips", "unit_label")
    CHIPS_FIELD_NUMBER: _ClassVar[int]
    HANDS_OBSERVED_FIELD_NUMBER: _ClassVar[int]
    UNIT_CHIPS_FIELD_NUMBER: _ClassVar[int]
    UNIT_LABEL_FIELD_NUMBER: _ClassVar[int]
    chips: _containers.RepeatedScalarFieldContainer[float]
    hands_observed: int
    unit_chips: int
    unit_label: str
    def __init__(self, chips: _Optional[_Iterable[float]] = ..., hands_observed: _Optional[int] = ..., unit_chips: _Optional[int] = ..., unit_label: _Optional[str] = ...) -> None: ...
