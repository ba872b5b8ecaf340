"""How calls run in this process: one :class:`Runtime` owns what used to be process-wide switches.

A runtime holds the settings every batched and compiled call reads (the kernel kind, the numba
accelerator, the thread cap, when a kernel starts compiling in the background) and the resources
behind them (the thread pool, the compile notices, the background compiles). There is a process
default (:func:`default_runtime`, made from the environment: ``ROBOKIN_ACCEL``,
``ROBOKIN_THREADS``); the node, the command line and tests make their own and run with it::

    import robokin_ros as rk

    quiet = rk.Runtime(threads=1)
    with rk.using(quiet):              # this thread (and the threads its calls start) only
        rk.forward_kinematics(model, q)

    with rk.current_runtime().use(kind="generic"):   # the same resources, another setting
        ...

:func:`using` sets the runtime for the current context (``contextvars``): another thread keeps
its own, so a block never changes what other threads run. :meth:`Runtime.use` makes a runtime
that shares this one's resources with some settings changed, and runs the block with it.

Threads (:meth:`Runtime.thread_count`): a batched call runs on at most ``threads`` threads
(None: every core this process may use), and never on more than the cores free right now
(:mod:`robokin_ros.free_cores`): on a machine whose other processes hold every core but one, a
batch runs on the calling thread alone instead of waiting for a worker the scheduler put behind
another process. Results are bit-identical for every thread count.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

from .errors import ArgumentError
from .free_cores import FreeCores, available_cores

#: The environment variable capping the threads of the default runtime.
THREADS_ENVIRONMENT = "ROBOKIN_THREADS"
#: The environment variable switching the default runtime's numba accelerator off (0/off/false/no).
ACCEL_ENVIRONMENT = "ROBOKIN_ACCEL"
#: The kernel kinds: the per-robot generated kernels (default) or the generic ones (their oracles).
KINDS = ("generated", "generic")
#: Configurations (one batch, or many single calls) after which a kernel not loaded yet starts
#: compiling or loading in the background (:attr:`Settings.compile_after`'s default).
COMPILE_AFTER = 256

#: The logger of compile notices: one INFO line when a robot's kernels start compiling, one
#: when they are done.
log = logging.getLogger("robokin_ros.compile")


class Notice(NamedTuple):
    """A robot's kernels started (``started``) or finished compiling."""

    #: The robot's name (its URDF name).
    robot: str
    #: True: the first kernel of a burst started compiling; False: the last one ended.
    started: bool
    #: At the end: kernels compiled in the burst (0 at the start).
    kernels: int = 0
    #: At the end: the burst's duration [s] (0 at the start).
    seconds: float = 0.0
    #: Kernels of the burst still compiling (> 0: a progress notice, sent when one of several ends).
    running: int = 0

    def line(self) -> str:
        """The notice as one line for a person (a progress notice with an estimate of the time
        left: the burst's mean time per kernel so far, times the kernels still compiling)."""
        if self.started:
            return f"compiling kernels for {self.robot} (first run; cached afterwards)…"
        plural = "s" if self.kernels != 1 else ""
        done = f"compiled {self.kernels} kernel{plural} for {self.robot} in {self.seconds:.1f} s"
        if not self.running:
            return done
        left = self.seconds / max(self.kernels, 1) * self.running
        return f"{done}; {self.running} still compiling (about {left:.0f} s left)…"


@dataclasses.dataclass(frozen=True)
class Settings:
    """What a :class:`Runtime` runs (each a keyword of :class:`Runtime` and :meth:`Runtime.use`)."""

    #: ``"generated"`` (the per-robot kernels where the model allows them) or ``"generic"``.
    kind: str = "generated"
    #: True: compiled (numba) kernels where numba is installed; False: numpy only.
    accelerated: bool = True
    #: Most threads of a batched call (None: every core this process may use); fewer run when
    #: other processes hold cores.
    threads: int | None = None
    #: Configurations after which a kernel not loaded yet starts compiling in the background.
    compile_after: int = COMPILE_AFTER
    #: False: no compile or load starts in the background (explicit ``prepare`` still loads).
    background_compiles: bool = True
    #: True: a batched call runs on no more threads than the cores other processes leave free
    #: now (:mod:`robokin_ros.free_cores`); False: on ``threads`` threads whatever the machine does.
    share_cores: bool = True
    #: How much lower than this process's priority a background compile's process runs
    #: (``nice``, 0..19; 19: the lowest, so the threads answering requests keep the CPU where
    #: cores are few). A compile a caller waits for always runs at the caller's priority.
    background_niceness: int = 19

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ArgumentError("kind", f"must be one of {KINDS}, got {self.kind!r}")
        for name in ("accelerated", "background_compiles", "share_cores"):
            if not isinstance(getattr(self, name), bool):
                raise ArgumentError(name, f"must be True or False, got {getattr(self, name)!r}")
        if self.threads is not None:
            whole_number("threads", self.threads)
        if isinstance(self.compile_after, bool) or not isinstance(self.compile_after, int) or self.compile_after < 0:
            raise ArgumentError("compile_after", f"must be a whole number >= 0, got {self.compile_after!r}")
        niceness = self.background_niceness
        if isinstance(niceness, bool) or not isinstance(niceness, int) or not 0 <= niceness <= 19:
            raise ArgumentError("background_niceness", f"must be a whole number in 0..19, got {niceness!r}")


