//! rustgreet: the greet tool as an ABI 1 package in Rust, using only std
//! (no crates: a tiny JSON reader and writer live below), built with
//! `rustc --target wasm32-wasi`.
//!
//! It is a stateless MCP 2026-07-28 server on stdio: one request a line on
//! stdin, one compact JSON response a line on stdout (flushed), logs on
//! stderr, exit code 0 at end of input. Messages without an id are ignored.
//! The request id is echoed as the exact JSON text it arrived as, so big
//! integers and odd string escapes survive the round trip.
//!
//! Build: make -C testdata/guests/rust fixtures

use std::io::{self, BufRead, Write};

const PROTOCOL_VERSION: &str = "2026-07-28";
const META: &str = r#""_meta":{"io.modelcontextprotocol/serverInfo":{"name":"rustgreet","version":"0.1.0"}}"#;

// ---- a minimal JSON reader ----

/// A parsed JSON value. Numbers keep their source text so nothing is lost
/// to floating point.
enum Json {
    Null,
    Bool(bool),
    Num(String),
    Str(String),
    Arr(Vec<Json>),
    /// Members in source order, each with the byte range of its raw value.
    Obj(Vec<(String, Json, std::ops::Range<usize>)>),
}

impl Json {
    fn get(&self, key: &str) -> Option<&Json> {
        self.member(key).map(|(v, _)| v)
    }

    /// member finds key in an object (the last one wins, as in most
    /// decoders) and returns the value and its raw byte range.
    fn member(&self, key: &str) -> Option<(&Json, std::ops::Range<usize>)> {
        match self {
            Json::Obj(members) => members
                .iter()
                .rev()
                .find(|(k, _, _)| k == key)
                .map(|(_, v, r)| (v, r.clone())),
            _ => None,
        }
    }

    fn as_str(&self) -> Option<&str> {
        match self {
            Json::Str(s) => Some(s),
            _ => None,
        }
    }
}

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
    depth: usize,
}

/// Nesting deeper than this is refused, so a hostile line cannot overflow
/// the guest's stack.
const MAX_DEPTH: usize = 128;

impl<'a> Parser<'a> {
    fn ws(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\t' | b'\r' | b'\n') {
            self.i += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn expect(&mut self, c: u8) -> Result<(), String> {
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            Err(format!("expected '{}' at byte {}", c as char, self.i))
        }
    }

    fn literal(&mut self, word: &str, v: Json) -> Result<Json, String> {
        if self.b[self.i..].starts_with(word.as_bytes()) {
            self.i += word.len();
            Ok(v)
        } else {
            Err(format!("invalid literal at byte {}", self.i))
        }
    }

    fn value(&mut self) -> Result<Json, String> {
        self.ws();
        match self.peek() {
            None => Err("unexpected end of input".to_string()),
            Some(b'{') => self.object(),
            Some(b'[') => self.array(),
            Some(b'"') => self.string().map(Json::Str),
            Some(b't') => self.literal("true", Json::Bool(true)),
            Some(b'f') => self.literal("false", Json::Bool(false)),
            Some(b'n') => self.literal("null", Json::Null),
            Some(c) if c == b'-' || c.is_ascii_digit() => self.number(),
            Some(c) => Err(format!("unexpected '{}' at byte {}", c as char, self.i)),
        }
    }

    fn enter(&mut self) -> Result<(), String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err("nesting too deep".to_string());
        }
        Ok(())
    }

    fn object(&mut self) -> Result<Json, String> {
        self.enter()?;
        self.i += 1;
        let mut members = Vec::new();
        self.ws();
        if self.peek() == Some(b'}') {
            self.i += 1;
            self.depth -= 1;
            return Ok(Json::Obj(members));
        }
        loop {
            self.ws();
            if self.peek() != Some(b'"') {
                return Err(format!("expected a key at byte {}", self.i));
            }
            let k = self.string()?;
            self.ws();
            self.expect(b':')?;
            self.ws();
            let start = self.i;
            let v = self.value()?;
            members.push((k, v, start..self.i));
            self.ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    self.depth -= 1;
                    return Ok(Json::Obj(members));
                }
                _ => return Err(format!("expected ',' or '}}' at byte {}", self.i)),
            }
        }
    }

    fn array(&mut self) -> Result<Json, String> {
        self.enter()?;
        self.i += 1;
        let mut items = Vec::new();
        self.ws();
        if self.peek() == Some(b']') {
            self.i += 1;
            self.depth -= 1;
            return Ok(Json::Arr(items));
        }
        loop {
            items.push(self.value()?);
            self.ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b']') => {
                    self.i += 1;
                    self.depth -= 1;
                    return Ok(Json::Arr(items));
                }
                _ => return Err(format!("expected ',' or ']' at byte {}", self.i)),
            }
        }
    }

    fn number(&mut self) -> Result<Json, String> {
        let start = self.i;
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        let digits = |p: &mut Parser| {
            let s = p.i;
            while p.peek().map_or(false, |c| c.is_ascii_digit()) {
                p.i += 1;
            }
            p.i > s
        };
        if !digits(self) {
            return Err(format!("invalid number at byte {}", start));
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            if !digits(self) {
                return Err(format!("invalid number at byte {}", start));
            }
        }
        if matches!(self.peek(), Some(b'e') | Some(b'E')) {
            self.i += 1;
            if matches!(self.peek(), Some(b'+') | Some(b'-')) {
                self.i += 1;
            }
            if !digits(self) {
                return Err(format!("invalid number at byte {}", start));
            }
        }
        Ok(Json::Num(String::from_utf8_lossy(&self.b[start..self.i]).into_owned()))
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let h = self.b.get(self.i..self.i + 4).ok_or("short \\u escape")?;
        let s = std::str::from_utf8(h).map_err(|_| "bad \\u escape")?;
        let v = u32::from_str_radix(s, 16).map_err(|_| "bad \\u escape")?;
        self.i += 4;
        Ok(v)
    }

    /// string decodes the JSON string at the cursor (which is on the quote).
    fn string(&mut self) -> Result<String, String> {
        self.i += 1;
        let mut out: Vec<u8> = Vec::new();
        loop {
            let c = self.peek().ok_or("unterminated string")?;
            self.i += 1;
            match c {
                b'"' => break,
                b'\\' => {
                    let e = self.peek().ok_or("unterminated string")?;
                    self.i += 1;
                    match e {
                        b'"' | b'\\' | b'/' => out.push(e),
                        b'b' => out.push(8),
                        b'f' => out.push(12),
                        b'n' => out.push(b'\n'),
                        b'r' => out.push(b'\r'),
                        b't' => out.push(b'\t'),
                        b'u' => {
                            let mut cp = self.hex4()?;
                            if (0xd800..0xdc00).contains(&cp) && self.b[self.i..].starts_with(b"\\u") {
                                let save = self.i;
                                self.i += 2;
                                let lo = self.hex4()?;
                                if (0xdc00..0xe000).contains(&lo) {
                                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                                } else {
                                    self.i = save;
                                }
                            }
                            let ch = char::from_u32(cp).unwrap_or('\u{fffd}');
                            let mut buf = [0u8; 4];
                            out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                        }
                        _ => return Err(format!("bad escape at byte {}", self.i - 1)),
                    }
                }
                c if c < 0x20 => return Err(format!("control character in string at byte {}", self.i - 1)),
                c => out.push(c),
            }
        }
        String::from_utf8(out).map_err(|_| "string is not UTF-8".to_string())
    }
}

