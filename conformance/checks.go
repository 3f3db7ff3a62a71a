package conformance

// The checks that do not depend on the tool list, in report order.
type staticCheck struct {
	id    string
	item  int
	title string
}

var (
	uploadChecks = []staticCheck{
		{"upload.checks", 1, "a WASI preview 1 command module exporting _start and memory, without threads or exceptions"},
		{"package.manifest", 0, "subako-package.json with \"abi\": 1 beside module.wasm"},
	}
	discoveryChecks = []staticCheck{
		{"discovery.ok", 4, "server/discover and tools/list answered as an upload needs (checklist 4 and 5)"},
		{"discovery.deterministic", 5, "two discoveries list the same tools"},
		{"discovery.time", 0, "discovery finishes within its time limit"},
		{"schema.result_type", 4, "results carry \"resultType\": \"complete\""},
		{"schema.ttl_ms", 4, "server/discover carries ttlMs"},
		{"schema.cache_scope", 4, "server/discover carries cacheScope"},
		{"schema.server_info", 4, "server/discover carries serverInfo"},
		{"tools.name_length", 5, "tool names are at most 64 characters"},
		{"tools.description", 5, "every tool has a description"},
	}
	protocolChecks = []staticCheck{
		{"protocol.eof_exit", 2, "exits with code 0 within 1 s when stdin closes without a request"},
		{"protocol.exit_after_answer", 2, "exits with code 0 within 1 s when stdin closes after an answer"},
		{"protocol.notifications_ignored", 3, "messages without an id are ignored"},
		{"protocol.id_string", 0, "string ids are echoed exactly"},
		{"protocol.id_integer", 0, "integer ids are echoed exactly"},
		{"protocol.id_big_integer", 0, "integer ids beyond 2^53 are echoed exactly"},
		{"protocol.id_unusual", 0, "unusual ids (empty string, 0, negative, escapes) are echoed exactly"},
	}
	lateChecks = []staticCheck{
		{"tools.unknown_tool", 6, "a call of an unknown tool gets an isError result"},
		{"view.renders", 6, "images and resource links render in the model view"},
		{"stdout.only_jsonrpc", 7, "stdout carries only JSON-RPC messages, one per line"},
		{"stderr.logs", 7, "logs go to stderr"},
		{"files.usage", 8, "files under /volume/tmp, /volume/data, /package, /skills"},
		{"http.usage", 9, "HTTP through subako_http"},
		{"resources.memory", 0, "peak memory stays clear of the memory limit"},
		{"resources.time", 0, "calls stay clear of the time limit"},
		{"resources.fuel", 0, "calls stay clear of the fuel budget"},
	}
)

func (r *run) addAll(list []staticCheck) {
	for _, s := range list {
		r.add(s.id, s.item, s.title)
	}
}
