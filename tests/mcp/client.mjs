// An MCP client built on the official TypeScript SDK, for the end-to-end
// test of `runbox serve` (tests/serve_node_test.go). It starts
// `RUNBOX serve` over stdio, lists the tools, runs a command in the
// foreground, starts one in the background with notify_on_complete, waits
// for the completion notification, and prints one JSON object with what
// it saw.
//
// Usage: node client.mjs /path/to/runbox
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const runbox = process.argv[2];
const transport = new StdioClientTransport({
  command: runbox,
  args: ["serve"],
  env: process.env,
  stderr: "inherit",
});
const client = new Client({ name: "runbox-e2e", version: "1.0.0" });

const notices = [];
const waiters = [];
client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
  notices.push(n.params);
  for (const w of waiters.splice(0)) w();
});

function noticeFor(job, type, ms) {
  const deadline = Date.now() + ms;
  return new Promise((resolve, reject) => {
    const check = () => {
      const found = notices.filter((p) => p.data?.event?.job === job && p.data?.event?.type === type);
      if (found.length > 0) return resolve(found);
      if (Date.now() > deadline) return reject(new Error(`no ${type} notice for ${job}`));
      waiters.push(check);
      setTimeout(check, 100);
    };
    check();
  });
}

await client.connect(transport);
const tools = (await client.listTools()).tools.map((t) => t.name).sort();
const fg = await client.callTool({ name: "terminal", arguments: { command: "cd /tmp && echo hello-from-node" } });
const again = await client.callTool({ name: "terminal", arguments: { command: "pwd" } });
const bg = await client.callTool({
  name: "terminal",
  arguments: { command: "echo bg-output; exit 7", background: true, notify_on_complete: true },
});
const job = bg.structuredContent.session_id;
const completions = await noticeFor(job, "completion", 60000);
const refused = await client.callTool({ name: "terminal", arguments: { command: "rm -rf --no-preserve-root /" } });
await client.close();

console.log(JSON.stringify({
  tools,
  foreground: fg.structuredContent,
  foreground_text: fg.content.map((c) => c.text).join(""),
  pwd: again.structuredContent.output,
  job,
  pid: bg.structuredContent.pid,
  completions,
  refused: { isError: refused.isError, structured: refused.structuredContent },
}));