fn parse(b: &[u8]) -> Result<Json, String> {
    let mut p = Parser { b, i: 0, depth: 0 };
    let v = p.value()?;
    p.ws();
    if p.i != b.len() {
        return Err(format!("trailing data at byte {}", p.i));
    }
    Ok(v)
}

// ---- a minimal JSON writer ----

/// quote returns s as a JSON string literal.
fn quote(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

// ---- the server ----

fn result(id: &str, body: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{},"result":{{"resultType":"complete",{},{}}}}}"#, id, META, body)
}

fn error(id: &str, code: i32, msg: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{},"error":{{"code":{},"message":{}}}}}"#, id, code, quote(msg))
}

fn tool_error(id: &str, msg: &str) -> String {
    result(id, &format!(r#""content":[{{"type":"text","text":{}}}],"isError":true"#, quote(msg)))
}

/// handle answers one line; None means nothing is written (a notification
/// or a line that is not JSON-RPC).
fn handle(line: &[u8]) -> Option<String> {
    let req = match parse(line) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("rustgreet: ignoring unparsable line: {}", e);
            return None;
        }
    };
    let id = match req.member("id") {
        Some((Json::Null, _)) | None => return None, // a notification: ignored
        Some((_, r)) => String::from_utf8_lossy(&line[r]).into_owned(),
    };
    let method = req.get("method").and_then(Json::as_str).unwrap_or("");
    eprintln!("rustgreet: {} id={}", method, id);
    let params = req.get("params");
    Some(match method {
        "server/discover" => result(
            &id,
            &format!(
                r#""ttlMs":0,"cacheScope":"public","supportedVersions":[{}],"capabilities":{{"tools":{{}}}}"#,
                quote(PROTOCOL_VERSION)
            ),
        ),
        "tools/list" => result(
            &id,
            concat!(
                r#""ttlMs":0,"cacheScope":"public","tools":[{"name":"greet","description":"Greet someone by name.","#,
                r#""inputSchema":{"type":"object","properties":{"name":{"type":"string","description":"Who to greet."}},"required":["name"]}}]"#
            ),
        ),
        "tools/call" => {
            let tool = params.and_then(|p| p.get("name")).and_then(Json::as_str);
            if tool != Some("greet") {
                return Some(error(&id, -32602, &format!("unknown tool: {}", tool.unwrap_or(""))));
            }
            let args = params.and_then(|p| p.get("arguments"));
            match args {
                None | Some(Json::Null) | Some(Json::Obj(_)) => {}
                Some(_) => return Some(tool_error(&id, "arguments must be an object")),
            }
            let name = args.and_then(|a| a.get("name")).and_then(Json::as_str).unwrap_or("");
            if name.trim().is_empty() {
                return Some(tool_error(&id, "name must not be empty"));
            }
            let sc = format!(r#"{{"message":{}}}"#, quote(&format!("Hello, {}!", name)));
            result(
                &id,
                &format!(r#""content":[{{"type":"text","text":{}}}],"structuredContent":{}"#, quote(&sc), sc),
            )
        }
        _ => error(&id, -32601, &format!("method not found: {}", method)),
    })
}

fn main() {
    let stdin = io::stdin();
    let mut input = stdin.lock();
    let stdout = io::stdout();
    let mut line = Vec::new();
    loop {
        line.clear();
        match input.read_until(b'\n', &mut line) {
            Ok(0) => std::process::exit(0),
            Ok(_) => {}
            Err(e) => {
                eprintln!("rustgreet: reading stdin: {}", e);
                std::process::exit(1);
            }
        }
        if line.iter().all(|c| c.is_ascii_whitespace()) {
            continue;
        }
        if let Some(resp) = handle(&line) {
            let mut out = stdout.lock();
            let ok = out
                .write_all(resp.as_bytes())
                .and_then(|_| out.write_all(b"\n"))
                .and_then(|_| out.flush());
            if let Err(e) = ok {
                eprintln!("rustgreet: writing stdout: {}", e);
                std::process::exit(1);
            }
        }
    }
}
