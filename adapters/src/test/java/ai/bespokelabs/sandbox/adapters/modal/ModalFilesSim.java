package ai.bespokelabs.sandbox.adapters.modal;

import ai.bespokelabs.sandbox.adapters.modal.ModalSimulator.Sbx;
import ai.bespokelabs.sandbox.adapters.modal.ModalSimulator.Status;
import com.google.protobuf.ByteString;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.grpc.common.GrpcStatus;
import io.vertx.grpc.server.GrpcServerResponse;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AccessDeniedException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import modal.client.Api;
import modal.client.Api.SystemErrorCode;

/**
 * The simulator's {@code ContainerFilesystemExec} and {@code ContainerFilesystemExecGetOutput}, as Modal's
 * Python client uses them: each operation runs at once and its output (or error, as a {@code SystemErrorMessage})
 * waits for one {@code GetOutput} stream, which sends it in batches and ends with an {@code eof} batch (an error
 * batch ends it instead). Paths, absolute or relative, resolve inside the sandbox's directory; one that leaves it
 * is {@code EACCES}. Malformed requests (no operation, an unknown or closed descriptor, a bad mode, a write over
 * 16 MiB, no timeout) are refused as violations.
 */
final class ModalFilesSim {
  /** Python's file modes, as Modal's client validates them. */
  static final Pattern MODE = Pattern.compile("(?=.*[rwax])(?!.*(.).*\\1)[rwaxb+]{1,4}");
  static final int MAX_WRITE = 16 << 20;
  static final int BATCH = 64 << 10;

  private final ModalSimulator sim;
  private final Map<String, Result> results = new ConcurrentHashMap<>();
  private final Map<String, Open> open = new ConcurrentHashMap<>();

  /** An operation's output or error. */
  record Result(byte[] output, SystemErrorCode error) {}

  /** An open file. */
  record Open(Sbx sandbox, FileChannel channel, boolean readable, boolean writable) {}

  /** A file-system error to answer inside the output. */
  static final class Errno extends RuntimeException {
    final SystemErrorCode code;

    Errno(SystemErrorCode code) {
      super(code.name(), null, false, false);
      this.code = code;
    }
  }

  ModalFilesSim(ModalSimulator sim) {
    this.sim = sim;
  }

  Future<Api.ContainerFilesystemExecResponse> exec(Api.ContainerFilesystemExecRequest r) {
    Sbx s = sim.task(r.getTaskId());
    String execId = sim.id("fe");
    Api.ContainerFilesystemExecResponse.Builder b = Api.ContainerFilesystemExecResponse.newBuilder().setExecId(execId);
    validate(r);
    return sim.vertx().executeBlocking(() -> {
      Result out;
      try {
        out = new Result(run(s, r, b), null);
      } catch (Errno e) {
        out = new Result(new byte[0], e.code);
      }
      results.put(execId, out);
      return b.build();
    });
  }

  private void validate(Api.ContainerFilesystemExecRequest r) {
    switch (r.getFileExecRequestOneofCase()) {
      case FILEEXECREQUESTONEOF_NOT_SET -> throw sim.invalid("ContainerFilesystemExec: no operation");
      case FILE_OPEN_REQUEST -> {
        if (r.getFileOpenRequest().hasFileDescriptor() || !MODE.matcher(r.getFileOpenRequest().getMode()).matches()) {
          throw sim.invalid("ContainerFilesystemExec: open needs a valid mode and no descriptor");
        }
        path(r.getFileOpenRequest().getPath());
      }
      case FILE_READ_REQUEST -> descriptor(r.getFileReadRequest().getFileDescriptor(), true, false);
      case FILE_WRITE_REQUEST -> {
        descriptor(r.getFileWriteRequest().getFileDescriptor(), false, true);
        if (r.getFileWriteRequest().getData().size() > MAX_WRITE) {
          throw sim.invalid("ContainerFilesystemExec: write request payload exceeds 16MB limit");
        }
      }
      case FILE_CLOSE_REQUEST -> descriptor(r.getFileCloseRequest().getFileDescriptor(), false, false);
      case FILE_LS_REQUEST -> path(r.getFileLsRequest().getPath());
      case FILE_MKDIR_REQUEST -> path(r.getFileMkdirRequest().getPath());
      case FILE_RM_REQUEST -> path(r.getFileRmRequest().getPath());
      default -> throw sim.invalid("ContainerFilesystemExec: unexpected operation");
    }
  }

