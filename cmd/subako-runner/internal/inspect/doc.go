// Package inspect is the web face of `subako-runner inspect`: a local page
// on which an operator judging a third-party package, or an author polishing
// their own, sees the package the way Subako does — the upload report, the
// tools and their schemas, a form to call each tool, what the model will read
// (the model view, with images drawn and volume files listed), the crash
// classification with the stderr tail, the cost of each call, and the
// conformance checklist.
//
// A Server is an http.Handler over one package:
//
//	srv, err := inspect.New(ctx, inspect.Config{Runtime: rt, Path: dir})
//	defer srv.Close(ctx)
//	http.Serve(listener, srv)
//	fmt.Println(srv.URL(listener.Addr().String()))
//
// # Notes
//
//   - The server runs code on the machine it listens on, so every request
//     must carry the server's random token (the ?token= of the printed URL,
//     then a same-site cookie, or the X-Subako-Token header), and its Host
//     must be a loopback name or one the Config allows, and an Origin, when
//     sent, must be the page's own: a web page elsewhere cannot drive it,
//     not even through DNS rebinding.
//   - Every asset is embedded in the binary; the page loads nothing from any
//     other origin.
//   - Each call's /volume/tmp is kept (so the page can offer the files the
//     view names) until the call leaves the history or the server closes.
package inspect
