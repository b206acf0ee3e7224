// `npm start`: builds dist/ (scripts/build.ts, in a child process: the build needs tsx, the
// program does not), then runs the launcher, dist/nahida.js, in this process. npm's script
// `exec`s this process in the shell's place, so SIGTERM and SIGINT reach it at every moment:
// during the build they stop it and exit 0; once the launcher is loading, they are handed
// to it as soon as it listens for them (it then drains and exits 0, as `node dist/nahida.js`).
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
let building = true;
process.stdout.write("building dist/\n");
const build = spawn(process.execPath, ["--import", "tsx", "scripts/build.ts"], { cwd: root, stdio: "inherit" });

function onSignal(signal) {
  if (building) {
    build.kill(signal);
    process.exit(0);
  }
  // The launcher installs its own handler first thing when its module runs.
  const handOver = () => {
    if (process.listenerCount(signal) > 1) {
      process.off(signal, onSignal);
      process.kill(process.pid, signal);
    } else setTimeout(handOver, 10);
  };
  handOver();
}
process.on("SIGTERM", onSignal);
process.on("SIGINT", onSignal);

const code = await new Promise((resolve) => build.on("exit", (c, s) => resolve(c ?? (s ? 1 : 0))));
if (code !== 0) process.exit(code);
building = false;
await import("../dist/nahida.js");
