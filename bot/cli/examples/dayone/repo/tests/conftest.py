import pytest


@pytest.fixture
def boiling() -> float:
    """Water boils at 100 degrees Celsius."""
    return 100.0
