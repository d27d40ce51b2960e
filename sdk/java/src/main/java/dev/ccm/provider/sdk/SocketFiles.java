package dev.ccm.provider.sdk;

import java.io.IOException;
import java.net.ConnectException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The socket rules of docs/protocol.md for a JVM, which has no umask: the
 * socket is bound inside a private 0700 directory next to its final path,
 * made 0600 there, and then hard-linked into place (a rename that never
 * replaces an existing file), so no other user can connect to it before it
 * is owner-only, and a file that appeared meanwhile is refused, not replaced.
 */
public final class SocketFiles {
  private SocketFiles() {}

  /** A connect to an existing socket file that neither connects nor fails within this counts as answering (busy, not stale). */
  static final long STALE_PROBE_TIMEOUT_MS = 1000;
  private static final int S_IFMT = 0170000;
  private static final int S_IFSOCK = 0140000;

  /** Whether path is a socket file (not following links). */
  public static boolean isSocket(Path path) throws IOException {
    int mode = (Integer) Files.getAttribute(path, "unix:mode", LinkOption.NOFOLLOW_LINKS);
    return (mode & S_IFMT) == S_IFSOCK;
  }

  /** Whether something accepts connections at path. */
  public static boolean answers(Path path) {
    CompletableFuture<Boolean> f =
        CompletableFuture.supplyAsync(
            () -> {
              try (SocketChannel c = SocketChannel.open(StandardProtocolFamily.UNIX)) {
                c.connect(UnixDomainSocketAddress.of(path));
                return true;
              } catch (ConnectException | NoSuchFileException e) {
                return false;
              } catch (IOException e) {
                return !(e.getMessage() != null && e.getMessage().contains("Connection refused"));
              }
            });
    try {
      return f.get(STALE_PROBE_TIMEOUT_MS, TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      return true;
    } catch (InterruptedException | ExecutionException e) {
      return true;
    }
  }

  /**
   * Makes path ready for bind: absolute, short enough; an existing socket
   * file nothing answers on (left by a crashed process) is removed; a live
   * socket or another file is refused.
   */
  public static void prepare(Path path) throws IOException {
    if (!path.isAbsolute()) throw new IOException("socket path " + path + " is not absolute");
    if (path.toString().getBytes(StandardCharsets.UTF_8).length > Protocol.MAX_UNIX_SOCKET_PATH_BYTES) {
      throw new IOException("socket path " + path + " is longer than " + Protocol.MAX_UNIX_SOCKET_PATH_BYTES + " bytes; use a shorter directory");
    }
    if (!Files.exists(path, LinkOption.NOFOLLOW_LINKS)) return;
    if (!isSocket(path)) throw new IOException(path + " exists and is not a socket; refusing to replace it");
    if (answers(path)) throw new IOException("another process is listening on " + path);
    Files.deleteIfExists(path);
  }

  /** Where to bind before the socket is linked into place: a new 0700 directory next to `path`. */
  public static Path privateBindPath(Path path) throws IOException {
    Path dir = path.getParent().resolve(".ccm" + ProcessHandle.current().pid());
    Files.deleteIfExists(dir.resolve("s"));
    Files.deleteIfExists(dir);
    Files.createDirectory(dir, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
    Path tmp = dir.resolve("s");
    if (tmp.toString().getBytes(StandardCharsets.UTF_8).length > Protocol.MAX_UNIX_SOCKET_PATH_BYTES) {
      Files.deleteIfExists(dir);
      throw new IOException("socket path " + path + " leaves no room for the private bind directory " + dir + "; use a shorter directory");
    }
    return tmp;
  }

  /** After the bind at `tmp`: 0600, then linked to `path` (refused if a file appeared there), then the private directory removed. */
  public static void publish(Path tmp, Path path) throws IOException {
    try {
      Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("rw-------"));
      try {
        Files.createLink(path, tmp);
      } catch (FileAlreadyExistsException e) {
        throw new IOException("a file appeared at " + path + " while binding; refusing to replace it");
      }
    } finally {
      Files.deleteIfExists(tmp);
      Files.deleteIfExists(tmp.getParent());
    }
  }

  /** Removes path if it is a socket; a missing file is fine. */
  public static void remove(Path path) {
    try {
      if (Files.exists(path, LinkOption.NOFOLLOW_LINKS) && isSocket(path)) Files.deleteIfExists(path);
    } catch (IOException | RuntimeException e) {
      // Best effort: the host (exec mode) removes the directory anyway.
    }
  }
}
