"""``rootrank run [options] -- CMD ARGS...``: run a training command, invisibly, and watch it.

- Output passes through unchanged: a stream that is a terminal is given to the command as a
  pseudo-terminal (so progress bars and colours look as they would without rootrank); one
  that is not (a pipe, a file) is given a pipe, and stdout and stderr stay apart.
- The command runs in its own process group. When standard input is a terminal that group is
  put in the foreground, so Ctrl-C, Ctrl-\\ reach it straight from the terminal; SIGINT,
  SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to rootrank (a scheduler's SIGTERM) are
  forwarded to the group. rootrank becomes the child subreaper (Linux): workers a launcher
  started in their own sessions and left behind are stopped (SIGTERM, then SIGKILL after
  :data:`KILL_AFTER` s) when the command ends, so no orphan survives the job.
- rootrank exits with the command's exit code (128 + N when a signal N ended it; 127 when the
  command does not exist, 126 when it cannot be run).
- ``--log FILE`` saves the output as it arrives (stdout and stderr merged line by line).
- Every line goes through the engine's streaming scan once (:mod:`rootrank.live.feed`); when
  the command fails, the diagnosis follows its output on stderr.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import os
import selectors
import shlex
import signal
import subprocess
import sys
import termios
import threading
import time
from typing import IO

from rootrank.ingest import InputError
from rootrank.live.events import Reporter
from rootrank.live.feed import LiveScan
from rootrank.live.lines import LineSplitter, joined
from rootrank.live.monitor import Monitor
from rootrank.live.tracker import ProgressTracker
from rootrank.signatures import Library
from rootrank.writes import write_all

#: Seconds between checks (failure, stall) while the command runs.
TICK = 0.5
#: Seconds leftover processes get after SIGTERM before SIGKILL.
KILL_AFTER = 5.0
#: Seconds output is still read after the command exited (a grandchild may hold the terminal).
DRAIN_AFTER_EXIT = 2.0
_FORWARDED = (
    signal.SIGINT,
    signal.SIGTERM,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
)
_PR_SET_CHILD_SUBREAPER = 36


def _subreaper() -> None:
    """Become the subreaper of our descendants (Linux; elsewhere nothing happens)."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _copy_winsize(src: int, dst: int) -> None:
    with contextlib.suppress(OSError):
        fcntl.ioctl(dst, termios.TIOCSWINSZ, fcntl.ioctl(src, termios.TIOCGWINSZ, b"\0" * 8))


def _children() -> list[int]:
    """Our own child processes still alive (orphans handed to us as the subreaper)."""
    me = os.getpid()
    out = []
    for name in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read().decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if int(fields[1]) == me and fields[0] != "Z":
            out.append(int(name))
    return out


def _reap_zombies() -> None:
    with contextlib.suppress(ChildProcessError):
        while True:
            pid, _ = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                return


def stop_leftovers(pgid: int) -> list[int]:
    """Stop what is left of the job after its command exited: its process group and any
    orphan handed to us. Returns the pids that had to be stopped."""
    left: set[int] = set()
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGTERM)
        left.add(pgid)
    for pid in _children():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
            left.add(pid)
    end = time.time() + KILL_AFTER
    while time.time() < end:
        _reap_zombies()
        alive = _children()
        group = True
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            group = False
        if not alive and not group:
            break
        time.sleep(0.05)
    else:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
        for pid in _children():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    _reap_zombies()
    return sorted(left)


def _tick_until(monitor: Monitor, stop: threading.Event, err: IO[str]) -> None:
    """Run the monitor's checks every :data:`TICK` seconds until ``stop`` is set."""
    while not stop.wait(TICK):
        try:
            monitor.tick()
        except Exception as exc:  # noqa: BLE001 - the job must go on; say why checks stopped
            print(f"rootrank: live checks stopped ({type(exc).__name__}: {exc})", file=err)
            return