def whole_number(name: str, value) -> int:
    """``value`` when it is an int >= 1, else :class:`ArgumentError` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ArgumentError(name, f"must be a whole number >= 1, got {value!r}")
    return value


def settings_from_environment() -> Settings:
    """The default runtime's settings: ``ROBOKIN_ACCEL`` and ``ROBOKIN_THREADS`` when set.

    Raises:
        ArgumentError: ``ROBOKIN_THREADS`` is not a whole number >= 1.
    """
    accelerated = os.environ.get(ACCEL_ENVIRONMENT, "1").strip().lower() not in ("0", "off", "false", "no")
    text = os.environ.get(THREADS_ENVIRONMENT, "").strip()
    threads = None
    if text:
        try:
            threads = int(text)
        except ValueError:
            raise ArgumentError(THREADS_ENVIRONMENT, f"must be a whole number >= 1, got {text!r}") from None
        whole_number(THREADS_ENVIRONMENT, threads)
    return Settings(accelerated=accelerated, threads=threads)


class OwnThreads:
    """This process's own threads that may be runnable now besides the caller's, counted over
    every runtime of the process: the worker threads of a batched call that is running
    (:meth:`Runtime.alongside`) and the kernels compiling (:meth:`Runtime.compiling`).
    :meth:`Runtime.thread_count` does not take them for other processes' (counted per runtime, a
    call right after one on another runtime, or beside it, often ran on one thread on a quiet
    machine)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._count = 0

    def add(self, n: int) -> None:
        """``n`` more (negative: fewer)."""
        with self._lock:
            self._count += n

    @property
    def count(self) -> int:
        """How many now."""
        return self._count


class _Resources:
    """What the runtimes made by :meth:`Runtime.use` share with the one they came from."""

    def __init__(self):
        self.lock = threading.Lock()
        self.pool: ThreadPoolExecutor | None = None
        self.pool_size = 0
        self.free_cores = FreeCores()
        self.subscribers: list[Callable[[Notice], None]] = []
        self.bursts: dict[str, list] = {}   # robot -> [compiling now, compiled in the burst, start]
        self.loads: weakref.WeakSet[threading.Thread] = weakref.WeakSet()
        self.stopped = False
        self.closed = False
        self.own = process_state("own threads", OwnThreads)


