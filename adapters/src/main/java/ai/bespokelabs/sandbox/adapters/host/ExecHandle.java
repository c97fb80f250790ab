package ai.bespokelabs.sandbox.adapters.host;

import ai.bespokelabs.sandbox.core.error.ApiException;

/** Control of a started execution. Methods may block briefly; call them off the event loop. */
public interface ExecHandle {
  /**
   * Writes to the program's stdin.
   *
   * @throws ApiException 409 when stdin was not kept open or is already closed
   */
  void writeStdin(byte[] data);

  /** Closes stdin (the program reads end-of-file); closing twice is harmless. */
  void closeStdin();

  /** Sends {@code TERM}, {@code KILL} or {@code INT} to the program's whole process group. */
  void signal(String signal);
}
