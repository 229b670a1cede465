"""Regenerate the committed gRPC/protobuf modules of ``proto/oppmodel/v1``.

Run from the repository root: ``python proto/generate.py``. Compiling with ``-Iproto`` makes the
generated modules import as ``oppmodel.v1.*_pb2``. The generator is pinned (GRPCIO_TOOLS_VERSION,
also in pyproject's ``test`` extra) so regeneration is byte-stable; ``tests/test_service_proto.py``
regenerates into a temporary folder and fails on any difference.
"""

from __future__ import annotations

import sys
from importlib.metadata import version
from pathlib import Path

from grpc_tools import protoc

GRPCIO_TOOLS_VERSION = "1.85.1"
PROTO_ROOT = Path(__file__).resolve().parent


def proto_files() -> list[Path]:
    """The .proto sources of the package, sorted."""
    return sorted((PROTO_ROOT / "oppmodel" / "v1").glob("*.proto"))


def generate(out_dir: Path) -> None:
    """Compile every proto into ``out_dir`` (``*_pb2.py``, ``*_pb2.pyi``, ``*_pb2_grpc.py``)."""
    installed = version("grpcio-tools")
    if installed != GRPCIO_TOOLS_VERSION:
        raise RuntimeError(f"grpcio-tools {installed} installed; pinned {GRPCIO_TOOLS_VERSION}")
    files = [str(p.relative_to(PROTO_ROOT)) for p in proto_files()]
    args = [
        "grpc_tools.protoc",
        f"-I{PROTO_ROOT}",
        f"--python_out={out_dir}",
        f"--pyi_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        *files,
    ]
    if protoc.main(args) != 0:
        raise RuntimeError("protoc failed")


if __name__ == "__main__":
    generate(PROTO_ROOT)
    sys.exit(0)