  private void path(String p) {
    if (p.isBlank()) {
      throw sim.invalid("ContainerFilesystemExec: path is required");
    }
  }

  private Open descriptor(String fd, boolean read, boolean write) {
    Open o = open.get(fd);
    if (o == null || read && !o.readable() || write && !o.writable()) {
      throw sim.invalid("ContainerFilesystemExec: unknown, closed or wrongly opened file descriptor");
    }
    return o;
  }

  private static Path resolve(Sbx s, String p) {
    Path target = s.dir.resolve(p.replaceFirst("^/+", "")).normalize();
    if (!target.startsWith(s.dir)) {
      throw new Errno(SystemErrorCode.SYSTEM_ERROR_CODE_ACCES); // outside the container's root
    }
    return target;
  }

  private byte[] run(Sbx s, Api.ContainerFilesystemExecRequest r, Api.ContainerFilesystemExecResponse.Builder b) {
    try {
      switch (r.getFileExecRequestOneofCase()) {
        case FILE_OPEN_REQUEST -> {
          Path p = resolve(s, r.getFileOpenRequest().getPath());
          String mode = r.getFileOpenRequest().getMode();
          if (Files.isDirectory(p)) {
            throw new Errno(SystemErrorCode.SYSTEM_ERROR_CODE_ISDIR);
          }
          Set<StandardOpenOption> opts = new java.util.HashSet<>();
          boolean readable = mode.contains("r") || mode.contains("+");
          boolean writable = !mode.contains("r") || mode.contains("+");
          if (readable) {
            opts.add(StandardOpenOption.READ);
          }
          if (writable) {
            opts.add(StandardOpenOption.WRITE);
          }
          if (mode.contains("w")) {
            opts.addAll(Set.of(StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING));
          } else if (mode.contains("a")) {
            opts.addAll(Set.of(StandardOpenOption.CREATE, StandardOpenOption.APPEND));
          } else if (mode.contains("x")) {
            opts.add(StandardOpenOption.CREATE_NEW);
          }
          String fd = sim.id("fd");
          open.put(fd, new Open(s, FileChannel.open(p, opts), readable, writable));
          b.setFileDescriptor(fd);
          return new byte[0];
        }
        case FILE_READ_REQUEST -> {
          Open o = open.get(r.getFileReadRequest().getFileDescriptor());
          long left = o.channel().size() - o.channel().position();
          int n = (int) Math.max(0, r.getFileReadRequest().hasN() ? Math.min(r.getFileReadRequest().getN(), left)
              : left);
          ByteBuffer buf = ByteBuffer.allocate(n);
          while (buf.hasRemaining() && o.channel().read(buf) > 0) {
            // until n bytes or the end
          }
          return java.util.Arrays.copyOf(buf.array(), buf.position());
        }
        case FILE_WRITE_REQUEST -> {
          Open o = open.get(r.getFileWriteRequest().getFileDescriptor());
          ByteBuffer buf = r.getFileWriteRequest().getData().asReadOnlyByteBuffer();
          while (buf.hasRemaining()) {
            o.channel().write(buf);
          }
          return new byte[0];
        }
        case FILE_CLOSE_REQUEST -> {
          open.remove(r.getFileCloseRequest().getFileDescriptor()).channel().close();
          return new byte[0];
        }
        case FILE_LS_REQUEST -> {
          Path p = resolve(s, r.getFileLsRequest().getPath());
          List<String> names = new ArrayList<>();
          try (Stream<Path> list = Files.list(p)) {
            list.forEach(c -> names.add(c.getFileName().toString()));
          }
          Collections.sort(names);
          return new JsonObject().put("paths", new JsonArray(names)).encode().getBytes();
        }
        case FILE_MKDIR_REQUEST -> {
          Path p = resolve(s, r.getFileMkdirRequest().getPath());
          if (r.getFileMkdirRequest().getMakeParents()) {
            Files.createDirectories(p);
          } else {
            Files.createDirectory(p);
          }
          return new byte[0];
        }
        case FILE_RM_REQUEST -> {
          Path p = resolve(s, r.getFileRmRequest().getPath());
          if (!Files.exists(p, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
            throw new Errno(SystemErrorCode.SYSTEM_ERROR_CODE_NOENT);
          }
          if (r.getFileRmRequest().getRecursive() && Files.isDirectory(p, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
            try (Stream<Path> walk = Files.walk(p)) {
              for (Path q : walk.sorted(Collections.reverseOrder()).toList()) {
                Files.delete(q);
              }
            }
          } else if (Files.isDirectory(p, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
            throw new Errno(SystemErrorCode.SYSTEM_ERROR_CODE_ISDIR); // os.remove of a directory
          } else {
            Files.delete(p);
          }
          return new byte[0];
        }
        default -> throw new IllegalStateException();
      }
    } catch (NoSuchFileException e) {
      throw new Errno(SystemErrorCode.SYSTEM_ERROR_CODE_NOENT);
    } catch (NotDirectoryException e) {
      throw new Errno(SystemErrorCode.SYSTEM_ERROR_CODE_NOTDIR);
    } catch (FileAlreadyExistsException e) {
      throw new Errno(SystemErrorCode.SYSTEM_ERROR_CODE_EXIST);
    } catch (AccessDeniedException e) {
      throw new Errno(SystemErrorCode.SYSTEM_ERROR_CODE_ACCES);
    } catch (DirectoryNotEmptyException e) {
      throw new Errno(SystemErrorCode.SYSTEM_ERROR_CODE_UNSPECIFIED);
    } catch (FileSystemException e) {
      String why = String.valueOf(e.getReason());
      throw new Errno(why.contains("Not a directory") ? SystemErrorCode.SYSTEM_ERROR_CODE_NOTDIR
          : why.contains("Is a directory") ? SystemErrorCode.SYSTEM_ERROR_CODE_ISDIR
          : SystemErrorCode.SYSTEM_ERROR_CODE_IO);
    } catch (IOException e) {
      throw new Errno(SystemErrorCode.SYSTEM_ERROR_CODE_IO);
    }
  }

  /** The operation's output in batches, then {@code eof}; or its error. Each output is read once. */
  void output(Api.ContainerFilesystemExecGetOutputRequest r,
      GrpcServerResponse<Api.ContainerFilesystemExecGetOutputRequest, Api.FilesystemRuntimeOutputBatch> resp) {
    if (!(r.getTimeout() > 0)) {
      throw sim.invalid("ContainerFilesystemExecGetOutput: timeout is required");
    }
    Result res = results.remove(r.getExecId());
    if (res == null) {
      throw new Status(GrpcStatus.NOT_FOUND, "no such exec");
    }
    long index = 0;
    if (res.error() != null) {
      resp.end(Api.FilesystemRuntimeOutputBatch.newBuilder().setBatchIndex(index)
          .setError(Api.SystemErrorMessage.newBuilder().setErrorCode(res.error()).setErrorMessage(res.error().name()))
          .build());
      return;
    }
    for (int at = 0; at < res.output().length; at += BATCH) {
      resp.write(Api.FilesystemRuntimeOutputBatch.newBuilder().setBatchIndex(index++).addOutput(ByteString.copyFrom(
          res.output(), at, Math.min(BATCH, res.output().length - at))).build());
    }
    resp.end(Api.FilesystemRuntimeOutputBatch.newBuilder().setBatchIndex(index).setEof(true).build());
  }
}
