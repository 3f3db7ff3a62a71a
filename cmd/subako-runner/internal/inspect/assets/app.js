// subako-runner inspect: one page, no framework, no third-party origin.
// Everything the module or the package sends is untrusted: it reaches the
// DOM only as text nodes or attribute values, never as HTML.
"use strict";

const token = new URLSearchParams(location.search).get("token") || "";

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "text") el.textContent = v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  return append(el, children);
}

// append adds children to el: nodes as they are, arrays flattened, strings
// as text, and null/undefined/false left out.
function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// fill replaces el's children.
function fill(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

async function api(method, path, body) {
  const opts = { method, headers: { "X-Subako-Token": token } };
  if (body !== undefined) {
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body);
  }
  const r = await fetch(path, opts);
  let data = null;
  try { data = await r.json(); } catch (e) { data = null; }
  if (!r.ok) {
    const msg = data && data.error ? `${data.error.code}: ${data.error.message}` : `HTTP ${r.status}`;
    const err = new Error(msg);
    err.data = data;
    throw err;
  }
  return data;
}

function fmtBytes(n) {
  if (n >= 1 << 20) return (n / (1 << 20)).toFixed(1) + " MiB";
  if (n >= 1 << 10) return (n / (1 << 10)).toFixed(1) + " KiB";
  return n + " B";
}

const marks = { pass: "✓", warn: "!", fail: "✗", skip: "–", not_run: "–" };

// ---- tabs -----------------------------------------------------------------

const tabs = Array.from(document.querySelectorAll('[role="tab"]'));
function selectTab(tab) {
  for (const t of tabs) {
    const on = t === tab;
    t.setAttribute("aria-selected", on ? "true" : "false");
    t.tabIndex = on ? 0 : -1;
    document.getElementById(t.getAttribute("aria-controls")).hidden = !on;
  }
  tab.focus();
  if (tab.id === "tab-history") loadHistory();
}
tabs.forEach((t, i) => {
  t.addEventListener("click", () => selectTab(t));
  t.addEventListener("keydown", (e) => {
    if (e.key === "ArrowRight") selectTab(tabs[(i + 1) % tabs.length]);
    if (e.key === "ArrowLeft") selectTab(tabs[(i + tabs.length - 1) % tabs.length]);
  });
});

// ---- package ----------------------------------------------------------------

let pkg = null;
let current = null; // { tool, form }

function renderPackage(p) {
  pkg = p;
  const m = p.manifest || {};
  document.getElementById("pkg-name").textContent = m.name || p.name;
  document.title = `${m.name || p.name} — subako-runner inspect`;
  const st = document.getElementById("pkg-status");
  st.textContent = p.accepted ? "accepted" : "refused at upload";
  st.className = "badge " + (p.accepted ? "ok" : "bad");
  const meta = [];
  if (m.version) meta.push("version " + m.version);
  meta.push(p.path);
  meta.push("module.wasm " + fmtBytes(p.moduleBytes));
  if (p.moduleSha256) meta.push("sha256 " + p.moduleSha256.slice(0, 16) + "…");
  if (m.description) meta.push(m.description);
  document.getElementById("pkg-meta").textContent = meta.join(" · ");

  renderUpload(p);
  const list = document.getElementById("tool-list");
  fill(list);
  for (const t of p.tools) {
    list.append(h("li", {}, h("button", { type: "button", "data-tool": t.name, onclick: () => selectTool(t) },
      t.title || t.name, t.title ? h("small", {}, t.name) : null)));
  }
  const warn = document.getElementById("tool-warnings");
  fill(warn);
  for (const w of p.toolWarnings || []) warn.append(h("p", { class: "status-warn" }, `! ${w.Tool}: ${w.Message}`));
  const detail = document.getElementById("tool-detail");
  if (!p.accepted) {
    fill(detail, h("p", { class: "error" }, "The package was refused at upload, so it has no tools to call. The Upload report tab says why."));
    selectTab(document.getElementById("tab-upload"));
  } else if (p.tools.length) {
    const keep = current && p.tools.find((t) => t.name === current.tool.name);
    selectTool(keep || p.tools[0]);
  }
}

