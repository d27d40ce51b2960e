package dev.ccm.provider.sdk;

import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogManager;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * The JSON-line log the host forwards into its own (docs/protocol.md): one
 * object per line on stderr, {"time","level","msg","name",...fields}, level a
 * lowercase label (trace..error). It is a java.util.logging bridge:
 * {@link #install()} replaces the root logger's handlers with {@link JsonHandler}
 * at the level CCM_PLUGIN_LOG_LEVEL asks for, so grpc-java's and Netty's own
 * lines (they log through java.util.logging) come out the same way.
 *
 * <p>Keep msg constant text and put what varies into fields:
 * {@code log.info("instance created", "node", name)}.
 */
public final class Log {
  private final Logger logger;
  private final Map<String, Object> fields;

  private Log(Logger logger, Map<String, Object> fields) {
    this.logger = logger;
    this.fields = fields;
  }

  /** A logger named `name` (the "name" field of its lines). */
  public static Log named(String name) {
    return new Log(Logger.getLogger(name), Map.of());
  }

  /** A logger adding these fields (key, value, key, value, ...) to every line. */
  public Log with(Object... kv) {
    Map<String, Object> m = new LinkedHashMap<>(fields);
    m.putAll(pairs(kv));
    return new Log(logger, m);
  }

  public void trace(String msg, Object... kv) {
    log(Level.FINEST, msg, kv);
  }

  public void debug(String msg, Object... kv) {
    log(Level.FINE, msg, kv);
  }

  public void info(String msg, Object... kv) {
    log(Level.INFO, msg, kv);
  }

  public void warn(String msg, Object... kv) {
    log(Level.WARNING, msg, kv);
  }

  public void error(String msg, Object... kv) {
    log(Level.SEVERE, msg, kv);
  }

  public void log(Level level, String msg, Object... kv) {
    if (!logger.isLoggable(level)) return;
    Map<String, Object> m = new LinkedHashMap<>(fields);
    m.putAll(pairs(kv));
    LogRecord r = new LogRecord(level, msg);
    r.setLoggerName(logger.getName());
    r.setParameters(new Object[] {new Fields(m)});
    logger.log(r);
  }

  private static Map<String, Object> pairs(Object[] kv) {
    Map<String, Object> m = new LinkedHashMap<>();
    for (int i = 0; i + 1 < kv.length; i += 2) m.put(String.valueOf(kv[i]), kv[i + 1]);
    if (kv.length % 2 == 1) m.put("!badkey", kv[kv.length - 1]);
    return m;
  }

  /** The structured fields of a record made by {@link Log} (its only parameter). */
  record Fields(Map<String, Object> map) {}

  /** The java.util.logging level CCM_PLUGIN_LOG_LEVEL asks for; INFO when unset or unknown. */
  public static Level levelFromEnv() {
    String v = System.getenv(Protocol.ENV_LOG_LEVEL);
    return switch (v == null ? "" : v.strip().toLowerCase(Locale.ROOT)) {
      case "trace" -> Level.ALL;
      case "debug" -> Level.FINE;
      case "warn" -> Level.WARNING;
      case "error" -> Level.SEVERE;
      case "silent" -> Level.OFF;
      default -> Level.INFO;
    };
  }

  /** The protocol's label of a java.util.logging level. */
  public static String label(Level level) {
    int v = level.intValue();
    if (v >= Level.SEVERE.intValue()) return "error";
    if (v >= Level.WARNING.intValue()) return "warn";
    if (v >= Level.INFO.intValue()) return "info";
    if (v >= Level.FINE.intValue()) return "debug";
    return "trace";
  }

  private static volatile boolean installed;

  /**
   * Routes every java.util.logging record to one JSON line on stderr at the
   * level of CCM_PLUGIN_LOG_LEVEL (idempotent). ProviderServer.serve calls it.
   */
  public static synchronized void install() {
    if (installed) return;
    installed = true;
    Logger root = LogManager.getLogManager().getLogger("");
    for (Handler h : root.getHandlers()) root.removeHandler(h);
    Level level = levelFromEnv();
    root.setLevel(level);
    JsonHandler h = new JsonHandler(System.err);
    h.setLevel(Level.ALL);
    root.addHandler(h);
    // grpc-java's and Netty's own debug lines (hundreds at start-up) only at trace.
    if (level.intValue() > Level.ALL.intValue() && level.intValue() < Level.INFO.intValue()) {
      for (String name : LIBRARIES) {
        Logger l = Logger.getLogger(name);
        l.setLevel(Level.INFO);
        LIBRARY_LOGGERS.add(l);
      }
    }
  }

  private static final String[] LIBRARIES = {"io.grpc", "io.netty", "io.perfmark"};
  /** Strong references: java.util.logging forgets the level of a logger nobody holds. */
  private static final java.util.List<Logger> LIBRARY_LOGGERS = new java.util.ArrayList<>();

  /** Writes each record as one JSON line. Fields that JSON cannot hold are written as their toString(). */
  public static final class JsonHandler extends Handler {
    private final PrintStream out;

    public JsonHandler(PrintStream out) {
      this.out = out;
    }

    @Override
    public void publish(LogRecord r) {
      if (r == null || !isLoggable(r)) return;
      Map<String, Object> line = new LinkedHashMap<>();
      line.put("time", Instant.ofEpochMilli(r.getMillis()).truncatedTo(ChronoUnit.MILLIS).toString());
      line.put("level", label(r.getLevel()));
      Object[] params = r.getParameters();
      Fields fields = params != null && params.length == 1 && params[0] instanceof Fields f ? f : null;
      String msg;
      if (fields != null) msg = r.getMessage();
      else {
        msg = r.getMessage();
        if (params != null && params.length > 0 && msg != null) {
          try {
            msg = java.text.MessageFormat.format(msg, params);
          } catch (IllegalArgumentException e) {
            // Not a MessageFormat pattern: the raw message.
          }
        }
      }
      line.put("msg", msg == null ? "" : msg);
      line.put("name", r.getLoggerName() == null ? "" : r.getLoggerName());
      if (fields != null) fields.map().forEach(line::putIfAbsent);
      if (r.getThrown() != null) {
        line.putIfAbsent("err", String.valueOf(r.getThrown()));
        StringWriter sw = new StringWriter();
        r.getThrown().printStackTrace(new PrintWriter(sw));
        line.putIfAbsent("stack", sw.toString());
      }
      String json = Json.object(line);
      synchronized (out) {
        out.println(json);
        out.flush();
      }
    }

    @Override
    public void flush() {
      out.flush();
    }

    @Override
    public void close() {
      flush();
    }
  }

  /** The few bits of JSON writing the log needs. */
  static final class Json {
    private Json() {}

    static String object(Map<String, Object> m) {
      StringBuilder b = new StringBuilder("{");
      boolean first = true;
      for (Map.Entry<String, Object> e : m.entrySet()) {
        if (!first) b.append(',');
        first = false;
        string(b, e.getKey());
        b.append(':');
        value(b, e.getValue());
      }
      return b.append('}').toString();
    }

    private static void value(StringBuilder b, Object v) {
      if (v == null) b.append("null");
      else if (v instanceof Boolean || v instanceof Integer || v instanceof Long || v instanceof Short) b.append(v);
      else if (v instanceof Double d && Double.isFinite(d)) b.append(d);
      else string(b, String.valueOf(v));
    }

    static void string(StringBuilder b, String s) {
      b.append('"');
      for (int i = 0; i < s.length(); i++) {
        char c = s.charAt(i);
        switch (c) {
          case '"' -> b.append("\\\"");
          case '\\' -> b.append("\\\\");
          case '\n' -> b.append("\\n");
          case '\r' -> b.append("\\r");
          case '\t' -> b.append("\\t");
          default -> {
            if (c < 0x20 || c == 0x2028 || c == 0x2029) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
          }
        }
      }
      b.append('"');
    }
  }
}
