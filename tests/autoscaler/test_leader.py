"""Leader election on a real Lease (kube-apiserver of the run's shared control plane, a namespace of each test's own):
two replicas, a virtual clock for their timing (the server keeps the record and checks each write's
resourceVersion; it never reads the times), never two leaders."""

from __future__ import annotations

import random

import pytest
from kubernetes import client

from autoscaler import metrics
from autoscaler.adapters.kubernetes import api_client
from autoscaler.controller import Controller, ControllerConfig
from autoscaler.leader import LeaderElector
from tests.autoscaler import real_kube
from tests.autoscaler.fakes import FakeCloud, FakeCluster


class Clock:
    t = 0.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def ns(kube):
    yield from real_kube.own_namespace(kube, "leader")


@pytest.fixture
def coordination(kube, ns):
    api = api_client(str(kube.admin_kubeconfig))
    yield client.CoordinationV1Api(api)
    api.close()


def electors(coordination, ns, clock):
    return [LeaderElector(coordination, ns, name, clock=clock, wall=lambda: 1.767e9 + clock())
            for name in ("replica-a", "replica-b")]  # fmt: skip


def test_the_first_candidate_leads_and_the_second_waits(coordination, ns):
    clock = Clock()
    a, b = electors(coordination, ns, clock)
    assert a.try_acquire_or_renew() and not b.try_acquire_or_renew()
    lease = coordination.read_namespaced_lease("research-autoscaler", ns)
    assert lease.spec.holder_identity == "replica-a" and lease.spec.lease_duration_seconds == 20


def test_a_silent_leader_is_replaced_only_after_it_stopped_acting(coordination, ns):
    clock = Clock()
    a, b = electors(coordination, ns, clock)
    a.try_acquire_or_renew()
    b.try_acquire_or_renew()  # b first sees a's record now
    for _ in range(9):  # a stops renewing (paused, partitioned); b keeps trying every 2 s
        clock.t += 2
        assert not (a.is_leader() and b.try_acquire_or_renew())
    assert not a.is_leader() and not b.is_leader()  # 18 s: a gave up at 14 s; b waits 20 s
    clock.t += 2
    assert b.try_acquire_or_renew() and not a.is_leader()
    assert not a.try_acquire_or_renew()  # a comes back: b holds the lease
    lease = coordination.read_namespaced_lease("research-autoscaler", ns)
    assert lease.spec.holder_identity == "replica-b" and lease.spec.lease_transitions == 1


def test_random_interleavings_never_have_two_leaders(coordination, ns):
    rng = random.Random(7)
    clock = Clock()
    pair = electors(coordination, ns, clock)
    paused = {e.identity: 0.0 for e in pair}
    leaders_seen = set()
    for _ in range(100):
        clock.t += rng.uniform(0.2, 3.0)
        for e in rng.sample(pair, 2):
            if rng.random() < 0.05:
                paused[e.identity] = clock.t + rng.uniform(5, 25)  # a GC pause or a network partition
            if clock.t >= paused[e.identity]:
                e.try_acquire_or_renew()
            assert sum(x.is_leader() for x in pair) <= 1
            leaders_seen |= {x.identity for x in pair if x.is_leader()}
    assert leaders_seen == {"replica-a", "replica-b"}, "the lease changed hands at least once"


def test_two_controllers_never_both_act(coordination, ns):
    clock = Clock()
    pair = electors(coordination, ns, clock)
    cluster, cloud = FakeCluster(), FakeCloud([])
    acted = []

    class Tagged(FakeCluster):
        def __init__(self, identity):
            self.identity = identity

        def __getattr__(self, name):
            return getattr(cluster, name)

        def write_state(self, data):
            acted.append((clock.t, self.identity))
            cluster.write_state(data)

    controllers = [Controller(Tagged(e.identity), cloud, ControllerConfig(), clock, may_act=e.is_leader)
                   for e in pair]  # fmt: skip
    rng = random.Random(3)
    pause_a = (40.0, 70.0)
    for _ in range(45):
        clock.t += rng.uniform(1, 3)
        for e, ctl in zip(pair, controllers, strict=True):
            if e.identity == "replica-a" and pause_a[0] <= clock.t < pause_a[1]:
                continue
            e.try_acquire_or_renew()
            ctl.run_once()
    by_time: dict[float, set] = {}
    for t, who in acted:
        by_time.setdefault(t, set()).add(who)
    assert all(len(who) == 1 for who in by_time.values())
    assert {who for _, who in acted} == {"replica-a", "replica-b"}
    handover = min(t for t, who in acted if who == "replica-b")
    assert handover >= pause_a[0] + 15 - 3  # b acted only after a's lease ran out (a renewed < 3 s before)