function renderUpload(p) {
  const list = document.getElementById("upload-list");
  fill(list);
  for (const c of p.upload) {
    list.append(h("li", { class: "status-" + c.status, "data-code": c.code },
      h("span", { class: "mark", "aria-hidden": "true" }, marks[c.status] || "?"),
      h("span", { class: "sr-only" }, c.status + ": "),
      c.title, " ", h("code", {}, c.code),
      (c.messages || []).map((msg) => h("div", { class: "detail" }, msg))));
  }
  const crash = document.getElementById("upload-crash");
  fill(crash);
  if (p.crash) crash.append(renderCrash(p.crash, "Discovery crashed"));
  const d = document.getElementById("discovery");
  fill(d);
  if (p.discovery) {
    d.append(h("h3", {}, "Discovery run"), statsTable({
      "pages": p.discovery.pages, "time": p.discovery.durationMs.toFixed(1) + " ms",
      "fuel": p.discovery.fuelUsed.toLocaleString(), "peak memory": fmtBytes(p.discovery.memoryBytes),
      "notifications": p.discovery.notifications,
    }));
    if (p.discovery.stderr) d.append(h("h3", {}, "stderr"), h("pre", {}, p.discovery.stderr));
  }
}

// ---- forms from inputSchema -------------------------------------------------

function schemaType(s) {
  let t = s.type;
  if (Array.isArray(t)) t = t.find((x) => x !== "null") || t[0];
  if (!t && s.properties) t = "object";
  if (!t && s.enum) t = "enum";
  return t;
}

let fieldSeq = 0;

// field returns { el, get, set } for a schema; get() is undefined when the
// user left an optional field empty, so it is left out of the arguments.
function field(schema, name, required) {
  schema = schema || {};
  const id = "f" + ++fieldSeq;
  const t = schemaType(schema);
  const label = (extra) => h("label", { for: id }, name, required ? h("span", { class: "req", title: "required" }, " *") : null, extra);
  const desc = schema.description ? h("span", { class: "desc", id: id + "-d" }, schema.description) : null;
  const described = schema.description ? id + "-d" : undefined;

  if (Array.isArray(schema.enum)) {
    const sel = h("select", { id, "aria-describedby": described, "data-name": name },
      required ? null : h("option", { value: "" }, "—"),
      schema.enum.map((v, i) => h("option", { value: String(i) }, JSON.stringify(v))));
    const el = h("div", { class: "field" }, label(), desc, sel);
    const idx = (v) => schema.enum.findIndex((e) => JSON.stringify(e) === JSON.stringify(v));
    if (schema.default !== undefined && idx(schema.default) >= 0) sel.value = String(idx(schema.default));
    return { el, get: () => (sel.value === "" ? undefined : schema.enum[Number(sel.value)]),
      set: (v) => { const i = idx(v); sel.value = i >= 0 ? String(i) : (required ? "0" : ""); } };
  }
  if (t === "object" && (schema.properties || !name)) {
    schema = Object.assign({ properties: {} }, schema);
    const req = new Set(schema.required || []);
    const kids = Object.entries(schema.properties).map(([k, s]) => [k, field(s, k, req.has(k))]);
    const el = h("fieldset", { "data-name": name }, name ? h("legend", {}, name, required ? h("span", { class: "req" }, " *") : null) : null,
      desc, kids.length ? kids.map(([, f]) => f.el) : h("p", { class: "hint" }, "No arguments."));
    return {
      el,
      get: () => {
        const o = {};
        for (const [k, f] of kids) { const v = f.get(); if (v !== undefined) o[k] = v; }
        return (!required && name && Object.keys(o).length === 0) ? undefined : o;
      },
      set: (v) => { for (const [k, f] of kids) f.set(v && typeof v === "object" ? v[k] : undefined); },
    };
  }
  if (t === "array" && schema.items && !Array.isArray(schema.items)) {
    const items = [];
    const box = h("div", { class: "array" });
    const add = (v) => {
      const f = field(schema.items, `${name}[${items.length}]`, true);
      const row = h("div", { class: "array-item" }, f.el,
        h("button", { type: "button", "aria-label": `remove item of ${name}`, onclick: () => { items.splice(items.indexOf(entry), 1); row.remove(); sync(); } }, "×"));
      const entry = { f, row };
      items.push(entry);
      box.append(row);
      if (v !== undefined) f.set(v);
    };
    const el = h("fieldset", { "data-name": name }, h("legend", {}, name, required ? h("span", { class: "req" }, " *") : null), desc, box,
      h("button", { type: "button", onclick: () => { add(); sync(); } }, `Add ${name} item`));
    return {
      el,
      get: () => (items.length === 0 && !required ? undefined : items.map((e) => e.f.get())),
      set: (v) => { items.splice(0).forEach((e) => e.row.remove()); if (Array.isArray(v)) v.forEach(add); },
    };
  }
  if (t === "boolean") {
    const cb = h("input", { type: "checkbox", id, "aria-describedby": described, "data-name": name });
    let touched = schema.default !== undefined;
    cb.checked = schema.default === true;
    cb.addEventListener("change", () => { touched = true; });
    return { el: h("div", { class: "field" }, h("label", { for: id }, cb, " ", name, required ? h("span", { class: "req" }, " *") : null), desc),
      get: () => (touched || required ? cb.checked : undefined),
      set: (v) => { touched = v !== undefined; cb.checked = v === true; } };
  }
  if (t === "number" || t === "integer") {
    const inp = h("input", { type: "number", id, step: t === "integer" ? "1" : "any", min: schema.minimum, max: schema.maximum, "aria-describedby": described, "data-name": name });
    if (schema.default !== undefined) inp.value = String(schema.default);
    return { el: h("div", { class: "field" }, label(h("span", { class: "desc" }, t)), desc, inp),
      get: () => (inp.value === "" ? undefined : Number(inp.value)),
      set: (v) => { inp.value = typeof v === "number" ? String(v) : ""; } };
  }
  if (t === "string") {
    const inp = h("input", { type: "text", id, placeholder: schema.format || schema.pattern || "", "aria-describedby": described, "data-name": name });
    if (schema.default !== undefined) inp.value = String(schema.default);
    return { el: h("div", { class: "field" }, label(), desc, inp),
      get: () => (inp.value === "" && !required ? undefined : inp.value),
      set: (v) => { inp.value = typeof v === "string" ? v : ""; } };
  }
  // Anything the form cannot draw (oneOf, free objects, tuples): JSON.
  const ta = h("textarea", { id, rows: 3, class: "json", "aria-describedby": described, "data-name": name, placeholder: "JSON value" });
  if (schema.default !== undefined) ta.value = JSON.stringify(schema.default);
  return { el: h("div", { class: "field" }, label(h("span", { class: "desc" }, "JSON")), desc, ta),
    get: () => { if (ta.value.trim() === "") return undefined; try { return JSON.parse(ta.value); } catch (e) { return ta.value; } },
    set: (v) => { ta.value = v === undefined ? "" : JSON.stringify(v); } };
}

