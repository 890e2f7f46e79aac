"""Training of the learned parts: the GraphER graph attention ranker."""
