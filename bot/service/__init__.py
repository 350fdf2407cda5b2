"""The worker side: the queue, the worker, one job from its PR to its check run, and what a job needs
(suites, reuse, ranking, the judge on request, comments, run-page tokens)."""