def run_command(
    argv: list[str],
    *,
    log: str | None = None,
    fmt: str = "text",
    stall: float | None = None,
    on_stall: str = "report",
    progress_every: float | None = None,
    library: Library | None = None,
    mask: bool = True,
    color: bool = False,
    err: IO[str] | None = None,
) -> int:
    """Run ``argv`` as described in the module docstring; returns the exit code to exit with.

    Raises:
        InputError: no command, or ``log`` cannot be written.
    """
    if not argv:
        raise InputError("no command to run: rootrank run [options] -- CMD ARGS...")
    err = err or sys.stderr
    logfh = None
    if log is not None:
        try:
            logfh = open(log, "wb")  # noqa: SIM115 - closed below
        except OSError as exc:
            raise InputError(f"--log {log}: cannot be written ({exc.strerror or exc})") from None
    out_tty, err_tty = os.isatty(1), os.isatty(2)
    master = slave = None
    if out_tty or err_tty:
        import pty

        master, slave = pty.openpty()
        _copy_winsize(1 if out_tty else 2, slave)
    _subreaper()
    try:
        child = subprocess.Popen(  # noqa: S603 - the user's own command
            argv,
            stdout=slave if out_tty else subprocess.PIPE,
            stderr=slave if err_tty else subprocess.PIPE,
            preexec_fn=os.setpgrp,  # noqa: PLW1509 - before any thread of ours starts
            close_fds=True,
        )
    except FileNotFoundError:
        print(f"rootrank: {argv[0]}: command not found", file=err)
        return 127
    except PermissionError:
        print(f"rootrank: {argv[0]}: permission denied", file=err)
        return 126
    finally:
        if slave is not None:
            os.close(slave)
    pgid = child.pid
    with contextlib.suppress(OSError):
        os.setpgid(child.pid, child.pid)

    # The terminal's foreground: the command's group, so the keyboard's signals reach it.
    tty_fd = 0 if os.isatty(0) else None
    restore_pgrp = None
    if tty_fd is not None:
        with contextlib.suppress(OSError):
            if os.tcgetpgrp(tty_fd) == os.getpgrp():
                old = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
                os.tcsetpgrp(tty_fd, pgid)
                signal.signal(signal.SIGTTOU, old)
                restore_pgrp = os.getpgrp()

    received: list[int] = []

    def forward(signum: int, _frame: object) -> None:
        received.append(signum)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL if received.count(signum) >= 3 else signum)

    saved = {s: signal.signal(s, forward) for s in _FORWARDED}
    if master is not None:
        saved[signal.SIGWINCH] = signal.signal(
            signal.SIGWINCH, lambda *_: _copy_winsize(1 if out_tty else 2, master)
        )

    last_byte = {1: b"\n", 2: b"\n"}

    def fresh_line() -> None:
        target = 1 if (err_tty and out_tty) else 2  # a shared terminal: the last byte shown
        if last_byte[target] not in (b"\n", b""):
            write_all(2, b"\n")
            last_byte[target] = b"\n"

    reporter = Reporter(err, fmt, color=color, before_text=fresh_line, mask=mask)
    tracker = ProgressTracker(stall)
    scan = LiveScan(tracker, library=library, mask=mask, command=shlex.join(argv))
    src = scan.open(log or "<command output>")
    monitor = Monitor(
        scan, reporter, on_stall=on_stall, job_pid=lambda: child.pid, progress_every=progress_every
    )

    sel = selectors.DefaultSelector()
    streams: dict[int, tuple[int, LineSplitter]] = {}
    if master is not None:
        streams[master] = (1 if out_tty else 2, LineSplitter())
    if child.stdout is not None:
        streams[child.stdout.fileno()] = (1, LineSplitter())
    if child.stderr is not None:
        streams[child.stderr.fileno()] = (2, LineSplitter())
    for fd in streams:
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ)
    writable = {1: True, 2: True}
    exited_at: float | None = None
    # The checks run in their own thread: the passthrough never waits for the scan.
    ticking = threading.Event()
    ticker = threading.Thread(
        target=_tick_until, args=(monitor, ticking, err), name="rootrank-monitor", daemon=True
    )
    ticker.start()

    def take(lines: list[bytes], last: bool = False) -> None:
        """Lines to the log and the scan; ``last``: a stream's unfinished last line."""
        if not lines:
            return
        if logfh is not None:
            logfh.write(joined(lines, last))  # pieces of a long line go back as one line
            logfh.flush()
        scan.feed(src, lines)

    try:
        while streams:
            for key, _ in sel.select(TICK):
                fd = key.fd
                target, splitter = streams[fd]
                try:
                    data = os.read(fd, 65536)
                except BlockingIOError:
                    continue
                except OSError as exc:  # EIO: every writer of the terminal is gone
                    if exc.errno != errno.EIO:
                        raise
                    data = b""
                if not data:
                    sel.unregister(fd)
                    del streams[fd]
                    take([r] if (r := splitter.flush()) else [], last=True)
                    continue
                if writable[target]:
                    writable[target] = write_all(target, data)
                    last_byte[target] = data[-1:]
                take(splitter.feed(data))
                frame = splitter.frame()
                if frame:
                    scan.feed_frame(src, frame)
            now = time.time()
            if exited_at is None and child.poll() is not None:
                exited_at = now
            if exited_at is not None and now - exited_at > DRAIN_AFTER_EXIT:
                break
        code = child.wait()
    finally:
        for fd, (_, splitter) in list(streams.items()):
            take([r] if (r := splitter.flush()) else [], last=True)
            sel.unregister(fd)
        sel.close()
        if master is not None:
            os.close(master)
        if logfh is not None:
            logfh.close()
        if restore_pgrp is not None and tty_fd is not None:
            with contextlib.suppress(OSError):
                old = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
                os.tcsetpgrp(tty_fd, restore_pgrp)
                signal.signal(signal.SIGTTOU, old)
    ticking.set()
    ticker.join()
    stop_leftovers(pgid)
    for s, h in saved.items():
        signal.signal(s, h)
    exit_code = 128 - code if code < 0 else code
    diag = scan.finish()
    monitor.wait_dumps()
    interrupted = signal.SIGINT in received or code == -signal.SIGINT or exit_code == 130
    if not interrupted:  # the user's Ctrl-C is no failure to explain
        monitor.final(diag, failed=exit_code != 0, exit_code=exit_code)
    reporter.exit(exit_code)
    return exit_code
