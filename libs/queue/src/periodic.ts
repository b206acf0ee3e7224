export interface Periodic {
  /** Stops the schedule; a run in progress finishes, none starts after. */
  stop(): void;
}

/**
 * Runs `task` every `intervalMs`, never overlapping itself (the next run is scheduled when
 * the previous one ends). Errors go to `onError`; the schedule goes on. Timers are unref'd
 * so a background sweep never keeps a process alive.
 */
export function every(intervalMs: number, task: () => Promise<void>, onError: (error: unknown) => void): Periodic {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(async () => {
      try {
        await task();
      } catch (error) {
        onError(error);
      }
      schedule();
    }, intervalMs);
    timer.unref();
  };
  schedule();
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