class Runtime:
    """How calls run: settings (:class:`Settings`) and the resources behind them.

    Args:
        kind, accelerated, threads, compile_after, background_compiles, share_cores, background_niceness: see
            :class:`Settings`.

    Raises:
        ArgumentError: a setting out of its range (named).
    """

    def __init__(self, *, kind: str = "generated", accelerated: bool = True, threads: int | None = None,
                 compile_after: int = COMPILE_AFTER, background_compiles: bool = True, share_cores: bool = True,
                 background_niceness: int = 19):
        self.settings = Settings(kind=kind, accelerated=accelerated, threads=threads, compile_after=compile_after,
                                 background_compiles=background_compiles, share_cores=share_cores,
                                 background_niceness=background_niceness)
        self._resources = _Resources()

    @classmethod
    def _sharing(cls, resources: _Resources, settings: Settings) -> Runtime:
        runtime = cls.__new__(cls)
        runtime.settings, runtime._resources = settings, resources
        return runtime

    def __repr__(self) -> str:
        s = self.settings
        return (f"Runtime(kind={s.kind!r}, accelerated={s.accelerated}, threads={s.threads}, "
                f"compile_after={s.compile_after}, background_compiles={s.background_compiles}, "
                f"share_cores={s.share_cores}, background_niceness={s.background_niceness})")

    # -- settings ---------------------------------------------------------------------------
    @property
    def kind(self) -> str:
        """``"generated"`` or ``"generic"``."""
        return self.settings.kind

    @property
    def generated(self) -> bool:
        """True when the per-robot generated kernels run (:attr:`kind` ``"generated"``)."""
        return self.settings.kind == "generated"

    @property
    def accelerated(self) -> bool:
        """The accelerator setting (whether numba is also installed:
        :func:`robokin_ros.kernels.accel.active`)."""
        return self.settings.accelerated

    def replaced(self, **changes) -> Runtime:
        """A runtime with ``changes`` to the settings sharing this one's resources (its pool,
        notices and background compiles).

        Raises:
            ArgumentError: an unknown setting, or one out of its range.
        """
        unknown = sorted(set(changes) - {f.name for f in dataclasses.fields(Settings)})
        if unknown:
            raise ArgumentError(unknown[0], f"is not a runtime setting; choose among "
                                            f"{[f.name for f in dataclasses.fields(Settings)]}")
        changes = {name: value for name, value in changes.items() if value is not None or name == "threads"}
        return Runtime._sharing(self._resources, dataclasses.replace(self.settings, **changes))

    @contextlib.contextmanager
    def use(self, **changes) -> Iterator[Runtime]:
        """Run the block with :meth:`replaced` ``(**changes)`` as the current runtime (this
        context only), then restore the previous one."""
        with using(self.replaced(**changes)) as runtime:
            yield runtime

    # -- threads ----------------------------------------------------------------------------
    def thread_count(self, threads: int | None = None) -> int:
        """Threads a batched call may use: ``threads`` when given (a per-call cap), else
        :attr:`Settings.threads`, else every core this process may use — and, with
        :attr:`Settings.share_cores`, no more than the cores free now
        (:class:`robokin_ros.free_cores.FreeCores`).

        Raises:
            ArgumentError: ``threads`` is not None or a whole number >= 1.
        """
        cap = self.settings.threads if threads is None else whole_number("threads", threads)
        cap = available_cores() if cap is None else cap
        if cap == 1 or not self.settings.share_cores:
            return cap
        r = self._resources
        return min(cap, r.free_cores.now(own=r.own.count))

    def executor(self, workers: int) -> ThreadPoolExecutor:
        """The shared pool of worker threads, grown to at least ``workers``."""
        r = self._resources
        with r.lock:
            if r.pool is None or r.pool_size < workers:
                old, r.pool_size = r.pool, workers
                r.pool = ThreadPoolExecutor(workers, thread_name_prefix="robokin_ros")
                if old is not None:
                    old.shutdown(wait=False)
            return r.pool

    @contextlib.contextmanager
    def alongside(self, workers: int, task: Callable, *args) -> Iterator[None]:
        """Run ``task(*args)`` on each of ``workers`` pool threads (in a copy of the caller's
        context, so the calls it makes see the caller's runtime) while the block runs: the
        caller works in the block too, and leaves it once the work is done. Until then they count
        as this process's own threads (:class:`OwnThreads`); a task that ends after the block
        only finds nothing left (and waits for the GIL the caller holds), so it counts no more."""
        pool = self.executor(workers)
        own = self._resources.own
        own.add(workers)
        try:
            for _ in range(workers):
                pool.submit(contextvars.copy_context().run, task, *args)
            yield
        finally:
            own.add(-workers)

    # -- compile notices --------------------------------------------------------------------
    @contextlib.contextmanager
    def subscribed(self, callback: Callable[[Notice], None]) -> Iterator[None]:
        """Call ``callback(notice)`` for every :class:`Notice` of this runtime's compiles while the
        block runs (from the thread that compiles: keep it short, and thread-safe)."""
        r = self._resources
        with r.lock:
            r.subscribers.append(callback)
        try:
            yield
        finally:
            with r.lock:
                r.subscribers.remove(callback)

    def _send(self, notice: Notice) -> None:
        if not notice.running:   # (the log has the burst's start and end; subscribers get progress too)
            log.info("robokin_ros: %s", notice.line())
        with self._resources.lock:
            callbacks = list(self._resources.subscribers)
        for callback in callbacks:
            callback(notice)

    @contextlib.contextmanager
    def compiling(self, robot: str) -> Iterator[None]:
        """Around one kernel's compile for ``robot``: one notice when the first kernel of a burst
        starts, one when the last running ends (logged at INFO and sent to the subscribers)."""
        r = self._resources
        with r.lock:
            burst = r.bursts.setdefault(robot, [0, 0, time.monotonic()])
            first = burst[0] == 0
            if first:
                burst[1], burst[2] = 0, time.monotonic()
            burst[0] += 1
        if first:
            self._send(Notice(robot, True))
        r.own.add(1)
        try:
            yield
        finally:
            r.own.add(-1)
            with r.lock:
                burst[0] -= 1
                burst[1] += 1
                last = burst[0] == 0
                if last:
                    del r.bursts[robot]
            self._send(Notice(robot, False, burst[1], time.monotonic() - burst[2], 0 if last else burst[0]))

    # -- background compiles ----------------------------------------------------------------
    def start_background(self, target: Callable[[], object]) -> threading.Thread | None:
        """Run ``target`` in a background thread (named ``"robokin_ros accel"``) with this
        runtime current; None when background compiles are off or stopped (:meth:`close`)."""
        r = self._resources
        with r.lock:
            if r.stopped or not self.settings.background_compiles:
                return None
            context = contextvars.copy_context()
            context.run(_CURRENT.set, self)
            context.run(_BACKGROUND.set, True)
            thread = threading.Thread(target=context.run, args=(target,), name="robokin_ros accel", daemon=True)
            r.loads.add(thread)
            thread.start()
            return thread

    def running_background(self) -> list[threading.Thread]:
        """The background compiles and loads of this runtime running now."""
        with self._resources.lock:
            return [thread for thread in self._resources.loads if thread.is_alive()]

    def stop_background(self, timeout: float) -> bool:
        """Start no more background compiles (until :meth:`resume_background`) and wait up to
        ``timeout`` [s] for the running ones.

        Returns:
            True when none runs any more; False when one still does after ``timeout`` (exiting
            through interpreter finalisation could then crash in numba: leave with ``os._exit``).
        """
        with self._resources.lock:
            self._resources.stopped = True
            running = list(self._resources.loads)
        deadline = time.monotonic() + timeout
        for thread in running:
            thread.join(max(0.0, deadline - time.monotonic()))
        return not self.running_background()

    def resume_background(self) -> None:
        """Let background compiles start again after :meth:`stop_background`."""
        with self._resources.lock:
            self._resources.stopped = False

    def close(self, timeout: float = 10.0) -> bool:
        """Stop background compiles (see :meth:`stop_background`) and the worker threads.

        Returns:
            :meth:`stop_background`'s answer.
        """
        done = self.stop_background(timeout)
        r = self._resources
        with r.lock:
            pool, r.pool, r.pool_size, r.closed = r.pool, None, 0, True
        if pool is not None:
            pool.shutdown(wait=False)
        return done


