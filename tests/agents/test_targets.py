"""The target architecture: known names, devices recognised by name or gfx arch, and what the designer reads."""

import pytest

from agents.targets import TARGETS, UnknownTarget, for_device, get_target, known


def test_known_targets_and_a_one_line_error_for_the_rest():
    assert get_target("MI300X").name == "mi300x" and get_target("h100").arch_labels == ("hopper",)
    with pytest.raises(UnknownTarget) as caught:
        get_target("tpu9")
    assert str(caught.value) == f"unknown target 'tpu9'; known targets: {known()}" and "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("device", "name"),
    [
        ("NVIDIA H100 80GB HBM3", "h100"),
        ("NVIDIA H200", "h200"),
        ("NVIDIA A100-SXM4-80GB", "a100"),
        ("AMD Instinct MI300X gfx942:sramecc+:xnack-", "mi300x"),
        ("AMD Radeon Graphics gfx942", "mi300x"),
        ("AMD Instinct MI325X", "mi325x"),
        ("gfx950", "mi355x"),
        ("cpu", "cpu"),
    ],
)
def test_the_device_that_evaluates_names_the_default_target(device, name):
    assert for_device(device).name == name


def test_an_unknown_device_is_described_as_named_without_figures():
    target = for_device("NVIDIA GeForce RTX 4090")
    assert target.title == "NVIDIA GeForce RTX 4090" and not target.rates and not target.arch_labels


def test_each_architecture_has_its_vocabulary_and_figures():
    cdna3, hopper = TARGETS["mi300x"].describe(), TARGETS["h100"].describe()
    assert all(word in cdna3 for word in ("wavefronts", "LDS", "MFMA", "5.3 TB/s", "1,307 TFLOP/s"))
    assert all(word in hopper for word in ("TMA", "warpgroups", "clusters", "3.35 TB/s", "989 TFLOP/s"))
    assert "wavefront" not in hopper and "TMA (" not in cdna3
