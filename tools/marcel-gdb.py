# marcel-gdb.py: gdb commands to look at marcel's user-level threads (ULTs).
#
# gdb only knows the kernel threads (the carriers that run the VPs); the ULTs that are
# blocked, ready or not started yet live in marcel's own descriptors. These commands list
# them and show where each one is:
#
#   marcel threads [-bt] [-full] [-all] [-nowhere]
#   info marcel-threads [same options]
#       One line per thread: number, descriptor address, state, VP it last ran on,
#       priority, name and where it is (the first frame outside the marcel library),
#       then the VP table (which thread each worker runs, and its gdb thread).
#       -bt     also print the backtrace of every thread
#       -full   backtraces with local variables (bt full)
#       -all    also list each worker's scheduling context (the idle loop)
#       -nowhere  skip the location column (faster with thousands of threads)
#   marcel bt [-full] [-all] [THREAD...]
#       Backtraces of the given threads (number from `marcel threads`, descriptor
#       address, or name), or of all of them.
#   marcel vps
#       The VP table alone.
#
# Loaded, it also lets marcel's preemption signal (SIG41) through without stopping.
#
# Loading it: `make install` puts it in $(pkgdatadir), e.g.
#   (gdb) source /usr/local/share/marcel/marcel-gdb.py
# or add that line to ~/.gdbinit. From a source tree: `source tools/marcel-gdb.py`.
# To have gdb load it by itself with the library, copy it next to libmarcel as
# libmarcel.so.0.0.0-gdb.py in gdb's auto-load directory (see `show auto-load`).
#
# How it works: the runtime keeps every descriptor ever allocated in ma_rt.task_chunks
# (arrays of struct marcel_task); free ones are skipped. Fields are read by name through
# the library's debug information (build it with -g), so new fields do not break this.
# A thread that is not running has its registers saved on its own stack by the context
# switch (marcel/arch/<cpu>/context.S, or a ucontext_t with --with-context=ucontext). For
# its backtrace, in a live process, the script writes them into the innermost frame of a
# stopped kernel thread, runs `bt`, and writes the real values back (in a `finally`, so an
# error or a Ctrl-C restores them too); nothing in the process is changed once the
# command returns. In a core file, where registers are read-only, a Python unwinder makes
# that innermost frame look as if the thread's saved context had called it, and a frame
# filter hides it. A running thread's backtrace is that of the kernel thread running it:
# the one whose ma_tls_worker is its VP, or whose ma_tls_section_task is the thread (in a
# blocking section), read through libthread_db, else the VP's carrier.

import os
import re

import gdb

MA_TASK_CHUNK_DEFAULT = 64  # marcel/task.c MA_TASK_CHUNK

_STATE_NAMES = ["FREE", "BORN", "READY", "RUNNING", "BLOCKING", "BLOCKED", "DEAD"]
_WORKER_STATE_NAMES = ["busy", "spinning", "sleeping", "waking"]


class MarcelError(Exception):
    pass


_FIELDS = {}


def _has_field(val, name):
    try:
        t = val.type.strip_typedefs()
        key = str(t)
        names = _FIELDS.get(key)
        if names is None:
            names = _FIELDS[key] = frozenset(f.name for f in t.fields())
        return name in names
    except (gdb.error, TypeError):
        return False


def _field(val, name, default=None):
    if _has_field(val, name):
        return val[name]
    return default


def _nested(val, *names):
    """The first of names (dotted paths such as "req.suspend_req") that val has: fields
    move into groups as the descriptor changes."""
    for name in names:
        v = val
        for part in name.split("."):
            v = _field(v, part) if v is not None else None
        if v is not None:
            return v
    return None


def _int(val, default=None):
    if val is None:
        return default
    try:
        return int(val)
    except (gdb.error, ValueError, TypeError):
        return default


def _enum_names(type_name, prefix, fallback):
    """Names of an enum's values, read from the debug info; `fallback` if unavailable."""
    try:
        t = gdb.lookup_type(type_name).strip_typedefs()
        names = {}
        for f in t.fields():
            n = f.name
            if n.startswith(prefix):
                n = n[len(prefix):]
            names[int(f.enumval)] = n
        if names:
            return names
    except (gdb.error, RuntimeError):
        pass
    return dict(enumerate(fallback))


