"""Move prediction from logged play: naive Bayes models and their games."""
