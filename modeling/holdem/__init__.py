"""Limit Texas hold'em: games far too big to compile, played and measured by sampling."""
