package conformance

// staticCheck is one check that does not depend on the tool list. Its id
// is written once, here; code reaches the check through its field of
// fixed, so a misspelt check does not compile (a lookup by id string
// would be a nil dereference at run time).
type staticCheck struct {
	field func(*fixed) **Check
	id    string
	item  int
	title string
}

// fixed holds the checks of every run, one field each, filled in by
// addAll in report order. The checks of each tool are added as the tools
// are known (calls.go).
type fixed struct {
	// uploadChecks
	uploadChecks    *Check
	packageManifest *Check
	// discoveryChecks
	discoveryOK            *Check
	discoveryDeterministic *Check
	discoveryTime          *Check
	schemaResultType       *Check
	schemaTTLMs            *Check
	schemaCacheScope       *Check
	schemaServerInfo       *Check
	toolsNameLength        *Check
	toolsDescription       *Check
	toolsSchemaPatterns    *Check
	// protocolChecks
	protocolEofExit              *Check
	protocolExitAfterAnswer      *Check
	protocolNotificationsIgnored *Check
	protocolIDString             *Check
	protocolIDInteger            *Check
	protocolIDSafeInteger        *Check
	protocolIDBigInteger         *Check
	protocolIDLongString         *Check
	protocolIDUnusual            *Check
	// lateChecks
	toolsUnknownTool  *Check
	viewRenders       *Check
	stdoutOnlyJSONRPC *Check
	stderrLogs        *Check
	filesUsage        *Check
	httpUsage         *Check
	resourcesMemory   *Check
	resourcesTime     *Check
	resourcesFuel     *Check
}

var uploadChecks = []staticCheck{
	{func(f *fixed) **Check { return &f.uploadChecks }, "upload.checks", 1, "a WASI preview 1 command module exporting _start and memory, without threads or exceptions"},
	{func(f *fixed) **Check { return &f.packageManifest }, "package.manifest", 0, "subako-package.json with \"abi\": 1 beside module.wasm"},
}

var discoveryChecks = []staticCheck{
	{func(f *fixed) **Check { return &f.discoveryOK }, "discovery.ok", 4, "server/discover and tools/list answered as an upload needs (checklist 4 and 5)"},
	{func(f *fixed) **Check { return &f.discoveryDeterministic }, "discovery.deterministic", 5, "two discoveries list the same tools"},
	{func(f *fixed) **Check { return &f.discoveryTime }, "discovery.time", 0, "discovery finishes within its time limit"},
	{func(f *fixed) **Check { return &f.schemaResultType }, "schema.result_type", 4, "results carry \"resultType\": \"complete\""},
	{func(f *fixed) **Check { return &f.schemaTTLMs }, "schema.ttl_ms", 4, "server/discover carries ttlMs"},
	{func(f *fixed) **Check { return &f.schemaCacheScope }, "schema.cache_scope", 4, "server/discover carries cacheScope"},
	{func(f *fixed) **Check { return &f.schemaServerInfo }, "schema.server_info", 4, "server/discover carries serverInfo"},
	{func(f *fixed) **Check { return &f.toolsNameLength }, "tools.name_length", 5, "tool names are at most 64 characters"},
	{func(f *fixed) **Check { return &f.toolsDescription }, "tools.description", 5, "every tool has a description"},
	{func(f *fixed) **Check { return &f.toolsSchemaPatterns }, "tools.schema_patterns", 5, "schema patterns are regular expressions the host can check"},
}

var protocolChecks = []staticCheck{
	{func(f *fixed) **Check { return &f.protocolEofExit }, "protocol.eof_exit", 2, "exits with code 0 within 1 s when stdin closes without a request"},
	{func(f *fixed) **Check { return &f.protocolExitAfterAnswer }, "protocol.exit_after_answer", 2, "exits with code 0 within 1 s when stdin closes after an answer"},
	{func(f *fixed) **Check { return &f.protocolNotificationsIgnored }, "protocol.notifications_ignored", 3, "messages without an id are ignored"},
	{func(f *fixed) **Check { return &f.protocolIDString }, "protocol.id_string", 0, "string ids are echoed exactly"},
	{func(f *fixed) **Check { return &f.protocolIDInteger }, "protocol.id_integer", 0, "integer ids up to 2^31-1, as the host sends them, are echoed exactly"},
	{func(f *fixed) **Check { return &f.protocolIDSafeInteger }, "protocol.id_safe_integer", 0, "integer ids from 2^52 to 2^53-1 are echoed exactly"},
	{func(f *fixed) **Check { return &f.protocolIDBigInteger }, "protocol.id_big_integer", 0, "integer ids beyond 2^53 are echoed exactly"},
	{func(f *fixed) **Check { return &f.protocolIDLongString }, "protocol.id_long_string", 0, "long string ids (1,000 bytes) are echoed exactly"},
	{func(f *fixed) **Check { return &f.protocolIDUnusual }, "protocol.id_unusual", 0, "unusual ids (empty string, 0, negative, escapes) are echoed exactly"},
}

var lateChecks = []staticCheck{
	{func(f *fixed) **Check { return &f.toolsUnknownTool }, "tools.unknown_tool", 6, "a call of an unknown tool gets an isError result"},
	{func(f *fixed) **Check { return &f.viewRenders }, "view.renders", 6, "images and resource links render in the model view"},
	{func(f *fixed) **Check { return &f.stdoutOnlyJSONRPC }, "stdout.only_jsonrpc", 7, "stdout carries only JSON-RPC messages, one per line"},
	{func(f *fixed) **Check { return &f.stderrLogs }, "stderr.logs", 7, "logs go to stderr"},
	{func(f *fixed) **Check { return &f.filesUsage }, "files.usage", 8, "files under /volume/tmp, /volume/data, /package, /skills"},
	{func(f *fixed) **Check { return &f.httpUsage }, "http.usage", 9, "HTTP through subako_http"},
	{func(f *fixed) **Check { return &f.resourcesMemory }, "resources.memory", 0, "peak memory stays clear of the memory limit"},
	{func(f *fixed) **Check { return &f.resourcesTime }, "resources.time", 0, "calls stay clear of the time limit"},
	{func(f *fixed) **Check { return &f.resourcesFuel }, "resources.fuel", 0, "calls stay clear of the fuel budget"},
}

func (r *run) addAll(list []staticCheck) {
	for _, s := range list {
		*s.field(&r.fixed) = r.add(s.id, s.item, s.title)
	}
}
