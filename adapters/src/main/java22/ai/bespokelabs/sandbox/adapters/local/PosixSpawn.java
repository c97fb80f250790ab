package ai.bespokelabs.sandbox.adapters.local;

import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.foreign.AddressLayout;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * {@link SessionSpawner} through glibc's {@code posix_spawn} with {@code POSIX_SPAWN_SETSID}, called through
 * the foreign-function API (final in Java 22; this class is compiled for Java 22 and loaded only there). The
 * child gets the three pipes on 0, 1 and 2, every other descriptor closed ({@code addclosefrom_np}), the
 * working directory ({@code addchdir_np}), an empty signal mask, every signal at its default action and
 * exactly the given environment. The
 * parent's ends are reopened through {@code /proc/self/fd} as Java streams, and a reaper thread per program
 * collects its exit status with {@code waitpid}. The constructor fails when a function is missing (an older
 * glibc, another libc), and the caller then keeps {@code setsid}.
 */
final class PosixSpawn implements SessionSpawner {
  private static final int O_CLOEXEC = 0x80000;
  private static final int O_RDONLY = 0;
  private static final short POSIX_SPAWN_SETSIGDEF = 0x04;
  private static final short POSIX_SPAWN_SETSIGMASK = 0x08;
  private static final short POSIX_SPAWN_SETSID = 0x80;
  private static final int EINTR = 4;
  private static final int ECHILD = 10;
  private static final int F_DUPFD_CLOEXEC = 1030;
  private static final int ENOEXEC = 8;
  private static final int SIGTERM = 15;
  private static final int SIGKILL = 9;
  private static final int SIGSTOP = 19;
  /* glibc's posix_spawn_file_actions_t is 80 bytes, posix_spawnattr_t 336 and sigset_t 128: room to spare */
  private static final long OPAQUE_BYTES = 1024;
  private static final long SIGSET_BYTES = 128;

  private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT;
  private static final AddressLayout PTR = ValueLayout.ADDRESS;
  private static final StructLayout CALL_STATE = Linker.Option.captureStateLayout();
  private static final VarHandle ERRNO = CALL_STATE.varHandle(MemoryLayout.PathElement.groupElement("errno"));

  /*
   * Signals 1-31 but KILL and STOP back to their default action in the child: a gateway started where SIGINT
   * or SIGHUP is ignored (a background job of a script, nohup) would otherwise pass that on, and the API's
   * INT would not reach the program. glibc's sigset_t is an array of 64-bit words, signal n at bit n - 1.
   */
  private static final MemorySegment DEFAULT_SIGNALS = defaultSignals();

  private static MemorySegment defaultSignals() {
    MemorySegment set = Arena.global().allocate(SIGSET_BYTES, 8);
    long bits = 0;
    for (int sig = 1; sig <= 31; sig++) {
      if (sig != SIGKILL && sig != SIGSTOP) {
        bits |= 1L << (sig - 1);
      }
    }
    set.set(ValueLayout.JAVA_LONG, 0, bits);
    return set;
  }

  private static final ExecutorService REAPERS =
      Executors.newCachedThreadPool(Thread.ofPlatform().daemon().name("process-reaper-", 0).factory());

  private final MethodHandle pipe2;
  private final MethodHandle close;
  private final MethodHandle kill;
  private final MethodHandle waitpid;
  private final MethodHandle spawn;
  private final MethodHandle actionsInit;
  private final MethodHandle actionsDestroy;
  private final MethodHandle addDup2;
  private final MethodHandle addCloseFrom;
  private final MethodHandle addChdir;
  private final MethodHandle addOpen;
  private final MethodHandle attrInit;
  private final MethodHandle attrDestroy;
  private final MethodHandle attrFlags;
  private final MethodHandle attrMask;
  private final MethodHandle attrDefaults;
  private final MethodHandle dupAbove;

