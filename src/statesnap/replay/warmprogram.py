"""The warm parent's program: preload libraries once, then fork one pytest child per replay.

The program is a string run with ``python -c`` (like the signal trampoline), not a module of
statesnap's: importing any ``statesnap`` module in the warm parent would put ``statesnap`` in
``sys.modules`` before the child's ``-p statesnap``, and pytest would then warn that it cannot
rewrite it, which a fresh process never prints.  For the same reason it imports nothing of
pytest's plugins (see :func:`statesnap.replay.warmpick.preload_names`).

Protocol, over the AF_UNIX socket whose descriptor is ``argv[1]`` (one JSON object a line):

- parent → session, once: ``{"ok": N}`` (N modules preloaded) or ``{"refused": "why"}``
  (then it exits: the session replays cold);
- session → parent: ``{"argv": [...], "timeout": s, "secret_env": NAME}`` with two
  descriptors attached (SCM_RIGHTS): the write end of the log pump's pipe and the child's
  secret pipe;
- parent → session: ``{"exit": returncode, "timed_out": bool}`` once the child is reaped.

The child is the warm parent's own child: the warm parent waits for it and kills its process
group past the timeout (it signals nothing else: only its own forked, unreaped child, checked
with ``waitid(WNOWAIT)`` first).  EOF on the socket (the session went away or was
interrupted) kills the running child's group and ends the parent.
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
before_mine = set(sys.modules)
import json, select, signal, socket, time
#: What this program imported that the preload did not: gone from each child's sys.modules.
mine = set(sys.modules) - before_mine
sock = socket.socket(fileno=int(sys.argv[1]))

def send(obj):
    sock.sendall((json.dumps(obj) + "\n").encode())

if refused:
    send({"refused": refused})
    sys.exit(0)
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
    while True:
        got = []
        while b"\n" not in buf:
            try:
                data, got, _, _ = socket.recv_fds(sock, 65536, 2)
            except OSError:
                data, got = b"", []
            if not data:
                return None
            buf += data
        line, buf = buf.split(b"\n", 1)
        req = json.loads(line)
        out_fd, secret_fd = got
        pid = os.fork()
        if pid == 0:
            return req, out_fd, secret_fd
        os.close(out_fd); os.close(secret_fd)
        deadline = time.monotonic() + float(req["timeout"])
        timed_out = False
        pidfd = os.pidfd_open(pid)
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        poller.register(sock.fileno(), select.POLLIN)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                kill_group(pid)
                break
            ready = [fd for fd, _ in poller.poll(left * 1000.0)]
            if pidfd in ready:
                break
            if sock.fileno() in ready:
                if not sock.recv(65536, socket.MSG_PEEK):
                    # The session is gone or interrupted: leave no replay running.
                    kill_group(pid)
                    os.waitpid(pid, 0)
                    return None
                time.sleep(0.01)
        os.close(pidfd)
        _, status = os.waitpid(pid, 0)
        send({"exit": os.waitstatus_to_exitcode(status), "timed_out": timed_out})

job = serve()
if job is None:
    sys.exit(0)
# The child: a fresh ``python -m pytest`` from here on, in a session of its own.
req, out_fd, secret_fd = job
os.setsid()
sock.close()
null = os.open(os.devnull, os.O_RDONLY)
os.dup2(null, 0); os.close(null)
os.dup2(out_fd, 1); os.dup2(out_fd, 2); os.close(out_fd)
os.environ[req["secret_env"]] = str(secret_fd)
sys.argv = ["-m", *req["argv"]]
sys.path[0] = os.getcwd()
for name in mine:
    sys.modules.pop(name, None)
del req, out_fd, secret_fd, job, sock, json, select, signal, socket, time
import runpy
runpy.run_module("pytest", run_name="__main__", alter_sys=True)
'''