let sync = () => {};

function selectTool(t) {
  for (const b of document.querySelectorAll(".tool-list button")) b.setAttribute("aria-current", b.dataset.tool === t.name ? "true" : "false");
  const schema = t.inputSchema || { type: "object" };
  const form = field(schema, "", true);
  const raw = h("textarea", { id: "raw-json", class: "json", spellcheck: "false", "aria-label": "arguments as JSON" });
  const err = h("p", { id: "form-error", class: "error", role: "alert" });
  sync = () => { raw.value = JSON.stringify(form.get() || {}, null, 2); err.textContent = ""; };
  form.el.addEventListener("input", sync);
  form.el.addEventListener("change", sync);
  raw.addEventListener("input", () => {
    try { form.set(JSON.parse(raw.value)); err.textContent = ""; } catch (e) { err.textContent = "JSON: " + e.message; }
  });
  const force = h("input", { type: "checkbox", id: "force" });
  const callBtn = h("button", { type: "button", id: "call", class: "primary", onclick: () => doCall(t.name, raw, err, force.checked) }, "Call");
  const detail = document.getElementById("tool-detail");
  fill(detail, 
    h("h2", {}, t.title && t.title !== t.name ? [t.title, " ", h("code", {}, t.name)] : h("code", {}, t.name)),
    t.description ? h("p", {}, t.description) : null,
    h("div", { class: "editor" },
      h("form", { id: "args-form", "aria-label": `arguments of ${t.name}`, onsubmit: (e) => { e.preventDefault(); callBtn.click(); } }, h("h3", {}, "Arguments"), form.el),
      h("div", {}, h("h3", {}, h("label", { for: "raw-json" }, "JSON")), raw)),
    err,
    h("div", { class: "actions" }, callBtn,
      h("label", { for: "force" }, force, " call even if the arguments do not match the schema")),
    h("details", {}, h("summary", {}, "inputSchema"), h("pre", {}, JSON.stringify(schema, null, 2))),
    t.outputSchema ? h("details", {}, h("summary", {}, "outputSchema"), h("pre", {}, JSON.stringify(t.outputSchema, null, 2))) : null,
    t.annotations ? h("details", {}, h("summary", {}, "annotations"), h("pre", {}, JSON.stringify(t.annotations, null, 2))) : null,
  );
  current = { tool: t, form, raw };
  sync();
}

