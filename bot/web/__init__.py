"""The web side: the FastAPI app (webhooks in, health, metrics, the run page), the signature check."""
