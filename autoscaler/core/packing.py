"""Bin packing of pod classes onto nodes: existing, re-used, upcoming and new nodes of every group.

Bins carry a multiplicity (``count`` identical nodes), so a burst of 50,000 pods of a few shapes packs in a few
hundred bulk steps: First-Fit Decreasing over classes, filling whole runs of identical nodes at once. Every change
can be journalled and rolled back, which gives gangs their all-or-nothing placement.
"""

from __future__ import annotations

import math

from autoscaler.core.bins import NEW, STAGES, Bin, PodClass, Room
from autoscaler.core.fit import BIG, capacity
from autoscaler.core.quantity import is_extended
from autoscaler.core.scheduling import Scheduler, Topology
from autoscaler.core.spread import best_existing, best_new


def _max_free(run: list[Bin]) -> dict[str, int]:
    out: dict[str, int] = {}
    for b in run:
        for r, q in b.st.free.items():
            if q > out.get(r, 0):
                out[r] = q
    return out


class Packer:
    """Bins in runs by (stage, template): first fit goes stage by stage, skipping whole templates a class cannot
    use, and bins no pending pod fits on any more are retired from the scan (kept for the result)."""

    def __init__(
        self, sched: Scheduler, rooms: list[Room], bins: list[Bin], max_new: int, floor: dict[str, int]
    ):
        self.sched = sched  # the scheduler's rules: every "may this pod go on this node" goes there
        self.rooms = rooms
        self.cap_left = max_new
        self.max_new = max_new
        self.journal: list | None = None
        self.runs: dict[tuple[int, int], list[Bin]] = {}
        self.bounds: dict[tuple[int, int], dict[str, int]] = {}  # per run: at least the free room of any node
        self.order: list[tuple[int, int]] = []  # keys of runs, by stage then creation
        self.retired: list[Bin] = []
        self.floor = floor  # per resource, the least any pending class requests (all request it)
        self._fits: dict[tuple, list] = {}  # per (shape, matches): its fit on each group's template
        self.remaining: dict[tuple, int] = {}  # pending pods still to place, per static key (count_demand)
        self.rep: dict[tuple, object] = {}  # a shape for each static key
        self._demand: dict[int, int] = {}  # per room, demand() until the pending pods change
        for b in bins:
            self.add(b)

    @property
    def bins(self) -> list[Bin]:
        """Every bin, in first-fit order, then the retired ones."""
        return [b for key in self.order for b in self.runs[key]] + self.retired

    def add(self, b: Bin) -> tuple[list[Bin], int]:
        """Append ``b`` to its run; (the run, b's index)."""
        key = (STAGES[b.kind], b.tmpl)
        run = self.runs.get(key)
        if run is None:
            run = self.runs[key] = []
            self.bounds[key] = {}
            self._insert_key(key)
        run.append(b)
        bound = self.bounds[key]
        for r, q in b.st.free.items():
            if q > bound.get(r, 0):
                bound[r] = q
        if self.journal is not None:
            self.journal.append(lambda: run.remove(b) and None)
        return run, len(run) - 1

    def _insert_key(self, key: tuple[int, int]) -> None:
        i = len(self.order)
        while i > 0 and self.order[i - 1][0] > key[0]:
            i -= 1
        self.order.insert(i, key)

    def _dead(self, b: Bin) -> bool:
        free = b.st.free
        return any(free.get(r, 0) < q for r, q in self.floor.items())

    # --- journal ----------------------------------------------------------------------------------------------
    def begin(self) -> None:
        self.journal = []

    def commit(self) -> None:
        self.journal = None

    def rollback(self) -> None:
        for undo in reversed(self.journal or ()):
            undo()
        self.journal = None

    def _save_bin(self, b: Bin) -> None:
        if self.journal is not None:
            st, hist, count = b.st.copy(), len(b.history), b.count

            def undo():
                b.st, b.count = st, count
                del b.history[hist:]

            self.journal.append(undo)

    def _insert(self, run: list[Bin], i: int, new: list[Bin]) -> None:
        run[i:i] = new
        if self.journal is not None:
            self.journal.append(lambda: [run.remove(b) for b in new] and None)

    # --- placing ----------------------------------------------------------------------------------------------
    def _apply(self, b: Bin, cls: PodClass, k: int) -> None:
        self._save_bin(b)
        b.st.add(cls.shape, cls.matched, k)
        b.history.append((cls, k))

    def fill(self, run: list[Bin], i: int, b: Bin, cls: PodClass, c: int, n: int) -> tuple[int, int]:
        """Put up to ``n`` pods, ``c`` per node, on the run of nodes ``b`` (at ``run[i]``); (placed, bins
        inserted before it)."""
        m = b.count
        if n >= c * m:
            self._apply(b, cls, c)
            return c * m, 0
        full, rem = divmod(n, c)
        pieces = [(cnt, k) for cnt, k in ((full, c), (1, rem)) if cnt and k]
        inserted = []
        for cnt, k in pieces:
            if cnt == b.count:  # the last piece takes the run itself
                self._apply(b, cls, k)
                break
            self._save_bin(b)
            piece = b.clone(cnt)
            b.count -= cnt
            piece.st.add(cls.shape, cls.matched, k)
            piece.history.append((cls, k))
            inserted.append(piece)
        if inserted:
            self._insert(run, i, inserted)
        return n, len(inserted)

    def place(self, cls: PodClass, n: int, region: str | None, allow_new: bool) -> int:
        """Up to ``n`` pods of ``cls``: first on the bins there are, then (``allow_new``) on new nodes."""
        if cls.topology:
            return self.place_topology(cls, n, region, allow_new)
        placed = self.place_existing(cls, n, region)
        if placed < n and allow_new:
            placed += self.place_new(cls, n - placed, region)
        return placed

    def place_existing(self, cls: PodClass, n: int, region: str | None, zone: str | None = None) -> int:
        """First fit over the bins in order (existing, re-usable, upcoming, then new ones of this plan)."""
        placed = 0
        shape, matched = cls.shape, cls.matched
        by_name = shape.by_name
        for key in self.order:
            if n <= 0:
                break
            run = self.runs[key]
            if not run:
                continue
            bound = self.bounds[key]
            if any(q > bound.get(r, 0) for r, q in shape.requests):
                continue  # no node of the run has room for one pod
            rep = run[0]
            if not by_name and self.sched.static(shape, rep.labels, rep.taints, rep.tmpl, None) is not None:
                continue
            before = placed
            i = 0
            while i < len(run) and n > 0:
                b = run[i]
                if (
                    (region is not None and b.region != region)
                    or (zone is not None and b.zone != zone)
                    or (by_name and self.sched.static(shape, b.labels, b.taints, b.tmpl, b.node) is not None)
                ):
                    i += 1
                    continue
                c = capacity(shape, matched, b.st)
                if c <= 0:
                    if self.journal is None and self._dead(b):
                        self.retired.append(run.pop(i))
                    else:
                        i += 1
                    continue
                got, ins = self.fill(run, i, b, cls, c, n)
                placed += got
                n -= got
                i += ins + 1
            if placed == before and self.journal is None:
                self.bounds[key] = _max_free(run)  # tighten: placements only ever lowered free room
        return placed

    def place_new(self, cls: PodClass, n: int, region: str | None, zone: str | None = None) -> int:
        """Open new nodes for up to ``n`` pods, in the order of :meth:`group_order` (in ``zone`` when given)."""
        placed = 0
        for room, k in self.group_order(cls, n):
            if n <= 0:
                break
            g = room.group
            if (region is not None and g.region != region) or (zone is not None and zone not in g.zones):
                continue
            if room.blocked:
                cls.notes.setdefault(g.name, ("blocked", room.blocked))
                continue
            avail = min(room.headroom - room.new, self.cap_left)
            if avail <= 0:
                self.note_full(cls, room)
                continue
            take = min(math.ceil(n / k), avail)
            got = min(n, take * k)
            self.open_nodes(room, cls, take, k, got, zone)
            placed += got
            n -= got
            if n > 0:
                self.note_full(cls, room)
        return placed

    def note_full(self, cls: PodClass, room: Room) -> None:
        g = room.group
        if room.headroom - room.new <= 0:
            cls.notes[g.name] = ("max", f"group {g.name} is at its maximum size ({g.max})")
        else:
            cls.notes[g.name] = ("cap", f"the limit of {self.max_new} new nodes per plan is reached")

    def open_nodes(
        self, room: Room, cls: PodClass, take: int, k: int, n: int, zone: str | None = None
    ) -> None:
        run = room.node(NEW, take, zone)
        if self.journal is not None:
            old_new, old_cap = room.new, self.cap_left

            def undo():
                room.new, self.cap_left = old_new, old_cap

            self.journal.append(undo)
        room.new += take
        self.cap_left -= take
        runs, i = self.add(run)
        self.fill(runs, i, run, cls, k, n)

    def place_topology(self, cls: PodClass, n: int, region: str | None, allow_new: bool) -> int:
        """Up to ``n`` pods of ``cls``, one at a time, where the topology rules let each go (``spread.py``
        chooses from the nodes and groups handed to it; the pod is placed here)."""
        placed = 0
        why: list[str] = []
        while placed < n:
            why.clear()
            topo = Topology(self.sched, cls, self.bins)  # the whole cluster's nodes count
            pick = best_existing(self.sched, topo, cls, (self.runs[key] for key in self.order), region, why)
            if pick is not None:
                run, i, b = pick
                self.fill(run, i, b, cls, 1, 1)
            elif not allow_new:
                break
            else:
                new = best_new(topo, self._growable(cls, region), why)
                if new is None:
                    break
                room, k, zone = new
                self.open_nodes(room, cls, 1, k, 1, zone)
            placed += 1
        if placed < n and why:
            cls.notes.setdefault("*topology", ("topology", why[0]))
        return placed

    def _growable(self, cls: PodClass, region: str | None) -> list[tuple[Room, int]]:
        """The groups (in ``region`` when given) that may add a node for one pod of ``cls`` now, best first, with
        pods per node; why the others may not goes to the class's notes."""
        out = []
        for room, k in self.group_order(cls, 1):
            g = room.group
            if region is not None and g.region != region:
                continue
            if room.blocked:
                cls.notes.setdefault(g.name, ("blocked", room.blocked))
                continue
            if min(room.headroom - room.new, self.cap_left) <= 0:
                self.note_full(cls, room)
                continue
            out.append((room, k))
        return out

    def count_demand(self, classes, sign: int = 1) -> None:
        """Add (sign 1) or remove (-1) the pods of ``classes`` to the pending pods still to place, by what the
        node-level filters look at: a group's demand is those its template admits (``demand``)."""
        for cls in classes:
            key = cls.shape.static_key
            self.remaining[key] = self.remaining.get(key, 0) + sign * len(cls.pods)
            self.rep.setdefault(key, cls.shape)
        self._demand.clear()

    def demand(self, room: Room) -> int:
        """The pending pods still to place that a new node of ``room``'s group admits: the pods of the option an
        option's cost is shared by (cluster-autoscaler's estimator packs every pending pod a group fits into the
        option that its price expander scores)."""
        got = self._demand.get(id(room))
        if got is None:
            g = room.group
            got = self._demand[id(room)] = sum(
                n
                for key, n in self.remaining.items()
                if n > 0 and self.sched.static(self.rep[key], g.labels, g.taints, room.tmpl, None) is None
            )
        return got

    def template_fits(self, cls: PodClass) -> list[tuple]:
        key = (cls.shape, cls.matched)  # classes of one shape (e.g. one per gang) fit the groups alike
        fits = self._fits.get(key)
        if fits is None:
            fits = self._fits[key] = self._template_fits(cls)
        return fits

    def _template_fits(self, cls: PodClass) -> list[tuple]:
        """Per group: (room, pods per new node, offers an accelerator the class does not request, note when it
        takes none); what does not change while a plan is packed."""
        out = []
        wanted = {r for r, _ in cls.shape.requests}
        for room in self.rooms:
            g = room.group
            k, reason = self.sched.template_room(cls, room)
            if reason is not None:
                out.append((room, 0, False, ("static", reason)))
            elif k <= 0:
                out.append((room, 0, False, ("size", "")))  # too large: summarised by the caller
            else:
                unused = any(q > 0 and is_extended(r) and r not in wanted for r, q in g.allocatable.items())
                out.append((room, min(k, BIG), unused, None))
        return out

    def group_order(self, cls: PodClass, n: int = 1) -> list[tuple[Room, int]]:
        """Groups a new node for ``n`` pods of ``cls`` may come from, best first, with pods per node.

        Region spill-over order first; then groups whose nodes offer an accelerator (an extended resource such
        as nvidia.com/gpu) the pods do not request come after every group that does not (a CPU pod that
        tolerates the GPU taint is not sent to a GPU node while a CPU node fits); then group priority (higher
        first); then the lowest cost of the nodes the pods really need, per pod: ``ceil(m / k)`` nodes times the
        price for the ``m`` pods the group can take, of this class and of the pending pods still to place that
        the group's nodes could also take (one small pod does not buy a big node because the big node would be
        cheaper per pod when full); groups without a price after those with one; then the least waste of the
        node's dominant resource."""
        out = []
        for room, k, unused_accelerator, note in self.template_fits(cls):
            g = room.group
            if note is not None:
                cls.notes.setdefault(g.name, note)
                continue
            m = max(1, min(max(n, self.demand(room)), max(room.headroom - room.new, 1) * k))
            nodes = -(-m // k)
            price = g.price_per_hour * nodes / m if g.price_per_hour is not None else math.inf
            used = max(
                (q * min(k, m) / g.allocatable[r] for r, q in cls.shape.requests if g.allocatable.get(r)),
                default=1,
            )
            out.append(((room.region_idx, unused_accelerator, -g.priority, price, 1 - used, g.name), room, k))
        out.sort(key=lambda t: t[0])
        return [(room, k) for _, room, k in out]
