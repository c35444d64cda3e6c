"""The local cluster's free ports (localcluster/processes.py): drawn below the kernel's ephemeral range, where no
``bind(0)`` or outgoing connection of a busy test run beside can take one between the choice and the bind."""

from __future__ import annotations

import socket

from localcluster import processes


def test_ports_are_distinct_bindable_and_below_the_ephemeral_range() -> None:
    low = processes._ephemeral_low()
    ports = processes.free_ports(50)
    assert len(set(ports)) == 50
    assert all(10_000 <= p < low for p in ports), (low, ports)
    for p in ports:
        with socket.socket() as s:
            s.bind(("127.0.0.1", p))


def test_a_port_in_use_is_never_given(monkeypatch) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        taken = held.getsockname()[1]
        held.listen()
        low = taken + 1
        monkeypatch.setattr(processes, "_FLOOR", taken)
        monkeypatch.setattr(processes, "_ephemeral_low", lambda: low + 1_000)
        ports = processes.free_ports(200)
        assert taken not in ports


def test_no_room_below_the_range_falls_back_to_the_kernel(monkeypatch) -> None:
    monkeypatch.setattr(processes, "_ephemeral_low", lambda: 10_500)
    (port,) = processes.free_ports(1)
    assert port >= 1024
