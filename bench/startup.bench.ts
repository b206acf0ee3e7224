// Start time and memory of the built JavaScript against the TypeScript sources through tsx,
// same machine, same run:
//   npm run bench:startup -- [runs=5]
// It builds dist/ first, then prints the medians of `runs` starts of
//  - the CLI (`nahida --help`): `node dist/cli.js` (the image's `nahida`), and through tsx
//    (`node services/cli/bin/nahida.mjs`, what `npx nahida` runs in a clone);
//  - an agent-worker process, from spawn to its "nahida started" line (migrations already
//    applied), and its RSS a second later: `node --enable-source-maps dist/nahida.js` (the
//    image), `node dist/nahida.js`, and `node --import tsx services/launcher/src/main.ts`.
import { execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { promisify } from "node:util";
import { TEST_POSTGRES_URL, TEST_REDIS_URL, clearQueuePrefix, dropDatabase } from "../test/support/infra";
import { REPO_ROOT } from "../test/support/processes";

const [runs = 5] = process.argv.slice(2).map(Number);
const run = promisify(execFile);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

await run(process.execPath, ["--import", "tsx", "scripts/build.ts"], { cwd: REPO_ROOT });

async function timeCli(args: string[]): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await run(process.execPath, [...args, "--help"], { cwd: REPO_ROOT });
    times.push(performance.now() - t0);
  }
  return median(times);
}

const tag = randomBytes(4).toString("hex");
const databaseUrl = new URL(TEST_POSTGRES_URL);
databaseUrl.pathname = `/nahida_bench_startup_${tag}`;
const prefix = `nahida_bench_startup_${tag}`;
const env = { ...process.env, DATABASE_URL: databaseUrl.toString(), REDIS_URL: TEST_REDIS_URL, NAHIDA_QUEUE_PREFIX: prefix, NAHIDA_SERVICES: "agent-worker", LOG_LEVEL: "info" };

/** One start: milliseconds to "nahida started", and the RSS in MiB a second later. */
async function startOnce(args: string[]): Promise<{ ms: number; rssMiB: number }> {
  const t0 = performance.now();
  const child = spawn(process.execPath, args, { cwd: REPO_ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  const ms = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`not started within 60 s:\n${output}`));
    }, 60_000);
    const onData = (d: Buffer) => {
      output += d;
      if (output.includes("nahida started")) {
        clearTimeout(timer);
        resolve(performance.now() - t0);
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`exited ${code} before it started:\n${output}`));
    });
  });
  await new Promise((r) => setTimeout(r, 1_000));
  const status = await readFile(`/proc/${child.pid}/status`, "utf8");
  const rssKiB = Number(/VmRSS:\s+(\d+)/.exec(status)![1]);
  child.kill("SIGTERM");
  await new Promise((r) => child.once("exit", r));
  return { ms, rssMiB: rssKiB / 1024 };
}

async function timeLauncher(args: string[]) {
  const results: { ms: number; rssMiB: number }[] = [];
  for (let i = 0; i < runs; i++) results.push(await startOnce(args));
  return { ms: median(results.map((r) => r.ms)), rssMiB: median(results.map((r) => r.rssMiB)) };
}

try {
  const cliBuilt = await timeCli(["dist/cli.js"]);
  const cliTsx = await timeCli(["services/cli/bin/nahida.mjs"]);
  // The first start creates and migrates the database; it is not measured.
  await startOnce(["dist/nahida.js"]);
  const image = await timeLauncher(["--enable-source-maps", "dist/nahida.js"]);
  const built = await timeLauncher(["dist/nahida.js"]);
  const tsx = await timeLauncher(["--import", "tsx", "services/launcher/src/main.ts"]);
  const row = (name: string, r: { ms: number; rssMiB: number }) => `  ${name.padEnd(52)} ${r.ms.toFixed(0).padStart(6)} ms  ${r.rssMiB.toFixed(1).padStart(6)} MiB`;
  process.stdout.write(
    [
      `Node ${process.version}, medians of ${runs} runs`,
      "CLI, nahida --help:",
      `  node dist/cli.js                                     ${cliBuilt.toFixed(0).padStart(6)} ms`,
      `  node services/cli/bin/nahida.mjs (tsx, npx nahida)   ${cliTsx.toFixed(0).padStart(6)} ms   (${(cliTsx / cliBuilt).toFixed(1)} ×)`,
      "agent-worker, spawn to 'nahida started', RSS 1 s later:",
      row("node --enable-source-maps dist/nahida.js (image)", image),
      row("node dist/nahida.js", built),
      row("node --import tsx services/launcher/src/main.ts", tsx),
      "",
    ].join("\n"),
  );
} finally {
  await clearQueuePrefix(TEST_REDIS_URL, prefix);
  await dropDatabase(databaseUrl.toString());
}
