"""How many of the machine's cores the CPU thread pool (``tricycle.threads``) should use now.

Every quarter second the pool compares the CPU time its process used with the time its cores
were busy (``/proc/stat``): while other processes keep cores busy it uses only the cores
they leave, at least one; while several Python threads of this process take turns with the
pool, one. Linux only; elsewhere the pool always uses its ``n`` threads unless contended.
"""

import os
import time

LOOK_INTERVAL = 0.25  # seconds between two looks at how busy the machine is


class Share:
    """How many threads the pool should use now: ``n`` while this process has the machine to
    itself; the cores the other processes leave free (at least one) while they keep some busy;
    one while several Python threads of this process use the pool.

    Linux only (``/proc/stat``); elsewhere always ``n`` unless contended.
    """

    def __init__(self, n: int, share_machine: bool):
        self.n, self.share_machine = n, share_machine
        self.cpus = our_cpus()
        self.free = n
        self.contended_until = 0.0
        self.last_owner = 0
        self.last = cpu_times(self.cpus)
        self.next_look = time.monotonic() + 0.1

    def threads(self, owner: int) -> int:
        """Threads for an operation of thread ``owner`` (its ident) that holds the pool."""
        now = time.monotonic()
        if owner != self.last_owner:  # another thread used the pool: they take turns
            if self.last_owner:
                self.contended(now)
            self.last_owner = owner
        if now >= self.next_look:
            self._look(now)
        return self.now(now)

    def now(self, now: float | None = None) -> int:
        """The threads to use now, as last decided."""
        contended = (time.monotonic() if now is None else now) < self.contended_until
        return 1 if contended else self.free

    def contended(self, now: float | None = None) -> None:
        """Several Python threads use the pool: keep to one thread for a while."""
        self.contended_until = (time.monotonic() if now is None else now) + 2 * LOOK_INTERVAL

    def _look(self, now: float) -> None:
        self.next_look = now + LOOK_INTERVAL
        if not self.share_machine:
            return
        sample = cpu_times(self.cpus)
        if sample is None or self.last is None:
            return
        wall, busy, own = (a - b for a, b in zip(sample, self.last))
        if wall <= 0:
            return
        self.last = sample
        others = max(0.0, busy - own) / wall  # cores kept busy by other processes
        self.free = max(1, min(self.n, round(len(self.cpus) - others)))


def our_cpus() -> list[int]:
    """The CPUs this process may run on (all of the machine's where that cannot be asked)."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_times(cpus: list[int]) -> tuple[float, float, float] | None:
    """(wall time, seconds our CPUs were busy, CPU seconds of this process), or None where
    /proc/stat cannot be read. Busy counts user, system, irq, softirq and steal time (niced
    processes give way, so their time does not count)."""
    try:
        with open("/proc/stat") as stat:
            lines = stat.read().splitlines()
    except OSError:
        return None
    wanted = {f"cpu{i}" for i in cpus}
    busy = 0
    for line in lines:
        fields = line.split()
        if fields and fields[0] in wanted:
            user, _, system, _, _, irq, softirq, steal = (int(f) for f in fields[1:9])
            busy += user + system + irq + softirq + steal
    return time.monotonic(), busy / _CLOCK_TICKS, time.process_time()
