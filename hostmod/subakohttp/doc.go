// Package subakohttp is the subako_http host module of ABI 1: the two
// functions request(ptr, len) and read_response(ptr, len) through which a
// guest sends HTTP, and the network policy that keeps those requests to the
// hosts an embedder allowed and away from every non-public address.
//
// The host module is defined once per wazero.Runtime (Instantiate); each
// instance gets its own state (a Call: the held response, the policy, the
// file access and the write budget) through the context (WithCall).
//
// # Decisions the contract leaves open
//
//   - request with a range outside memory (or a negative length) answers -1
//     and afterwards nothing is held: a response held from before is
//     dropped as well, as "holds nothing" says.
//   - NAT64 (64:ff9b::/96, 64:ff9b:1::/48), 6to4 (2002::/16) and Teredo
//     (2001::/32) addresses are refused whatever IPv4 address they embed:
//     the real destination is chosen by a translator or relay the host does
//     not control. The message names the embedded IPv4 address.
//   - Non-standard IPv4 spellings in URLs (2130706433, 0x7f.1, 0177.0.0.1,
//     127.1) are read the way browsers read them (WHATWG URL), so they are IP
//     literals: allowed only by an exact IP entry, and then still checked as
//     a destination.
//   - An injected credential is sent only on hops with the same scheme, host
//     and port as the request the guest made; after a redirect elsewhere (or
//     a downgrade from https to http) no credential is sent.
//   - A redirect to a scheme other than http/https or to a URL with user
//     information is refused as host_not_allowed.
//   - When a file output fails part way (write_budget, timeout, connection),
//     the file is truncated to zero bytes; it is not removed because the
//     Files seam hands out open files, not names. Bytes already written stay
//     charged to the write budget, as they do for fd_write.
//   - A wildcard *.D whose domain has public-suffix rules below it that a
//     lookup cannot list (s3.amazonaws.com under amazonaws.com) is accepted,
//     and every host it would match whose public suffix is D or below D is
//     refused as host_not_allowed, on every hop; see docs/RATIONALE.md.
//   - Guest header names are checked with case folded and '_' read as '-',
//     the way CGI-style servers read them: X_Api_Key is a credential
//     header when X-Api-Key is injected.
//   - In the query of a URL (the guest's or a redirect's), space, '"', '<',
//     '>' and non-ASCII bytes are percent-encoded, as browsers do; control
//     characters are refused.
//   - File bodies and outputs are opened with O_NONBLOCK and must be
//     regular files (a FIFO, directory or device is bad_path); an existing
//     output is emptied only after that check.
//   - Stats.Requests counts requests written to a connection; a request
//     refused before (allowlist, destination, DNS, refused dial, TLS) does
//     not count.
//   - Connections are not kept alive between requests: every request dials
//     afresh, so every connection is resolved and checked again.
//   - The transport does not ask for compression: the guest receives the
//     bytes the server sent, and sets Accept-Encoding itself if it wants.
package subakohttp
