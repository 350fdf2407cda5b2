import pytest

from units import UnknownUnit, convert, temperature


def test_kilometres_to_metres() -> None:
    assert convert(1.5, "km", "m") == 1500.0


def test_millimetres_to_metres() -> None:
    assert convert(1, "mm", "m") == pytest.approx(0.001)


def test_round_trip() -> None:
    assert convert(convert(42, "m", "cm"), "cm", "m") == pytest.approx(42)


def test_unknown_unit() -> None:
    with pytest.raises(UnknownUnit):
        convert(1, "furlong", "m")


@pytest.mark.temperature
def test_boiling_in_fahrenheit(boiling: float) -> None:
    assert temperature(boiling, "C", "F") == 212.0


@pytest.mark.temperature
def test_freezing_in_celsius() -> None:
    assert temperature(32, "F", "C") == 0.0


@pytest.mark.temperature
def test_unknown_scale() -> None:
    with pytest.raises(UnknownUnit):
        temperature(1, "C", "R")
