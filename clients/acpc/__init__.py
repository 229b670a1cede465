"""The ACPC harness: game files, the wire protocol, dealer logs, a dealer, an agent and tournaments.

Everything here speaks the Annual Computer Poker Competition's dealer protocol 2.0.0 exactly as the
reference server (``project_acpc_server`` v1.0.42) does, so that the project's agents can play in
any ACPC match and any ACPC agent can play in the project's harness. The
reference is the ACPC server project_acpc_server 1.0.42 (protocol 2.0.0).
"""
