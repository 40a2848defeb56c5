"""The warm parent's program: preload libraries once, then fork one pytest child per replay.

The program is a string run with ``python -c`` (like the signal trampoline), not a module of
statesnap's: importing any ``statesnap`` module in the warm parent would put ``statesnap`` in
``sys.modules`` before the child's ``-p statesnap``, and pytest would then warn that it cannot
rewrite it, which a fresh process never prints.  For the same reason it imports nothing of
pytest's plugins (see :func:`statesnap.replay.warmpick.preload_names`).

Protocol, over the AF_UNIX socket whose descriptor is ``argv[1]`` (one JSON object a line):

- parent → session, once: ``{"ok": N}`` (N modules preloaded) or ``{"refused": "why"}``
  (then it exits: the session replays cold);
- session → parent: ``{"id": n, "argv": [...], "timeout": s, "secret_env": NAME}`` with two
  descriptors attached (SCM_RIGHTS): the write end of the log pump's pipe and the child's
  secret pipe.  The parent forks at once, whether or not earlier children are still running:
  several replays may be in flight (a runner called from several threads);
- parent → session: ``{"id": n, "exit": returncode, "timed_out": bool, "cpu": seconds}`` once
  child ``n`` is reaped (``cpu``: its user + system time, from ``wait4``).

Each child is the warm parent's own child: the warm parent waits for it and kills its process
group past its timeout (it signals nothing else: only its own forked, unreaped child, checked
with ``waitid(WNOWAIT)`` first).  EOF on the socket (the session went away or was
interrupted) kills every running child's group and ends the parent.

Before the first fork the parent moves everything the preload allocated to the collector's
permanent generation (``gc.freeze``): a child's collections (pytest collects twice at exit)
then walk what the child allocated, not torch's whole import again.  Nothing the tests make
is frozen, and the preload's own garbage is collected first.
"""

from __future__ import annotations

