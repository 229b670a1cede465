"""Perfect-information multiplayer search, Spades, opponent-model weights."""