def _lookup_runtime():
    for expr in ("ma_rt", "'ma_rt'"):
        try:
            rt = gdb.parse_and_eval(expr)
            rt.fetch_lazy()
            return rt
        except gdb.error:
            continue
    raise MarcelError("no marcel runtime in this program (symbol ma_rt not found; is libmarcel "
                      "loaded and built with -g?)")


def _task_chunk_size():
    try:
        return int(gdb.parse_and_eval("MA_TASK_CHUNK"))  # only with -g3
    except gdb.error:
        return MA_TASK_CHUNK_DEFAULT


class _KeepSelection(object):
    """Restores the selected thread and frame level on exit."""

    def __enter__(self):
        self.thread = gdb.selected_thread()
        self.level = 0
        try:
            g = gdb.selected_frame()
            while g is not None and g.newer() is not None:
                g = g.newer()
                self.level += 1
        except gdb.error:
            pass
        return self

    def __exit__(self, *exc):
        try:
            if self.thread is not None and self.thread.is_valid():
                self.thread.switch()
                f = gdb.newest_frame()
                for _ in range(self.level):
                    o = f.older()
                    if o is None:
                        break
                    f = o
                f.select()
        except gdb.error:
            pass
        return False


def _kernel_threads():
    """Reads each kernel thread's marcel TLS: {worker address: gdb thread} and
    {task address in a blocking section: gdb thread}. Empty if TLS cannot be read."""
    by_worker, by_section = {}, {}
    inf = gdb.selected_inferior()
    with _KeepSelection():
        for th in inf.threads():
            if not th.is_valid():
                continue
            try:
                th.switch()
            except gdb.error:
                continue
            for var, m in (("ma_tls_worker", by_worker), ("ma_tls_section_task", by_section)):
                try:
                    a = _int(gdb.parse_and_eval(var), 0)
                except (gdb.error, RuntimeError):
                    a = 0
                if a:
                    m[a] = th
    return by_worker, by_section


def _thread_of_pthread():
    """Maps pthread_t values to gdb threads of the current inferior."""
    m = {}
    inf = gdb.selected_inferior()
    for th in inf.threads():
        try:
            h = th.handle()
        except (AttributeError, gdb.error):
            continue
        if h is None:
            continue
        m[int.from_bytes(bytes(h), "little")] = th
    return m


def _main_thread():
    inf = gdb.selected_inferior()
    for th in inf.threads():
        if th.ptid[1] == inf.pid:
            return th
    return None


class Task(object):
    """What the commands need from one descriptor, read once."""

    def __init__(self, val, addr, states):
        self.val = val
        self.addr = addr
        self.state_num = _int(_field(val, "state"), -1)
        self.state = states.get(self.state_num, str(self.state_num))
        try:
            self.name = val["name"].string(errors="replace")
        except (gdb.error, UnicodeDecodeError):
            self.name = "?"
        self.last_vp = _int(_field(val, "last_vp"), -1)
        self.is_main = _int(_field(val, "is_main"), 0)
        self.is_idle = _int(_field(val, "is_idle"), 0)
        e = _field(val, "e")
        self.prio = _int(_field(e, "prio")) if e is not None else None
        self.on_cpu = _int(_field(val, "on_cpu"), 0)
        self.stack_base = _int(_field(val, "stack_base"), 0)
        link = _int(_field(val, "link"), 0)
        self.detached = bool(link & 1)
        self.flags = []
        if self.is_main:
            self.flags.append("main")
        if self.is_idle:
            self.flags.append("idle")
        if self.detached and not self.is_main:
            self.flags.append("detached")
        if any(_int(_nested(val, *f), 0) for f in (("req.suspend_req", "suspend_req"), ("parked",), ("suspended",))):
            self.flags.append("suspended")
        self.in_section = _int(_field(val, "in_section"), 0)
        if self.in_section:
            self.flags.append("in-section")
        self.vp_running = None  # VP whose worker runs it now
        self.kthread = None     # gdb thread running it now (on a VP or in a section)
        self.number = None