PROGRAM = r'''
import sys, os, _signal
# Only what every interpreter has imported at startup until the preload is done: the child
# must find in sys.modules what the preload put there, not what this program needed.

def fds():
    out = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            out[int(name)] = os.readlink("/proc/self/fd/" + name)
        except OSError:
            pass
    return out

def handlers():
    out = {}
    for sig in _signal.valid_signals():
        try:
            h = _signal.getsignal(sig)
        except (ValueError, OSError):
            continue
        out[int(sig)] = h if h in (_signal.SIG_DFL, _signal.SIG_IGN, None) else "python"
    return out

def children():
    found = []
    for tid in os.listdir("/proc/self/task"):
        try:
            with open("/proc/self/task/%s/children" % tid) as f:
                found += f.read().split()
        except OSError:
            pass
    return found

def check():
    if not os.path.isdir("/proc/self/fd"):
        return "this system has no /proc to check the preload against", 0
    env0, cwd0, fds0, sig0 = dict(os.environ), os.getcwd(), fds(), handlers()
    mask0 = os.umask(0o22); os.umask(mask0)
    loaded = 0
    for name in [n for n in sys.argv[2].split(",") if n]:
        try:
            __import__(name)
            loaded += 1
        except BaseException:
            pass
    threading = sys.modules.get("threading")
    if threading is not None and threading.active_count() > 1:
        return "the preload started a thread", loaded
    if len(os.listdir("/proc/self/task")) > 1:
        # A native thread pool whose library stops it before a fork (OpenBLAS, numpy's and
        # torch's BLAS, registers pthread_atfork for that) is not running when a child is
        # forked: a throwaway fork shows which threads would still be running then.
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        if len(os.listdir("/proc/self/task")) > 1:
            return "the preload started a thread", loaded
    if children():
        return "the preload started a child process", loaded
    torch = sys.modules.get("torch")
    try:
        cuda = bool(torch is not None and torch.cuda.is_initialized())
    except Exception:
        cuda = False
    if cuda:
        return "the preload initialised CUDA", loaded
    new = {fd: what for fd, what in fds().items() if fd not in fds0}
    new = {fd: what for fd, what in new.items() if os.path.exists("/proc/self/fd/%d" % fd)}
    if any(w.startswith("socket:") for w in new.values()):
        return "the preload opened a socket", loaded
    if new:
        return "the preload left files open (%s)" % ", ".join(sorted(new.values())[:3]), loaded
    if dict(os.environ) != env0:
        changed = sorted(set(os.environ.items()) ^ set(env0.items()))
        return "the preload changed the environment (%s)" % changed[0][0], loaded
    if os.getcwd() != cwd0:
        return "the preload changed the working directory", loaded
    if handlers() != sig0:
        return "the preload installed a signal handler", loaded
    mask1 = os.umask(mask0)
    if mask1 != mask0:
        return "the preload changed the umask", loaded
    return None, loaded

sys.stdout.flush(); sys.stderr.flush()
refused, loaded = check()
# The preload's exit finalizers (weakref.finalize, atexit=True): torch registers one per
# operator library.  What they release is the warm parent's (see the child's exit below).
_weakref = sys.modules.get("weakref")
preload_finalizers = list(_weakref.finalize._registry) if _weakref is not None else []
del _weakref
before_mine = set(sys.modules)
import gc, json, select, signal, socket, time
if not refused and "importlib.metadata" in sys.modules:
    # importlib.metadata keeps each sys.path folder's listing (checked against the folder's
    # mtime on every use, as in any process that asks twice): pytest's search for plugins in
    # each child then lists no folder that did not change.  Only where the preload imported
    # importlib.metadata; a module this imports is the program's own (below).
    try:
        list(sys.modules["importlib.metadata"].distributions())
    except Exception:
        pass
#: What this program imported that the preload did not: gone from each child's sys.modules.
mine = set(sys.modules) - before_mine
sock = socket.socket(fileno=int(sys.argv[1]))

def send(obj):
    sock.sendall((json.dumps(obj) + "\n").encode())

if refused:
    send({"refused": refused})
    # No teardown of what the preload built (torch: most of a second): this process has
    # nothing to flush, and the session waits for its exit.
    os._exit(0)
gc.collect()
gc.freeze()
send({"ok": loaded})

def alive(pid):
    # Our own forked child, not yet reaped: only then is its pid (and group) ours to signal.
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None
    except ChildProcessError:
        return False

def kill_group(pid):
    if alive(pid):
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass

def serve():
    buf = b""
    running = {}  # pidfd -> [id, pid, deadline, timed_out]
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLIN)
    while True:
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            req = json.loads(line)
            out_fd, secret_fd = fds_in.pop(0)
            pid = os.fork()
            if pid == 0:
                for pidfd in running:
                    os.close(pidfd)
                return req, out_fd, secret_fd
            os.close(out_fd); os.close(secret_fd)
            pidfd = os.pidfd_open(pid)
            running[pidfd] = [req["id"], pid, time.monotonic() + float(req["timeout"]), False]
            poller.register(pidfd, select.POLLIN)
        now = time.monotonic()
        for job in running.values():
            if not job[3] and job[2] <= now:
                job[3] = True
                kill_group(job[1])
        waits = [job[2] - now for job in running.values() if not job[3]]
        ready = [fd for fd, _ in poller.poll(max(0.0, min(waits)) * 1000.0 if waits else None)]
        for fd in ready:
            if fd == sock.fileno():
                try:
                    data, got, _, _ = socket.recv_fds(sock, 65536, 2)
                except OSError:
                    data, got = b"", []
                if not data:
                    # The session is gone or interrupted: leave no replay running.
                    for job in running.values():
                        kill_group(job[1])
                    for job in running.values():
                        os.waitpid(job[1], 0)
                    return None
                buf += data
                if got:
                    fds_in.append(got)
                continue
            job = running.pop(fd)
            poller.unregister(fd)
            os.close(fd)
            _, status, usage = os.wait4(job[1], 0)
            send({"id": job[0], "exit": os.waitstatus_to_exitcode(status), "timed_out": job[3],
                  "cpu": usage.ru_utime + usage.ru_stime})

fds_in = []
job = serve()
if job is None:
    os._exit(0)  # as above: the session is waiting (or gone); every child is reaped
# The child: a fresh ``python -m pytest`` from here on, in a session of its own.
req, out_fd, secret_fd = job
os.setsid()
sock.close()
for pair in fds_in:  # the descriptors of requests after this child's: another child's
    for fd in pair:
        os.close(fd)
null = os.open(os.devnull, os.O_RDONLY)
os.dup2(null, 0); os.close(null)
os.dup2(out_fd, 1); os.dup2(out_fd, 2); os.close(out_fd)
os.environ[req["secret_env"]] = str(secret_fd)
sys.argv = ["-m", *req["argv"]]
sys.path[0] = os.getcwd()
for name in mine:
    sys.modules.pop(name, None)
del req, out_fd, secret_fd, job, sock, fds_in, json, select, signal, socket, time, gc
import runpy
try:
    runpy.run_module("pytest", run_name="__main__", alter_sys=True)
except SystemExit as exc:
    code = exc.code
else:
    code = 0
# The interpreter's exit as a fresh process's, less the teardown of the modules: freeing what
# the preload built (torch: hundreds of MB) would write every page the fork shares with the
# warm parent, which is most of a warm child's time.  What a test can see of an exit stays:
# non-daemon threads are joined, atexit runs (logging's shutdown included), cyclic garbage is
# collected (its finalizers run), and the standard streams are flushed.  Only finalizers of
# objects that module globals alone keep alive do not run; a printed reproduction is always
# confirmed in a fresh interpreter.
import atexit, gc, threading
threading._shutdown()
# The finalizers the preload registered stay with the warm parent, as its modules do: what
# they release (torch's operator registrations: a quarter of a warm child's CPU; a temporary
# folder a library made at import) was made once, in the parent, and is shared by every
# child.  A child that ran them would undo the parent's state for the children after it
# (a fresh process runs its own, over what it made itself).  Finalizers registered after the
# fork (by the tests, their conftests and plugins) run as in a fresh process.
for _fin in preload_finalizers:
    _fin.atexit = False
atexit._run_exitfuncs()
gc.collect()
if code is None:
    code = 0
elif not isinstance(code, int):
    try:
        sys.stderr.write(str(code) + "\n")
    except Exception:
        pass
    code = 1
for stream in (sys.stdout, sys.stderr):
    try:
        stream.flush()
    except Exception:
        pass
os._exit(code & 0xFF)
'''
