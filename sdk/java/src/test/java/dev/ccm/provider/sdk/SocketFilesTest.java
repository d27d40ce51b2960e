package dev.ccm.provider.sdk;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The socket rules: a stale socket is replaced, a live one or another file refused, the bound socket published 0600. */
class SocketFilesTest {
  @TempDir Path dir;

  private static ServerSocketChannel listen(Path p) throws IOException {
    ServerSocketChannel s = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
    s.bind(UnixDomainSocketAddress.of(p));
    return s;
  }

  @Test
  void aStaleSocketIsRemovedALiveOneAndAFileAreRefused() throws Exception {
    Path stale = dir.resolve("stale.sock");
    listen(stale).close(); // closed: the file stays, nothing answers
    assertTrue(Files.exists(stale));
    SocketFiles.prepare(stale);
    assertFalse(Files.exists(stale));

    Path live = dir.resolve("live.sock");
    try (ServerSocketChannel s = listen(live)) {
      IOException e = assertThrows(IOException.class, () -> SocketFiles.prepare(live));
      assertTrue(e.getMessage().contains("another process is listening"), e.getMessage());
    }

    Path file = dir.resolve("file.sock");
    Files.writeString(file, "not a socket");
    IOException e = assertThrows(IOException.class, () -> SocketFiles.prepare(file));
    assertTrue(e.getMessage().contains("is not a socket"), e.getMessage());
    assertThrows(IOException.class, () -> SocketFiles.prepare(Path.of("relative.sock")));
  }

  @Test
  void theBoundSocketIsPublishedOwnerOnlyAndNeverReplacesAFile() throws Exception {
    Path target = dir.resolve("provider.sock");
    Path tmp = SocketFiles.privateBindPath(target);
    assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(tmp.getParent())));
    try (ServerSocketChannel s = listen(tmp)) {
      SocketFiles.publish(tmp, target);
      assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(target)));
      assertTrue(SocketFiles.isSocket(target));
      assertTrue(SocketFiles.answers(target));
      assertFalse(Files.exists(tmp.getParent()));
    }
    Path taken = dir.resolve("taken.sock");
    Files.writeString(taken, "x");
    Path tmp2 = SocketFiles.privateBindPath(taken);
    try (ServerSocketChannel s = listen(tmp2)) {
      assertThrows(IOException.class, () -> SocketFiles.publish(tmp2, taken));
      assertEquals("x", Files.readString(taken));
    }
  }
}