  PosixSpawn() {
    Linker linker = Linker.nativeLinker();
    SymbolLookup libc = linker.defaultLookup();
    pipe2 = handle(linker, libc, "pipe2", FunctionDescriptor.of(INT, PTR, INT));
    close = handle(linker, libc, "close", FunctionDescriptor.of(INT, INT));
    kill = handle(linker, libc, "kill", FunctionDescriptor.of(INT, INT, INT));
    waitpid = linker.downcallHandle(libc.find("waitpid").orElseThrow(() -> new UnsatisfiedLinkError("waitpid")),
        FunctionDescriptor.of(INT, INT, PTR, INT), Linker.Option.captureCallState("errno"));
    spawn = handle(linker, libc, "posix_spawn", FunctionDescriptor.of(INT, PTR, PTR, PTR, PTR, PTR, PTR));
    actionsInit = handle(linker, libc, "posix_spawn_file_actions_init", FunctionDescriptor.of(INT, PTR));
    actionsDestroy = handle(linker, libc, "posix_spawn_file_actions_destroy", FunctionDescriptor.of(INT, PTR));
    addDup2 = handle(linker, libc, "posix_spawn_file_actions_adddup2", FunctionDescriptor.of(INT, PTR, INT, INT));
    addCloseFrom = handle(linker, libc, "posix_spawn_file_actions_addclosefrom_np", FunctionDescriptor.of(INT, PTR, INT));
    addChdir = handle(linker, libc, "posix_spawn_file_actions_addchdir_np", FunctionDescriptor.of(INT, PTR, PTR));
    addOpen = handle(linker, libc, "posix_spawn_file_actions_addopen",
        FunctionDescriptor.of(INT, PTR, INT, PTR, INT, INT));
    attrInit = handle(linker, libc, "posix_spawnattr_init", FunctionDescriptor.of(INT, PTR));
    attrDestroy = handle(linker, libc, "posix_spawnattr_destroy", FunctionDescriptor.of(INT, PTR));
    attrFlags = handle(linker, libc, "posix_spawnattr_setflags", FunctionDescriptor.of(INT, PTR, ValueLayout.JAVA_SHORT));
    attrMask = handle(linker, libc, "posix_spawnattr_setsigmask", FunctionDescriptor.of(INT, PTR, PTR));
    attrDefaults = handle(linker, libc, "posix_spawnattr_setsigdefault", FunctionDescriptor.of(INT, PTR, PTR));
    dupAbove = linker.downcallHandle(libc.find("fcntl").orElseThrow(() -> new UnsatisfiedLinkError("fcntl")),
        FunctionDescriptor.of(INT, INT, INT, INT), Linker.Option.firstVariadicArg(2));
  }

  private static MethodHandle handle(Linker linker, SymbolLookup libc, String name, FunctionDescriptor fd) {
    return linker.downcallHandle(libc.find(name).orElseThrow(() -> new UnsatisfiedLinkError(name)), fd);
  }