class Runtime(object):
    def __init__(self):
        _FIELDS.clear()  # the program may have been rebuilt since the last command
        self.rt = _lookup_runtime()
        if not _int(_field(self.rt, "running"), 1):
            raise MarcelError("the marcel runtime is not running (before marcel_init or after "
                              "marcel_end)")
        self.states = _enum_names("enum ma_task_state", "MA_TASK_", _STATE_NAMES)
        self.wstates = dict((k, v.lower()) for k, v in
                            _enum_names("enum ma_worker_state", "MA_WORKER_",
                                        [s.upper() for s in _WORKER_STATE_NAMES]).items())
        try:
            self.task_type = gdb.lookup_type("struct marcel_task")
        except gdb.error:
            raise MarcelError("no debug information for struct marcel_task (build marcel with -g)")
        self.nb_vps = _int(self.rt["nb_vps"], 0)
        self.workers = self.rt["workers"]
        self.tasks = self._read_tasks()
        self.by_addr = dict((t.addr, t) for t in self.tasks)
        self.vps = self._read_vps()
        # The VPs' scheduling contexts come last, so the threads' numbers do not depend on
        # whether they are shown (-all).
        for v in self.vps:
            idle = v["idle_task"]
            if idle is not None and idle.addr not in self.by_addr:
                self.tasks.append(idle)
                self.by_addr[idle.addr] = idle
        for i, t in enumerate(self.tasks):
            t.number = i + 1

    def shown(self, with_idle):
        return [t for t in self.tasks if with_idle or not t.is_idle]

    def _read_tasks(self):
        chunk = _task_chunk_size()
        nb = _int(self.rt["nb_task_chunks"], 0)
        chunks = self.rt["task_chunks"]
        size = self.task_type.sizeof
        # Read descriptors a few at a time (one memory read each), within gdb's
        # max-value-size (64 KiB by default).
        group = max(1, min(chunk, 60000 // max(1, size)))
        tasks = []
        for i in range(nb):
            p = chunks[i]
            base = _int(p, 0)
            if not base:
                continue
            for g in range(0, chunk, group):
                n = min(group, chunk - g)
                addr = base + g * size
                try:
                    arr = gdb.Value(addr).cast(self.task_type.array(n - 1).pointer()).dereference()
                    arr.fetch_lazy()
                except (gdb.error, gdb.MemoryError) as e:
                    gdb.write("marcel: cannot read descriptors at 0x%x: %s\n" % (addr, e))
                    continue
                for j in range(n):
                    v = arr[j]
                    if _int(_field(v, "state"), 0) == 0:  # FREE: in a pool
                        continue
                    tasks.append(Task(v, addr + j * size, self.states))
        tasks.sort(key=lambda t: (not t.is_main, t.addr))
        return tasks

    def _read_vps(self):
        by_worker, by_section = _kernel_threads()
        handles = None
        workers_addr = _int(self.workers, 0)
        wsize = self.workers.type.target().sizeof
        vps = []
        for v in range(self.nb_vps):
            w = self.workers[v]
            cur = _int(_field(w, "current"), 0)
            idle_addr = int(w["idle"].address) if _has_field(w, "idle") else 0
            idle_task = Task(w["idle"], idle_addr, self.states) if idle_addr else None
            th = by_worker.get(workers_addr + v * wsize)
            if th is None:
                # No TLS (no libthread_db, core file...): the VP's carrier, or its kernel
                # thread in older runtimes.
                kt = None
                carrier = _field(w, "carrier")
                if carrier is not None and _int(carrier, 0):
                    try:
                        c = carrier.dereference()
                        if _int(_field(c, "is_main"), 0):
                            th = _main_thread()
                        else:
                            kt = _int(_field(c, "th"))
                    except gdb.error:
                        pass
                elif _int(_field(w, "has_kthread"), 0):
                    kt = _int(_field(w, "kthread"))
                if kt:
                    if handles is None:
                        handles = _thread_of_pthread()
                    th = handles.get(kt)
            entry = {
                "vp": v,
                "current": cur,
                "idle": cur == idle_addr,
                "idle_task": idle_task,
                "state": self.wstates.get(_int(_field(w, "state"), -1), "?"),
                "gdb_thread": th,
            }
            if _int(_nested(w, "attn.disabled", "disabled"), 0):
                entry["state"] += ",disabled"
            vps.append(entry)
            t = self.by_addr.get(cur)
            if t is None and cur == idle_addr:
                t = idle_task
            if t is not None:
                t.vp_running = v
                t.kthread = th
        for v in vps:
            idle = v["idle_task"]
            if idle is not None and idle.vp_running is None and idle.state == "RUNNING":
                idle.state = "SWITCHED"  # a VP's scheduling context while a thread runs there
        for addr, th in by_section.items():
            t = self.by_addr.get(addr)
            if t is not None and t.vp_running is None:
                t.kthread = th
        return vps

    def find(self, spec):
        """A task by number, address or name."""
        spec = spec.strip()
        try:
            if spec.startswith("0x") or spec.startswith("0X"):
                a = int(spec, 16)
                if a in self.by_addr:
                    return [self.by_addr[a]]
                raise MarcelError("no marcel thread at %s" % spec)
            n = int(spec)
            for t in self.tasks:
                if t.number == n:
                    return [t]
            raise MarcelError("no marcel thread number %d" % n)
        except ValueError:
            pass
        found = [t for t in self.tasks if t.name == spec]
        if not found:
            raise MarcelError("no marcel thread named '%s'" % spec)
        return found


# ---------------------------------------------------------------- saved registers

def _arch_name():
    try:
        return gdb.selected_frame().architecture().name()
    except gdb.error:
        return gdb.selected_inferior().architecture().name()


def _read_words(addr, n):
    mem = gdb.selected_inferior().read_memory(addr, 8 * n)
    b = bytes(mem)
    return [int.from_bytes(b[8 * i:8 * i + 8], "little") for i in range(n)]


def saved_registers(task):
    """Registers the task resumes with, as {gdb register name: value}; None if it has
    none saved (never started, ended, running, or switching right now)."""
    if task.vp_running is not None or task.kthread is not None or task.in_section:
        return None
    if task.state in ("FREE", "DEAD"):
        return None
    if not task.stack_base and not task.is_main and not task.is_idle:
        return None  # not started: no stack, no context yet
    if task.on_cpu:
        return None  # a worker is saving or loading its registers right now
    ctx = _field(task.val, "ctx")
    if ctx is None:
        return None
    arch = _arch_name()
    if _has_field(ctx, "uc"):  # configure --with-context=ucontext
        mc = ctx["uc"]["uc_mcontext"]
        if "x86-64" in arch:
            g = mc["gregs"]
            idx = {"r8": 0, "r9": 1, "r10": 2, "r11": 3, "r12": 4, "r13": 5, "r14": 6, "r15": 7,
                   "rdi": 8, "rsi": 9, "rbp": 10, "rbx": 11, "rdx": 12, "rax": 13, "rcx": 14,
                   "rsp": 15, "rip": 16}
            regs = dict((r, _int(g[i], 0) & 0xffffffffffffffff) for r, i in idx.items())
        elif "aarch64" in arch:
            regs = dict(("x%d" % i, _int(mc["regs"][i], 0)) for i in range(31))
            regs["sp"] = _int(mc["sp"], 0)
            regs["pc"] = _int(mc["pc"], 0)
        else:
            raise MarcelError("unsupported architecture %s" % arch)
        return regs if regs.get("rsp", regs.get("sp")) else None
    sp = _int(_field(ctx, "sp"), 0)
    if not sp:
        return None
    if "x86-64" in arch:
        # marcel/arch/x86_64/ma_arch.h: [mxcsr|fcw] rbp resume-address, then the 128-byte
        # red zone. The switch declares the other registers clobbered: the function
        # containing it saved them in its own frame, where its unwind info finds them.
        w = _read_words(sp, 3)
        return {"rbp": w[1], "rip": w[2], "rsp": sp + 24 + 128}
    if "aarch64" in arch:
        # marcel/arch/aarch64/context.S: x19..x28 x29 x30 d8..d15 fpcr pad (176 bytes)
        w = _read_words(sp, 12)
        regs = dict(("x%d" % (19 + i), w[i]) for i in range(10))
        regs.update({"x29": w[10], "x30": w[11], "pc": w[11], "sp": sp + 176})
        return regs
    raise MarcelError("unsupported architecture %s" % arch)


try:
    from gdb.unwinder import Unwinder as _Unwinder, register_unwinder as _register_unwinder
except ImportError:  # gdb older than 7.10
    _Unwinder = None


class _FrameId(object):
    def __init__(self, sp, pc):
        self.sp = sp
        self.pc = pc


if _Unwinder is not None:
    class _TaskUnwinder(_Unwinder):
        """Where registers cannot be written (core files): while armed, the innermost frame
        of the borrowed kernel thread claims to have been called by the task's saved
        context, so the frames above it are the task's. Does nothing when not armed."""

        def __init__(self):
            super(_TaskUnwinder, self).__init__("marcel-task")
            self.regs = None
            self.at = None  # (sp, pc) of the frame to take over
            self.task_sp = 0

        def __call__(self, pf):
            if self.regs is None:
                return None
            try:
                if hasattr(pf, "level") and pf.level() != 0:
                    return None
                sp = pf.read_register(self.at[0])
                pc = pf.read_register(self.at[1])
                if int(sp) != self.at[2] or int(pc) != self.at[3]:
                    return None
                # gdb refuses a caller whose stack address is below its callee's ("inner":
                # corrupt stack?); the task's stack may lie anywhere, so give the borrowed
                # frame an identity below both stacks.
                low = min(int(sp) & 0xffffffffffffffff, self.task_sp)
                ui = pf.create_unwind_info(_FrameId(gdb.Value(low).cast(sp.type), pc))
                for r, v in self.regs.items():
                    t = pf.read_register(r).type
                    ui.add_saved_register(r, gdb.Value(v).cast(gdb.lookup_type("unsigned long")).cast(t))
                return ui
            except (gdb.error, RuntimeError, ValueError):
                return None

    _TASK_UNWINDER = _TaskUnwinder()
    _register_unwinder(None, _TASK_UNWINDER, replace=True)
else:
    _TASK_UNWINDER = None


class _SkipFrames(object):
    """Frame filter hiding the borrowed thread's own frame from `bt` while the unwinder
    above is armed."""

    def __init__(self):
        self.name = "marcel-task"
        self.priority = 100
        self.enabled = True
        self.skip = 0

    def filter(self, frame_iter):
        if self.skip:
            import itertools
            return itertools.islice(frame_iter, self.skip, None)
        return frame_iter


_SKIP_FILTER = _SkipFrames()
gdb.frame_filters[_SKIP_FILTER.name] = _SKIP_FILTER


class _StoppedThread(_KeepSelection):
    """A stopped kernel thread whose innermost frame temporarily takes a ULT's registers:
    written into it (live process), or made to look like its caller by an unwinder (core
    files, where registers are read-only)."""

    def __enter__(self):
        _KeepSelection.__enter__(self)
        th = self.thread
        if th is None:
            raise MarcelError("the program is not running")
        if not th.is_stopped():
            th = None
            for t in gdb.selected_inferior().threads():
                if t.is_stopped():
                    th = t
                    break
            if th is None:
                raise MarcelError("no stopped thread to borrow (interrupt the program first)")
        self.borrowed = th
        self.writable = None  # unknown until the first try
        return self

    def with_registers(self, regs, fn):
        """Runs fn(skip) with the task's frames in view from frame `skip` on; always
        puts things back."""
        self.borrowed.switch()
        gdb.newest_frame().select()
        if self.writable is not False:
            r = self._with_written(regs, fn)
            if self.writable:
                return r
        if _TASK_UNWINDER is None:
            raise MarcelError("registers are read-only here and this gdb has no Python unwinders")
        return self._with_unwinder(regs, fn)

    def _with_written(self, regs, fn):
        saved = {}
        for r in regs:
            saved[r] = int(gdb.parse_and_eval("$" + r)) & 0xffffffffffffffff
        wrote = False
        try:
            for r, v in _reg_order(regs):
                try:
                    gdb.execute("set var $%s = %d" % (r, _signed(v)), to_string=True)
                except gdb.error:
                    if not wrote and self.writable is None:
                        # Read-only registers (a core file): nothing was changed.
                        self.writable = False
                        return None
                    raise
                wrote = True
            self.writable = True
            return fn(0)
        finally:
            if wrote:
                try:
                    self.borrowed.switch()
                    gdb.newest_frame().select()
                except gdb.error:
                    pass
                for r, v in _reg_order(saved):
                    try:
                        gdb.execute("set var $%s = %d" % (r, _signed(v)), to_string=True)
                    except gdb.error as e:
                        gdb.write("marcel: could not restore $%s (was 0x%x): %s\n" % (r, v, e))

    def _with_unwinder(self, regs, fn):
        f0 = gdb.newest_frame()
        x86 = "rip" in regs
        spn, pcn = ("rsp", "rip") if x86 else ("sp", "pc")
        _TASK_UNWINDER.at = (spn, pcn, int(f0.read_register(spn)) & 0xffffffffffffffff,
                             int(f0.read_register(pcn)) & 0xffffffffffffffff)
        _TASK_UNWINDER.task_sp = regs[spn]
        _TASK_UNWINDER.regs = regs
        gdb.invalidate_cached_frames()
        try:
            return fn(1)
        finally:
            _TASK_UNWINDER.regs = None
            gdb.invalidate_cached_frames()
            try:
                self.borrowed.switch()
                gdb.newest_frame().select()
            except gdb.error:
                pass

    def on_thread(self, th, fn):
        """Runs fn(0) with kernel thread th selected (its innermost frame)."""
        th.switch()
        gdb.newest_frame().select()
        return fn(0)


def _signed(v):
    return v - (1 << 64) if v >= (1 << 63) else v


def _reg_order(regs):
    # The stack pointer first and the pc last: each write resets gdb's frame cache.
    def key(item):
        r = item[0]
        if r in ("rsp", "sp"):
            return 0
        if r in ("rip", "pc"):
            return 2
        return 1
    return sorted(regs.items(), key=key)


def _with_task_frames(task, borrowed, fn):
    """Calls fn() with the task's frames in view: those of the kernel thread running it, or
    its saved registers. Returns (result, None) or (None, why not)."""
    if task.kthread is not None:
        return borrowed.on_thread(task.kthread, fn), None
    if task.vp_running is not None:
        return None, "running on VP %d; its kernel thread is not known to gdb" % task.vp_running
    if task.in_section:
        return None, "in a blocking section; its kernel thread is not known to gdb"
    if task.state == "DEAD":
        return None, "ended, not joined yet"
    if task.state == "BORN" or (not task.stack_base and not task.is_main and not task.is_idle):
        return None, "not started yet"
    regs = saved_registers(task)
    if regs is None:
        return None, "registers not saved yet (switching)"
    return borrowed.with_registers(regs, fn), None


_SYSTEM_LIBS = ("libmarcel", "libc.", "libc-", "libpthread", "ld-linux", "ld64", "libhwloc",
                "libffi", "libasan", "libubsan", "libtsan", "libgcc_s")


def _is_internal(f):
    """Whether a frame belongs to marcel or the system libraries rather than the program."""
    name = f.name()
    try:
        lib = gdb.solib_name(f.pc())
    except (gdb.error, AttributeError):
        lib = None
    if lib is not None:
        return os.path.basename(lib).startswith(_SYSTEM_LIBS)
    if name is None:
        return True
    # In the executable: marcel may be linked in statically (its sources are in marcel/).
    if name.startswith("ma_") or name.startswith("marcel_"):
        try:
            fn = f.function()
            path = fn.symtab.filename if fn is not None and fn.symtab is not None else ""
        except (gdb.error, RuntimeError):
            path = ""
        return "/marcel/" in "/" + path.replace("\\", "/")
    return name.startswith("__") or name in ("clone", "clone3", "start_thread", "_start")


def _frame_desc(f):
    name = f.name() or "??"
    try:
        sal = f.find_sal()
        if sal.symtab is not None and sal.line:
            return "%s (%s:%d)" % (name, os.path.basename(sal.symtab.filename), sal.line)
    except gdb.error:
        pass
    return "%s (0x%x)" % (name, f.pc())


def _where(skip=0):
    """The innermost frame of the program itself, with the marcel call it is in."""
    f = gdb.newest_frame()
    for _ in range(skip):
        f = f.older()
    newest = f
    api = None
    depth = 0
    while f is not None and depth < 64:
        if not _is_internal(f):
            return ("%s <- " % api if api else "") + _frame_desc(f)
        # The call the program made: the outermost marcel frame (an inlined or tail-called
        # public function shows as the internal one it became).
        n = f.name()
        if n is not None and not n.startswith("__"):
            api = n
        try:
            f = f.older()
        except gdb.error:
            break
        depth += 1
    # Only marcel and system frames (a scheduling context): the innermost marcel one.
    f = newest
    depth = 0
    while f is not None and depth < 64:
        n = f.name() or ""
        if n.startswith("ma_") or n.startswith("marcel_"):
            return _frame_desc(f)
        f = f.older()
        depth += 1
    return _frame_desc(newest)


def _backtrace(full, skip=0):
    cmd = "bt full" if full else "bt"
    if not skip:
        return gdb.execute(cmd, to_string=True)
    _SKIP_FILTER.skip = skip
    try:
        out = gdb.execute(cmd, to_string=True)
    finally:
        _SKIP_FILTER.skip = 0

    def renumber(m):
        n = "#%d" % (int(m.group(1)) - skip)
        return n + " " * max(1, len(m.group(0)) - len(n))
    return re.sub(r"(?m)^#(\d+)\s+", renumber, out)


# ---------------------------------------------------------------- commands

def _parse(arg, allowed):
    opts = set()
    rest = []
    for a in gdb.string_to_argv(arg):
        if a.startswith("-") and not a.lstrip("-").isdigit():
            o = a.lstrip("-")
            if o not in allowed:
                raise gdb.GdbError("unknown option -%s (accepted: %s)" %
                                   (o, " ".join("-" + x for x in sorted(allowed))))
            opts.add(o)
        else:
            rest.append(a)
    return opts, rest


def _print_vps(rt):
    gdb.write("%-4s %-10s %-10s %s\n" % ("VP", "worker", "gdb thread", "running"))
    for v in rt.vps:
        th = v["gdb_thread"]
        ths = str(th.num) if th is not None else "-"
        if v["idle"]:
            what = "(idle)"
        else:
            t = rt.by_addr.get(v["current"])
            what = ("%d '%s' (0x%x)" % (t.number, t.name, t.addr)) if t else \
                   ("0x%x" % v["current"] if v["current"] else "-")
        gdb.write("%-4d %-10s %-10s %s\n" % (v["vp"], v["state"], ths, what))


def _list(rt, opts):
    with_where = "nowhere" not in opts
    bt = "bt" in opts or "full" in opts
    tasks = rt.shown("all" in opts)
    gdb.write("marcel: %d VP%s, %d thread%s\n" % (rt.nb_vps, "" if rt.nb_vps == 1 else "s",
                                                   len(tasks), "" if len(tasks) == 1 else "s"))
    hdr = "%-4s %-18s %-9s %-3s %-5s %-20s" % ("#", "task", "state", "VP", "prio", "name")
    if with_where:
        hdr += " where"
    gdb.write(hdr + "\n")
    locs = {}
    if with_where:
        with _StoppedThread() as b:
            for t in tasks:
                try:
                    loc, why = _with_task_frames(t, b, _where)
                except (gdb.error, gdb.MemoryError) as e:
                    loc, why = None, str(e)
                locs[t.addr] = loc if loc is not None else "(%s)" % why
    for t in tasks:
        vp = t.vp_running if t.vp_running is not None else t.last_vp
        prio = "-" if t.prio is None else str(t.prio)
        name = t.name + ("" if not t.flags else " [%s]" % ",".join(t.flags))
        line = "%-4d 0x%-16x %-9s %-3s %-5s %-20s" % (t.number, t.addr, t.state,
                                                     str(vp) if vp >= 0 else "-", prio, name)
        if with_where:
            line += " " + locs.get(t.addr, "")
        gdb.write(line.rstrip() + "\n")
    gdb.write("\n")
    _print_vps(rt)
    if bt:
        _print_bts(rt, tasks, "full" in opts)


def _status(t):
    if t.vp_running is not None:
        s = "RUNNING on VP %d" % t.vp_running
    elif t.in_section:
        s = "%s in a blocking section" % t.state
    else:
        return t.state
    if t.kthread is not None:
        s += ", gdb thread %d" % t.kthread.num
    return s


def _print_bts(rt, tasks, full):
    with _StoppedThread() as b:
        for t in tasks:
            gdb.write("\nmarcel thread %d '%s' (0x%x) %s:\n" % (t.number, t.name, t.addr, _status(t)))
            try:
                out, why = _with_task_frames(t, b, lambda skip: _backtrace(full, skip))
            except (gdb.error, gdb.MemoryError) as e:
                out, why = None, str(e)
            gdb.write(out if out is not None else "  (no backtrace: %s)\n" % why)


class MarcelPrefix(gdb.Command):
    """Commands for marcel user-level threads: marcel threads, marcel bt, marcel vps."""

    def __init__(self):
        super(MarcelPrefix, self).__init__("marcel", gdb.COMMAND_STATUS, gdb.COMPLETE_NONE, True)


class MarcelThreads(gdb.Command):
    """List marcel's user-level threads.
Usage: marcel threads [-bt] [-full] [-all] [-nowhere]
One line per thread (free descriptors are not shown): number, descriptor, state
(BORN, READY, RUNNING, BLOCKING, BLOCKED, DEAD; SWITCHED for a scheduling context
that is not running), VP (where it runs, else where it
last ran), priority, name [flags], and where it is: the first frame outside marcel
and the marcel call it is in. Then which thread each VP runs.
  -bt       also print each thread's backtrace (bt of a running thread is its worker's)
  -full     backtraces with locals (bt full)
  -all      also list the workers' scheduling contexts
  -nowhere  do not compute the where column"""

    def __init__(self, name="marcel threads"):
        super(MarcelThreads, self).__init__(name, gdb.COMMAND_STATUS, gdb.COMPLETE_NONE)

    def invoke(self, arg, from_tty):
        opts, rest = _parse(arg, {"bt", "full", "all", "nowhere"})
        if rest:
            raise gdb.GdbError("marcel threads takes no arguments besides options")
        try:
            _list(Runtime(), opts)
        except MarcelError as e:
            raise gdb.GdbError(str(e))


class MarcelBt(gdb.Command):
    """Backtraces of marcel threads.
Usage: marcel bt [-full] [-all] [THREAD...]
THREAD is a number from `marcel threads`, a descriptor address (0x...) or a name;
without one, every thread (with -all, the VPs' scheduling contexts too). A suspended thread's registers are loaded from its saved
context for the time of the backtrace, then restored."""

    def __init__(self):
        super(MarcelBt, self).__init__("marcel bt", gdb.COMMAND_STACK, gdb.COMPLETE_NONE)

    def invoke(self, arg, from_tty):
        opts, rest = _parse(arg, {"full", "all"})
        try:
            rt = Runtime()
            tasks = []
            for spec in rest:
                tasks.extend(rt.find(spec))
            _print_bts(rt, tasks or rt.shown("all" in opts), "full" in opts)
        except MarcelError as e:
            raise gdb.GdbError(str(e))


class MarcelVps(gdb.Command):
    """Which marcel thread each VP (worker) runs, with the worker's gdb thread.
Usage: marcel vps"""

    def __init__(self):
        super(MarcelVps, self).__init__("marcel vps", gdb.COMMAND_STATUS, gdb.COMPLETE_NONE)

    def invoke(self, arg, from_tty):
        try:
            _print_vps(Runtime())
        except MarcelError as e:
            raise gdb.GdbError(str(e))


MarcelPrefix()
MarcelThreads()
MarcelThreads("info marcel-threads")
MarcelBt()
MarcelVps()

# marcel switches threads out at the end of a time slice with SIGRTMIN+7, signal 41 with
# glibc (README, Preemption): under gdb's defaults each slice would stop the program and
# print the signal. Let it through silently; `handle SIG41 stop print` undoes this.
try:
    gdb.execute("handle SIG41 nostop noprint pass", to_string=True)
except gdb.error:
    pass
