// A real MCP client (the official TypeScript SDK) for the tests of
// `subako-runner mcp` (cmd/subako-runner/mcp_test.go). It connects, lists
// every tool page by page, makes the calls it is given, and prints one JSON
// report on stdout; the Go test judges it. It asserts nothing itself.
//
//   node client.mjs stdio COMMAND [ARG...]   spawn the server, talk over stdio
//   node client.mjs http URL                 Streamable HTTP
//
// The calls are the JSON array in $MCP_CALLS: [{"tool", "args", "timeoutMs"}].
// The server's stderr is passed through to this process's stderr.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [mode, ...rest] = process.argv.slice(2);
let transport;
if (mode === "stdio") {
  transport = new StdioClientTransport({ command: rest[0], args: rest.slice(1), stderr: "inherit" });
} else if (mode === "http") {
  transport = new StreamableHTTPClientTransport(new URL(rest[0]));
} else {
  console.error("usage: node client.mjs stdio COMMAND [ARG...] | http URL");
  process.exit(2);
}

const report = { tools: [], pages: 0, calls: [] };
const client = new Client({ name: "subako-runner-ts-test", version: "1.0.0" });
try {
  await client.connect(transport);
  report.protocolVersion = transport.protocolVersion ?? null;
  report.serverVersion = client.getServerVersion();
  report.capabilities = client.getServerCapabilities();
  let cursor;
  do {
    const page = await client.listTools(cursor ? { cursor } : {});
    report.pages++;
    report.tools.push(...page.tools.map((t) => t.name));
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  for (const c of JSON.parse(process.env.MCP_CALLS ?? "[]")) {
    const opts = c.timeoutMs ? { timeout: c.timeoutMs } : undefined;
    try {
      const result = await client.callTool({ name: c.tool, arguments: c.args ?? {} }, undefined, opts);
      report.calls.push({ tool: c.tool, result });
    } catch (e) {
      report.calls.push({ tool: c.tool, error: String(e?.message ?? e), code: e?.code ?? null });
    }
  }
  await client.close();
} catch (e) {
  report.fatal = String(e?.stack ?? e);
}
process.stdout.write(JSON.stringify(report) + "\n");
process.exit(report.fatal ? 1 : 0);