  @Override
  public Process start(Path program, List<String> argv, Path cwd, Map<String, String> env, Path descriptor3)
      throws IOException {
    int[] fds = {-1, -1, -1, -1, -1, -1}; // stdin r/w, stdout r/w, stderr r/w
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment pair = arena.allocate(INT, 2);
      for (int i = 0; i < 3; i++) {
        check((int) pipe2.invokeExact(pair, O_CLOEXEC), "pipe2");
        fds[2 * i] = pair.getAtIndex(INT, 0);
        fds[2 * i + 1] = pair.getAtIndex(INT, 1);
      }
      for (int i = 0; i < fds.length; i++) {
        if (fds[i] < 3) { // the gateway runs with a standard stream closed: keep 0-2 free for the child's dup2s
          int moved = (int) dupAbove.invokeExact(fds[i], F_DUPFD_CLOEXEC, 3);
          if (moved < 0) {
            throw new IOException("fcntl(F_DUPFD_CLOEXEC) failed");
          }
          closeQuietly(fds[i]);
          fds[i] = moved;
        }
      }
      MemorySegment actions = arena.allocate(OPAQUE_BYTES, 16);
      MemorySegment attr = arena.allocate(OPAQUE_BYTES, 16);
      check((int) actionsInit.invokeExact(actions), "posix_spawn_file_actions_init");
      check((int) attrInit.invokeExact(attr), "posix_spawnattr_init");
      int pid;
      try {
        check((int) addDup2.invokeExact(actions, fds[0], 0), "adddup2");
        check((int) addDup2.invokeExact(actions, fds[3], 1), "adddup2");
        check((int) addDup2.invokeExact(actions, fds[5], 2), "adddup2");
        if (descriptor3 != null) {
          check((int) addOpen.invokeExact(actions, 3, arena.allocateFrom(descriptor3.toString()), O_RDONLY, 0),
              "addopen");
        }
        check((int) addCloseFrom.invokeExact(actions, descriptor3 == null ? 3 : 4), "addclosefrom_np");
        check((int) addChdir.invokeExact(actions, arena.allocateFrom(cwd.toString())), "addchdir_np");
        check((int) attrFlags.invokeExact(attr,
            (short) (POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)), "setflags");
        check((int) attrMask.invokeExact(attr, arena.allocate(SIGSET_BYTES, 8)), "setsigmask"); // empty set
        check((int) attrDefaults.invokeExact(attr, DEFAULT_SIGNALS), "setsigdefault");
        MemorySegment envp = strings(arena, env.entrySet().stream().map(e -> e.getKey() + "=" + e.getValue()).toList());
        MemorySegment pidOut = arena.allocate(INT);
        int rc = (int) spawn.invokeExact(pidOut, arena.allocateFrom(program.toString()), actions, attr,
            strings(arena, argv), envp);
        if (rc == ENOEXEC) { // neither a binary nor a #! script: what execvp does, a shell reads it
          List<String> viaShell = new java.util.ArrayList<>(List.of("/bin/sh", program.toString()));
          viaShell.addAll(argv.subList(1, argv.size()));
          rc = (int) spawn.invokeExact(pidOut, arena.allocateFrom("/bin/sh"), actions, attr, strings(arena, viaShell),
              envp);
        }
        if (rc != 0) {
          throw new IOException("Cannot run program \"" + argv.get(0) + "\": error=" + rc);
        }
        pid = pidOut.get(INT, 0);
      } finally {
        int ignored = (int) actionsDestroy.invokeExact(actions);
        ignored = (int) attrDestroy.invokeExact(attr);
      }
      // the child's ends are still open here, so reopening ours through /proc cannot wait for the other side
      java.util.List<java.io.Closeable> opened = new java.util.ArrayList<>(3);
      try {
        OutputStream stdin = add(opened, new FileOutputStream("/proc/self/fd/" + fds[1]));
        InputStream stdout = add(opened, new FileInputStream("/proc/self/fd/" + fds[2]));
        InputStream stderr = add(opened, new FileInputStream("/proc/self/fd/" + fds[4]));
        return new Child(pid, stdin, stdout, stderr);
      } catch (IOException | RuntimeException e) {
        for (java.io.Closeable c : opened) {
          try {
            c.close();
          } catch (IOException ignored) {
            // already failing
          }
        }
        int ignored = (int) kill.invokeExact(pid, SIGKILL); // nobody could read it: end it and collect it
        REAPERS.execute(() -> reap(pid));
        throw e;
      }
    } catch (IOException | RuntimeException | Error e) {
      throw e;
    } catch (Throwable t) {
      throw new IOException("posix_spawn failed", t);
    } finally {
      for (int fd : fds) {
        if (fd >= 0) {
          closeQuietly(fd);
        }
      }
    }
  }

  @Override
  public void signal(long target, int signal) {
    if (target == 0 || target == -1 || target < Integer.MIN_VALUE || target > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("not a single process or group: " + target);
    }
    try {
      int ignored = (int) kill.invokeExact((int) target, signal);
    } catch (Throwable t) {
      throw new IllegalStateException(t);
    }
  }

  private static <T extends java.io.Closeable> T add(List<java.io.Closeable> opened, T stream) {
    opened.add(stream);
    return stream;
  }

  private static MemorySegment strings(Arena arena, List<String> values) {
    MemorySegment array = arena.allocate(PTR, values.size() + 1);
    for (int i = 0; i < values.size(); i++) {
      array.setAtIndex(PTR, i, arena.allocateFrom(values.get(i)));
    }
    array.setAtIndex(PTR, values.size(), MemorySegment.NULL);
    return array;
  }

  private static void check(int rc, String what) throws IOException {
    if (rc != 0) {
      throw new IOException(what + " failed: " + rc);
    }
  }

  private void closeQuietly(int fd) {
    try {
      int ignored = (int) close.invokeExact(fd);
    } catch (Throwable ignored) {
      // nothing more to do for a descriptor that cannot be closed
    }
  }

  /** The exit status as {@link Process#exitValue()} reports it: the code, or 128 + the signal that ended it. */
  static int exitValue(int status) {
    int signal = status & 0x7f;
    return signal == 0 ? (status >> 8) & 0xff : 0x80 + signal;
  }

  /** Blocks until {@code pid} ended and returns its exit value; retried when a signal interrupts the wait. */
  private int reap(int pid) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment status = arena.allocate(INT);
      MemorySegment state = arena.allocate(CALL_STATE);
      while (true) {
        int rc = (int) waitpid.invokeExact(state, pid, status, 0);
        if (rc == pid) {
          return exitValue(status.get(INT, 0));
        }
        int errno = (int) ERRNO.get(state, 0L);
        if (errno == ECHILD) {
          return 0; // reaped by the system (SIGCHLD ignored): the status is gone, as for the JDK's processes
        }
        if (errno != EINTR) {
          throw new IllegalStateException("waitpid(" + pid + ") failed: errno " + errno);
        }
      }
    } catch (RuntimeException | Error e) {
      throw e;
    } catch (Throwable t) {
      throw new IllegalStateException(t);
    }
  }

  /** A program started by {@link #start}; its exit status is collected by a reaper thread. */
  private final class Child extends Process {
    private final int pid;
    private final OutputStream stdin;
    private final InputStream stdout;
    private final InputStream stderr;
    private final CompletableFuture<Integer> exit;

    Child(int pid, OutputStream stdin, InputStream stdout, InputStream stderr) {
      this.pid = pid;
      this.stdin = stdin;
      this.stdout = stdout;
      this.stderr = stderr;
      this.exit = CompletableFuture.supplyAsync(() -> reap(pid), REAPERS);
    }

    @Override
    public OutputStream getOutputStream() {
      return stdin;
    }

    @Override
    public InputStream getInputStream() {
      return stdout;
    }

    @Override
    public InputStream getErrorStream() {
      return stderr;
    }

    @Override
    public int waitFor() throws InterruptedException {
      try {
        return exit.get();
      } catch (ExecutionException e) {
        throw new IllegalStateException(e.getCause());
      }
    }

    @Override
    public boolean waitFor(long timeout, TimeUnit unit) throws InterruptedException {
      try {
        exit.get(timeout, unit);
        return true;
      } catch (TimeoutException e) {
        return false;
      } catch (ExecutionException e) {
        throw new IllegalStateException(e.getCause());
      }
    }

    @Override
    public int exitValue() {
      if (!exit.isDone()) {
        throw new IllegalThreadStateException("process hasn't exited");
      }
      return exit.join();
    }

    @Override
    public boolean isAlive() {
      return !exit.isDone();
    }

    @Override
    public long pid() {
      return pid;
    }

    @Override
    public CompletableFuture<Process> onExit() {
      return exit.thenApply(code -> this);
    }

    @Override
    public ProcessHandle toHandle() {
      return ProcessHandle.of(pid).orElseThrow(() -> new IllegalStateException("process " + pid + " is gone"));
    }

    @Override
    public void destroy() {
      signal(SIGTERM);
    }

    @Override
    public Process destroyForcibly() {
      signal(SIGKILL);
      return this;
    }

    /** Signals the program unless it was reaped already (the same best effort as the JDK's own processes). */
    private void signal(int sig) {
      if (exit.isDone()) {
        return;
      }
      try {
        int ignored = (int) kill.invokeExact(pid, sig);
      } catch (Throwable ignored) {
        // the program is ending anyway
      }
    }
  }
}
