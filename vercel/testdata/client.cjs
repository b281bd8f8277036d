// Drives the fake Vercel Sandbox API with the official @vercel/sandbox
// client, for officialclient_test.go. Environment: JS_DIR (where the package
// is installed), FAKE_URL, VERCEL_TOKEN, VERCEL_TEAM_ID,
// VERCEL_PROJECT_ID. Prints one JSON object of what it saw.
const path = require("path");
const { createRequire } = require("module");

// Every client the package makes calls the global fetch: point it at
// the fake (and drop the package's own connection pool, which belongs to
// another copy of undici).
const realFetch = globalThis.fetch;
globalThis.fetch = (url, opts = {}) => {
  const { dispatcher, ...rest } = opts;
  return realFetch(String(url).replace("https://vercel.com/api", process.env.FAKE_URL), rest);
};

const { Sandbox } = createRequire(path.join(process.env.JS_DIR, "index.js"))("@vercel/sandbox");

async function main() {
  const creds = { token: process.env.VERCEL_TOKEN, teamId: process.env.VERCEL_TEAM_ID, projectId: process.env.VERCEL_PROJECT_ID };
  const out = {};
  const sb = await Sandbox.create({ ...creds, name: "js-client", runtime: "node22", timeout: 120000, resources: { vcpus: 2 } });
  out.name = sb.name;
  out.status = sb.status;

  const r = await sb.runCommand("sh", ["-c", "echo out; echo err >&2; exit 3"]);
  out.exitCode = r.exitCode;
  out.stdout = await r.stdout();
  out.stderr = await r.stderr();

  await sb.writeFiles([{ path: "dir/f.bin", content: Buffer.from([0x61, 0x00, 0xff, 0x0a]) }]);
  const buf = await sb.readFileToBuffer({ path: "dir/f.bin" });
  out.readBack = buf ? Array.from(buf) : null;
  out.missing = await sb.readFileToBuffer({ path: "dir/none" });

  await sb.mkDir("made");
  out.madeDir = (await sb.runCommand("test", ["-d", "made"])).exitCode;

  const c = await sb.runCommand({ cmd: "sh", args: ["-c", "echo started; exec sleep 30"], detached: true });
  for await (const log of c.logs()) {
    if (log.data.includes("started")) break;
  }
  await c.kill("SIGTERM");
  out.killedExit = (await c.wait()).exitCode;

  const again = await Sandbox.get({ ...creds, name: "js-client" });
  out.gotName = again.name;

  await sb.stop();
  out.stopped = (await Sandbox.get({ ...creds, name: "js-client" })).status;

  try {
    await Sandbox.create({ ...creds, token: "vcp_wrong" });
    out.badToken = "accepted";
  } catch (e) {
    out.badToken = e.message;
  }
  console.log(JSON.stringify(out));
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : e);
  process.exit(1);
});
