"""Three-player perfect-information Spades: card codec, game state, bidding rule and scoring."""
