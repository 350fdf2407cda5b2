"""Best of k: competing candidate patches for one task, ranked by execution, then by the judge.

``ranking`` orders the candidates (pure); ``render`` writes the ranking as the
issue's comment and the terminal's table. The bot's side (which PRs compete,
when a ranking is refreshed) is bot/service/ranking.py.
"""
