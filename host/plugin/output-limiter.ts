/**
 * Rate limit on the plugin output lines the host logs (stderr, and stdout
 * lines that are not the handshake), so that a plugin printing in a loop
 * cannot flood the host's log: a token bucket shared by both streams of one
 * process. Lines over the limit are dropped and counted; while lines are
 * being dropped, one summary record per interval says how many.
 */
import type { Logger } from '../log.js';

export type PluginStream = 'stdout' | 'stderr';

/** Plugin output lines logged per second, sustained (docs/protocol.md). */
export const PLUGIN_LOG_LINES_PER_SECOND = 100;
/** Plugin output lines logged in a burst above the sustained rate. */
export const PLUGIN_LOG_LINES_BURST = 1000;
/** At most one "lines dropped" summary record per this interval. */
const PLUGIN_LOG_SUMMARY_INTERVAL_MS = 10_000;

export interface OutputLimiterOptions {
  log: Logger;
  /** Told about every dropped line (the host counts them in a metric). */
  onDropped?: (stream: PluginStream) => void;
  linesPerSecond?: number;
  burst?: number;
  summaryIntervalMs?: number;
  /** Monotonic clock in ms; injectable for tests. */
  now?: () => number;
}

export class OutputLimiter {
  private readonly rate: number;
  private readonly burst: number;
  private readonly intervalMs: number;
  private readonly now: () => number;
  private tokens: number;
  private last: number;
  private dropped: Record<PluginStream, number> = { stdout: 0, stderr: 0 };
  private summaryTimer?: NodeJS.Timeout;

  constructor(private readonly opts: OutputLimiterOptions) {
    this.rate = opts.linesPerSecond ?? PLUGIN_LOG_LINES_PER_SECOND;
    this.burst = opts.burst ?? PLUGIN_LOG_LINES_BURST;
    this.intervalMs = opts.summaryIntervalMs ?? PLUGIN_LOG_SUMMARY_INTERVAL_MS;
    this.now = opts.now ?? (() => performance.now());
    this.tokens = this.burst;
    this.last = this.now();
  }

  /** Whether a line from `stream` may be logged now; if not, it is counted as dropped. */
  admit(stream: PluginStream): boolean {
    const now = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.rate);
    this.last = now;
    if (this.tokens >= 1) {
      this.tokens--;
      return true;
    }
    this.dropped[stream]++;
    this.opts.onDropped?.(stream);
    this.summaryTimer ??= setTimeout(() => this.summarize(), this.intervalMs).unref();
    return false;
  }

  /** Logs the summary of lines dropped since the last one (if any) at once; call when the process is gone. */
  close(): void {
    this.summarize();
  }

  private summarize(): void {
    clearTimeout(this.summaryTimer);
    this.summaryTimer = undefined;
    const { stdout, stderr } = this.dropped;
    if (stdout + stderr === 0) return;
    this.dropped = { stdout: 0, stderr: 0 };
    this.opts.log.warn(
      { droppedStdoutLines: stdout, droppedStderrLines: stderr, linesPerSecond: this.rate, burst: this.burst },
      'plugin output lines dropped: the plugin writes more than the host logs',
    );
  }
}
