import pytest

from clusterspec.drivers import check_cuda, select_driver


@pytest.mark.parametrize(
    ("branch", "flavour", "models", "expected"),
    [
        (570, "auto", {"T4", "A100", "H100"}, ("open", "nvidia-driver-570-server-open")),
        (570, "auto", {"V100", "T4"}, ("proprietary", "nvidia-driver-570-server")),
        (580, "auto", {"titan-x-pascal"}, ("proprietary", "nvidia-driver-580-server")),
        (470, "proprietary", {"K80"}, ("proprietary", "nvidia-driver-470-server")),
        (550, "auto", set(), ("proprietary", "nvidia-driver-550-server")),
    ],
)
def test_driver_follows_the_gpu_models(branch, flavour, models, expected):
    driver = select_driver(branch, flavour, models)
    assert (driver.flavour, driver.package) == expected


@pytest.mark.parametrize(
    ("branch", "flavour", "models", "message"),
    [
        (590, "auto", {"titan-x-maxwell"}, "driver branch 590 does not support titan-x-maxwell"),
        (535, "auto", {"K80"}, "use branch 470 or older"),
        (570, "open", {"titan-x-pascal"}, "open kernel modules do not support titan-x-pascal"),
        (570, "auto", {"X9000"}, "unknown GPU model 'X9000'"),
    ],
)
def test_impossible_driver_combinations(branch, flavour, models, message):
    with pytest.raises(ValueError, match=message):
        select_driver(branch, flavour, models)


def test_cuda_rules():
    check_cuda("12.8", 570, {"titan-x-pascal", "T4"})
    with pytest.raises(ValueError, match="CUDA 12.8 needs driver branch 570 or newer, not 550"):
        check_cuda("12.8", 550, {"T4"})
    with pytest.raises(ValueError, match="CUDA 13.0 does not support V100"):
        check_cuda("13.0", 580, {"V100"})
    with pytest.raises(ValueError, match="unknown CUDA release"):
        check_cuda("12.7", 570, set())
