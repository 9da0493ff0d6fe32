"""Pure scoring: components, normalisation, the episodic score and the deterministic ranking."""

from chronomem.scoring.score import Candidates, Scores, rank, score

__all__ = ["Candidates", "Scores", "rank", "score"]
