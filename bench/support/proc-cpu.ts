import { readFileSync } from "node:fs";
import { execFileSync } from "node:child_process";

/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ). */
export const CLOCK_TICKS_PER_SECOND = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/**
 * CPU time (user + system) a process used so far, in ms, from /proc/<pid>/stat; undefined
 * once it is gone. Threads (libuv's pool, the tsx loader thread) are included.
 */
export function processCpuMs(pid: number): number | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // The command name (field 2) may contain spaces and parentheses; fields count from its ")".
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  return ((utime + stime) * 1000) / CLOCK_TICKS_PER_SECOND;
}

/** The executable a pid runs (`node`, `postgres`), for checking that a pid is what we think. */
export function processName(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/comm`, "utf8").trim();
  } catch {
    return undefined;
  }
}

/**
 * CPU of a changing set of processes (Postgres backends come and go with the pools' idle
 * timeouts): `observe` is called with the current pids now and then, and each pid's first
 * and last seen CPU are kept. A pid first seen after `start` counts from 0, because it
 * started after it; the CPU a backend uses between the last observation and its exit is lost.
 */
export class CpuOfProcessSet {
  private readonly first = new Map<number, number>();
  private readonly last = new Map<number, number>();

  constructor(private readonly startedBefore: Set<number>) {}

  observe(pids: Iterable<number>): void {
    for (const pid of pids) {
      const cpu = processCpuMs(pid);
      if (cpu === undefined) continue;
      if (!this.first.has(pid)) this.first.set(pid, this.startedBefore.has(pid) ? cpu : 0);
      this.last.set(pid, cpu);
    }
  }

  totalMs(): number {
    let sum = 0;
    for (const ms of this.byPid().values()) sum += ms;
    return sum;
  }

  /** Each observed process's CPU over the observation, ms. */
  byPid(): Map<number, number> {
    return new Map([...this.last].map(([pid, last]) => [pid, last - (this.first.get(pid) ?? last)]));
  }
}

/** CPU time all cores spent busy (not idle, not waiting for I/O) since boot, in ms, from /proc/stat. */
export function machineBusyMs(): number {
  const line = readFileSync("/proc/stat", "utf8").split("\n")[0]!;
  const [, ...ticks] = line.trim().split(/\s+/).map(Number);
  // user nice system idle iowait irq softirq steal (guest time is already in user)
  const busy = ticks.slice(0, 8).reduce((sum, t, i) => (i === 3 || i === 4 ? sum : sum + t), 0);
  return (busy * 1000) / CLOCK_TICKS_PER_SECOND;
}
