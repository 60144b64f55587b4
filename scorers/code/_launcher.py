"""The sandbox's launcher: run as ``python -I -S _launcher.py CONFIG`` by :mod:`scorers.code.sandbox`, it isolates
itself and then runs the program. Standard library only (``-S``: no site-packages); imports nothing of scorers.

CONFIG is JSON: ``argv`` (the program's command), ``env``, ``workdir``, ``namespaces`` (bool), ``network`` (bool:
keep the host's network), ``limits`` (``cpu_s``, ``memory_bytes``, ``file_bytes``, ``processes``), ``report_fd``. The outcome is
written to file descriptor ``report_fd`` (closed before the program runs) as ``exit N``, ``signal N`` or ``sandbox MESSAGE``.

With ``namespaces``: new user, mount, PID, IPC and UTS namespaces (and network, unless ``network``); the user is
mapped to uid/gid 1000 inside, so the program keeps no capability once it execs; every mount is made read-only,
nosuid and nodev, the work directory alone bind-mounted writable; a fresh ``/proc`` (or an empty one) hides the
host's processes. The first process in the PID namespace waits for the program: when it ends, the kernel kills
whatever the program left behind.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import sys
from typing import Any

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 8, 4096, 16384, 1 << 18
MOUNT_ATTR_RDONLY, MOUNT_ATTR_NOSUID, MOUNT_ATTR_NODEV = 1, 2, 4
AT_FDCWD, AT_RECURSIVE, SYS_MOUNT_SETATTR = -100, 0x8000, 442
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS = 1, 38
INSIDE_ID = 1000
#: The lowest pid_max the kernel takes.
PID_MAX_MIN = 301

libc = ctypes.CDLL(None, use_errno=True)


class MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64), ("propagation", ctypes.c_uint64)]
    _fields_ += [("userns_fd", ctypes.c_uint64)]


def check(result: int, what: str) -> None:
    if result != 0:
        raise OSError(ctypes.get_errno(), f"{what}: {os.strerror(ctypes.get_errno())}")


def mount(source: str | None, target: str, fstype: str | None, flags: int) -> None:
    def encode(text: str | None) -> bytes | None:
        return None if text is None else text.encode()

    check(libc.mount(encode(source), encode(target), encode(fstype), ctypes.c_ulong(flags), None), f"mount {target}")


def set_attributes(path: str, flags: int, attr_set: int, attr_clr: int) -> None:
    attr = MountAttr(attr_set, attr_clr, 0, 0)
    call = libc.syscall(SYS_MOUNT_SETATTR, AT_FDCWD, path.encode(), flags, ctypes.byref(attr), ctypes.sizeof(attr))
    check(call, f"mount_setattr {path}")


def write(path: str, text: str) -> None:
    with open(path, "w") as file:
        file.write(text)


def isolate(config: dict[str, Any]) -> None:
    """Enter the namespaces and make the file system read-only but the work directory."""
    uid, gid, workdir = os.getuid(), os.getgid(), config["workdir"]
    flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS
    check(libc.unshare(flags | (0 if config["network"] else CLONE_NEWNET)), "unshare")
    write("/proc/self/setgroups", "deny")
    write("/proc/self/uid_map", f"{INSIDE_ID} {uid} 1")
    write("/proc/self/gid_map", f"{INSIDE_ID} {gid} 1")
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    mount(workdir, workdir, None, MS_BIND)
    set_attributes("/", AT_RECURSIVE, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, 0)
    set_attributes(workdir, 0, 0, MOUNT_ATTR_RDONLY)


def fresh_proc(processes: int) -> None:
    """A /proc of the new PID namespace (read-only), or an empty one where the kernel refuses that. Where the
    kernel keeps pid_max per PID namespace (Linux 6.14+), it is set as low as allowed (301) or to ``processes``:
    the process count's bound where RLIMIT_NPROC does not hold (a user mapped to root outside is exempt)."""
    try:
        mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    except OSError:
        mount("tmpfs", "/proc", "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
        return
    try:
        write("/proc/sys/kernel/pid_max", str(max(processes + 1, PID_MAX_MIN)))
    except OSError:
        pass  # an older kernel: pid_max is the host's
    set_attributes("/proc", 0, MOUNT_ATTR_RDONLY, 0)


def limit(config: dict[str, Any]) -> None:
    limits = config["limits"]
    cpu = max(1, int(-(-limits["cpu_s"] // 1)))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (limits["memory_bytes"], limits["memory_bytes"]))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["file_bytes"], limits["file_bytes"]))
    resource.setrlimit(resource.RLIMIT_NPROC, (limits["processes"], limits["processes"]))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run_program(config: dict[str, Any]) -> None:
    """In the child: the limits, then the program (no capability survives the exec: uid 1000 inside)."""
    os.close(config["report_fd"])
    os.chdir(config["workdir"])
    libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    libc.prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0)
    limit(config)
    os.execve(config["argv"][0], config["argv"], config["env"])


def main() -> None:
    config = json.loads(sys.argv[1])
    report = os.fdopen(config["report_fd"], "w")
    try:
        if config["namespaces"]:
            isolate(config)
        first = os.fork()  # with namespaces: the PID namespace's first process
        if first == 0:
            if config["namespaces"]:
                fresh_proc(config["limits"]["processes"])
            program = os.fork()
            if program == 0:
                try:
                    run_program(config)
                except OSError as exc:
                    sys.stderr.write(f"scorers sandbox: cannot run {config['argv'][0]}: {exc}\n")
                finally:
                    os._exit(127)
            _, status = os.waitpid(program, 0)
            if os.WIFSIGNALED(status):
                report.write(f"signal {os.WTERMSIG(status)}")
            else:
                report.write(f"exit {os.WEXITSTATUS(status)}")
            report.flush()
            os._exit(0)
        os.waitpid(first, 0)
    except OSError as exc:
        report.write(f"sandbox {exc}")
        report.flush()
        sys.exit(125)


if __name__ == "__main__":
    main()
