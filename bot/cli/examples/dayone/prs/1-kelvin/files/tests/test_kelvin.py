import pytest

from units import temperature


@pytest.mark.temperature
def test_kelvin_to_celsius() -> None:
    assert temperature(273.15, "K", "C") == pytest.approx(0.0)


@pytest.mark.temperature
def test_celsius_to_kelvin() -> None:
    assert temperature(100, "C", "K") == pytest.approx(373.15)


@pytest.mark.temperature
def test_fahrenheit_to_kelvin() -> None:
    assert temperature(32, "F", "K") == pytest.approx(273.15)
