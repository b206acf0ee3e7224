import { spawn, type ChildProcess } from "node:child_process";
import { REPO_ROOT } from "../../test/support/processes";

const TAIL_CHARS = 64 * 1024;

export interface ServiceProcess {
  child: ChildProcess;
  pid: number;
  /** The last 64 KiB of stdout and stderr, for diagnostics. */
  tail(): string;
  /** Resolves with the exit code (or signal name). */
  exited: Promise<number | string>;
  /** SIGTERM, then waits for the exit. */
  stop(): Promise<number | string>;
}

/**
 * Starts `node --import tsx <script>` (or `node <script>` for built JavaScript, a `.js`
 * script) from the repository root and resolves once its output
 * contains `readyText`. Unlike test/support/processes.ts it keeps only the tail of the
 * output and stops looking for `readyText` once seen: a bench's services log a line or two
 * per request at `info`, and rescanning everything on each chunk would cost the bench more
 * CPU than the work it measures.
 */
export async function startServiceProcess(
  script: string,
  env: Record<string, string>,
  options: { readyText: string; timeoutMs: number },
): Promise<ServiceProcess> {
  // BENCH_NODE_ARGS (say "--cpu-prof --cpu-prof-dir=/tmp/prof") profiles the services; Node
  // refuses --cpu-prof in NODE_OPTIONS.
  const nodeArgs = process.env.BENCH_NODE_ARGS?.split(" ").filter(Boolean) ?? [];
  const loader = script.endsWith(".ts") ? ["--import", "tsx"] : ["--enable-source-maps"];
  const child = spawn(process.execPath, [...nodeArgs, ...loader, script], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let chunks: string[] = [];
  let kept = 0;
  const tail = () => chunks.join("").slice(-TAIL_CHARS);
  let ready = false;
  let onReady: () => void = () => undefined;
  const onData = (data: Buffer) => {
    const text = data.toString("utf8");
    chunks.push(text);
    kept += text.length;
    if (kept > 2 * TAIL_CHARS) {
      chunks = [tail()];
      kept = chunks[0]!.length;
    }
    if (!ready && tail().includes(options.readyText)) {
      ready = true;
      onReady();
    }
  };
  child.stdout!.on("data", onData);
  child.stderr!.on("data", onData);
  const exited = new Promise<number | string>((resolve) => child.on("exit", (code, signal) => resolve(code ?? signal ?? "unknown")));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${script} not ready in ${options.timeoutMs} ms:\n${tail()}`));
    }, options.timeoutMs);
    onReady = () => {
      clearTimeout(timer);
      resolve();
    };
    void exited.then((code) => {
      clearTimeout(timer);
      if (!ready) reject(new Error(`${script} exited (${code}) before ready:\n${tail()}`));
    });
  });
  return {
    child,
    pid: child.pid!,
    tail,
    exited,
    async stop() {
      child.kill("SIGTERM");
      return exited;
    },
  };
}