// ---- calls ----------------------------------------------------------------

async function doCall(tool, raw, err, force) {
  let args;
  try { args = JSON.parse(raw.value || "{}"); } catch (e) { err.textContent = "JSON: " + e.message; return; }
  err.textContent = "";
  if (!force) {
    try {
      const v = await api("POST", "/api/validate", { tool, arguments: args });
      if (!v.valid) { err.textContent = "The arguments do not match the inputSchema: " + v.error; return; }
    } catch (e) { err.textContent = e.message; return; }
  }
  const out = document.getElementById("result");
  out.hidden = false;
  fill(out, h("p", { role: "status" }, `Calling ${tool}…`));
  try {
    renderCall(await api("POST", "/api/call", { tool, arguments: args, force }));
  } catch (e) {
    fill(out, h("p", { class: "error" }, e.message));
  }
}

function statsTable(rows) {
  return h("table", { class: "stats" }, h("tbody", {}, Object.entries(rows).map(([k, v]) => h("tr", {}, h("th", { scope: "row" }, k), h("td", {}, String(v))))));
}

function renderCrash(c, title) {
  return h("div", { class: "crash", "data-crash": c.reason },
    h("h3", { class: "status-fail" }, title + ": ", h("code", { class: "crash-code" }, c.reason)),
    h("p", {}, c.message),
    c.stderr ? [h("h3", {}, "stderr (last 4 KiB)"), h("pre", { class: "stderr" }, c.stderr)] : h("p", { class: "hint" }, "stderr was empty."));
}

function renderView(call) {
  const box = h("div", { class: "view", id: "model-view" });
  if (!call.view.length) box.append(h("p", { class: "hint" }, "The model reads nothing: the content is empty."));
  for (const v of call.view) {
    const fileURL = v.file !== undefined ? `/api/calls/${call.id}/files/${v.file}` : null;
    switch (v.type) {
      case "text": box.append(h("pre", { class: "text" }, v.text)); break;
      case "image":
        box.append(h("figure", {}, h("img", { src: v.dataUrl || fileURL, alt: `image ${v.mimeType} from ${v.source || "inline"}` }),
          h("figcaption", { class: "hint" }, `${v.mimeType}, ${fmtBytes(v.bytes)}${v.path ? " — " + v.path : ""}`,
            fileURL ? [" ", h("a", { href: fileURL, download: "" }, "download")] : null)));
        break;
      case "file":
        box.append(h("p", { class: "file" }, h("span", { class: "kind" }, "file"), " ", fileURL ? h("a", { href: fileURL, download: "" }, v.path) : v.path, ` (${fmtBytes(v.size)})`));
        break;
      case "link": box.append(h("p", { class: "link" }, h("span", { class: "kind" }, "link"), " ", v.text)); break;
      default: box.append(h("p", { class: "note" }, v.text));
    }
  }
  return box;
}