class Slow:
    """The coordination API with every request taking ``delay`` seconds of the virtual clock; records whether
    ``elector`` held the lease at every instant a request was in flight (sampled each 0.5 s)."""

    def __init__(self, api, clock, delay):
        self.api, self.clock, self.delay = api, clock, delay
        self.elector = None
        self.samples: list[tuple[float, bool]] = []

    def __getattr__(self, name):
        fn = getattr(self.api, name)

        def call(*args, **kwargs):
            for _ in range(int(self.delay / 0.5)):
                self.clock.t += 0.5
                self.samples.append((self.clock.t, self.elector.is_leader()))
            return fn(*args, **kwargs)

        return call


def test_renewal_keeps_the_lease_when_every_request_takes_5_s(coordination, ns):
    clock = Clock()
    slow = Slow(coordination, clock, 5.0)
    e = LeaderElector(slow, ns, "replica-a", clock=clock, wall=lambda: 1.767e9 + clock())
    slow.elector = e
    assert e.request_timeout_s > 5.0
    assert e.try_acquire_or_renew()
    slow.samples.clear()
    for _ in range(12):  # what run() does: the next attempt retry_period after the last one started
        started = clock.t
        assert e.try_acquire_or_renew()
        clock.t += max(0.0, e.retry_period_s - (clock.t - started))
        slow.samples.append((clock.t, e.is_leader()))
    assert all(held for _, held in slow.samples), [t for t, held in slow.samples if not held]
    assert metrics.REGISTRY.get_sample_value("autoscaler_leader") == 1.0


def test_the_gauge_and_the_fence_follow_the_renew_deadline(coordination, ns):
    clock = Clock()
    e = LeaderElector(coordination, ns, "replica-a", clock=clock, wall=lambda: 1.767e9 + clock())
    assert e.try_acquire_or_renew() and e.may_write(4.0)
    assert not e.may_write(e.lease_duration_s - e.renew_deadline_s), "a write must end before a takeover"
    clock.t += e.renew_deadline_s  # no renewal since (partitioned): the gauge drops with no call made
    assert metrics.REGISTRY.get_sample_value("autoscaler_leader") == 0.0
    assert not e.may_write(0.1) and e.time_left() == 0.0


def test_a_takeover_writes_nothing_until_an_old_leader_s_late_write_could_have_arrived(coordination, ns):
    """Issue 28: a replica that takes the lease over from another holder (not one that creates it) waits
    ``takeover_delay_s`` before its first write: the passes do not run (``acting``) and the fence refuses."""
    clock = Clock()
    a, b = (LeaderElector(coordination, ns, name, clock=clock, wall=lambda: 1.767e9 + clock(),
                          takeover_delay_s=15) for name in ("replica-a", "replica-b"))  # fmt: skip
    assert a.try_acquire_or_renew() and a.acting() and a.may_write(4), "a new Lease: nothing to wait out"
    b.try_acquire_or_renew()
    for _ in range(10):  # a goes silent; b takes over after 20 s of an unchanged record
        clock.t += 2
        b.try_acquire_or_renew()
    assert b.is_leader() and not b.acting() and not b.may_write(4)
    assert b.quiet_left() == pytest.approx(15)
    for _ in range(7):  # renewing every 2 s meanwhile
        clock.t += 2
        assert b.try_acquire_or_renew() and not b.may_write(4)
    clock.t += 1.1
    assert b.acting() and b.may_write(4) and b.quiet_left() == 0
    clock.t += 2
    assert b.try_acquire_or_renew() and b.acting(), "renewals do not start another quiet time"
    clock.t += 16  # b lapses (renew deadline passed): whatever it wrote may still arrive; a new quiet time
    assert b.try_acquire_or_renew() and not b.acting()


def test_a_replica_not_acting_stands_by_so_its_next_pass_reads_the_state():
    from types import SimpleNamespace

    from autoscaler.service import _acting

    stood = []
    lease = {"held": True}
    service = SimpleNamespace(elector=SimpleNamespace(acting=lambda: lease["held"]),
                              controller=SimpleNamespace(standing_by=lambda: stood.append(1)))  # fmt: skip
    may_run = _acting(service)
    assert may_run() and stood == []
    lease["held"] = False
    assert not may_run() and stood == [1]
    assert _acting(SimpleNamespace(elector=None))()
