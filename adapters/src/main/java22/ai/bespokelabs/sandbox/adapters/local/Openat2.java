package ai.bespokelabs.sandbox.adapters.local;

import java.io.IOException;
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

/** {@link BeneathOpener} through the {@code openat2} system call (Linux 5.6+), called with {@code syscall(2)}. */
final class Openat2 implements BeneathOpener {
  private static final long SYS_OPENAT2 = 437; // the same number on x86-64 and arm64
  private static final long O_NONBLOCK = 04000;
  private static final long O_DIRECTORY = 0200000;
  private static final long O_NOFOLLOW = 0400000;
  private static final long O_CLOEXEC = 02000000;
  private static final long O_PATH = 010000000;
  private static final long RESOLVE_NO_MAGICLINKS = 0x02;
  private static final long RESOLVE_NO_SYMLINKS = 0x04;
  private static final long RESOLVE_BENEATH = 0x08;
  private static final int AT_FDCWD = -100;
  private static final StructLayout CALL_STATE = Linker.Option.captureStateLayout();
  private static final VarHandle ERRNO = CALL_STATE.varHandle(MemoryLayout.PathElement.groupElement("errno"));

  private final MethodHandle syscall;
  private final MethodHandle close;
  private final MethodHandle strerror;
  private final MethodHandle readlinkat;

  Openat2() {
    Linker linker = Linker.nativeLinker();
    SymbolLookup libc = linker.defaultLookup();
    syscall = linker.downcallHandle(libc.find("syscall").orElseThrow(() -> new UnsatisfiedLinkError("syscall")),
        FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG,
            ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG),
        Linker.Option.firstVariadicArg(1), Linker.Option.captureCallState("errno"));
    close = linker.downcallHandle(libc.find("close").orElseThrow(() -> new UnsatisfiedLinkError("close")),
        FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
    readlinkat = linker.downcallHandle(libc.find("readlinkat").orElseThrow(() -> new UnsatisfiedLinkError("readlinkat")),
        FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS,
            ValueLayout.JAVA_LONG),
        Linker.Option.captureCallState("errno"));
    strerror = linker.downcallHandle(libc.find("strerror").orElseThrow(() -> new UnsatisfiedLinkError("strerror")),
        FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.JAVA_INT));
  }

  @Override
  public int open(Path dir, String relative) throws IOException {
    return open(dir, relative, O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  }

  /** {@code relative} below {@code dir} opened with {@code flags}, no link followed on the way. */
  private int open(Path dir, String relative, long flags) throws IOException {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment state = arena.allocate(CALL_STATE);
      int dirFd = openat2(arena, state, AT_FDCWD, dir.toString(), O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
      if (dirFd < 0) {
        throw error(state, dir.toString());
      }
      try {
        int fd = openat2(arena, state, dirFd, relative.isEmpty() ? "." : relative, flags,
            RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
        if (fd < 0) {
          throw error(state, relative);
        }
        return fd;
      } finally {
        close(dirFd);
      }
    }
  }

  /** With O_PATH and O_NOFOLLOW, a link at the end is opened itself; readlinkat(fd, "") then reads it. */
  @Override
  public String readLink(Path dir, String relative) throws IOException {
    int fd = open(dir, relative, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment state = arena.allocate(CALL_STATE);
      MemorySegment buf = arena.allocate(4097);
      long n;
      try {
        n = (long) readlinkat.invokeExact(state, fd, arena.allocateFrom(""), buf, 4096L);
      } catch (Throwable t) {
        throw new IllegalStateException("readlinkat could not be called", t);
      }
      if (n < 0) {
        throw error(state, relative);
      }
      return new String(buf.asSlice(0, n).toArray(ValueLayout.JAVA_BYTE), java.nio.charset.StandardCharsets.UTF_8);
    } finally {
      close(fd);
    }
  }

  /** {@code openat2(dirFd, path, {flags, 0, resolve}, 24)} (O_RDONLY is 0). */
  private int openat2(Arena arena, MemorySegment state, int dirFd, String path, long flags, long resolve) {
    MemorySegment how = arena.allocate(24, 8);
    how.set(ValueLayout.JAVA_LONG, 0, flags);
    how.set(ValueLayout.JAVA_LONG, 8, 0L);
    how.set(ValueLayout.JAVA_LONG, 16, resolve);
    try {
      return (int) (long) syscall.invokeExact(state, SYS_OPENAT2, (long) dirFd, arena.allocateFrom(path), how, 24L);
    } catch (Throwable t) {
      throw new IllegalStateException("openat2 could not be called", t);
    }
  }

  private IOException error(MemorySegment state, String path) {
    int errno = (int) ERRNO.get(state, 0L);
    String text;
    try {
      text = ((MemorySegment) strerror.invokeExact(errno)).reinterpret(256).getString(0);
    } catch (Throwable t) {
      text = "errno " + errno;
    }
    return new IOException(path + ": " + text + " (errno " + errno + ")");
  }

  @Override
  public void close(int fd) {
    try {
      int ignored = (int) close.invokeExact(fd);
    } catch (Throwable t) {
      // nothing left to do with it
    }
  }
}