function renderCall(call) {
  if (call.result && call.result.structuredContent !== undefined) call.structuredContent = call.result.structuredContent;
  const out = document.getElementById("result");
  out.hidden = false;
  const s = call.stats;
  fill(out, 
    h("h2", {}, `Call #${call.id}: ${call.tool} — `, h("span", { class: "outcome outcome-" + call.outcome, id: "outcome" }, call.outcome.replace("_", " "))),
    call.crash ? renderCrash(call.crash, "Crashed") : [
      h("h3", {}, call.outcome === "tool_error" ? "What the model reads (a tool error)" : "What the model reads"),
      renderView(call)],
    call.structuredContent !== undefined ? [h("h3", {}, "structuredContent (passed through unchanged)"), h("pre", { id: "structured" }, JSON.stringify(call.structuredContent, null, 2))] : null,
    h("h3", {}, "Cost"),
    statsTable({
      "time": s.durationMs.toFixed(1) + " ms", "fuel": s.fuelUsed.toLocaleString(), "peak memory": fmtBytes(s.memoryBytes),
      "bytes written": s.bytesWritten.toLocaleString(), "HTTP requests": s.httpRequests,
      "HTTP bytes sent / received": `${s.httpBytesSent} / ${s.httpBytesReceived}`,
    }),
    call.result ? h("details", {}, h("summary", {}, "CallToolResult as the module sent it"), h("pre", { id: "raw-result" }, JSON.stringify(call.result, null, 2))) : null,
  );
}

async function loadHistory() {
  const body = document.getElementById("history-body");
  let calls;
  try { calls = await api("GET", "/api/calls"); } catch (e) { fill(body, h("tr", {}, h("td", { colspan: 6, class: "error" }, e.message))); return; }
  fill(body, ...calls.map((c) => h("tr", {},
    h("td", {}, String(c.id)), h("td", {}, c.tool), h("td", {}, h("code", {}, JSON.stringify(c.arguments))),
    h("td", { class: "outcome-" + c.outcome }, c.outcome + (c.crash ? ` (${c.crash})` : "")),
    h("td", {}, c.durationMs.toFixed(1) + " ms"),
    h("td", {},
      h("button", { type: "button", onclick: async () => { selectTab(document.getElementById("tab-tools")); renderCall(await api("GET", `/api/calls/${c.id}`)); } }, "Show"), " ",
      h("button", { type: "button", onclick: () => rerun(c) }, "Re-run")))));
  if (!calls.length) body.append(h("tr", {}, h("td", { colspan: 6, class: "hint" }, "No calls yet.")));
}

function rerun(c) {
  const t = pkg.tools.find((x) => x.name === c.tool);
  if (!t) return;
  selectTab(document.getElementById("tab-tools"));
  selectTool(t);
  current.raw.value = JSON.stringify(c.arguments, null, 2);
  current.raw.dispatchEvent(new Event("input"));
  document.getElementById("call").click();
}

// ---- check ----------------------------------------------------------------

document.getElementById("run-check").addEventListener("click", async (e) => {
  const btn = e.currentTarget;
  const sum = document.getElementById("check-summary");
  const list = document.getElementById("check-list");
  btn.disabled = true;
  sum.textContent = "Running…";
  fill(list);
  try {
    const rep = await api("POST", "/api/check");
    const n = (st) => rep.checks.filter((c) => c.status === st).length;
    sum.textContent = `${rep.passed ? "Passed" : "Failed"}: ${n("pass")} passed, ${n("warn")} warnings, ${n("fail")} failed, ${n("skip")} skipped (${(rep.durationMs / 1000).toFixed(1)} s)`;
    sum.className = rep.passed ? "status-pass" : "status-fail";
    for (const c of rep.checks) {
      list.append(h("li", { class: "status-" + c.status, "data-id": c.id },
        h("span", { class: "mark", "aria-hidden": "true" }, marks[c.status] || "?"),
        h("span", { class: "sr-only" }, c.status + ": "),
        c.title, " ", h("code", {}, c.id),
        c.detail ? h("div", { class: "detail" }, c.detail) : null));
    }
  } catch (err) {
    sum.textContent = err.message;
    sum.className = "error";
  } finally {
    btn.disabled = false;
  }
});

document.getElementById("reload").addEventListener("click", async () => {
  try { renderPackage(await api("POST", "/api/reload")); } catch (e) { document.getElementById("pkg-meta").textContent = e.message; }
});

// The server puts the package report into the page: draw it at once, so
// the first paint (and a screenshot at the load event) shows the package,
// refused or not. Without it (a page saved without its data), ask the API.
let initialPackage = null;
try { initialPackage = JSON.parse(document.getElementById("initial-package").textContent); } catch (e) { initialPackage = null; }
if (initialPackage) {
  renderPackage(initialPackage);
} else {
  api("GET", "/api/package").then(renderPackage, (e) => {
    document.getElementById("pkg-name").textContent = "Cannot load the package";
    document.getElementById("pkg-meta").textContent = e.message;
  });
}
