import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";

export const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url));

export interface SpawnedProcess {
  child: ChildProcess;
  pid: number;
  output(): string;
  /** Resolves with the exit code (or signal name). */
  exited: Promise<number | string>;
  kill(signal?: NodeJS.Signals): void;
}

export interface SpawnOptions {
  readyText?: string;
  timeoutMs?: number;
}

/**
 * Starts `node --import tsx <script>` from the repository root and resolves once its
 * stdout contains `readyText`.
 */
export function spawnTsProcess(script: string, env: Record<string, string>, options: SpawnOptions = {}): Promise<SpawnedProcess> {
  return spawnNodeProcess(["--import", "tsx", script], env, options);
}

/** Starts `node <args>` (a built script: `dist/nahida.js`) from the repository root, like {@link spawnTsProcess}. */
export async function spawnNodeProcess(args: string[], env: Record<string, string>, options: SpawnOptions = {}): Promise<SpawnedProcess> {
  const script = args.at(-1)!;
  const readyText = options.readyText ?? "ready";
  const child = spawn(process.execPath, args, {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout!.on("data", (d) => (output += d));
  child.stderr!.on("data", (d) => (output += d));
  const exited = new Promise<number | string>((resolve) =>
    child.on("exit", (code, signal) => resolve(code ?? signal ?? "unknown")),
  );
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      // Never leave a half-started process behind a failed test.
      child.kill("SIGKILL");
      reject(new Error(`${script} not ready in time:\n${output}`));
    }, options.timeoutMs ?? 30_000);
    const onData = () => {
      if (output.includes(readyText)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`${script} exited (${code}) before ready:\n${output}`));
    });
  });
  return {
    child,
    pid: child.pid!,
    output: () => output,
    exited,
    kill: (signal = "SIGTERM") => child.kill(signal),
  };
}
