"""ACPC limit poker games (Kuhn, Leduc, any small limit game): compiler, hand ranking, bundled
game files and strategies."""
