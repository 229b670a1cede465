"""The committed generated code equals a fresh regeneration, and the API follows its conventions."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.population_types import PopulationKind
from oppmodel.v1 import opponent_model_pb2 as pb
from oppmodel.v1 import perfect_info_pb2 as pi_pb
from oppmodel.v1_enums import POPULATION_KIND, POSTERIOR, PRIOR, RESPONSE_KIND, UNSPECIFIED

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("proto_generate", ROOT / "proto" / "generate.py")
generate = importlib.util.module_from_spec(spec)
sys.modules["proto_generate"] = generate
spec.loader.exec_module(generate)


def test_generated_code_is_up_to_date(tmp_path: Path) -> None:
    generate.generate(tmp_path)
    fresh = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*.py*"))
    assert fresh, "protoc produced nothing"
    for rel in fresh:
        committed = ROOT / "proto" / rel
        assert committed.exists(), f"{rel} is generated but not committed"
        assert committed.read_bytes() == (tmp_path / rel).read_bytes(), (
            f"{rel} differs from a fresh regeneration; run `python proto/generate.py`"
        )


def test_generator_pin_matches_pyproject() -> None:
    text = (ROOT / "pyproject.toml").read_text()
    assert f'"grpcio-tools=={generate.GRPCIO_TOOLS_VERSION}"' in text


def test_every_proto_is_generated() -> None:
    for source in generate.proto_files():
        for suffix in ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py"):
            assert source.with_name(source.stem + suffix).exists(), (source.name, suffix)


def test_enums_start_with_unspecified_zero() -> None:
    for enum in (
        *pb.DESCRIPTOR.enum_types_by_name.values(),
        *pi_pb.DESCRIPTOR.enum_types_by_name.values(),
    ):
        first = enum.values_by_number[0]
        assert first.name.endswith("_UNSPECIFIED"), enum.name


@pytest.mark.parametrize(
    "method",
    [
        *pb.DESCRIPTOR.services_by_name["OpponentModelService"].methods,
        *pi_pb.DESCRIPTOR.services_by_name["PerfectInfoService"].methods,
    ],
    ids=lambda m: m.name,
)
def test_messages_are_named_after_their_rpc(method) -> None:
    assert method.input_type.name == f"{method.name}Request"
    assert method.output_type.name == f"{method.name}Response"


@pytest.mark.parametrize(
    ("table", "enum", "field"),
    [
        (PRIOR, pb.Prior, "prior"),
        (POSTERIOR, pb.Posterior, "posterior"),
        (RESPONSE_KIND, pb.ResponseKind, "response"),
    ],
    ids=["prior", "posterior", "response"],
)
def test_the_enum_table_names_every_value_with_a_choice_of_the_core(table, enum, field) -> None:
    assert sorted(table.values.values()) == sorted(v for v in enum.values() if v != UNSPECIFIED)
    for name, value in table.values.items():
        assert table.name(value) == name
        MBBRConfig(**{field: name}).validate()  # a name the core knows
    assert table.name(UNSPECIFIED) is None and table.name(UNSPECIFIED, "default") == "default"


def test_the_population_kinds_are_the_core_s() -> None:
    assert set(POPULATION_KIND.names) == {kind.value for kind in PopulationKind}
    assert sorted(POPULATION_KIND.values.values()) == sorted(
        v for v in pb.PopulationKind.values() if v != UNSPECIFIED
    )
