// An independent MCP client (the official TypeScript SDK) against agentry
// serve's /mcp: initialize, list tools, run a scripted agent, list sessions;
// user isolation (bob sees none of alice's sessions, cannot reuse her MCP
// session id) and 401 without a token. Usage: node client.mjs URL HMAC_SECRET
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { createHmac } from "node:crypto";

const [url, secret] = process.argv.slice(2);
if (!url || !secret) {
  console.error("usage: node client.mjs URL HMAC_SECRET");
  process.exit(2);
}

function token(sub) {
  const b64 = (o) => Buffer.from(JSON.stringify(o)).toString("base64url");
  const now = Math.floor(Date.now() / 1000);
  const body = `${b64({ alg: "HS256", typ: "JWT" })}.${b64({ sub, iat: now, exp: now + 600 })}`;
  return `${body}.${createHmac("sha256", secret).update(body).digest("base64url")}`;
}

function check(cond, what) {
  if (!cond) throw new Error(`FAIL: ${what}`);
  console.log(`ok: ${what}`);
}

async function connect(sub) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token(sub)}` } },
  });
  const client = new Client({ name: "agentry-interop", version: "1.0.0" });
  await client.connect(transport);
  return { client, transport };
}

const text = (r) => (r.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("");

const alice = await connect("alice");
check(alice.client.getServerVersion()?.name, "initialize answered with server info");
const { tools } = await alice.client.listTools();
const names = tools.map((t) => t.name).sort();
check(
  JSON.stringify(names) ===
    JSON.stringify(["cancel_run", "continue_run", "get_agentos_config", "get_memories", "get_session_runs", "get_sessions", "run_agent", "run_team", "run_workflow"]),
  `the built-in tools listed (${names.join(", ")})`,
);
const run = await alice.client.callTool({ name: "run_agent", arguments: { agent_id: "echo", message: "hello from node" } });
check(!run.isError && text(run) === "hi from the scripted agent", `run_agent answered (${text(run)})`);
const sessionId = run.structuredContent?.session_id;
check(run.structuredContent?.status === "COMPLETED" && sessionId, "run_agent structured content has status and session_id");
const sessions = await alice.client.callTool({ name: "get_sessions", arguments: {} });
check(sessions.structuredContent?.data?.some((s) => s.session_id === sessionId), "get_sessions lists alice's session");

const bob = await connect("bob");
const bobSessions = await bob.client.callTool({ name: "get_sessions", arguments: { user_id: "alice" } });
check(!bobSessions.isError && bobSessions.structuredContent?.data?.length === 0, "bob sees none of alice's sessions");
const bobRuns = await bob.client.callTool({ name: "get_session_runs", arguments: { session_id: sessionId } });
check(bobRuns.isError, "bob cannot read alice's session runs");

const hijack = await fetch(url, {
  method: "POST",
  headers: {
    Authorization: `Bearer ${token("bob")}`,
    "Mcp-Session-Id": alice.transport.sessionId,
    "Content-Type": "application/json",
    Accept: "application/json, text/event-stream",
    "Mcp-Protocol-Version": alice.transport.protocolVersion ?? "2025-06-18",
  },
  body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/list", params: {} }),
});
check(hijack.status === 404, `bob reusing alice's Mcp-Session-Id is not found, as an unknown one (${hijack.status})`);

const anon = await fetch(url, {
  method: "POST",
  headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
  body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: {} }),
});
check(anon.status === 401, `no token is 401 (${anon.status})`);

await alice.client.close();
await bob.client.close();
console.log("mcp interop: all checks passed");
