"""The grader's side: pytest or the case runner, the report, and the proxies for the change's code."""
