"""The subject's side: the only process that imports and runs the change's code."""
