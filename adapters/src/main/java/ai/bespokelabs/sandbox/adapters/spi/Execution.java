package ai.bespokelabs.sandbox.adapters.spi;

import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;

/** Control of a started program. Called on the adapter's context, in order per execution. */
public interface Execution {

  /** Writes to the program's stdin; completes once the bytes were handed on. Fails 409 when stdin is closed. */
  Future<Void> write(Buffer data);

  /** Closes stdin (the program reads end-of-file); closing twice is harmless. */
  Future<Void> closeStdin();

  /** Sends {@code TERM}, {@code KILL} or {@code INT} to the program's whole process group. */
  Future<Void> signal(String signal);
}