#: What every runtime of this process shares because the process holds it once (numba's loaded
#: code, the disk cache's fallback directory): kind -> object, made by :func:`process_state`.
_PROCESS: dict[str, object] = {}
_DEFAULT: list[Runtime] = []   # the process default, made on first use (one element)
_DEFAULT_LOCK = threading.Lock()
_PROCESS_LOCK = threading.RLock()   # (a factory may ask for another kind; a runtime made under _DEFAULT_LOCK asks)
_CURRENT: contextvars.ContextVar[Runtime | None] = contextvars.ContextVar("robokin_ros_runtime", default=None)
#: True in the threads of :meth:`Runtime.start_background` (see :func:`in_background`).
_BACKGROUND: contextvars.ContextVar[bool] = contextvars.ContextVar("robokin_ros_background", default=False)


def in_background() -> bool:
    """Whether this thread is one of a runtime's background compiles and loads
    (:meth:`Runtime.start_background`), which nobody waits for: their compiling processes run at
    the lowest priority. A compile a caller waits for (``prepare``, ``Kinematics``, a ``--wait``)
    runs at the caller's priority: at the lowest, it starved while other processes held every
    core (a test waiting on one made no progress in 15 minutes with two spinning processes on
    this 2-core machine)."""
    return _BACKGROUND.get()


def default_runtime() -> Runtime:
    """The process's default runtime (from the environment: :func:`settings_from_environment`)."""
    if not _DEFAULT:
        with _DEFAULT_LOCK:
            if not _DEFAULT:
                runtime = Runtime()
                runtime.settings = settings_from_environment()
                _DEFAULT.append(runtime)
    return _DEFAULT[0]


def process_state(kind: str, factory: Callable[[], object]):
    """The one object of ``kind`` this process holds (made by ``factory()`` on first use): state
    that is process-wide by nature, shared by every runtime (e.g. the compiled modules numba has
    loaded, which it never frees)."""
    state = _PROCESS.get(kind)
    if state is None:
        with _PROCESS_LOCK:
            state = _PROCESS.get(kind)
            if state is None:
                state = _PROCESS[kind] = factory()
    return state


def current_runtime() -> Runtime:
    """The runtime of the current context: the innermost :func:`using` block's, else the default."""
    return _CURRENT.get() or default_runtime()


@contextlib.contextmanager
def using(runtime: Runtime) -> Iterator[Runtime]:
    """Run the block with ``runtime`` as the current runtime of this context (this thread, and
    the threads and background compiles its calls start), then restore the previous one.

    Raises:
        ArgumentError: ``runtime`` is not a :class:`Runtime`.
    """
    if not isinstance(runtime, Runtime):
        raise ArgumentError("runtime", f"must be a robokin_ros.Runtime, got {type(runtime).__name__}")
    token = _CURRENT.set(runtime)
    try:
        yield runtime
    finally:
        _CURRENT.reset(token)
