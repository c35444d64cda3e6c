"""Fixtures shared by the daemon tests in network namespaces."""

from __future__ import annotations

import pytest

from tests.provision.chef.netns import Lab, require_netns


@pytest.fixture
def lab():
    """A fresh set of network namespaces, removed afterwards (skips where namespaces cannot be made)."""
    require_netns()
    lab = Lab()
    yield lab
    lab.close()
